#!/usr/bin/env python3
"""Opens overlap's HTML reports in headless Chromium and checks, from the DOM
the page's script built, that the chart draws what the data says.

    check_reports.py --overlap build/default/tools/overlap/overlap \
                     --source-dir . --work-dir build/default/tests/browser

The unit tests check the page's text; only a browser runs its script, so only
here do we see a bar that lands in the wrong place, a script that throws, or
a 100,000-op page that takes too long to draw. Standard library only.

The page draws bars narrower than 2 px that touch as one merged rect; the
layout check recomputes every bar from the page's JSON and checks that each
lane's rects partition them (see check_layout), not how the page groups them.
Some checks open a copy of a page with a script added after the page's own,
to do what a reader does (zoom), or to time the first frame; the page's own
script is never changed.

Exit codes: 0 all checks passed, 1 a check failed, 77 no Chromium (skipped).
"""

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

SKIP = 77

# The page script's layout (src/io/html_renderer.hpp). Bars are recomputed
# from these and the page's JSON, independently of the script.
LABEL, WIDTH, LANE, BAR, AXIS = 190, 1000, 22, 16, 28
MERGE_PX = 2          # bars narrower than this that touch are drawn as one
TOLERANCE_PX = 0.01  # drawn positions against the data's
DOMINANT = 0.6       # a merged rect takes a kind's colour when that kind fills this much of it
EPSILON_PX = 1e-9    # the merge test's comparisons, given to the page

BIG_OPS = 100_000          # the large page: at least this many ops ...
BIG_MAX_BYTES = 5_000_000  # ... in under 5 MB ...
BIG_MAX_RENDER_MS = 3000   # ... drawn within 3 s of navigation start
BIG_TRIES = 3              # best of: a 2-core CI box is noisy (see check_big)
BIG_MAX_RECTS = 10_000     # the whole page: lanes and (merged) bars
FRAME_TRIES = 3            # see first_frame

CHROMIUM_TIMEOUT_S = 120


class Failure(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Failure(message)


# --------------------------------------------------------------------------
# Running Chromium and reading what it says

# This Chromium (156) logs every console message, whatever its level, as
#   [pid:tid:date/time:INFO:CONSOLE:12] "Uncaught Error: x", source: file:///... (12)
# older ones as "...:INFO:CONSOLE(12)] ...". console.error and console.log
# look the same, so any console message counts: the report pages log nothing.
CONSOLE_LINE = re.compile(r":CONSOLE[:(]\d*\)?\]\s*(.*)")


def console_messages(stderr):
    """The page's console messages and uncaught exceptions in Chromium's log."""
    messages = []
    for line in stderr.splitlines():
        m = CONSOLE_LINE.search(line)
        if m:
            messages.append(m.group(1))
        elif "Uncaught" in line:  # in case a future format drops the CONSOLE tag
            messages.append(line.strip())
    return messages


def find_chromium():
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


class Page:
    """One page as Chromium rendered it: the DOM after the scripts ran."""

    def __init__(self, dom, console, wall_s):
        self.dom = dom
        self.console = console
        self.wall_s = wall_s
        m = re.search(r'<html[^>]*\bdata-rendered-ms="([0-9.]+)"', dom)
        self.rendered_ms = float(m.group(1)) if m else None


def render(chromium, path):
    """Loads a file in headless Chromium and returns its DOM once loaded."""
    # A fresh profile each time: no state carried between pages or runs.
    with tempfile.TemporaryDirectory(prefix="overlap-chromium-") as profile:
        command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                   "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}",
                   "--dump-dom", "file://" + os.path.abspath(path)]
        started = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, errors="replace",
                              timeout=CHROMIUM_TIMEOUT_S)
        wall = time.monotonic() - started
    if done.returncode != 0 or "</html>" not in done.stdout:
        raise Failure(f"chromium exited {done.returncode} on {path}; stderr tail:\n"
                      + "\n".join(done.stderr.splitlines()[-15:]))
    return Page(done.stdout, console_messages(done.stderr), wall)


# --------------------------------------------------------------------------
# Reading the DOM and the page's data

ATTR = re.compile(r'([\w-]+)="([^"]*)"')


def rects(dom):
    """Every <rect> with its attributes (regex: fast on 200,000 bars)."""
    return [dict(ATTR.findall(m)) for m in re.findall(r"<rect\b([^>]*)>", dom)]


def bars(dom):
    return [r for r in rects(dom) if r.get("class", "").split()[:1] == ["bar"]]


def lane_labels(dom):
    """Lane label texts, top to bottom, as drawn."""
    found = re.findall(r'<text\b([^>]*class="lane-label"[^>]*)>([^<]*)</text>', dom)
    labels = [(float(dict(ATTR.findall(a))["y"]), html.unescape(t)) for a, t in found]
    return [t for _, t in sorted(labels)]


def lane_y(lane):
    """A bar's y on a lane: centred in it."""
    return AXIS + lane * LANE + (LANE - BAR) / 2


def lane_of(bar):
    """The lane a bar's y puts it on (check_layout checks the y is exact)."""
    return round((float(bar["y"]) - lane_y(0)) / LANE)


