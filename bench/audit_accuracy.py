#!/usr/bin/env python3
"""How well `overlap audit` prices the traps it finds, and what tracing costs.

Accuracy: for each test app whose trap costs time (tests/apps: the legacy
default stream, a synchronous copy, pageable copies, allocation in the loop,
device-wide syncs, idle gaps), run the app and its --repaired twin under
`overlap audit --json`, alternating, --reps times each. The measured saving
is median(app's verdict.active_ms) - median(twin's verdict.active_ms) (the
device's active window, first to last device work), both measured under
the same tracer; the predicted saving is the median of the
planted finding's predicted_saving_ms. A prediction is "within 25%" when
predicted / measured lies in [0.75, 1.25]. The apps' own timings of their
main loops (the "ok <ms> ms" line they print) are shown beside, as a check
that does not depend on what the trace window holds.

Overhead: `overlap bench --json --quick` (its transfer-bound workload's best
configuration, median of its timed runs) alternately with and without
`overlap trace --output /dev/null --` in front, --overhead-reps times each;
the ratio of the medians should be at most 1.10.

It measures and reports; it does not judge: the exit code is 0 whatever the
figures are (2 for bad arguments). Python 3 standard library only.

  python3 bench/audit_accuracy.py --overlap build/h100/tools/overlap/overlap \\
      --apps build/h100/tests/apps --reps 3 [--json out.json]
"""

import argparse
import json
import os
import re
import shlex
import sys
import tempfile
import time

from audit_common import json_in, log, median, number, run

# (app, the rule it plants): the apps whose trap costs time.
TIMED_APPS = [
    ("legacy_default_stream", "legacy-default-stream"),
    ("synchronous_copy", "synchronous-copy"),
    ("pageable_copy", "pageable-async-copy"),
    ("alloc_in_loop", "implicit-synchronization"),
    ("device_sync", "device-synchronize"),
    ("idle_gap", "idle-gap"),
]
TOLERANCE = 0.25  # predicted / measured within 1 +- this
OVERHEAD_TARGET = 1.10
OK_LINE = re.compile(r"^app_\w+(?: repaired)?: ok ([0-9.]+) ms", re.MULTILINE)


# --- accuracy ----------------------------------------------------------------------------


def audit_once(overlap, app_path, args, rule, scratch, timeout, raw=None):
    """One audited run: its total, the planted finding's prediction, the app's own loop time.
    With raw, the trace is kept in that file."""
    report_path = os.path.join(scratch, "audit.json")
    if os.path.exists(report_path):
        os.remove(report_path)
    command = [overlap, "audit", "--json", "-o", report_path] + (["--raw", raw] if raw else []) + \
        ["--", app_path] + args
    code, out, err, _ = run(command, scratch, timeout)
    sample = {"command": " ".join(shlex.quote(c) for c in command), "audit_exit_code": code, "total_ms": None,
              "predicted_ms": None, "loop_ms": None, "rules": [], "app_exit_code": None, "error": None}
    loop = OK_LINE.search(out) or OK_LINE.search(err)
    if loop:
        sample["loop_ms"] = float(loop.group(1))
    report = None
    if os.path.exists(report_path):
        with open(report_path, encoding="utf-8", errors="replace") as f:
            report = json_in(f.read())
    if report is None:
        report = json_in(out)
    if report is None:
        tail = (err or out).strip().splitlines()[-3:]
        sample["error"] = "no audit report" + (" (timed out)" if code is None else f" (exit {code})") + \
            (": " + " | ".join(tail) if tail else "")
        return sample
    sample["app_exit_code"] = report.get("exit_code")
    verdict = report.get("verdict") or {}
    # The device's active window (first to last device work): the process's
    # set-up (context creation, ~100-300 ms and noisy) and final checks are
    # the same in app and twin, and would only add noise to the difference.
    for key in ("active_ms", "total_ms"):
        if isinstance(verdict.get(key), (int, float)):
            sample["total_ms"] = float(verdict[key])
            break
    findings = report.get("findings") or []
    sample["rules"] = sorted({f.get("rule", "?") for f in findings})
    predictions = [f.get("predicted_saving_ms") for f in findings if f.get("rule") == rule]
    predictions = [p for p in predictions if isinstance(p, (int, float))]
    if predictions:
        sample["predicted_ms"] = float(sum(predictions))  # one finding per rule; sum should there be several
    return sample


