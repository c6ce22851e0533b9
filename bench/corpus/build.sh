#!/usr/bin/env bash
# Builds the audit corpus's CUDA programs (bench/corpus/manifest.json) on the
# GPU machine: each for sm_90 with the static cudart (the default) and with
# `-cudart shared`, plus the measurement-only patched copies the manifest
# names (static cudart). Builds run in parallel and go on past failures; each
# writes its own log. Python programs are not built: their imports are checked.
#
#   bench/corpus/build.sh SRC_DIR OUT_DIR [-j N] [--only ID[,ID...]] [--manifest FILE]
#
#   SRC_DIR  the folder scripts/corpus-layout.sh filled (corpus-src)
#   OUT_DIR  where binaries go: OUT_DIR/<id>/<variant>/<exe>, logs OUT_DIR/<id>/<variant>.log,
#            and a summary OUT_DIR/build-summary.json
#   -j N     parallel builds (default: the number of CPUs)
#
# Exit status: 0 (whatever built; read the summary), 2 for bad arguments.
set -uo pipefail

usage() { sed -n '2,16p' "$0"; }
[ $# -ge 2 ] || { usage >&2; exit 2; }
src=$1
out=$2
shift 2
jobs=$(nproc 2>/dev/null || echo 4)
only=""
manifest="$(cd "$(dirname "$0")" && pwd)/manifest.json"
while [ $# -gt 0 ]; do
  case "$1" in
    -j) jobs=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --manifest) manifest=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -d "$src" ] || { echo "build.sh: SRC_DIR $src is not a folder (run scripts/corpus-layout.sh)" >&2; exit 2; }
[ -f "$manifest" ] || { echo "build.sh: no manifest at $manifest" >&2; exit 2; }
command -v python3 >/dev/null || { echo "build.sh: python3 is needed" >&2; exit 2; }
mkdir -p "$out" || exit 2

SRC="$(cd "$src" && pwd)" OUT="$(cd "$out" && pwd)" JOBS="$jobs" ONLY="$only" MANIFEST="$manifest" python3 - <<'PY'
import concurrent.futures, json, os, shlex, subprocess, sys, time

src, out, manifest_path = os.environ["SRC"], os.environ["OUT"], os.environ["MANIFEST"]
jobs = max(1, int(os.environ.get("JOBS") or 1))
only = {s for s in os.environ.get("ONLY", "").split(",") if s}
with open(manifest_path, encoding="utf-8") as f:
    manifest = json.load(f)
nvcc = manifest["common_nvcc"]


def log(message):
    print(message, file=sys.stderr, flush=True)


tasks = []  # (id, variant, command or None, python module or None)
for program in manifest["programs"]:
    pid = program["id"]
    if only and pid not in only and program.get("binary_from") not in only:
        continue
    if program.get("binary_from"):
        continue  # the same binary as another entry
    if program.get("build") is None:
        for module in program.get("requires", []):
            tasks.append((pid, "python", None, module))
        continue
    source_dir = manifest["sources"][program["source"]]["dir"]
    for variant in program.get("variants", ["static"]):
        flags = nvcc + (" -cudart shared" if variant == "shared" else "")
        binary = os.path.join(out, pid, variant, program["exe"])
        command = program["build"].format(nvcc=flags, src=src, out=binary)
        tasks.append((pid, variant, command, None))
    for patch in program.get("patches", []):
        original = f"{src}/{source_dir}/{patch['file']}"
        patched = f"{src}/patched/{pid}/{source_dir}/{patch['file']}"
        binary = os.path.join(out, pid, "patched-" + patch["id"], program["exe"])
        command = program["build"].format(nvcc=nvcc, src=src, out=binary)
        if original not in command:
            log(f"build.sh: {pid}: the build command does not name {patch['file']}; patch {patch['id']} skipped")
            continue
        tasks.append((pid, "patched-" + patch["id"], command.replace(original, patched), None))


def build(task):
    pid, variant, command, module = task
    os.makedirs(os.path.join(out, pid), exist_ok=True)
    log_path = os.path.join(out, pid, variant + ".log")
    started = time.perf_counter()
    if command is None:
        command = f"{shlex.quote(sys.executable)} -c 'import {module}; print({module}.__version__)'"
    else:
        os.makedirs(os.path.join(out, pid, variant), exist_ok=True)
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, errors="replace")
    seconds = time.perf_counter() - started
    with open(log_path, "w", encoding="utf-8") as f:
        f.write(f"$ {command}\n{done.stdout}{done.stderr}\nexit {done.returncode} after {seconds:.1f} s\n")
    status = "ok" if done.returncode == 0 else "failed"
    tail = (done.stderr or done.stdout).strip().splitlines()[-1:] if done.returncode else []
    log(f"build.sh: {pid} [{variant}] {status} ({seconds:.1f} s){': ' + tail[0] if tail else ''}")
    return {"id": pid, "variant": variant, "status": status, "exit_code": done.returncode,
            "seconds": round(seconds, 2), "log": log_path, "command": command}


with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
    results = list(pool.map(build, tasks))
summary = {"tool": "bench/corpus/build.sh", "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "src": src, "results": results}
nvcc_version = subprocess.run(["bash", "-c", "nvcc --version | tail -2"], capture_output=True, text=True)
summary["nvcc"] = nvcc_version.stdout.strip()
with open(os.path.join(out, "build-summary.json"), "w", encoding="utf-8") as f:
    json.dump(summary, f, indent=1)
    f.write("\n")
bad = [r for r in results if r["status"] != "ok"]
print(f"built {len(results) - len(bad)} of {len(results)}" + (": failed " + ", ".join(f"{r['id']} [{r['variant']}]" for r in bad) if bad else ""))
PY
exit 0