def page_data(source):
    """The JSON block of the page, turned from columns into rows as the page's
    script turns it: times from whole quanta and steps to starts and ends in
    the time unit (an op's o[3] its end), op ids and chunks from steps, host
    labels as text, host threads 0 where left out. The arithmetic is the
    script's, in the same order, so that positions compare exactly."""
    m = re.search(r'<script type="application/json" id="overlap-data">(.*?)</script>', source, re.S)
    expect(m, "no overlap-data block")
    data = json.loads(m.group(1))  # JSON reads "<\/" (how the page keeps "</" out of its script) as "</"
    if "quantum" not in data:
        # A page written before times were quanta (docs/bench-report.html):
        # absolute starts, durations, op ids and chunks, as its own script reads them.
        for run in data["runs"]:
            for o in run["ops"]:
                o[3] = o[2] + o[3]
        return data
    quantum = data["quantum"]
    for run in data["runs"]:
        c, rows, start, op, chunk = run["ops"], [], 0, 0, -1
        for i in range(len(c["label"])):
            start += c["start"][i]
            op += c["op"][i]
            chunk += c["chunk"][i]
            rows.append([c["label"][i], c["item"][i], start * quantum, (start + c["duration"][i]) * quantum,
                         c["kind"][i], c["stream"][i], c["engine"][i], c["size"][i], op, chunk])
        run["ops"] = rows
        h, spans, end, text, number, last = run["host"], [], 0, "", 0, {}
        for i in range(len(h["label"])):
            code = h["label"][i]
            if code >= 0:
                text = data["labels"][code]
            elif code <= -2:
                k = -2 - code
                last[k] = last.get(k, 0) + h["numbers"][number]
                number += 1
                text = data["templates"][k][0] + str(last[k]) + data["templates"][k][1]
            begin = end + h["start"][i]
            end = begin + h["duration"][i]
            spans.append([text, begin * quantum, end * quantum, h["activity"][i],
                          h["thread"][i] if "thread" in h else 0])
        run["host"] = spans
    return data


def summary_row(dom, name):
    m = re.search(r"<tr><th>" + re.escape(name) + r"</th><td>(.*?)</td></tr>", dom)
    return m.group(1) if m else None


# --------------------------------------------------------------------------
# The layout the data asks for, computed here rather than by the page

def whole_run(data):
    """The view the page opens with: the whole run."""
    return 0.0, float(data["total"]) if data["total"] > 0 else 1.0


def expected_layout(data, view=None):
    """Lane names, and each lane's bars in the order the page lays them out.

    A bar is a dict: x0, x1 (where the op starts and ends on screen, clipped
    to the view), kind ("k-h2d", "h-blocked"), hl ("", "hl" or "dim"), r,
    i (data-i: the op's index, -1 - n for host span n) and op (data-op).
    A lane's bars are sorted by x0; ties keep the order the page issues them
    in: run by run, each op (its stream lane's bar, then its engine lane's),
    then the run's host spans."""
    runs = data["runs"]
    multi = len(runs) > 1

    def name(base, run):
        return f"{base} · {run['name']}" if multi else base

    streams = sorted({o[5] for run in runs for o in run["ops"]})
    engines = sorted({o[6] for run in runs for o in run["ops"] if o[6] >= 0})
    lanes, stream_lane, engine_lane, host_lane = [], {}, {}, {}
    for s in streams:
        for r, run in enumerate(runs):
            stream_lane[r, s] = len(lanes)
            lanes.append(name(data["streams"][s], run))
    for e in engines:
        for r, run in enumerate(runs):
            engine_lane[r, e] = len(lanes)
            lanes.append(name(data["engines"][e], run))
    for r, run in enumerate(runs):
        # One lane per host thread with spans; a single thread keeps the name "host thread".
        threads = run.get("threads") or ["host"]
        for t in sorted({(h[4] if len(h) > 4 else 0) or 0 for h in run["host"]}):
            host_lane[r, t] = len(lanes)
            base = (threads[t] if t < len(threads) and threads[t] else f"host thread {t + 1}") \
                if len(threads) > 1 else "host thread"
            lanes.append(name(base, run))

    # Floats throughout, in the order the page's doubles are computed: the
    # merge test compares positions exactly as the page does.
    v0, v1 = view or whole_run(data)
    scale = WIDTH / (v1 - v0)
    per_lane = [[] for _ in lanes]

    def add(lane, start, end, kind, hl, r, i, op):
        if end < v0 or start > v1 or (start == v1 and end > start):
            return  # outside the view
        per_lane[lane].append({"x0": LABEL + (max(start, v0) - v0) * scale,
                               "x1": LABEL + (min(end, v1) - v0) * scale,
                               "kind": kind, "hl": hl, "r": r, "i": i, "op": op,
                               "clipped": start < v0 or end > v1})

    # Only ops with a bar count: findings whose ops the chart does not draw dim nothing.
    highlighted = {op for group in data["highlight"] for op in group} & {o[8] for run in runs for o in run["ops"]}
    for r, run in enumerate(runs):
        for i, o in enumerate(run["ops"]):
            start = float(o[2])
            end = float(o[3])
            kind = "k-" + data["kinds"][o[4]]
            hl = ("hl" if o[8] in highlighted else "dim") if highlighted else ""  # any finding's op: all dim but those
            for lane in [stream_lane[r, o[5]]] + ([engine_lane[r, o[6]]] if o[6] >= 0 else []):
                add(lane, start, end, kind, hl, r, i, o[8])
        for i, h in enumerate(run["host"]):
            # Under a finding's highlight every host span is dimmed: no finding names one.
            add(host_lane[r, (h[4] if len(h) > 4 else 0) or 0], float(h[1]), float(h[2]), "h-" + data["activities"][h[3]],
                "dim" if highlighted else "", r, -1 - i, -1)
    for bars_of_lane in per_lane:
        bars_of_lane.sort(key=lambda b: b["x0"])  # stable, like the page's sort
    return lanes, per_lane


def narrow(bar):
    return bar["x1"] - bar["x0"] < MERGE_PX


def unit_label(dom):
    m = re.search(r'<text\b[^>]*class="unit"[^>]*>([^<]*)</text>', dom)
    return html.unescape(m.group(1)) if m else None