def measure_accuracy(overlap, apps_dir, reps, timeout, scratch, keep=None):
    rows = []
    for app, rule in TIMED_APPS:
        app_path = os.path.join(apps_dir, "app_" + app)
        if not os.access(app_path, os.X_OK):
            log(f"{app}: {app_path} is missing; skipped")
            rows.append({"app": app, "rule": rule, "error": f"{app_path} is missing"})
            continue
        trapped, repaired = [], []
        for rep in range(reps):
            for samples, args, what in ((trapped, [], "app"), (repaired, ["--repaired"], "twin")):
                raw = os.path.join(keep, f"{app}.{what}.{rep + 1}.jsonl") if keep else None
                s = audit_once(overlap, app_path, args, rule, scratch, timeout, raw)
                samples.append(s)
                shown = f"{s['total_ms']:.2f} ms" if s["total_ms"] is not None else s["error"]
                log(f"[{app} {what} {rep + 1}/{reps}] total {shown}; rules {', '.join(s['rules']) or 'none'}")
        app_ms = median(s["total_ms"] for s in trapped)
        twin_ms = median(s["total_ms"] for s in repaired)
        measured = app_ms - twin_ms if app_ms is not None and twin_ms is not None else None
        predicted = median(s["predicted_ms"] for s in trapped)
        ratio = predicted / measured if predicted is not None and measured and measured > 0 else None
        app_loop = median(s["loop_ms"] for s in trapped)
        twin_loop = median(s["loop_ms"] for s in repaired)
        rows.append({
            "app": app,
            "rule": rule,
            "app_total_ms": app_ms,
            "twin_total_ms": twin_ms,
            "measured_saving_ms": measured,
            "predicted_saving_ms": predicted,
            "predicted_over_measured": ratio,
            "within_25_percent": ratio is not None and abs(ratio - 1.0) <= TOLERANCE,
            "app_loop_ms": app_loop,
            "twin_loop_ms": twin_loop,
            "loop_saving_ms": app_loop - twin_loop if app_loop is not None and twin_loop is not None else None,
            "rule_found_every_run": all(rule in s["rules"] for s in trapped),
            "rules_in_app_runs": sorted({r for s in trapped for r in s["rules"]}),
            "rules_in_twin_runs": sorted({r for s in repaired for r in s["rules"]}),
            "app_runs": trapped,
            "twin_runs": repaired,
        })
    return rows


# --- overhead ----------------------------------------------------------------------------


def transfer_best_ms(report):
    """The transfer-bound workload's best Pipeline configuration, median ms."""
    for workload in (report or {}).get("workloads", []):
        if workload.get("name") == "transfer-bound":
            best = workload.get("best") or {}
            if isinstance(best.get("median_ms"), (int, float)):
                return float(best["median_ms"]), best.get("name")
    return None, None


def measure_overhead(overlap, bench_args, reps, timeout, scratch):
    result_path = os.path.join(scratch, "bench.json")
    bench = [overlap, "bench", "--json", "-o", result_path] + bench_args
    traced = [overlap, "trace", "--output", os.devnull, "--"] + bench
    runs = {"plain": [], "traced": []}
    for rep in range(reps):
        for kind, command in (("plain", bench), ("traced", traced)):
            if os.path.exists(result_path):
                os.remove(result_path)
            code, out, err, seconds = run(command, scratch, timeout)
            report = None
            if os.path.exists(result_path):
                with open(result_path, encoding="utf-8", errors="replace") as f:
                    report = json_in(f.read())
            best_ms, best_name = transfer_best_ms(report)
            sample = {"exit_code": code, "best_ms": best_ms, "best": best_name, "wall_s": seconds}
            if best_ms is None:
                tail = (err or out).strip().splitlines()[-3:]
                sample["error"] = f"no bench result (exit {code})" + (": " + " | ".join(tail) if tail else "")
            runs[kind].append(sample)
            shown = f"{best_ms:.3f} ms ({best_name})" if best_ms is not None else sample["error"]
            log(f"[overhead {kind} {rep + 1}/{reps}] transfer-bound best {shown}, {seconds:.1f} s wall")
    plain = median(s["best_ms"] for s in runs["plain"])
    traced_ms = median(s["best_ms"] for s in runs["traced"])
    wall_plain = median(s["wall_s"] for s in runs["plain"])
    wall_traced = median(s["wall_s"] for s in runs["traced"])
    return {
        "command": " ".join(shlex.quote(c) for c in bench),
        "plain_ms": plain,
        "traced_ms": traced_ms,
        "ratio": traced_ms / plain if plain and traced_ms is not None else None,
        "target": OVERHEAD_TARGET,
        "wall_plain_s": wall_plain,
        "wall_traced_s": wall_traced,
        "wall_ratio": wall_traced / wall_plain if wall_plain and wall_traced is not None else None,
        "runs": runs,
    }


