// The script of the HTML reports: it reads the page's JSON data block and
// draws the Gantt as inline SVG (a lane per stream, per engine and per host
// thread, once per run when the page compares runs; a time axis; zoom
// to the whole run, to the first chunks, or to a range dragged across the
// chart; a tooltip per bar). Kept as one raw string so the page needs
// nothing but itself.
#pragma once

#include <string_view>

namespace overlap::io::detail {

inline constexpr std::string_view html_renderer = R"JS(
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('overlap-data').textContent);
  // data.runs[r]: {name, ops, host, threads}, ops and host column by column as html_page.cpp
  // writes them: times in whole multiples of data.quantum, starts (a host span's from the end
  // of the one before), op ids, chunks and template numbers as steps from the value before.
  // Turned into rows here. An op: [label, item (-1 none, -2 its chunk's number), start, end,
  // kind, stream, engine (-1 none), size, op id, chunk]; a host span: [label text, start, end,
  // activity, thread (an index into threads)].
  var quantum = data.quantum || 1;
  data.runs.forEach(function (run) {
    var c = run.ops, rows = [], start = 0, op = 0, chunk = -1, i;
    for (i = 0; i < c.label.length; ++i) {
      start += c.start[i]; op += c.op[i]; chunk += c.chunk[i];
      rows.push([c.label[i], c.item[i], start * quantum, (start + c.duration[i]) * quantum, c.kind[i],
                 c.stream[i], c.engine[i], c.size[i], op, chunk]);
    }
    run.ops = rows;
    var h = run.host, spans = [], end = 0, text = '', number = 0, last = {};
    for (i = 0; i < h.label.length; ++i) {
      var code = h.label[i];
      if (code >= 0) {
        text = data.labels[code];
      } else if (code <= -2) {
        var k = -2 - code, t = data.templates[k];
        last[k] = (last[k] || 0) + h.numbers[number++];
        text = t[0] + last[k] + t[1];
      }
      var from = end + h.start[i];
      end = from + h.duration[i];
      spans.push([text, from * quantum, end * quantum, h.activity[i], h.thread ? h.thread[i] : 0]);
    }
    run.host = spans;
  });
  var svg = document.getElementById('gantt');
  var tip = document.getElementById('tip');
  var NS = svg.namespaceURI;
  var LABEL = 190, WIDTH = 1000, LANE = 22, BAR = 16, AXIS = 28;
  var multi = data.runs.length > 1;
  // Named stretches of the time axis ([name, start, end]: a run's startup, steady state,
  // teardown): shaded behind the bars and named in a strip under the lanes, below the
  // lanes rather than above them so that every lane stays where it is without them.
  var regions = data.regions || [], STRIP = regions.length ? LANE + 6 : 0;

  // Lanes: each stream, then each engine, then each host thread; one per run within each.
  var lanes = [], streamLane = {}, engineLane = {}, hostLane = {}, streamsUsed = {}, enginesUsed = {};
  data.runs.forEach(function (run) {
    run.ops.forEach(function (o) { streamsUsed[o[5]] = true; if (o[6] >= 0) enginesUsed[o[6]] = true; });
  });
  function sorted(set) { return Object.keys(set).map(Number).sort(function (a, b) { return a - b; }); }
  function laneName(base, run) { return multi ? base + ' · ' + run.name : base; }
  sorted(streamsUsed).forEach(function (s) {
    data.runs.forEach(function (run, r) { streamLane[r + ':' + s] = lanes.length; lanes.push(laneName(data.streams[s], run)); });
  });
  sorted(enginesUsed).forEach(function (e) {
    data.runs.forEach(function (run, r) { engineLane[r + ':' + e] = lanes.length; lanes.push(laneName(data.engines[e], run)); });
  });
  data.runs.forEach(function (run, r) {
    // One lane per host thread with spans; a single thread keeps the name 'host thread'.
    var threads = run.threads || ['host'], used = {};
    run.host.forEach(function (h) { used[h[4] || 0] = true; });
    sorted(used).forEach(function (t) {
      hostLane[r + ':' + t] = lanes.length;
      lanes.push(laneName(threads.length > 1 ? (threads[t] || 'host thread ' + (t + 1)) : 'host thread', run));
    });
  });
  // The same op in the first run, for the difference the tooltip gives.
  var reference = {};
  if (multi) data.runs[0].ops.forEach(function (o) { reference[o[8]] = o; });

  function el(name, attrs, parent) {
    var n = document.createElementNS(NS, name);
    for (var k in attrs) n.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(n);
    return n;
  }
  function num(x) { return +x.toPrecision(6); }
  function signed(x) { return (x >= 0 ? '+' : '') + num(x); }
  function niceStep(span) {
    var raw = span / 10, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return p * (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10);
  }

  // Findings' ops: all of them highlighted at first, one finding's when it is clicked.
  var groups = data.highlight || [];
  function setOf(list) { var set = {}; list.forEach(function (op) { set[op] = true; }); return set; }
  // Only ops the chart draws count: a finding about host calls that are no stream's op (an
  // idle gap's cudaStreamAttachMemAsync) has no bar to outline, and must not dim all the others.
  var drawnOps = {};
  data.runs.forEach(function (run) { run.ops.forEach(function (o) { drawnOps[o[8]] = true; }); });
  function drawn(list) { return list.filter(function (op) { return drawnOps[op]; }); }
  function highlightOf(list) { list = drawn(list); return list.length ? setOf(list) : null; }
  var allHighlighted = [].concat.apply([], groups);
  var highlighted = highlightOf(allHighlighted);

  var view = [0, data.total > 0 ? data.total : 1];
  var MERGE = 2, DOMINANT = 0.6, merged = [], mixed = false;
  function draw() {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var v0 = view[0], v1 = view[1], scale = WIDTH / (v1 - v0);
    var height = AXIS + lanes.length * LANE + 4 + STRIP;
    svg.setAttribute('viewBox', '0 0 ' + (LABEL + WIDTH + 40) + ' ' + height);
    svg.setAttribute('height', height);
    lanes.forEach(function (name, i) {
      var y = AXIS + i * LANE;
      el('rect', {x: LABEL, y: y, width: WIDTH, height: LANE, class: i % 2 ? 'lane odd' : 'lane'}, svg);
      el('text', {x: LABEL - 6, y: y + LANE / 2 + 4, class: 'lane-label'}, svg).textContent = name;
    });
    var step = niceStep(v1 - v0);
    for (var t = Math.ceil(v0 / step) * step; t <= v1 + step * 1e-9; t += step) {
      var x = LABEL + (t - v0) * scale;
      el('line', {x1: x, x2: x, y1: AXIS - 4, y2: AXIS + lanes.length * LANE, class: 'tick'}, svg);
      el('text', {x: x, y: AXIS - 8, class: 'tick-label'}, svg).textContent = num(t);
    }
    drawRegions(v0, v1, scale);
    // The unit left of the axis, where no tick label can run into it.
    el('text', {x: LABEL - 6, y: AXIS - 8, class: 'unit'}, svg).textContent = 'time (' + data.unit + ')';
    var bars = el('g', {}, svg);
    // Each lane's bars are laid out first and drawn after: bars narrower than MERGE pixels that
    // touch (less than a pixel apart) are drawn as one "merged" bar. 100,000 ops on a 1000-pixel
    // lane would otherwise be 100,000 rects, their white outlines hiding their colour, and the
    // browser would take seconds to lay them out. A merged bar has the colour of a kind that
    // fills DOMINANT of it (else grey, "several kinds"), its tooltip counts its ops, and zooming
    // in shows them one by one.
    var laneBars = lanes.map(function () { return []; });
    function bar(lane, start, end, kind, hl, r, i, op) {
      if (end < v0 || start > v1 || (start === v1 && end > start)) return;  // outside the view
      laneBars[lane].push({start: start, end: end, x0: LABEL + (Math.max(start, v0) - v0) * scale,
                           x1: LABEL + (Math.min(end, v1) - v0) * scale, kind: kind, hl: hl, r: r, i: i, op: op});
    }
    data.runs.forEach(function (run, r) {
      run.ops.forEach(function (o, i) {
        var kind = 'k-' + data.kinds[o[4]], hl = highlighted ? (highlighted[o[8]] ? ' hl' : ' dim') : '';
        bar(streamLane[r + ':' + o[5]], o[2], o[3], kind, hl, r, i, o[8]);
        if (o[6] >= 0) bar(engineLane[r + ':' + o[6]], o[2], o[3], kind, hl, r, i, o[8]);
      });
      var hostHl = highlighted ? ' dim' : '';  // no finding names a host span
      run.host.forEach(function (h, i) { bar(hostLane[r + ':' + (h[4] || 0)], h[1], h[2], 'h-' + data.activities[h[3]], hostHl, r, -1 - i, -1); });
    });
    merged = [];
    mixed = false;
    laneBars.forEach(function (list, lane) {
      var y = AXIS + lane * LANE + (LANE - BAR) / 2, group = null;
      function single(b) {
        // A bar under MERGE pixels has no outline: a white edge would wash out its colour.
        var thin = b.x1 - b.x0 < MERGE ? ' thin' : '';
        el('rect', {x: b.x0, y: y, width: Math.max(b.x1 - b.x0, 1), height: BAR, class: 'bar ' + b.kind + thin + b.hl,
                    'data-r': b.r, 'data-i': b.i, 'data-op': b.op}, bars);
      }
      function flush() {
        if (group === null) return;
        if (group.members.length === 1) { single(group.members[0]); group = null; return; }
        var fill = {}, kind = '', hl = '', total = 0;
        group.members.forEach(function (b) {
          fill[b.kind] = (fill[b.kind] || 0) + (b.x1 - b.x0);
          total += b.x1 - b.x0;
          if (b.hl === ' hl' || (b.hl === ' dim' && hl === '')) hl = b.hl;
        });
        Object.keys(fill).forEach(function (k) { if (kind === '' || fill[k] > fill[kind]) kind = k; });
        // A kind that fills most of the bar gives it its colour; when none does (a stream
        // lane's H2D, kernel and D2H in turn) the bar says so rather than pick one by rounding.
        if (fill[kind] < DOMINANT * total) { kind = 'k-mixed'; mixed = true; }
        merged.push(group);
        el('rect', {x: group.x0, y: y, width: Math.max(group.x1 - group.x0, 1), height: BAR,
                    class: 'bar merged ' + kind + hl, 'data-r': group.members[0].r, 'data-m': merged.length - 1,
                    'data-n': group.members.length}, bars);
        group = null;
      }
      list.sort(function (a, b) { return a.x0 - b.x0; });  // stable: ties keep issue order
      list.forEach(function (b) {
        var narrow = b.x1 - b.x0 < MERGE;
        if (group !== null && narrow && b.x0 <= group.x1 + 1) {
          group.members.push(b);
          group.x1 = Math.max(group.x1, b.x1);
          return;
        }
        flush();
        if (narrow) group = {x0: b.x0, x1: b.x1, members: [b]}; else single(b);
      });
      flush();
    });
    var swatch = document.getElementById('mixed-legend');
    if (swatch) swatch.style.display = mixed ? '' : 'none';
  }

  // Each region in view: a shade across the lanes, dashed edges, and its name in the strip
  // (shortened, then left out, where the region is too narrow for it; the tooltip has it).
  function drawRegions(v0, v1, scale) {
    if (!regions.length) return;
    var bottom = AXIS + lanes.length * LANE, stripY = bottom + 4;
    el('text', {x: LABEL - 6, y: stripY + LANE / 2 + 4, class: 'lane-label regions'}, svg).textContent = 'phases';
    regions.forEach(function (g, k) {
      if (g[2] <= v0 || g[1] >= v1) return;
      var x0 = LABEL + (Math.max(g[1], v0) - v0) * scale, x1 = LABEL + (Math.min(g[2], v1) - v0) * scale;
      var w = Math.max(x1 - x0, 1), shade = 'region-' + (k % 4);
      el('rect', {x: x0, y: AXIS, width: w, height: lanes.length * LANE, class: 'region ' + shade}, svg);
      [[g[1], x0], [g[2], x1]].forEach(function (edge) {
        if (edge[0] > v0 && edge[0] < v1)
          el('line', {x1: edge[1], x2: edge[1], y1: AXIS - 4, y2: stripY + LANE - 4, class: 'region-edge'}, svg);
      });
      el('rect', {x: x0, y: stripY, width: w, height: LANE - 4, class: 'region-strip ' + shade, 'data-g': k}, svg);
      var name = g[0], fits = Math.floor((w - 6) / 7);
      if (name.length > fits) name = fits >= 4 ? name.slice(0, fits - 1) + '…' : '';
      if (name) el('text', {x: x0 + w / 2, y: stripY + LANE / 2 + 2, class: 'region-label'}, svg).textContent = name;
    });
  }
  function describeRegion(k) {
    var g = regions[k];
    return g[0] + '\nfrom ' + num(g[1]) + ' to ' + num(g[2]) + ' ' + data.unit + ' (' + num(g[2] - g[1]) + ' ' +
           data.unit + ')\nclick to zoom to it';
  }

  function describeMerged(g) {
    var count = {}, t0 = Infinity, t1 = -Infinity;
    g.members.forEach(function (b) {
      var name = b.kind.slice(2);
      count[name] = (count[name] || 0) + 1;
      t0 = Math.min(t0, b.start); t1 = Math.max(t1, b.end);
    });
    return g.members.length + ' ops from ' + num(t0) + ' to ' + num(t1) + ' ' + data.unit + '\n' +
           Object.keys(count).map(function (k) { return count[k] + ' ' + k; }).join(', ') +
           '\ndrag across them to zoom in';
  }

  function describe(r, i) {
    var run = data.runs[r];
    if (i < 0) {
      var h = run.host[-1 - i];
      return h[0] + '\n' + data.activities[h[3]] + ' from ' + num(h[1]) + ' for ' +
             num(h[2] - h[1]) + ' ' + data.unit;
    }
    var o = run.ops[i];
    var item = o[1] >= 0 ? ' ' + data.items[o[1]] : o[1] === -2 ? ' ' + o[9] : '';
    var bytes = data.bytes[o[7]];
    var text = data.labels[o[0]] + item + ' (op ' + o[8] + ')\n' +
               'start ' + num(o[2]) + ' ' + data.unit + ', duration ' + num(o[3] - o[2]) + ' ' + data.unit +
               (bytes > 0 ? ', ' + bytes + ' bytes' : '') + '\n' + data.streams[o[5]] +
               (o[6] >= 0 ? ' · ' + data.engines[o[6]] : '');
    var ref = r > 0 ? reference[o[8]] : undefined;
    if (ref) {
      text += '\nagainst ' + data.runs[0].name + ': start ' + signed(o[2] - ref[2]) + ', duration ' +
              signed((o[3] - o[2]) - (ref[3] - ref[2])) + ' ' + data.unit;
    }
    return text;
  }
  svg.addEventListener('mousemove', function (ev) {
    var i = ev.target.getAttribute && ev.target.getAttribute('data-i');
    var m = ev.target.getAttribute && ev.target.getAttribute('data-m');
    var g = ev.target.getAttribute && ev.target.getAttribute('data-g');
    if (g !== null && g !== undefined) {
      tip.textContent = describeRegion(+g);
    } else if ((i === null || i === undefined) && (m === null || m === undefined)) {
      tip.style.display = 'none';
      return;
    } else {
      tip.textContent = m !== null && m !== undefined ? describeMerged(merged[+m]) : describe(+ev.target.getAttribute('data-r'), +i);
    }
    tip.style.display = 'block';
    tip.style.left = (ev.pageX + 12) + 'px';
    tip.style.top = (ev.pageY + 12) + 'px';
  });
  svg.addEventListener('mouseleave', function () { tip.style.display = 'none'; });

  // Drag across the chart to zoom into that range.
  var dragFrom = null;
  function timeAt(ev) {
    var box = svg.getBoundingClientRect();
    var x = (ev.clientX - box.left) * (LABEL + WIDTH + 40) / box.width;
    return view[0] + (x - LABEL) * (view[1] - view[0]) / WIDTH;
  }
  svg.addEventListener('mousedown', function (ev) { dragFrom = timeAt(ev); ev.preventDefault(); });
  svg.addEventListener('mouseup', function (ev) {
    if (dragFrom === null) return;
    var a = Math.max(Math.min(dragFrom, timeAt(ev)), 0), b = Math.max(dragFrom, timeAt(ev));
    dragFrom = null;
    if (b - a > (view[1] - view[0]) / 200) { view = [a, b]; draw(); }
  });

  // A click on a region's strip zooms to it (a click is no drag: mouseup leaves the view alone).
  svg.addEventListener('click', function (ev) {
    var g = ev.target.getAttribute && ev.target.getAttribute('data-g');
    if (g === null || g === undefined) return;
    view = [regions[+g][1], regions[+g][2]];
    draw();
  });

  document.getElementById('zoom-all').addEventListener('click', function () {
    view = [0, data.total > 0 ? data.total : 1]; draw();
  });
  var chunks = document.getElementById('chunks');
  var chunked = data.runs.some(function (run) { return run.ops.some(function (o) { return o[9] >= 0; }); });
  if (!chunked) document.getElementById('first-chunks').style.display = 'none';
  document.getElementById('zoom-first').addEventListener('click', function () {
    var n = Math.max(1, +chunks.value || 1), end = 0;
    data.runs.forEach(function (run) {
      run.ops.forEach(function (o) { if (o[9] >= 0 && o[9] < n) end = Math.max(end, o[3]); });
    });
    if (end > 0) { view = [0, end]; draw(); }
  });
  if (groups.length && document.querySelectorAll) {
    var chosen = -1;
    Array.prototype.forEach.call(document.querySelectorAll('[data-group]'), function (item) {
      item.addEventListener('click', function () {
        var k = +item.getAttribute('data-group');
        chosen = chosen === k ? -1 : k;
        highlighted = highlightOf(chosen < 0 ? allHighlighted : groups[k]);
        draw();
      });
    });
  }
  draw();
  // Milliseconds from navigation start to the chart drawn: the browser test reads it.
  document.documentElement.setAttribute('data-rendered-ms', performance.now().toFixed(1));
})();
)JS";

}  // namespace overlap::io::detail