def check_layout(page, data, view=None):
    """Every op and host span in the view is drawn, each where the data puts it.

    A bar is drawn either alone, as a rect of its own, or inside a merged
    rect with its neighbours (the page merges bars narrower than 2 px that
    touch, so that 100,000 ops do not become 100,000 rects). Each lane's
    rects, taken left to right, must partition its bars, taken left to right:
    a rect of its own is exactly one bar's; a merged rect (data-n bars) spans
    exactly its bars, all of them narrow. Then the merge policy itself: no
    bar 2 px wide or more is merged, the bars of a merged rect touch one
    another, and two runs of narrow bars drawn apart do not touch."""
    lanes, per_lane = expected_layout(data, view)
    expect(lane_labels(page.dom) == lanes, f"lane labels {lane_labels(page.dom)}, expected {lanes}")
    legend = re.findall(r'<span class="sw ([\w-]+)"></span>', page.dom)
    present = ["k-" + k for k in data["kinds"]] + ["h-" + a for a in data["activities"]] + ["k-mixed"]
    expect(legend == present, f"legend {legend}, expected the data's kinds and activities {present}")
    unit = f"time ({data['unit']})"
    expect(unit_label(page.dom) == unit, f"unit label {unit_label(page.dom)!r}, expected {unit!r}")

    drawn = [[] for _ in lanes]
    merged_ids = []
    for b in bars(page.dom):
        lane = lane_of(b)
        expect(0 <= lane < len(lanes), f"bar {b} is on no lane")
        expect(abs(float(b["y"]) - lane_y(lane)) <= TOLERANCE_PX, f"bar {b}: y off lane {lanes[lane]!r}")
        expect(float(b["height"]) == BAR, f"bar {b}: height {b['height']}")
        drawn[lane].append(b)
        if "data-m" in b:
            merged_ids.append(b["data-m"])
    # The tooltip finds a merged rect's ops by data-m: 0, 1, 2 ... in drawing order.
    expect(merged_ids == [str(k) for k in range(len(merged_ids))],
           f"data-m of the merged rects, in order: {merged_ids[:10]}..., expected 0, 1, 2 ...")

    total = rects_drawn = merged_rects = mixed_rects = merged_bars = wide = clipped = 0
    for lane, expected in enumerate(per_lane):
        rects_here = sorted(drawn[lane], key=lambda b: float(b["x"]))  # stable: drawing order on ties
        total += len(expected)
        rects_drawn += len(rects_here)
        wide += sum(not narrow(e) for e in expected)
        clipped += sum(e["clipped"] for e in expected)
        k = 0           # next expected bar
        last = None     # the last run of narrow bars drawn (its right end), None after a wide bar
        for b in rects_here:
            where = f"lane {lanes[lane]!r}, rect at x {b['x']}"
            expect(k < len(expected), f"{where}: {len(rects_here)} rects for {len(expected)} bars, "
                                      f"this one has no bar left to draw")
            cls = b["class"].split()
            if "merged" not in cls:
                e = expected[k]
                k += 1
                what = f"{where} (run {e['r']} data-i {e['i']})"
                expect(int(b["data-r"]) == e["r"] and int(b["data-i"]) == e["i"],
                       f"{where}: data-r {b.get('data-r')} data-i {b.get('data-i')}, the next bar is "
                       f"run {e['r']} data-i {e['i']} at x {e['x0']:.4f}")
                width = max(e["x1"] - e["x0"], 1.0)
                expect(abs(float(b["x"]) - e["x0"]) <= TOLERANCE_PX, f"{what}: x {b['x']}, expected {e['x0']:.4f}")
                expect(abs(float(b["width"]) - width) <= TOLERANCE_PX,
                       f"{what}: width {b['width']}, expected {width:.4f}")
                # A lone bar under MERGE_PX is drawn without its white outline ("thin").
                want = " ".join(["bar", e["kind"]] + (["thin"] if narrow(e) else []) + ([e["hl"]] if e["hl"] else []))
                expect(b["class"] == want, f"{what}: class {b['class']!r}, expected {want!r}")
                expect(int(b["data-op"]) == e["op"], f"{what}: data-op {b['data-op']}, expected {e['op']}")
                group = [e]
            else:
                expect("data-i" not in b and "data-op" not in b, f"{where}: a merged rect with data-i/data-op")
                n = int(b.get("data-n", "0"))
                expect(n >= 2, f"{where}: merged rect of data-n {b.get('data-n')!r}")
                expect(k + n <= len(expected), f"{where}: merges {n} bars, only {len(expected) - k} left")
                group = expected[k:k + n]
                k += n
                merged_rects += 1
                merged_bars += n
                x0 = min(e["x0"] for e in group)
                x1 = max(e["x1"] for e in group)
                width = max(x1 - x0, 1.0)
                what = f"{where} (merged, bars of run {group[0]['r']} data-i {group[0]['i']} ... {group[-1]['i']})"
                expect(int(b["data-r"]) == group[0]["r"], f"{what}: data-r {b['data-r']}")
                expect(abs(float(b["x"]) - x0) <= TOLERANCE_PX, f"{what}: x {b['x']}, expected {x0:.4f}")
                expect(abs(float(b["width"]) - width) <= TOLERANCE_PX,
                       f"{what}: width {b['width']}, expected {width:.4f}")
                reach = group[0]["x1"]
                for j, e in enumerate(group):  # a message is only made on failure: 200,000 bars
                    if not narrow(e):
                        raise Failure(f"{what}: merges run {e['r']} data-i {e['i']}, {e['x1'] - e['x0']:.3f} px "
                                      f"wide (bars of {MERGE_PX} px or more are drawn alone)")
                    if j > 0 and not e["x0"] <= reach + 1 + EPSILON_PX:
                        raise Failure(f"{what}: run {e['r']} data-i {e['i']} at x {e['x0']:.4f} does not touch "
                                      f"the bars before it (they end at {reach:.4f})")
                    reach = max(reach, e["x1"])
                # The colour: the kind covering most of it when that is at least
                # DOMINANT of its bars' width, else "k-mixed"; outlined if any of its ops is.
                fill = {}
                for e in group:
                    fill[e["kind"]] = fill.get(e["kind"], 0.0) + (e["x1"] - e["x0"])
                kind = [c for c in cls if c[:2] in ("k-", "h-")]
                top = max(fill.values())
                covered = sum(fill.values())
                if kind == ["k-mixed"]:
                    expect(top <= DOMINANT * covered + EPSILON_PX,
                           f"{what}: drawn as mixed, but {max(fill, key=fill.get)} covers {top:.3f} of "
                           f"{covered:.3f} px")
                    mixed_rects += 1
                else:
                    expect(len(kind) == 1 and kind[0] in fill,
                           f"{what}: class {b['class']!r}, its bars' kinds are {sorted(fill)}")
                    expect(fill[kind[0]] >= top - EPSILON_PX and fill[kind[0]] >= DOMINANT * covered - EPSILON_PX,
                           f"{what}: coloured {kind[0]} ({fill[kind[0]]:.3f} px of {covered:.3f}), but "
                           f"{max(fill, key=fill.get)} covers {top:.3f} px")
                hls = {e["hl"] for e in group}
                hl = "hl" if "hl" in hls else "dim" if "dim" in hls else ""
                want = ["bar", "merged", kind[0]] + ([hl] if hl else [])
                expect(cls == want, f"{what}: class {b['class']!r}, expected {' '.join(want)!r}")
            # Runs of narrow bars that touch are one rect: a narrow run drawn
            # apart from the previous one (no wide bar between) starts more
            # than 1 px after it ends.
            if narrow(group[0]):
                if last is not None:
                    expect(group[0]["x0"] > last + 1 - EPSILON_PX,
                           f"{where}: narrow bar(s) at x {group[0]['x0']:.4f} touch the narrow bar(s) "
                           f"before, which end at {last:.4f}, but are drawn apart from them")
                last = max(e["x1"] for e in group)
            else:
                last = None
        expect(k == len(expected), f"lane {lanes[lane]!r}: {len(expected) - k} of {len(expected)} bars not drawn, "
                                   f"the first at x {expected[k]['x0'] if k < len(expected) else 0:.4f}")
    # The legend's "several kinds" swatch is shown exactly while a mixed rect is drawn.
    m = re.search(r'<span id="mixed-legend" style="([^"]*)"', page.dom)
    expect(m is not None, "no mixed-kinds legend entry")
    shown = "display: none" not in m.group(1)
    expect(shown == (mixed_rects > 0), f"mixed-kinds legend {'shown' if shown else 'hidden'} with "
                                        f"{mixed_rects} mixed rects")
    ops = sum(len(run["ops"]) for run in data["runs"])
    page.layout = {"bars": total, "wide": wide, "rects": rects_drawn, "merged": merged_rects,
                   "merged_bars": merged_bars, "clipped": clipped, "mixed": mixed_rects}
    return (f"{total:,} bars ({wide:,} of them {MERGE_PX} px or wider) for {ops:,} ops on {len(lanes)} lanes "
            f"drawn as {rects_drawn:,} rects, {merged_rects:,} merged ({merged_bars:,} bars, {mixed_rects:,} of "
            f"mixed kinds); all within {TOLERANCE_PX} px")


