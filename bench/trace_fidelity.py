#!/usr/bin/env python3
"""The same Pipeline run measured twice: by the Pipeline's own CUDA events
(recording::on) and by CUPTI under `overlap trace`. Prints the metrics of
both over the device work (makespan, per-engine busy time, the fraction of
the makespan with two or more engines busy) and their relative difference.

    python3 bench/trace_fidelity.py --overlap build/h100/tools/overlap/overlap \
        --program build/h100/bench/recorded_pipeline [--mib 256] [--json out.json]
"""
import argparse
import json
import os
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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--overlap", required=True)
    parser.add_argument("--program", required=True)
    parser.add_argument("--mib", default="256")
    parser.add_argument("--json")
    parser.add_argument("--keep", help="folder to keep both timelines in")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        recorded_path = os.path.join(tmp, "recorded.json")
        traced_path = os.path.join(tmp, "traced.json")
        subprocess.run([args.overlap, "trace", "--format", "json", "-o", traced_path, "--",
                        args.program, "--mib", args.mib, "--timeline", recorded_path], check=True)
        recorded = metrics(json.load(open(recorded_path)))
        traced = metrics(json.load(open(traced_path)))
        if args.keep:
            import shutil
            shutil.copy(recorded_path, os.path.join(args.keep, "fidelity-recorded.json"))
            shutil.copy(traced_path, os.path.join(args.keep, "fidelity-traced.json"))
    rows = []
    for key in recorded:
        r, t = recorded[key], traced[key]
        diff = (t - r) / r if r else 0.0
        rows.append({"metric": key, "recorded": r, "traced": t, "relative_difference": diff})
    print(f"{'metric':<24}{'recorded (events)':>20}{'traced (CUPTI)':>18}{'difference':>12}")
    for row in rows:
        print(f"{row['metric']:<24}{row['recorded']:>20.4f}{row['traced']:>18.4f}{100 * row['relative_difference']:>11.2f}%")
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
