#!/usr/bin/env python3
"""Scores `overlap audit` on the corpus of public programs (issue 35).

For each program of bench/corpus/manifest.json (and each build variant:
static and shared cudart for CUDA programs, one run for Python ones), it runs
the program plain (its wall time, and its own printed timing where the truth
uses one) and under `overlap audit --json --raw FILE`, --reps times each,
alternating; then runs the fix of every fixable trap in the truth file
(an environment variable, other arguments or a measurement-only patched build)
and compares the measured saving with the audit's predicted_saving_ms.

Each finding is matched against the program's truth file
(bench/corpus/truth/<id>.json, written from the source before any audit run):
by rule, plus the regexes the truth gives over the finding's ops (kind, label,
API, stream, caller, text). A finding is
  true        it matches a required race or trap at or above its min_severity
  underrated  it matches one below its min_severity (not counted as found)
  acceptable  it matches an acceptable item at or below its max_severity
  false       otherwise (an error or warning); an unmatched info is only listed
Grouped findings ("count", "instances") are one finding.

Targets (issue 35): 0 false error-level findings; >= 90% of warning-level
findings true (acceptable ones count as true; the strict figure is shown
too); >= 90% of the true findings reported (a required item counts as
reported when found in at least half of the reps); the verdict right on
>= 90% of programs (verdict.bound against the truth's bound and
also_acceptable); the predicted saving within 25% of the measured one for
>= 80% of the fixable traps; audit wall time <= 1.10 x the plain run's; and
each report at most 20 findings.

It measures and reports; it does not judge: the exit code is 0 whatever the
scores are (2 for bad arguments). Python 3 standard library only. Progress
goes to standard error.

  python3 bench/audit_corpus.py --overlap build/h100/tools/overlap/overlap \\
      --corpus-bin build/corpus-bin --reps 3 --json corpus.json --keep-traces corpus-traces
  python3 bench/audit_corpus.py --merge part1.json part2.json --json corpus.json

Recorded traces (no GPU): --from-traces DIR audits every <id>.<variant>.jsonl
in DIR with `overlap audit --json --from` and scores the findings and
verdicts the same way (no wall times, no fix runs). With --baseline FILE it
exits 1 when a score is worse than FILE records (false errors above it,
precision, recall or right verdicts below it), so the CPU tests keep what
a device run proved; --write-baseline FILE records the current scores.

  python3 bench/audit_corpus.py --overlap build/default/tools/overlap/overlap \\
      --from-traces tests/fixtures/traces/corpus --baseline bench/corpus/baseline.json
"""

import argparse
import json
import math
import os
import re
import shlex
import shutil
import sys
import tempfile
import time

from audit_common import json_in, log, median, number, run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEVERITY = {"info": 0, "warning": 1, "error": 2}
TOLERANCE = 0.25
NOISE = 0.02  # of the baseline metric: savings this small are indistinguishable from zero
OVERHEAD_TARGET = 1.10
SCREEN = 20
TARGETS = {"false_errors": 0, "warning_precision": 0.90, "recall": 0.90, "verdict": 0.90, "savings": 0.80,
           "overhead": OVERHEAD_TARGET}
# Words that name each verdict bound, in the order they are tried.
BOUNDS = [("false serialization", ("serializ", "false dep", "queue")),
          ("launch latency", ("latency",)),
          ("copy engines", ("copy", "transfer", "dma")),
          ("host issue", ("issue",)),
          # The audit's "host synchronization" is the truth's "synchronization".
          ("synchronization", ("host synchronization", "synchron", "sync", "idle", "waiting")),
          ("compute", ("compute", "kernel", "sm "))]


def canonical_bound(text):
    """The canonical bound a verdict's text names, or the text itself."""
    if text is None:
        return None
    low = " " + str(text).lower() + " "
    for name, words in BOUNDS:
        if name in low:
            return name
    for name, words in BOUNDS:
        if any(w in low for w in words):
            return name
    return low.strip()


def tail(text, lines=3):
    return " | ".join((text or "").strip().splitlines()[-lines:])


# --- matching --------------------------------------------------------------------------


def op_strings(finding):
    """One descriptive string per op the finding names (instances' ops included)."""
    ops = list(finding.get("ops") or [])
    for instance in finding.get("instances") or []:
        if isinstance(instance, dict):
            ops.extend(instance.get("ops") or [])
    strings = []
    for op in ops:
        if isinstance(op, dict):
            strings.append(" ".join(str(op.get(k, "")) for k in ("kind", "label", "api", "stream", "caller", "text",
                                                                   "name", "kernel")))
        else:
            strings.append(str(op))
    return strings


