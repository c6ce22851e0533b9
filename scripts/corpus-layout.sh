#!/usr/bin/env bash
# Lays out the audit corpus's sources (bench/corpus/manifest.json) into the
# git-ignored corpus-src/ folder: for each source repository, the manifest's
# paths at the manifest's commit, taken with `git archive` from a fetched
# (bare) copy of the repository; then the measurement-only patched copies the
# manifest names (corpus-src/patched/<program>/...). Nothing here is tracked:
# the programs' code stays theirs.
#
#   scripts/corpus-layout.sh [--mirror DIR] [--git OWNER/NAME=GITDIR]... [--out DIR] [--manifest FILE]
#
#   --mirror DIR   where fetched repositories live as DIR/<owner>+<name>/repo
#                  (default /work/.mirror)
#   --git R=D      the git dir of repository R (owner/name), overriding --mirror
#   --out DIR      default: corpus-src at the repository root
#   --manifest F   default: bench/corpus/manifest.json
#
# Exit status: 0 when every source and patch was laid out, 1 otherwise.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mirror=/work/.mirror
out="$root/corpus-src"
manifest="$root/bench/corpus/manifest.json"
overrides=()
while [ $# -gt 0 ]; do
  case "$1" in
    --mirror) mirror=$2; shift 2 ;;
    --git) overrides+=("$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --manifest) manifest=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "corpus-layout: unknown argument $1" >&2; exit 2 ;;
  esac
done

command -v python3 >/dev/null || { echo "corpus-layout: python3 is needed" >&2; exit 2; }
mkdir -p "$out"

status=0
MIRROR="$mirror" OUT="$out" MANIFEST="$manifest" OVERRIDES="${overrides[*]-}" python3 - <<'PY' || status=$?
import json, os, re, shutil, subprocess, sys, tarfile, io

mirror, out, manifest_path = os.environ["MIRROR"], os.environ["OUT"], os.environ["MANIFEST"]
overrides = dict(o.split("=", 1) for o in os.environ.get("OVERRIDES", "").split() if "=" in o)
with open(manifest_path, encoding="utf-8") as f:
    manifest = json.load(f)

failed = False
for key, source in manifest["sources"].items():
    repo = source["repository"].rstrip("/").split("github.com/")[-1]
    git_dir = overrides.get(repo) or os.path.join(mirror, source["mirror"], "repo")
    dest = os.path.join(out, source["dir"])
    if not os.path.isdir(git_dir):
        print(f"corpus-layout: {repo}: no git dir at {git_dir} (fetch it, or pass --git {repo}=DIR)", file=sys.stderr)
        failed = True
        continue
    commit = source["commit"]
    archive = subprocess.run(["git", "--git-dir", git_dir, "archive", "--format=tar", commit] + source["paths"],
                             capture_output=True)
    if archive.returncode != 0:
        print(f"corpus-layout: {repo}@{commit[:12]}: git archive failed: {archive.stderr.decode(errors='replace').strip()}",
              file=sys.stderr)
        failed = True
        continue
    if os.path.isdir(dest):
        shutil.rmtree(dest)
    os.makedirs(dest)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(dest)
    with open(os.path.join(dest, ".corpus-source"), "w", encoding="utf-8") as f:
        f.write(f"{source['repository']} {commit}\n")
    count = sum(len(files) for _, _, files in os.walk(dest))
    print(f"corpus-layout: {repo}@{commit[:12]} -> {dest} ({count} files)")

patched_root = os.path.join(out, "patched")
if os.path.isdir(patched_root):
    shutil.rmtree(patched_root)
for program in manifest["programs"]:
    for patch in program.get("patches", []):
        source = manifest["sources"][program["source"]]
        src_file = os.path.join(out, source["dir"], patch["file"])
        dst_file = os.path.join(patched_root, program["id"], source["dir"], patch["file"])
        try:
            with open(src_file, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            print(f"corpus-layout: patch {program['id']}/{patch['id']}: {e}", file=sys.stderr)
            failed = True
            continue
        ok = True
        for r in patch["replace"]:
            text, n = re.subn(r["pattern"], r["with"], text)
            if n != r["count"]:
                print(f"corpus-layout: patch {program['id']}/{patch['id']}: /{r['pattern']}/ matched {n} times, "
                      f"expected {r['count']}", file=sys.stderr)
                ok = False
        if not ok:
            failed = True
            continue
        os.makedirs(os.path.dirname(dst_file), exist_ok=True)
        with open(dst_file, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"corpus-layout: patched copy for measurement only: {dst_file}")
sys.exit(1 if failed else 0)
PY
du -sh "$out" | sed 's/^/corpus-layout: size /'
exit $status