def labelled(label, check, *args):
    """check(*args), its failure message prefixed with label (which page, which view)."""
    try:
        return check(*args)
    except Failure as e:
        raise Failure(f"{label}: {e}") from None


def check_clean(page):
    expect(not page.console, "console: " + " | ".join(page.console[:5]))
    expect(page.rendered_ms is not None, "no data-rendered-ms on <html>: the script did not finish")


# --------------------------------------------------------------------------
# The checks

class Context:
    def __init__(self, args, chromium):
        self.overlap = args.overlap
        self.source = args.source_dir
        self.work = args.work_dir
        self.chromium = chromium
        self.pages = {}

    def cli(self, *args, ok=(0,)):
        done = subprocess.run([self.overlap, *args], capture_output=True, text=True)
        expect(done.returncode in ok, f"overlap {' '.join(args)} exited {done.returncode}: {done.stderr}")
        return done.stdout

    def out(self, name):
        return os.path.join(self.work, name)

    def example(self, *parts):
        return os.path.join(self.source, "examples", *parts)


def check_console_detection(ctx):
    """A page that logs an error and throws must be caught: if a Chromium
    upgrade changes its log format, this fails instead of every page
    silently passing."""
    path = ctx.out("broken.html")
    with open(path, "w") as f:
        f.write("<!DOCTYPE html><html><body><p>broken on purpose</p>\n"
                "<script>console.error('overlap-selfcheck-console-error');</script>\n"
                "<script>throw new Error('overlap-selfcheck-uncaught');</script>\n"
                "<script>document.documentElement.setAttribute('data-rendered-ms', '1');</script>\n"
                "</body></html>\n")
    page = render(ctx.chromium, path)
    text = "\n".join(page.console)
    expect("overlap-selfcheck-console-error" in text, f"console.error not seen; saw {page.console}")
    expect(re.search(r"Uncaught.*overlap-selfcheck-uncaught", text),
           f"uncaught exception not seen; saw {page.console}")
    return f"console.error and an uncaught Error both reported ({len(page.console)} messages)"