def finding_text(finding):
    return " ".join(str(finding.get(k, "")) for k in ("message", "text", "fix"))


def matches(finding, rule, match):
    if finding.get("rule") != rule:
        return False
    match = match or {}
    strings = op_strings(finding) or [finding_text(finding)]
    for pattern in match.get("ops_all", []):
        if not any(re.search(pattern, s) for s in strings):
            return False
    any_of = match.get("ops_any", [])
    if any_of and not any(re.search(p, s) for p in any_of for s in strings):
        return False
    if match.get("text") and not re.search(match["text"], finding_text(finding) + " " + " ".join(strings)):
        return False
    if len(finding.get("streams") or []) < match.get("min_streams", 0):
        return False
    return True


def required_items(truth):
    """The races and traps a good audit reports: (id, rule, min severity, match, item)."""
    items = []
    for race in truth.get("races", []):
        if race.get("visible", True):
            items.append((race["id"], "race", race.get("min_severity", "warning"), race.get("match"), race))
    for trap in truth.get("traps", []):
        if trap.get("visible", True):
            items.append((trap["id"], trap["rule"], trap.get("min_severity", "warning"), trap.get("match"), trap))
    return items


def classify(report, truth):
    """Scores one audit report against the truth."""
    required = required_items(truth)
    acceptable = truth.get("acceptable", [])
    findings = report.get("findings") or []
    rows, found, underrated, predicted = [], set(), set(), {}
    for f in findings:
        severity = str(f.get("severity", "warning")).lower()
        rank = SEVERITY.get(severity, 1)
        saving = f.get("predicted_saving_ms")
        row = {"rule": f.get("rule"), "severity": severity, "count": f.get("count"),
               "predicted_saving_ms": saving if isinstance(saving, (int, float)) else None,
               "message": str(f.get("message", ""))[:200]}
        hit = next((item for item in required if matches(f, item[1], item[3])), None)
        if hit is not None:
            item_id, _, min_severity, _, _ = hit
            row["matched"] = item_id
            if rank >= SEVERITY.get(min_severity, 1):
                row["class"] = "true"
                found.add(item_id)
            else:
                row["class"] = "underrated"
                underrated.add(item_id)
            if row["predicted_saving_ms"] is not None:
                predicted[item_id] = predicted.get(item_id, 0.0) + row["predicted_saving_ms"]
        else:
            index = next((i for i, a in enumerate(acceptable) if matches(f, a["rule"], a.get("match"))), None)
            if index is not None:
                item = acceptable[index]
                row["matched"] = f"acceptable[{index}]"
                row["class"] = "acceptable" if rank <= SEVERITY.get(item.get("max_severity", "warning"), 1) \
                    else "false"
                if row["predicted_saving_ms"] is not None:
                    key = f"acceptable[{index}]"
                    predicted[key] = predicted.get(key, 0.0) + row["predicted_saving_ms"]
            else:
                row["class"] = "false" if rank >= 1 else "info"
        rows.append(row)
    verdict = report.get("verdict") or {}
    got = canonical_bound(verdict.get("bound"))
    truth_verdict = truth.get("verdict") or {}
    expected = [canonical_bound(b) for b in [truth_verdict.get("bound")] + list(truth_verdict.get("also_acceptable", []))
                if b]
    verdict_ok = None if truth_verdict.get("bound") is None else (got in expected)
    trace = report.get("trace") or {}
    return {
        "findings": rows,
        "found": sorted(found),
        "underrated": sorted(underrated - found),
        "false_errors": sum(1 for r in rows if r["class"] == "false" and r["severity"] == "error"),
        "warnings": {c: sum(1 for r in rows if r["severity"] == "warning" and r["class"] == c)
                     for c in ("true", "acceptable", "false", "underrated")},
        "errors_true": sum(1 for r in rows if r["severity"] == "error" and r["class"] in ("true", "acceptable")),
        "predicted": predicted,
        "verdict": verdict.get("bound"),
        "verdict_canonical": got,
        "verdict_ok": verdict_ok,
        "active_ms": next((verdict[k] for k in ("active_ms", "total_ms") if isinstance(verdict.get(k), (int, float))),
                          None),
        "n_findings": len(rows),
        "trace_complete": trace.get("complete"),
        "app_exit_code": report.get("exit_code"),
    }


# --- running -----------------------------------------------------------------------------


