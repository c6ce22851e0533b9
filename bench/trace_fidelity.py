#!/usr/bin/env python3
"""The same Pipeline run measured twice: by the Pipeline's own CUDA events
(recording::on) and by CUPTI under `overlap trace`. For each configuration
it prints the metrics of both over the device work (makespan, per-engine
busy time, the fraction of the makespan with two or more engines busy),
their relative difference, and span by span how much earlier the events
put each op's start and end (clocks aligned on the median end).

Configurations, 256 MiB each way: y = 2x + 1 with the Pipeline's own chunks
(4 MiB: ops of about 90 us) and with 32 MiB chunks (ops of 0.7 ms), and the
sin/cos x100 kernel with 32 MiB chunks (kernels of about 1.5 ms on these
random inputs). Modules load eagerly (CUDA_MODULE_LOADING=EAGER) so the
first kernel does not carry the module load.

    python3 bench/trace_fidelity.py --overlap build/h100/tools/overlap/overlap \
        --program build/h100/bench/recorded_pipeline [--json out.json] [--keep DIR]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ENGINES = ("H2D engine", "D2H engine", "compute")


def union_length(intervals):
    total, covered = 0.0, None
    for start, end in sorted(intervals):
        if covered is None or start > covered:
            total += end - start
            covered = end
        elif end > covered:
            total += end - covered
            covered = end
    return total


def metrics(timeline):
    spans = [s for s in timeline["spans"] if s["engine"] in ENGINES and s["end"] > s["start"]]
    start = min(s["start"] for s in spans)
    end = max(s["end"] for s in spans)
    result = {"makespan_ms": end - start}
    for engine in ENGINES:
        result[engine.split()[0].lower() + "_busy_ms"] = union_length([(s["start"], s["end"]) for s in spans if s["engine"] == engine])
    # Time with two or more engines busy, by sweeping the engines' busy edges.
    edges = []
    for engine in ENGINES:
        merged = []
        for s in sorted((s["start"], s["end"]) for s in spans if s["engine"] == engine):
            if merged and s[0] <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], s[1])
            else:
                merged.append([s[0], s[1]])
        for a, b in merged:
            edges += [(a, 1), (b, -1)]
    edges.sort()
    busy, previous, multi = 0, None, 0.0
    for at, step in edges:
        if previous is not None and busy >= 2:
            multi += at - previous
        busy += step
        previous = at
    result["multi_engine_fraction"] = multi / result["makespan_ms"]
    result["spans"] = len(spans)
    return result


CONFIGURATIONS = [
    ("transfer-bound, Pipeline's chunks", ["--mib", "256"]),
    ("transfer-bound, 32 MiB chunks", ["--mib", "256", "--chunk-mib", "32"]),
    ("sin/cos kernel, 32 MiB chunks", ["--mib", "256", "--chunk-mib", "32", "--kernel", "sincos"]),
]


def work_spans(timeline):
    return [s for s in timeline["spans"] if s["engine"] in ENGINES]


def span_offsets(recorded, traced):
    """Per engine: median of (events' time - CUPTI's time) for starts and ends, in us."""
    def by_lane(spans):
        lanes = {}
        for s in spans:
            lanes.setdefault((s["stream"], s["engine"]), []).append(s)
        return {k: sorted(v, key=lambda s: s["start"]) for k, v in lanes.items()}
    r, t = by_lane(work_spans(recorded)), by_lane(work_spans(traced))
    pairs = [(a, b, lane[1]) for lane in r if lane in t for a, b in zip(r[lane], t[lane])]
    if not pairs:
        return {}
    shift = statistics.median(b["end"] - a["end"] for a, b, _ in pairs)
    result = {}
    for engine in ENGINES:
        mine = [(a, b) for a, b, e in pairs if e == engine]
        if mine:
            result[engine] = {
                "start_us": 1e3 * statistics.median(a["start"] + shift - b["start"] for a, b in mine),
                "end_us": 1e3 * statistics.median(a["end"] + shift - b["end"] for a, b in mine),
                "traced_duration_us": 1e3 * statistics.median(b["end"] - b["start"] for _, b in mine),
            }
    return result


def compare(args, name, program_args, tmp, index):
    recorded_path = os.path.join(tmp, f"recorded-{index}.json")
    traced_path = os.path.join(tmp, f"traced-{index}.json")
    env = dict(os.environ, CUDA_MODULE_LOADING="EAGER")
    subprocess.run([args.overlap, "trace", "--format", "json", "-o", traced_path, "--", args.program] +
                   program_args + ["--timeline", recorded_path], check=True, env=env)
    recorded_timeline = json.load(open(recorded_path))
    traced_timeline = json.load(open(traced_path))
    if args.keep:
        import shutil
        shutil.copy(recorded_path, os.path.join(args.keep, f"fidelity-recorded-{index}.json"))
        shutil.copy(traced_path, os.path.join(args.keep, f"fidelity-traced-{index}.json"))
    recorded, traced = metrics(recorded_timeline), metrics(traced_timeline)
    rows = []
    for key in recorded:
        r, t = recorded[key], traced[key]
        rows.append({"metric": key, "recorded": r, "traced": t, "relative_difference": (t - r) / r if r else 0.0})
    offsets = span_offsets(recorded_timeline, traced_timeline)
    print(f"\n{name} ({' '.join(program_args)})")
    print(f"{'metric':<24}{'recorded (events)':>20}{'traced (CUPTI)':>18}{'difference':>12}")
    for row in rows:
        print(f"{row['metric']:<24}{row['recorded']:>20.4f}{row['traced']:>18.4f}"
              f"{100 * row['relative_difference']:>11.2f}%")
    for engine, o in offsets.items():
        print(f"  {engine:<11} events' start {o['start_us']:+7.1f} us, end {o['end_us']:+6.1f} us "
              f"(median; the op ran {o['traced_duration_us']:.1f} us)")
    return {"configuration": name, "arguments": program_args, "metrics": rows, "span_offsets": offsets}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--overlap", required=True)
    parser.add_argument("--program", required=True)
    parser.add_argument("--json")
    parser.add_argument("--keep", help="folder to keep the timelines in")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for index, (name, program_args) in enumerate(CONFIGURATIONS):
            results.append(compare(args, name, program_args, tmp, index))
    if args.json:
        json.dump(results, open(args.json, "w"), indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