def check_seed004(ctx):
    """Seed 004's six ops where the ASCII timeline puts them."""
    spec = ctx.example("seed004.yaml")
    path = ctx.out("seed004.html")
    ctx.cli("simulate", spec, "--format", "html", "-o", path)
    ascii_ops, slots = parse_ascii(ctx.cli("simulate", spec, "--format", "ascii"))
    expect(len(ascii_ops) == 6, f"ASCII timeline has {len(ascii_ops)} ops, expected 6")
    page = render(ctx.chromium, path)
    ctx.pages["seed004"] = page  # the next check reuses it
    check_clean(page)

    expect(summary_row(page.dom, "Total time") == "4 units",
           f"Total time {summary_row(page.dom, 'Total time')!r}, expected '4 units'")
    expect(summary_row(page.dom, "Speedup") == "1.50x",
           f"Speedup {summary_row(page.dom, 'Speedup')!r}, expected '1.50x'")
    # 4 units in 1000 px: one ASCII slot is 250 px.
    expect(slots == 4, f"ASCII timeline has {slots} slots, expected 4")
    scale = WIDTH / slots

    labels = lane_labels(page.dom)
    expect(labels[:2] == ["Stream1", "Stream2"], f"first lanes {labels[:2]}, expected Stream1, Stream2")
    engine_of = {"h2d": "H2D engine", "kernel": "compute", "d2h": "D2H engine"}
    all_bars = bars(page.dom)
    stream_bars = [b for b in all_bars if labels[lane_of(b)].startswith("Stream")]
    expect(len(stream_bars) == 6, f"{len(stream_bars)} bars on stream lanes, expected 6")
    # 250 px each: far wider than the page ever merges.
    merged = [b for b in all_bars if "merged" in b["class"].split()]
    expect(not merged, f"{len(merged)} merged rects, e.g. {merged[:1]}: the bars are 250 px wide")
    expect(unit_label(page.dom) == "time (units)", f"unit label {unit_label(page.dom)!r}, expected 'time (units)'")
    data = page_data(open(path).read())

    for stream, kind, item, start, length in ascii_ops:
        x, width = LABEL + start * scale, length * scale
        for lane in (stream, engine_of[kind]):
            hits = [b for b in all_bars if labels[lane_of(b)] == lane and "k-" + kind in b["class"].split()
                    and abs(float(b["x"]) - x) <= TOLERANCE_PX
                    and abs(float(b["width"]) - width) <= TOLERANCE_PX]
            expect(len(hits) == 1, f"{kind} {item}: {len(hits)} bars on lane {lane} at x {x} width {width}")
            # The bar's op in the data is the ASCII's item, too.
            op = data["runs"][0]["ops"][int(hits[0]["data-i"])]
            expect(data["items"][op[1]] == item, f"bar at x {x} on {lane} is item {data['items'][op[1]]}")
    return (f"6 stream bars + 6 engine bars at the ASCII slots (250 px each), none merged, "
            f"'time (units)', Total time 4 units, Speedup 1.50x, rendered in {page.rendered_ms} ms")


def parse_ascii(text):
    """Ops of `--format ascii`'s overlapped part: (stream, kind, item, start, length) in time
    units, and the number of slots. Lines read "t=1: Stream1: Kernel:A | Stream2: H2D:B"; a
    header may give "each slot = 2.5 ms" (one unit when it does not)."""
    m = re.search(r"each slot = ([0-9.]+)", text)
    slot = float(m.group(1)) if m else 1.0
    kinds = {"H2D": "h2d", "Kernel": "kernel", "D2H": "d2h"}
    runs, slots = {}, 0  # (stream, label) -> [first slot, last slot]
    for line in text.splitlines():
        m = re.match(r"t=([0-9.]+): (.*)", line)
        if not m:
            continue
        n = round(float(m.group(1)) / slot)
        slots = max(slots, n + 1)
        for cell in m.group(2).split(" | "):
            stream, label = cell.split(": ", 1)
            first, last = runs.setdefault((stream, label), [n, n])
            expect(n in (last, last + 1), f"{label} on {stream} is not contiguous in the ASCII timeline")
            runs[stream, label][1] = n
    ops = []
    for (stream, label), (first, last) in runs.items():
        stage, item = label.split(":", 1)
        ops.append((stream, kinds[stage], item, first * slot, (last - first + 1) * slot))
    return ops, slots


def check_seed004_layout(ctx):
    page = ctx.pages.get("seed004")
    expect(page, "the seed 004 page was not rendered")
    check_clean(page)
    return check_layout(page, page_data(open(ctx.out("seed004.html")).read()))


def check_big(ctx):
    """100,002 ops on the h100 model, with a host span per call: small file,
    few rects, drawn fast, every bar where it belongs."""
    path = ctx.out("big.html")
    chunks = BIG_OPS // 3 + 1  # three ops a chunk
    ctx.cli("simulate", "--device", "h100", "--h2d", "30", "--kernel", "20", "--d2h", "30",
            "--chunks", str(chunks), "--streams", "4", "--format", "html", "-o", path)
    size = os.path.getsize(path)
    expect(size < BIG_MAX_BYTES, f"page is {size:,} bytes, limit {BIG_MAX_BYTES:,}")
    data = page_data(open(path).read())
    ops = sum(len(run["ops"]) for run in data["runs"])
    expect(ops >= BIG_OPS, f"only {ops} ops")

    # performance.now() at the end of the script is wall-clock time, and a
    # CI box has two cores: one slow run of several is noise, all of them slow
    # is not. The load average goes into the message so a failure on a busy
    # machine says so.
    tries = []
    for _ in range(BIG_TRIES):
        page = render(ctx.chromium, path)
        check_clean(page)
        tries.append(page)
        if page.rendered_ms < BIG_MAX_RENDER_MS:
            break
    best = min(tries, key=lambda p: p.rendered_ms)
    times = ", ".join(f"{p.rendered_ms:.0f} ms (chromium {p.wall_s:.1f} s wall)" for p in tries)
    expect(best.rendered_ms < BIG_MAX_RENDER_MS,
           f"rendered in {times}: none under {BIG_MAX_RENDER_MS} ms ({load_average()})")

    # The page merges narrow bars so that the browser has few rects to lay
    # out: 100,000 of them took it seconds.
    count = len(rects(best.dom))
    expect(count < BIG_MAX_RECTS, f"{count:,} rects in the page, limit {BIG_MAX_RECTS:,}")
    layout = check_layout(best, data)
    frame = first_frame(ctx, path, limit_ms=BIG_MAX_RENDER_MS)
    return (f"{ops:,} ops, {size:,} bytes, rendered in {times}; {frame}; {load_average()}; "
            f"{count:,} rects in all; {layout}")