class Corpus:
    def __init__(self, args):
        self.args = args
        self.overlap = os.path.abspath(args.overlap)
        self.bin = os.path.abspath(args.corpus_bin)
        self.src = os.path.abspath(args.src)
        self.python = args.python
        self.scratch = tempfile.mkdtemp(prefix="audit_corpus_")
        self.keep = os.path.abspath(args.keep_traces) if args.keep_traces else None
        if self.keep:
            os.makedirs(self.keep, exist_ok=True)

    def command(self, program, variant, binary_variant=None, args=None):
        """The program's run command for a variant, or (None, why)."""
        run_list = list(program["run"])
        if args is not None:
            keep = 2 if run_list[0] == "{python}" else 1
            run_list = run_list[:keep] + list(args)
        binary = None
        if "{bin}" in run_list:
            owner = program.get("binary_from") or program["id"]
            binary = os.path.join(self.bin, owner, binary_variant or variant, program["exe"])
            if not os.access(binary, os.X_OK):
                return None, f"{binary} is missing (build it with bench/corpus/build.sh)"
        out = []
        for item in run_list:
            item = item.replace("{bin}", binary or "").replace("{src}", self.src).replace("{python}", self.python)
            out.append(item)
        return out, None

    def env(self, extra=None):
        env = dict(os.environ)
        env.update(extra or {})
        return env

    def plain(self, command, env):
        code, out, err, seconds = run(command, self.scratch, self.args.timeout, env)
        return {"exit_code": code, "wall_ms": seconds * 1000.0, "output": out + "\n" + err,
                "error": None if code == 0 else f"exit {code}: {tail(err or out)}"}

    def audit(self, command, env, raw_name):
        report_path = os.path.join(self.scratch, "audit.json")
        raw_path = os.path.join(self.scratch, "trace.jsonl")
        for path in (report_path, raw_path):
            if os.path.exists(path):
                os.remove(path)
        full = [self.overlap, "audit", "--json", "-o", report_path, "--raw", raw_path] + \
            shlex.split(self.args.audit_args or "") + ["--"] + command
        code, out, err, seconds = run(full, self.scratch, self.args.timeout, env)
        report = None
        if os.path.exists(report_path):
            with open(report_path, encoding="utf-8", errors="replace") as f:
                report = json_in(f.read())
        if report is None:
            report = json_in(out)
        kept = None
        if self.keep and raw_name and os.path.exists(raw_path):
            kept = os.path.join(self.keep, raw_name)
            shutil.copyfile(raw_path, kept)
        sample = {"audit_exit_code": code, "wall_ms": seconds * 1000.0, "report": report, "trace": kept,
                  "command": " ".join(shlex.quote(c) for c in full)}
        if report is None:
            sample["error"] = "no audit report" + (" (timed out)" if code is None else f" (exit {code})") + \
                (": " + tail(err or out) if (err or out) else "")
        return sample


def metric_of(measure, plain_sample, audit_sample=None):
    """The fix metric (ms) of one run."""
    kind = (measure or {}).get("metric", "wall")
    if kind == "regex":
        m = re.search(measure["regex"], plain_sample["output"]) if plain_sample else None
        return float(m.group(1)) * float(measure.get("scale_to_ms", 1.0)) if m else None
    if kind == "audit_active_ms":
        return audit_sample.get("active_ms") if audit_sample else None
    return plain_sample["wall_ms"] if plain_sample and plain_sample.get("exit_code") == 0 else None


def fixes_of(truth):
    """Items with a measurable fix: (key, item, fix, required?)."""
    out = []
    for trap in truth.get("traps", []):
        fix = trap.get("fix") or {}
        if fix.get("measure") and fix.get("kind") in ("env", "args", "patch"):
            out.append((trap["id"], trap, fix, True))
    for i, item in enumerate(truth.get("acceptable", [])):
        fix = item.get("fix") or {}
        if fix.get("measure") and fix.get("kind") in ("env", "args", "patch"):
            out.append((f"acceptable[{i}]", item, fix, False))
    return out


