"""What the audit's benchmark scripts share (audit_accuracy.py, audit_corpus.py):
running a command with a time limit, reading the JSON an `overlap audit`
printed, medians that skip missing samples, and progress on standard error.
Python 3 standard library only."""

import json
import statistics
import subprocess
import sys
import time


def log(message):
    """Progress for people, on standard error, at once."""
    print(message, file=sys.stderr, flush=True)


def median(values):
    """The median of the values that are not None, or None without any."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def number(value, digits=2):
    """A figure for a table: `digits` decimals, or n/a for a missing one."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def json_in(text):
    """The JSON object that starts the first line beginning with '{', or None."""
    if not text:
        return None
    at = 0 if text.startswith("{") else text.find("\n{")
    if at < 0:
        return None
    try:
        return json.loads(text[at:].lstrip("\n"))
    except json.JSONDecodeError:
        return None


def run(command, cwd, timeout, env=None):
    """Runs command with no standard input; returns (exit code, or None when it
    timed out or could not start, stdout, stderr, seconds)."""
    started = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              errors="replace", timeout=timeout, check=False)
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout or ""
        err = expired.stderr or ""
        return None, out if isinstance(out, str) else out.decode(errors="replace"), \
            err if isinstance(err, str) else err.decode(errors="replace"), time.perf_counter() - started
    except OSError as error:
        return None, "", str(error), time.perf_counter() - started
    return done.returncode, done.stdout, done.stderr, time.perf_counter() - started
