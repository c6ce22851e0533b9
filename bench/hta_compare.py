#!/usr/bin/env python3
"""Per-rank communication/compute overlap and idle time of a multi-process job:
`overlap audit` against Meta's Holistic Trace Analysis (HolisticTraceAnalysis).

    hta_compare.py OVERLAP --round AUDIT.json KINETO_DIR [--round ...] [--json OUT]

Each round is two runs of the same job (examples/ddp_train.py under torchrun):
AUDIT.json is `overlap audit --json -- torchrun ...` (our CUPTI
tracer; torch.profiler cannot record CUDA under it, since CUPTI takes one
subscriber), KINETO_DIR the per-rank torch.profiler traces of a second run
(--profile). Three figures per rank:

  hta        HTA on KINETO_DIR: get_comm_comp_overlap and the idle share of
             get_temporal_breakdown (the kernels launched inside the
             profiler's steps, ProfilerStep#N), on the traces' nanosecond
             times (HTA_DISABLE_NS_ROUNDING=1); "HTA us" is HTA's default,
             every time rounded to whole microseconds, printed beside it
  same run   `overlap audit --from KINETO_DIR/rank*.json --range ProfilerStep`:
             our figures on the very traces HTA read
  cupti      AUDIT.json: our figures on our own trace of the other run

"same run" agrees when within 5% of HTA's (relative; idle shares under 1% of
the window also agree within 0.05 percentage points). "cupti" is another run,
so it is printed with its ratio and not judged. Exits 0 when every same-run
figure agrees, 1 otherwise, 77 when HTA is not installed.
"""
import argparse
import glob
import json
import logging
import math
import os
import statistics
import subprocess
import sys
import warnings


def hta_figures(folder, rounding=False):
    """HTA's figures per rank; without `rounding`, on the traces' nanosecond
    times (HTA_DISABLE_NS_ROUNDING=1), as both tools then see the same times."""
    from hta.trace_analysis import TraceAnalysis

    os.environ["HTA_DISABLE_NS_ROUNDING"] = "0" if rounding else "1"
    analysis = TraceAnalysis(trace_dir=folder)
    overlap = analysis.get_comm_comp_overlap(visualize=False)
    breakdown = analysis.get_temporal_breakdown(visualize=False)
    out = {}
    for _, row in overlap.iterrows():
        out.setdefault(int(row["rank"]), {})["overlap"] = float(row["comp_comm_overlap_pctg"]) / 100.0
    for _, row in breakdown.iterrows():
        # Unrounded: idle time over the window, both in microseconds.
        out.setdefault(int(row["rank"]), {})["idle"] = float(row["idle_time(us)"]) / float(row["kernel_time(us)"])
    return out


def ours(report):
    out = {}
    for process in report["processes"]:
        c = process["report"]["communication"]
        if process["rank"] is None or c is None:
            continue
        out[int(process["rank"])] = {"overlap": c["overlap_fraction"], "idle": c["idle_fraction"]}
    return out


def audit_from(overlap, folder):
    traces = sorted(glob.glob(os.path.join(folder, "rank*.json")))
    result = subprocess.run(
        [overlap, "audit", "--json", "--fail-on", "error", "--range", "ProfilerStep", "--from", *traces],
        capture_output=True, text=True, check=False)
    if result.returncode not in (0, 1):
        raise SystemExit(f"overlap audit --from {folder} failed ({result.returncode}): {result.stderr[-2000:]}")
    return json.loads(result.stdout)


def agrees(figure, ours_value, hta_value):
    if abs(ours_value - hta_value) <= 0.05 * abs(hta_value):
        return True
    return figure == "idle" and hta_value < 0.01 and abs(ours_value - hta_value) <= 0.0005


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("overlap", help="the overlap executable")
    parser.add_argument("--round", nargs=2, action="append", metavar=("AUDIT_JSON", "KINETO_DIR"), required=True)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    try:
        import hta  # noqa: F401
    except ImportError:
        print("skipped: HolisticTraceAnalysis is not installed (pip install HolisticTraceAnalysis)")
        return 77
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")

    rows = []
    for index, (audit_json, kineto) in enumerate(args.round, start=1):
        with open(audit_json) as f:
            cupti = ours(json.load(f))
        hta_rank = hta_figures(kineto)
        hta_rounded = hta_figures(kineto, rounding=True)
        same = ours(audit_from(args.overlap, kineto))
        for rank in sorted(hta_rank):
            for figure in ("overlap", "idle"):
                row = {"round": index, "rank": rank, "figure": figure, "hta": hta_rank[rank].get(figure),
                       "hta_us": hta_rounded.get(rank, {}).get(figure),
                       "same_run": same.get(rank, {}).get(figure), "cupti": cupti.get(rank, {}).get(figure)}
                row["same_run_agrees"] = (row["same_run"] is not None and row["hta"] is not None
                                          and agrees(figure, row["same_run"], row["hta"]))
                rows.append(row)

    def pct(value):
        return "-" if value is None else f"{100.0 * value:6.2f}%"

    def ratio(a, b):
        return "-" if a is None or not b else f"{a / b:6.3f}"

    print("round rank figure      HTA   HTA us   same run  ratio     CUPTI  ratio  same run agrees")
    for r in rows:
        print(f"{r['round']:5} {r['rank']:4} {r['figure']:7} {pct(r['hta'])} {pct(r['hta_us'])} {pct(r['same_run'])} "
              f"{ratio(r['same_run'], r['hta'])} {pct(r['cupti'])} {ratio(r['cupti'], r['hta'])}  "
              f"{'yes' if r['same_run_agrees'] else 'NO'}")
    summary = {}
    for figure in ("overlap", "idle"):
        for rank in sorted({r["rank"] for r in rows}):
            mine = [r for r in rows if r["figure"] == figure and r["rank"] == rank]

            def median(key, mine=mine):
                values = [r[key] for r in mine if r[key] is not None and not math.isnan(r[key])]
                return statistics.median(values) if values else None

            summary[f"{figure}_rank{rank}"] = {k: median(k) for k in ("hta", "hta_us", "same_run", "cupti")}
    print("medians over rounds:")
    for key, m in summary.items():
        print(f"  {key:14} HTA {pct(m['hta'])} (HTA us {pct(m['hta_us'])})  same run {pct(m['same_run'])}  "
              f"CUPTI {pct(m['cupti'])}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "medians": summary}, f, indent=2)
    return 0 if all(r["same_run_agrees"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