def score_program(corpus, program, truth, variant, reps):
    pid = program["id"]
    row = {"id": pid, "variant": variant, "language": program.get("language"), "reps": reps}
    command, why = corpus.command(program, variant)
    if command is None:
        row["error"] = why
        log(f"[{pid} {variant}] skipped: {why}")
        return row
    row["command"] = " ".join(shlex.quote(c) for c in command)
    env = corpus.env()
    if not corpus.args.no_warmup:
        warm = corpus.plain(command, env)
        log(f"[{pid} {variant}] warm-up {warm['wall_ms'] / 1000:.2f} s" + (f" ({warm['error']})" if warm["error"] else ""))
    plains, audits, scores = [], [], []
    for rep in range(reps):
        p = corpus.plain(command, env)
        plains.append(p)
        a = corpus.audit(command, env, f"{pid}.{variant}.{rep + 1}.jsonl")
        audits.append(a)
        s = classify(a["report"], truth) if a.get("report") else None
        scores.append(s)
        shown = a.get("error") or (f"{s['n_findings']} findings, verdict {s['verdict']!r}" if s else "no report")
        log(f"[{pid} {variant} {rep + 1}/{reps}] plain {p['wall_ms'] / 1000:.2f} s"
            f"{' (' + p['error'] + ')' if p['error'] else ''}, audit {a['wall_ms'] / 1000:.2f} s: {shown}")
    row["plain_wall_ms"] = median(p["wall_ms"] for p in plains if p["exit_code"] == 0)
    row["audit_wall_ms"] = median(a["wall_ms"] for a in audits if a.get("report"))
    row["overhead"] = row["audit_wall_ms"] / row["plain_wall_ms"] \
        if row["plain_wall_ms"] and row["audit_wall_ms"] is not None else None
    row["plain_errors"] = [p["error"] for p in plains if p["error"]]
    row["audit_errors"] = [a["error"] for a in audits if a.get("error")]
    row["traces"] = [a["trace"] for a in audits if a.get("trace")]
    valid = [s for s in scores if s is not None]
    row["scored_reps"] = len(valid)
    if all(p["exit_code"] != 0 for p in plains):
        row["error"] = "the program failed in every plain run: " + row["plain_errors"][0]
        return row
    if not valid:
        row["error"] = "no audit report in any rep" + (": " + row["audit_errors"][0] if row["audit_errors"] else "")
        return row
    need = math.ceil(len(valid) / 2)
    required = [item[0] for item in required_items(truth)]
    found_counts = {i: sum(1 for s in valid if i in s["found"]) for i in required}
    row["required"] = required
    row["found"] = [i for i in required if found_counts[i] >= need]
    row["found_counts"] = found_counts
    row["underrated"] = sorted({i for s in valid for i in s["underrated"]} - set(row["found"]))
    row["false_errors"] = max(s["false_errors"] for s in valid)
    row["warnings"] = {c: sum(s["warnings"][c] for s in valid) for c in ("true", "acceptable", "false", "underrated")}
    row["false_findings"] = sorted({f"{f['severity']} {f['rule']}" for s in valid for f in s["findings"]
                                    if f["class"] == "false"})
    row["unexpected_infos"] = sorted({f["rule"] for s in valid for f in s["findings"] if f["class"] == "info"})
    verdicts = [s["verdict_ok"] for s in valid]
    row["verdict_expected"] = [truth.get("verdict", {}).get("bound")] + truth.get("verdict", {}).get("also_acceptable", [])
    row["verdicts"] = [s["verdict"] for s in valid]
    row["verdict_ok"] = None if verdicts[0] is None else sum(1 for v in verdicts if v) >= need
    row["max_findings"] = max(s["n_findings"] for s in valid)
    row["fits_screen"] = row["max_findings"] <= SCREEN
    row["trace_complete"] = all(s["trace_complete"] is not False for s in valid)
    row["per_rep"] = [{k: s[k] for k in ("found", "false_errors", "warnings", "verdict", "verdict_ok", "n_findings",
                                         "predicted", "active_ms", "findings")} for s in valid]
    # Fixes: the measured saving against the predicted one.
    row["fixes"] = []
    for key, item, fix, is_required in fixes_of(truth):
        predictions = [s["predicted"].get(key) for s in valid]
        reported = any(p is not None for p in predictions) or any(
            key in s["found"] or any(f.get("matched") == key for f in s["findings"]) for s in valid)
        entry = {"item": key, "rule": item.get("rule"), "required": is_required, "fix": fix.get("description"),
                 "score_saving": bool(fix.get("score_saving", True)), "reported": reported,
                 "predicted_ms": median(predictions)}
        if corpus.args.no_fix or (not is_required and not reported):
            entry["skipped"] = "--no-fix" if corpus.args.no_fix else "not reported: nothing to compare"
            row["fixes"].append(entry)
            continue
        fix_command, why = corpus.command(program, variant, binary_variant=fix.get("binary"), args=fix.get("args"))
        if fix_command is None:
            entry["error"] = why
            row["fixes"].append(entry)
            continue
        fix_env = corpus.env(fix.get("env"))
        measure = fix["measure"]
        base_values = [metric_of(measure, p, s) for p, s in zip(plains, scores)]
        fix_values = []
        for rep in range(reps):
            fp = corpus.plain(fix_command, fix_env)
            fs = None
            if measure.get("metric") == "audit_active_ms":
                fa = corpus.audit(fix_command, fix_env, None)
                fs = classify(fa["report"], truth) if fa.get("report") else None
            fix_values.append(metric_of(measure, fp, fs))
            log(f"[{pid} {variant} fix {key} {rep + 1}/{reps}] {fix_values[-1] if fix_values[-1] is not None else 'n/a'}"
                f"{' (' + fp['error'] + ')' if fp['error'] else ''}")
        base, fixed = median(base_values), median(fix_values)
        entry.update({"command": " ".join(shlex.quote(c) for c in fix_command), "env": fix.get("env") or {},
                      "metric": measure.get("metric"), "baseline_ms": base, "fixed_ms": fixed,
                      "measured_ms": base - fixed if base is not None and fixed is not None else None})
        m, p = entry["measured_ms"], entry["predicted_ms"]
        if m is not None and p is not None:
            # Within 25% of the measured saving; a difference under 2% of the baseline
            # (run-to-run noise) also counts, so that "no saving" can be predicted right.
            entry["ratio"] = p / m if m > 0 else None
            entry["within_25_percent"] = abs(p - m) <= max(TOLERANCE * abs(m), NOISE * abs(base))
        elif m is not None and p is None and entry["reported"] is False:
            entry["within_25_percent"] = False
        row["fixes"].append(entry)
    return row