def load_average():
    return "load average {:.1f} on {} CPUs".format(os.getloadavg()[0], os.cpu_count())


# The first frame after the page's script: a copy of the page with this added
# after it. --dump-dom takes the DOM soon after the load event; in practice
# the first animation frame's callback has usually run by then (on the
# 100k-op page in every run tried; on small pages in about 5 runs of 6),
# a second frame's has not. The callback runs before that frame's style,
# layout and paint, so it forces style and layout itself; the paint that
# follows is not seen. (The Paint Timing API's first-contentful-paint is the
# page's text, painted before the chart's script runs: no use here.)
FIRST_FRAME_SCRIPT = """<script>
/* added by tests/browser/check_reports.py to a copy of the page */
requestAnimationFrame(function () {
  var d = document.documentElement;
  d.setAttribute('data-frame-ms', performance.now().toFixed(1));
  document.getElementById('gantt').getBoundingClientRect();  /* style and layout, now */
  d.setAttribute('data-laid-out-ms', performance.now().toFixed(1));
});
</script>
"""


def with_script(path, out, script):
    """A copy of a page with a script added at the end of its body, after the page's own."""
    source = open(path).read()
    at = source.rfind("</body>")
    expect(at >= 0, f"{path}: no </body>")
    with open(out, "w") as f:
        f.write(source[:at] + script + source[at:])
    return out


def first_frame(ctx, path, limit_ms, tries=FRAME_TRIES):
    """When the first frame after the chart was drawn is laid out, in ms from
    navigation start: best of a few tries, the frame not being seen in all."""
    copy = with_script(path, ctx.out(os.path.basename(path).replace(".html", "-frame.html")), FIRST_FRAME_SCRIPT)
    seen = []
    for _ in range(tries):
        page = render(ctx.chromium, copy)
        check_clean(page)
        m = re.search(r'<html[^>]*\bdata-laid-out-ms="([0-9.]+)"', page.dom)
        if m:
            seen.append((float(m.group(1)), page.rendered_ms))
            if seen[-1][0] < limit_ms:
                break
    if not seen:
        return f"first frame not reached before Chromium's dump in {tries} tries"
    frame, script = min(seen)
    expect(frame < limit_ms, f"first frame laid out at {[f for f, _ in seen]} ms: none under {limit_ms} ms "
                             f"({load_average()})")
    return f"first frame after the chart laid out at {frame:.0f} ms (that run's script done at {script:.0f} ms)"


# A reader's zoom, on a copy of the page: the "first N chunks" button, or a
# drag across the chart (the page's own mouse handlers, fed synthetic events).
ZOOM_FIRST_SCRIPT = """<script>
/* added by tests/browser/check_reports.py to a copy of the page */
document.getElementById('chunks').value = '%d';
document.getElementById('zoom-first').click();
</script>
"""
DRAG_SCRIPT = """<script>
/* added by tests/browser/check_reports.py to a copy of the page: a drag from x %r to x %r of the chart */
(function () {
  var svg = document.getElementById('gantt'), box = svg.getBoundingClientRect(), at = [];
  function send(type, x) {
    var ev = new MouseEvent(type, {clientX: box.left + x * box.width / %d, clientY: box.top + 40,
                                   bubbles: true, cancelable: true});
    svg.dispatchEvent(ev);
    at.push(ev.clientX);
  }
  send('mousedown', %r);
  send('mouseup', %r);
  document.documentElement.setAttribute('data-drag',
      JSON.stringify({from: at[0], to: at[1], left: box.left, width: box.width}));
})();
</script>
"""
ZOOM_CHUNKS = 100
DRAG_FROM, DRAG_TO = 500.3, 509.7  # chart x: about 282 of 30,000 ms


