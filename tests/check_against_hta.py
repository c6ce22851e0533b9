#!/usr/bin/env python3
"""Checks `overlap audit --from TRACE --json`'s stream activity against Meta's
Holistic Trace Analysis (the `HolisticTraceAnalysis` package) on PyTorch
profiler traces: per stream, the idle time by cause (host wait, kernel wait,
other) and the queue length's mean and maximum, and the communication /
computation overlap.

    check_against_hta.py OVERLAP TRACE.json [TRACE.json ...]

HTA is run with its rounding to whole microseconds off (HTA_DISABLE_NS_ROUNDING=1),
so both tools see the same nanosecond times; a figure agrees when it is
within 5% (or both are under a nanosecond). Exits 0 when every figure
agrees, 1 when one does not, 77 (skipped) when HTA is not installed.
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import warnings


def hta_figures(trace):
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as folder:
        shutil.copy(trace, os.path.join(folder, os.path.basename(trace)))
        analysis = TraceAnalysis(trace_dir=folder)
        rank = next(iter(analysis.t.traces))  # the trace's distributedInfo.rank, else 0
        idle, _ = analysis.get_idle_time_breakdown(ranks=[rank], visualize=False)
        queues = analysis.get_queue_length_summary(ranks=[rank])
        overlap = analysis.get_comm_comp_overlap(visualize=False)
    by_stream = {}
    for _, row in idle.iterrows():
        by_stream.setdefault(int(row["stream"]), {})[row["idle_category"]] = float(row["idle_time"])
    queue = {}
    if queues is not None:
        for (rank, stream), row in queues.iterrows():
            queue[int(stream)] = (float(row[("queue_length", "mean")]), float(row[("queue_length", "max")]))
    value = float(overlap["comp_comm_overlap_pctg"].iloc[0]) if len(overlap) else math.nan
    return by_stream, queue, value


def agrees(ours, theirs):
    return abs(ours - theirs) <= max(0.05 * abs(theirs), 1e-3)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import hta  # noqa: F401
    except ImportError:
        print("skipped: HolisticTraceAnalysis is not installed (pip install HolisticTraceAnalysis)")
        return 77
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"  # read when HTA parses a trace
    warnings.filterwarnings("ignore")
    import logging

    logging.disable(logging.WARNING)
    overlap, traces = sys.argv[1], sys.argv[2:]
    failures = 0
    checked = 0
    for trace in traces:
        report = json.loads(subprocess.run([overlap, "audit", "--from", trace, "--json"], check=False,
                                           capture_output=True, text=True).stdout)
        activity = report["stream_activity"]
        idle, queue, overlap_pct = hta_figures(trace)
        name = os.path.basename(trace)
        for s in activity["idle"]:
            theirs = idle.get(s["stream"], {})
            for cause in ("host_wait", "kernel_wait", "other"):
                ours_us = s[f"{cause}_ms"] * 1000.0
                hta_us = theirs.get(cause, 0.0)
                ok = agrees(ours_us, hta_us)
                checked += 1
                failures += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {name} stream {s['stream']} {cause}: "
                      f"overlap {ours_us:.1f} us, HTA {hta_us:.1f} us")
        for q in activity["queue_length"]:
            mean, top = queue.get(q["stream"], (math.nan, math.nan))
            for what, ours, theirs in (("mean", q["mean"], mean), ("max", q["max"], top)):
                ok = agrees(ours, theirs)
                checked += 1
                failures += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {name} stream {q['stream']} queue length {what}: "
                      f"overlap {ours:.3f}, HTA {theirs:.3f}")
        ours_overlap = activity["communication_overlap"]
        if ours_overlap is None:
            ok = math.isnan(overlap_pct)
            shown = "none"
        else:
            ok = abs(ours_overlap * 100.0 - overlap_pct) <= 5.0
            shown = f"{ours_overlap * 100.0:.1f}%"
        checked += 1
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name} communication overlap: overlap {shown}, HTA {overlap_pct:.1f}%")
    print(f"{checked - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