# --- report ------------------------------------------------------------------------------


def summarize(rows):
    scored = [r for r in rows if "error" not in r]
    w = {c: sum(r["warnings"][c] for r in scored) for c in ("true", "acceptable", "false", "underrated")}
    judged = w["true"] + w["acceptable"] + w["false"]
    required = sum(len(r["required"]) for r in scored)
    found = sum(len(r["found"]) for r in scored)
    verdicts = [r["verdict_ok"] for r in scored if r["verdict_ok"] is not None]
    savings = [f for r in scored for f in r["fixes"] if f["score_saving"] and not f.get("skipped")
               and (f["required"] or f["reported"])]
    within = sum(1 for f in savings if f.get("within_25_percent"))
    overheads = [r["overhead"] for r in scored if r.get("overhead") is not None]
    return {
        "programs": len({r["id"] for r in rows}),
        "runs_scored": len(scored),
        "runs_failed": [f"{r['id']} [{r['variant']}]: {r['error']}" for r in rows if "error" in r],
        "false_errors": sum(r["false_errors"] for r in scored),
        "warnings": w,
        "warning_precision": (w["true"] + w["acceptable"]) / judged if judged else None,
        "warning_precision_strict": w["true"] / (w["true"] + w["false"]) if w["true"] + w["false"] else None,
        "recall": found / required if required else None,
        "required": required,
        "found": found,
        "verdict_right": sum(1 for v in verdicts if v),
        "verdict_scored": len(verdicts),
        "verdict_fraction": sum(1 for v in verdicts if v) / len(verdicts) if verdicts else None,
        "savings_within": within,
        "savings_compared": len(savings),
        "savings_fraction": within / len(savings) if savings else None,
        "overhead_met": sum(1 for o in overheads if o <= OVERHEAD_TARGET),
        "overhead_measured": len(overheads),
        "overhead_max": max(overheads) if overheads else None,
        "screen_met": sum(1 for r in scored if r["fits_screen"]),
        "targets": TARGETS,
    }


