#!/usr/bin/env python3
"""The host probe's all-GPU rates beside an independent measurement.

Each round pairs a model written by `overlap probe --all-devices` (its
"host" totals) with the JSON of bench/multi_gpu_copies run next to it in the
same call: one host thread per GPU, host clock, no overlap code. Prints each
round's ratios (probe over independent) for H2D, D2H and both ways, and the
median ratio over the rounds; --json writes them all.

  multi_gpu_compare.py --round MODEL.json COPIES.json [--round ...] [--json OUT]
"""

import argparse
import json
import statistics
import sys

DIRECTIONS = ("h2d", "d2h", "both")


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"multi_gpu_compare: {path}: {e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--round", nargs=2, action="append", metavar=("MODEL", "COPIES"), required=True)
    parser.add_argument("--json", help="write the rounds and medians here")
    parser.add_argument("--tolerance", type=float, default=0.05, help="largest |ratio - 1| that agrees")
    args = parser.parse_args()

    rounds = []
    for model_path, copies_path in args.round:
        model = load(model_path)
        copies = load(copies_path)
        host = model.get("host")
        if host is None:
            sys.exit(f"multi_gpu_compare: {model_path}: no host links (not written by probe --all-devices)")
        if copies.get("gpus") != len(host["gpus"]):
            sys.exit(f"multi_gpu_compare: {copies_path}: {copies.get('gpus')} GPUs, the model {len(host['gpus'])}")
        row = {"model": model_path, "copies": copies_path}
        for d in DIRECTIONS:
            probe = host[f"{d}_gbps"]
            independent = copies["together"][f"{d}_gbps"]
            row[d] = {
                "probe_gbps": probe,
                "independent_gbps": independent["median"],
                "independent_min": independent["min"],
                "independent_max": independent["max"],
                "ratio": probe / independent["median"],
            }
        rounds.append(row)

    print(f"{'round':>5}  " + "  ".join(f"{d + ' probe/indep (ratio)':>34}" for d in DIRECTIONS))
    for i, row in enumerate(rounds, 1):
        cells = [
            f"{row[d]['probe_gbps']:7.1f} / {row[d]['independent_gbps']:7.1f} ({row[d]['ratio']:.3f})"
            for d in DIRECTIONS
        ]
        print(f"{i:>5}  " + "  ".join(f"{c:>34}" for c in cells))
    medians = {d: statistics.median(r[d]["ratio"] for r in rounds) for d in DIRECTIONS}
    agree = {d: abs(medians[d] - 1.0) <= args.tolerance for d in DIRECTIONS}
    print("median ratio: " + ", ".join(f"{d} {medians[d]:.3f} ({'within' if agree[d] else 'outside'} "
                                       f"{args.tolerance:.0%})" for d in DIRECTIONS))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"rounds": rounds, "median_ratio": medians, "agree": agree, "tolerance": args.tolerance}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