def check_zoom(ctx):
    """Zoomed in: bars clipped to the view, those outside it not drawn, and
    narrow, merged and wide bars side by side (kernels 10 ms, copies 0.33 and
    0.17 ms)."""
    path = ctx.out("mixed.html")
    ctx.cli("simulate", "--h2d", "1000", "--kernel", "30000", "--d2h", "500", "--chunks", "3000",
            "--streams", "4", "--format", "html", "-o", path)
    data = page_data(open(path).read())
    v0, v1 = whole_run(data)
    results = []

    page = render(ctx.chromium, path)
    check_clean(page)
    results.append(f"whole run: {labelled('whole run', check_layout, page, data)}")

    copy = with_script(path, ctx.out("mixed-first.html"), ZOOM_FIRST_SCRIPT % ZOOM_CHUNKS)
    page = render(ctx.chromium, copy)
    check_clean(page)
    # The button's view: from 0 to the end of the last op of the first N chunks.
    end = max(float(o[3]) for run in data["runs"] for o in run["ops"] if 0 <= o[9] < ZOOM_CHUNKS)
    view = f"first {ZOOM_CHUNKS} chunks, [0, {end:g}]"
    results.append(f"{view}: {labelled(view, check_layout, page, data, (0.0, end))}")
    expect(page.layout["merged"] and page.layout["wide"], f"first {ZOOM_CHUNKS} chunks: {page.layout}: "
           f"the view should have merged and wide bars")

    width = LABEL + WIDTH + 40  # the chart's viewBox
    copy = with_script(path, ctx.out("mixed-drag.html"),
                       DRAG_SCRIPT % (DRAG_FROM, DRAG_TO, width, DRAG_FROM, DRAG_TO))
    page = render(ctx.chromium, copy)
    check_clean(page)
    m = re.search(r'<html[^>]*\bdata-drag="([^"]*)"', page.dom)
    expect(m, "the drag script did not run")
    drag = json.loads(html.unescape(m.group(1)))

    # Where the page puts the pointer in time (its timeAt, in the same order
    # of operations, so the same doubles).
    def time_at(client_x):
        x = (client_x - drag["left"]) * width / drag["width"]
        return v0 + (x - LABEL) * (v1 - v0) / WIDTH

    t0, t1 = time_at(drag["from"]), time_at(drag["to"])
    a, b = max(min(t0, t1), 0), max(t0, t1)
    expect(b - a > (v1 - v0) / 200, f"drag over [{a}, {b}] is too short for the page to zoom")
    view = f"dragged to [{a:.6g}, {b:.6g}]"
    results.append(f"{view}: {labelled(view, check_layout, page, data, (a, b))}")
    expect(page.layout["merged"] and page.layout["wide"] and page.layout["clipped"],
           f"dragged: {page.layout}: the view should have merged, wide and clipped bars")
    return "; ".join(results)


def check_findings(ctx):
    """`overlap check`'s pages: the findings' ops outlined, the others dimmed,
    a merged rect outlined when one of its ops is."""
    path = ctx.out("check-numba-racy.html")
    # Exit 1: the spec has a race, which is the point.
    ctx.cli("check", ctx.example("check", "numba-dependency-racy.yaml"), "--format", "html", "-o", path,
            ok=(0, 1))
    page = render(ctx.chromium, path)
    check_clean(page)
    data = page_data(open(path).read())
    expect(data["highlight"], "no findings to highlight")
    outlined = [b for b in bars(page.dom) if " hl" in " " + b["class"]]
    expect(outlined, "no highlighted bars")
    result = f"numba-dependency-racy: {len(outlined)} highlighted bars; {check_layout(page, data)}"

    # 120 short kernels in 3 runs of 40 on the compute engine, split by long
    # ones: one of them races with another. No example has so many ops.
    spec = ctx.out("many-racy.yaml")
    with open(spec, "w") as f:
        f.write(MANY_RACY_SPEC)
    path = ctx.out("check-many-racy.html")
    ctx.cli("check", spec, "--format", "html", "-o", path, ok=(1,))
    page = render(ctx.chromium, path)
    check_clean(page)
    data = page_data(open(path).read())
    expect(data["highlight"], "many-racy: no findings to highlight")
    layout = labelled("many-racy", check_layout, page, data)
    merged = [b["class"].split() for b in bars(page.dom) if "merged" in b["class"].split()]
    expect(any("hl" in c for c in merged) and any("dim" in c for c in merged),
           f"many-racy: merged rects {merged}: expected one outlined and one dimmed")
    return f"{result}; many-racy: {layout}"


def many_racy_spec():
    ops = []
    for stream in ("stream1", "stream2"):
        for run in range(3):
            for k in range(20):
                if run == 1 and k == 10:  # the race: stream2 reads y while stream1 may write it
                    access = "reads: [x], writes: [y]" if stream == "stream1" else "reads: [y], writes: [z]"
                else:
                    access = "reads: [x]"
                ops.append(f"  - {{op: kernel, stream: {stream}, label: short, time: 0.05, {access}}}")
            ops.append(f"  - {{op: kernel, stream: {stream}, label: long, time: 5, reads: [x]}}")
    return ("# written by tests/browser/check_reports.py\n"
            "name: many-racy\ntime_unit: ms\ndevice: unit\nstreams: [stream1, stream2]\n"
            "buffers: {x: 4 KiB, y: 4 KiB, z: 4 KiB}\nops:\n" + "\n".join(ops) + "\n  - {op: device_sync}\n")


MANY_RACY_SPEC = many_racy_spec()


def check_trace(ctx):
    """Recorded traces' pages (`trace --from`, no GPU): host spans on their own lane.
    In the second, copies on the H2D engine start out of issue order: the page
    must sort a lane's bars before it merges them."""
    results = []
    for name in ("clean_pipeline", "pageable_copy.repaired"):
        path = ctx.out(f"trace-{name.replace('_', '-').replace('.', '-')}.html")
        ctx.cli("trace", "--from", os.path.join(ctx.source, "tests", "fixtures", "traces", name + ".jsonl"),
                "--format", "html", "-o", path)
        page = render(ctx.chromium, path)
        check_clean(page)
        data = page_data(open(path).read())
        host = sum(len(run["host"]) for run in data["runs"])
        expect(host > 0, f"{name}: the trace has no host spans")
        results.append(f"{name}: {host} host spans; {labelled(name, check_layout, page, data)}")
    return "; ".join(results)


def attributes(tag):
    return {k: html.unescape(v) for k, v in re.findall(r'([\w-]+)="([^"]*)"', tag)}