def table(rows, summary):
    lines = ["overlap audit on the public-program corpus (issue 35)"]
    header = (f"{'program':<26} {'variant':<8} {'plain s':>7} {'audit x':>7} {'falseE':>6} {'W t/a/f':>9} "
              f"{'found':>6} {'verdict (expected)':<44} {'saving pred/meas ms':>20}")
    lines += [header, "-" * len(header)]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['id']:<26} {r['variant']:<8} {r['error']}")
            continue
        w = r["warnings"]
        verdict = r["verdicts"][0] if r["verdicts"] else None
        mark = "n/a" if r["verdict_ok"] is None else ("ok" if r["verdict_ok"] else "WRONG")
        expected = "/".join(str(b) for b in r["verdict_expected"] if b) or "not scored"
        vtext = f"{mark} {verdict} ({expected})"
        savings = []
        for f in r["fixes"]:
            if f.get("skipped") or not f["score_saving"]:
                continue
            savings.append(f"{number(f.get('predicted_ms'), 1)}/{number(f.get('measured_ms'), 1)}"
                           f"{'' if f.get('within_25_percent') else '!'}")
        lines.append(f"{r['id']:<26} {r['variant']:<8} {number((r['plain_wall_ms'] or 0) / 1000):>7} "
                     f"{number(r['overhead']):>7} {r['false_errors']:>6} "
                     f"{w['true']:>3}/{w['acceptable']}/{w['false']:<3} {len(r['found'])}/{len(r['required']):<4} "
                     f"{vtext[:44]:<44} {', '.join(savings) or '-':>20}")
        notes = []
        if r["false_findings"]:
            notes.append("false: " + ", ".join(r["false_findings"]))
        if r["underrated"]:
            notes.append("underrated: " + ", ".join(r["underrated"]))
        missing = [i for i in r["required"] if i not in r["found"]]
        if missing:
            notes.append("missed: " + ", ".join(missing))
        if not r["fits_screen"]:
            notes.append(f"{r['max_findings']} findings (> {SCREEN})")
        if not r["trace_complete"]:
            notes.append("trace incomplete")
        if r["plain_errors"]:
            notes.append("app failed: " + r["plain_errors"][0])
        if notes:
            lines.append(" " * 36 + "; ".join(notes))
    s = summary

    def frac(value):
        return "n/a" if value is None else f"{100 * value:.0f}%"

    lines.append("")
    lines.append(f"programs {s['programs']}, runs scored {s['runs_scored']}"
                 + (f", failed {len(s['runs_failed'])}" if s["runs_failed"] else ""))
    lines.append(f"false error-level findings: {s['false_errors']} (target 0)")
    lines.append(f"warning-level findings true: {frac(s['warning_precision'])} of "
                 f"{s['warnings']['true'] + s['warnings']['acceptable'] + s['warnings']['false']} "
                 f"(strict, acceptable ones left out: {frac(s['warning_precision_strict'])}; target >= 90%)")
    lines.append(f"true findings reported: {s['found']} of {s['required']} = {frac(s['recall'])} (target >= 90%)")
    lines.append(f"verdict right: {s['verdict_right']} of {s['verdict_scored']} = {frac(s['verdict_fraction'])} "
                 f"(target >= 90%)")
    lines.append(f"predicted saving within 25%: {s['savings_within']} of {s['savings_compared']} = "
                 f"{frac(s['savings_fraction'])} (target >= 80%)")
    lines.append(f"audit wall <= {OVERHEAD_TARGET:.2f} x plain: {s['overhead_met']} of {s['overhead_measured']} "
                 f"(worst {number(s['overhead_max'])}x)")
    lines.append(f"reports with at most {SCREEN} findings: {s['screen_met']} of {s['runs_scored']}")
    for failed in s["runs_failed"]:
        lines.append(f"  not scored: {failed}")
    return "\n".join(lines)


def score_traces(args):
    """Scores `overlap audit --from` on recorded traces; returns (rows, summary)."""
    rows = []
    names = sorted(n for n in os.listdir(args.from_traces) if n.endswith(".jsonl"))
    if not names:
        raise SystemExit(f"--from-traces: no .jsonl file in {args.from_traces}")
    for name in names:
        pid, _, variant = name[: -len(".jsonl")].rpartition(".")
        truth_path = os.path.join(args.truth, pid + ".json")
        if not os.path.exists(truth_path):
            rows.append({"id": pid, "variant": variant, "error": f"no truth file {truth_path}"})
            continue
        with open(truth_path, encoding="utf-8") as f:
            truth = json.load(f)
        command = [os.path.abspath(args.overlap), "audit", "--json", "--from", os.path.join(args.from_traces, name)] + \
            shlex.split(args.audit_args or "")
        code, out, err, seconds = run(command, None, args.timeout)
        report = json_in(out)
        if report is None:
            rows.append({"id": pid, "variant": variant, "error": f"no report (exit {code}): {tail(err or out)}"})
            continue
        s = classify(report, truth)
        required = [item[0] for item in required_items(truth)]
        expected = [truth.get("verdict", {}).get("bound")] + truth.get("verdict", {}).get("also_acceptable", [])
        rows.append({"id": pid, "variant": variant, "seconds": round(seconds, 2), "required": required,
                     "found": s["found"], "underrated": s["underrated"], "false_errors": s["false_errors"],
                     "warnings": s["warnings"], "verdict": s["verdict"], "verdict_expected": expected,
                     "verdict_ok": s["verdict_ok"], "n_findings": s["n_findings"],
                     "false_findings": sorted({f"{f['severity']} {f['rule']}" for f in s["findings"]
                                               if f["class"] == "false"})})
        log(f"[{pid} {variant}] {seconds:.1f} s: {s['n_findings']} findings, verdict {s['verdict']!r}")
    scored = [r for r in rows if "error" not in r]
    w = {c: sum(r["warnings"][c] for r in scored) for c in ("true", "acceptable", "false", "underrated")}
    judged = w["true"] + w["acceptable"] + w["false"]
    verdicts = [r["verdict_ok"] for r in scored if r["verdict_ok"] is not None]
    required = sum(len(r["required"]) for r in scored)
    summary = {
        "traces": len(rows), "failed": [f"{r['id']}: {r['error']}" for r in rows if "error" in r],
        "false_errors": sum(r["false_errors"] for r in scored), "warnings": w,
        "warning_precision": (w["true"] + w["acceptable"]) / judged if judged else 1.0,
        "recall": sum(len(r["found"]) for r in scored) / required if required else 1.0,
        "verdict_right": sum(1 for v in verdicts if v), "verdict_scored": len(verdicts),
        "max_findings": max((r["n_findings"] for r in scored), default=0),
    }
    return rows, summary