# --- report ------------------------------------------------------------------------------


def table(rows, overhead, reps):
    lines = [f"overlap audit: predicted vs measured savings (medians of {reps} runs each, alternating app and twin)"]
    header = (f"{'app':<23} {'app ms':>8} {'twin ms':>8} {'measured':>9} {'predicted':>9} {'pred/meas':>9} "
              f"{'within 25%':>10}   {'own loop app/twin ms':>20}")
    lines += [header, "-" * len(header)]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['app']:<23} {r['error']}")
            continue
        within = "yes" if r["within_25_percent"] else "no"
        loops = f"{number(r['app_loop_ms'], 1)} / {number(r['twin_loop_ms'], 1)}"
        line = (f"{r['app']:<23} {number(r['app_total_ms']):>8} {number(r['twin_total_ms']):>8} "
                f"{number(r['measured_saving_ms']):>9} {number(r['predicted_saving_ms']):>9} "
                f"{number(r['predicted_over_measured']):>9} {within:>10}   {loops:>20}")
        notes = []
        if not r["rule_found_every_run"]:
            notes.append(f"{r['rule']} missing in some run")
        extra = [x for x in r["rules_in_app_runs"] if x != r["rule"]]
        if extra:
            notes.append("also " + ", ".join(extra))
        if r["rules_in_twin_runs"]:
            notes.append("twin: " + ", ".join(r["rules_in_twin_runs"]))
        lines.append(line + ("   [" + "; ".join(notes) + "]" if notes else ""))
    judged = [r for r in rows if "error" not in r]
    if judged:
        hits = sum(1 for r in judged if r["within_25_percent"])
        lines.append(f"within 25%: {hits} of {len(judged)}")
    if overhead is not None:
        lines.append("")
        lines.append(f"tracing overhead: {overhead['command']} (transfer-bound best configuration, median ms)")
        ratio = overhead["ratio"]
        verdict = "n/a" if ratio is None else ("met" if ratio <= OVERHEAD_TARGET else "missed")
        lines.append(f"  plain {number(overhead['plain_ms'], 3)} ms, traced {number(overhead['traced_ms'], 3)} ms: "
                     f"{number(ratio, 3)}x (target <= {OVERHEAD_TARGET:.2f}x: {verdict}); whole bench wall time "
                     f"{number(overhead['wall_plain_s'], 1)} s vs {number(overhead['wall_traced_s'], 1)} s "
                     f"({number(overhead['wall_ratio'], 2)}x)")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--overlap", required=True, help="the overlap CLI")
    parser.add_argument("--apps", required=True, help="the folder with the app_* test apps")
    parser.add_argument("--reps", type=int, default=3, help="audited runs of each app and of its twin (default 3)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    parser.add_argument("--overhead-reps", type=int, default=3, help="bench runs with and without tracing (default 3)")
    parser.add_argument("--bench-args", default="--quick",
                        help="arguments for `overlap bench` in the overhead part (default: --quick)")
    parser.add_argument("--keep", metavar="DIR", help="keep each audited run's trace in DIR (APP.app|twin.N.jsonl)")
    parser.add_argument("--skip-accuracy", action="store_true", help="measure the overhead only")
    parser.add_argument("--skip-overhead", action="store_true", help="measure the accuracy only")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds one command may run (default 600)")
    args = parser.parse_args()
    if args.reps < 1 or args.overhead_reps < 1:
        parser.error("--reps and --overhead-reps must be at least 1")
    if not os.access(args.overlap, os.X_OK):
        parser.error(f"--overlap: {args.overlap} is not an executable")
    if not args.skip_accuracy and not os.path.isdir(args.apps):
        parser.error(f"--apps: {args.apps} is not a folder")
    overlap = os.path.abspath(args.overlap)
    apps_dir = os.path.abspath(args.apps)

    rows, overhead = [], None
    with tempfile.TemporaryDirectory(prefix="audit_accuracy_") as scratch:
        if not args.skip_accuracy:
            if args.keep:
                os.makedirs(args.keep, exist_ok=True)
            rows = measure_accuracy(overlap, apps_dir, args.reps, args.timeout, scratch,
                                    os.path.abspath(args.keep) if args.keep else None)
        if not args.skip_overhead:
            overhead = measure_overhead(overlap, shlex.split(args.bench_args), args.overhead_reps, args.timeout,
                                        scratch)
    if args.json:
        result = {
            "tool": "bench/audit_accuracy.py",
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "overlap": overlap,
            "reps": args.reps,
            "tolerance": TOLERANCE,
            "accuracy": rows,
            "overhead": overhead,
        }
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    print(table(rows, overhead, args.reps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