def check_regions(page, data):
    """Each region in the whole-run view: a shade across the lanes and a strip
    under them, both where its start and end put them."""
    v0, v1 = whole_run(data)
    scale = WIDTH / (v1 - v0)
    shades = [attributes(t) for t in re.findall(r'<rect\b[^>]*class="region region-[^"]*"[^>]*>', page.dom)]
    strips = [attributes(t) for t in re.findall(r'<rect\b[^>]*class="region-strip [^"]*"[^>]*>', page.dom)]
    expect(len(shades) == len(strips) == len(data["regions"]),
           f"{len(shades)} shades and {len(strips)} strips for {len(data['regions'])} regions")
    for k, (name, start, end) in enumerate(data["regions"]):
        x0 = LABEL + (max(start, v0) - v0) * scale
        width = max((min(end, v1) - v0) * scale + LABEL - x0, 1.0)
        for what, r in (("shade", shades[k]), ("strip", strips[k])):
            expect(abs(float(r["x"]) - x0) <= TOLERANCE_PX and abs(float(r["width"]) - width) <= TOLERANCE_PX,
                   f"region {name!r} {what}: x {r['x']} width {r['width']}, expected {x0:.4f} {width:.4f}")
        expect(strips[k].get("data-g") == str(k), f"region {name!r}: data-g {strips[k].get('data-g')}")
    return [name for name, _, _ in data["regions"]]


def check_audit(ctx):
    """`overlap audit --from TRACE --format html` on recorded corpus traces: the
    measured timeline, the phases shaded and named under it, the findings
    listed (their ops outlined) and one lane per host thread."""
    results = []
    for name in ("simpleHyperQ.static", "simpleCallback.static"):
        path = ctx.out(f"audit-{name.replace('.', '-')}.html")
        ctx.cli("audit", "--from", os.path.join(ctx.source, "tests", "fixtures", "traces", "corpus", name + ".jsonl"),
                "--format", "html", "-o", path, ok=(0, 1))
        page = render(ctx.chromium, path)
        check_clean(page)
        data = page_data(open(path).read())
        regions = labelled(name, check_regions, page, data)
        expect("steady state" in regions, f"{name}: regions {regions}, no steady state")
        expect("verdict: " in page.dom, f"{name}: no verdict above the chart")
        findings = len(re.findall(r'<li data-group="\d+"', page.dom))
        expect(findings == len(data["highlight"]), f"{name}: {findings} findings listed, "
                                                    f"{len(data['highlight'])} highlight groups")
        threads = {h[4] for run in data["runs"] for h in run["host"]}
        layout = labelled(name, check_layout, page, data)
        results.append(f"{name}: regions {regions}, {findings} findings, {len(threads)} host thread lane(s); {layout}")
    return "; ".join(results)


def check_bench_report(ctx):
    """The H100 page of `overlap bench --report` kept in docs/ (a comparison
    page: measured and predicted lanes, and the sweep charts). The charts are
    static SVG: each point must sit where its values and the axes put it."""
    import math
    path = os.path.join(ctx.source, "docs", "bench-report.html")
    page = render(ctx.chromium, path)
    check_clean(page)
    source = open(path).read()
    data = page_data(source)
    expect([run["name"] for run in data["runs"]] == ["measured", "predicted"],
           f"runs {[run['name'] for run in data['runs']]}: expected measured and predicted")
    expect("Total error: <b>" in page.dom, "no total error")
    layout = labelled("bench report", check_layout, page, data)
    charts = re.findall(r'(<svg class="chart"[^>]*>)(.*?)</svg>', page.dom, re.S)
    expect(len(charts) == 2, f"{len(charts)} charts: expected one per workload")
    points = 0
    for svg, body in charts:
        a = attributes(svg)
        left, top, right, bottom = map(float, a["data-plot"].split())
        x0, x1 = map(float, a["data-x-domain"].split())
        y0, y1 = map(float, a["data-y-domain"].split())
        for tag in re.findall(r'<circle class="point"[^>]*>', body):
            c = attributes(tag)
            x, y = float(c["data-x"]), float(c["data-y"])
            cx = left + (math.log2(x) - x0) / (x1 - x0) * (right - left)
            cy = bottom - (y - y0) / (y1 - y0) * (bottom - top)
            expect(abs(float(c["cx"]) - cx) < 0.01 and abs(float(c["cy"]) - cy) < 0.01,
                   f"point {c['data-series']} at {x}: ({c['cx']}, {c['cy']}), expected ({cx:.2f}, {cy:.2f})")
            points += 1
        expect(re.search(r'<line class="level" data-level="[^"]*floor"', body), "a chart without its floor")
    return f"{points} sweep points on 2 charts; {layout}"


CHECKS = [
    ("console errors are detected", check_console_detection),
    ("seed 004 matches its ASCII timeline", check_seed004),
    ("seed 004: every bar where the data puts it", check_seed004_layout),
    ("100k-op page: size, render time, bars", check_big),
    ("zoomed: first chunks, and a drag", check_zoom),
    ("check page: findings highlighted", check_findings),
    ("traced page: ops and host spans", check_trace),
    ("audit page: phases, findings, host threads", check_audit),
    ("bench report (docs/, an H100 run): runs and charts", check_bench_report),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--overlap", required=True, help="the overlap CLI binary")
    parser.add_argument("--source-dir", required=True, help="the repository root (for examples/)")
    parser.add_argument("--work-dir", required=True, help="where the pages are written (kept for a look)")
    args = parser.parse_args()

    chromium = find_chromium()
    if not chromium:
        print("skipped: chromium not installed (scripts/install-deps.sh installs it)")
        return SKIP
    os.makedirs(args.work_dir, exist_ok=True)
    ctx = Context(args, chromium)

    passed = failed = 0
    for name, check in CHECKS:
        try:
            detail = check(ctx)
            print(f"PASS {name}: {detail}", flush=True)
            passed += 1
        except (Failure, subprocess.TimeoutExpired, OSError) as e:
            print(f"FAIL {name}: {e}", flush=True)
            failed += 1
        except Exception as e:  # a page that is not what the check expects (a missing attribute ...)
            print(f"FAIL {name}: {type(e).__name__}: {e}\n" + traceback.format_exc(), flush=True)
            failed += 1
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