def trace_table(rows, summary):
    lines = [f"{'trace':<34} {'falseE':>6} {'W t/a/f':>9} {'found':>6}  verdict (expected)"]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['id'] + '.' + r['variant']:<34} {r['error']}")
            continue
        w = r["warnings"]
        mark = "n/a" if r["verdict_ok"] is None else ("ok" if r["verdict_ok"] else "WRONG")
        expected = "/".join(str(b) for b in r["verdict_expected"] if b) or "not scored"
        lines.append(f"{r['id'] + '.' + r['variant']:<34} {r['false_errors']:>6} "
                     f"{w['true']:>3}/{w['acceptable']}/{w['false']:<3} {len(r['found'])}/{len(r['required']):<4} "
                     f"{mark} {r['verdict']} ({expected})"
                     + (f"  false: {', '.join(r['false_findings'])}" if r["false_findings"] else "")
                     + (f"  missed: {', '.join(i for i in r['required'] if i not in r['found'])}"
                        if len(r["found"]) < len(r["required"]) else ""))
    s = summary
    lines.append("")
    lines.append(f"false error-level findings: {s['false_errors']}; warning-level true: "
                 f"{100 * s['warning_precision']:.0f}%; true findings reported: {100 * s['recall']:.0f}%; "
                 f"verdict right: {s['verdict_right']} of {s['verdict_scored']}; most findings in a report: "
                 f"{s['max_findings']}")
    return "\n".join(lines)


def worse_than(summary, baseline):
    """What in `summary` is worse than `baseline` records, as sentences."""
    worse = []
    if summary["failed"]:
        worse.append("traces not audited: " + "; ".join(summary["failed"]))
    if summary["false_errors"] > baseline["false_errors"]:
        worse.append(f"false error-level findings {summary['false_errors']} > {baseline['false_errors']}")
    for key in ("warning_precision", "recall"):
        if summary[key] < baseline[key] - 1e-9:
            worse.append(f"{key} {summary[key]:.3f} < {baseline[key]:.3f}")
    if summary["verdict_right"] < baseline["verdict_right"]:
        worse.append(f"right verdicts {summary['verdict_right']} < {baseline['verdict_right']}")
    if summary["max_findings"] > SCREEN:
        worse.append(f"a report has {summary['max_findings']} findings (> {SCREEN})")
    return worse


def device_name():
    code, out, _, _ = run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], None, 30)
    return out.strip().splitlines()[0] if code == 0 and out.strip() else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--overlap", help="the overlap CLI")
    parser.add_argument("--corpus-bin", help="bench/corpus/build.sh's OUT_DIR")
    parser.add_argument("--truth", default=os.path.join(ROOT, "bench", "corpus", "truth"), help="truth folder")
    parser.add_argument("--manifest", default=os.path.join(ROOT, "bench", "corpus", "manifest.json"))
    parser.add_argument("--src", default=os.path.join(ROOT, "corpus-src"), help="the laid-out sources (corpus-src)")
    parser.add_argument("--only", action="append", default=[], help="program ids (comma-separated; repeatable)")
    parser.add_argument("--variants", default="static,shared,python", help="variants to run (default all)")
    parser.add_argument("--reps", type=int, default=3, help="plain and audited runs of each program (default 3)")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE")
    parser.add_argument("--keep-traces", metavar="DIR", help="keep each audited run's raw trace in DIR")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one command may run (default 300)")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the Python programs")
    parser.add_argument("--audit-args", default="", help="extra arguments for overlap audit (e.g. '--device h100')")
    parser.add_argument("--no-fix", action="store_true", help="skip the fix runs (no saving comparison)")
    parser.add_argument("--no-warmup", action="store_true", help="skip the untimed first run of each program")
    parser.add_argument("--merge", nargs="+", metavar="JSON", help="combine earlier --json results and report")
    parser.add_argument("--from-traces", metavar="DIR", help="score recorded traces <id>.<variant>.jsonl in DIR")
    parser.add_argument("--baseline", metavar="FILE", help="with --from-traces: exit 1 when worse than FILE")
    parser.add_argument("--write-baseline", metavar="FILE", help="with --from-traces: record the scores in FILE")
    args = parser.parse_args()

    if args.from_traces:
        if not args.overlap or not os.access(args.overlap, os.X_OK):
            parser.error(f"--overlap: {args.overlap} is not an executable")
        if not os.path.isdir(args.from_traces):
            parser.error(f"--from-traces: {args.from_traces} is not a folder")
        rows, summary = score_traces(args)
        print(trace_table(rows, summary))
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump({"tool": "bench/audit_corpus.py", "from_traces": args.from_traces, "summary": summary,
                           "rows": rows}, f, indent=1)
                f.write("\n")
        if args.write_baseline:
            keep = {k: summary[k] for k in ("false_errors", "warning_precision", "recall", "verdict_right",
                                            "verdict_scored")}
            with open(args.write_baseline, "w", encoding="utf-8") as f:
                json.dump(keep, f, indent=1)
                f.write("\n")
        if args.baseline:
            try:
                with open(args.baseline, encoding="utf-8") as f:
                    baseline = json.load(f)
            except (OSError, json.JSONDecodeError) as e:
                parser.error(f"--baseline: {e}")
            worse = worse_than(summary, baseline)
            for line in worse:
                print("worse than the baseline: " + line)
            return 1 if worse else 0
        return 0

    if args.merge:
        rows = {}
        for path in args.merge:
            try:
                with open(path, encoding="utf-8") as f:
                    data = json.load(f)
            except (OSError, json.JSONDecodeError) as e:
                parser.error(f"--merge: {path}: {e}")
            for r in data.get("rows", []):
                rows[(r["id"], r["variant"])] = r
        rows = list(rows.values())
        summary = summarize(rows)
        print(table(rows, summary))
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump({"tool": "bench/audit_corpus.py", "merged": args.merge, "summary": summary, "rows": rows},
                          f, indent=1)
                f.write("\n")
        return 0

    if not args.overlap or not os.access(args.overlap, os.X_OK):
        parser.error(f"--overlap: {args.overlap} is not an executable")
    if not args.corpus_bin or not os.path.isdir(args.corpus_bin):
        parser.error(f"--corpus-bin: {args.corpus_bin} is not a folder")
    if args.reps < 1:
        parser.error("--reps must be at least 1")
    try:
        with open(args.manifest, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        parser.error(f"--manifest: {e}")
    only = {i for group in args.only for i in group.split(",") if i}
    known = {p["id"] for p in manifest["programs"]}
    if only - known:
        parser.error(f"--only: unknown program(s) {', '.join(sorted(only - known))}")
    variants = [v for v in args.variants.split(",") if v]

    corpus = Corpus(args)
    rows = []
    started = time.time()
    try:
        for program in manifest["programs"]:
            if only and program["id"] not in only:
                continue
            truth_path = os.path.join(args.truth, program["id"] + ".json")
            try:
                with open(truth_path, encoding="utf-8") as f:
                    truth = json.load(f)
            except (OSError, json.JSONDecodeError) as e:
                rows.append({"id": program["id"], "variant": "-", "error": f"truth: {e}"})
                log(f"[{program['id']}] no usable truth file: {e}")
                continue
            for variant in program.get("variants", ["static"]):
                if variant not in variants:
                    continue
                rows.append(score_program(corpus, program, truth, variant, args.reps))
    finally:
        shutil.rmtree(corpus.scratch, ignore_errors=True)
    summary = summarize(rows)
    print(table(rows, summary))
    if args.json:
        result = {"tool": "bench/audit_corpus.py", "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "device": device_name(), "overlap": os.path.abspath(args.overlap), "reps": args.reps,
                  "seconds": round(time.time() - started, 1), "tolerance": TOLERANCE, "summary": summary,
                  "rows": rows}
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
