#!/usr/bin/env bash
# On the lent GPU, issue 38's device checks:
#   scripts/bench-device-check.sh tests N   builds build/h100 (scripts/device-build.sh),
#                                           runs the GPU tests in both default-stream
#                                           builds, then N full `overlap bench` runs
#   scripts/bench-device-check.sh bench N   N more runs on an already built tree
# Each bench run writes $OUT/bench-K.json and $OUT/bench-K.txt (the text
# report); the verdicts are summed up on stdout. (carry .devdeps)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/.devdeps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
started=$SECONDS
mode=${1:-}
runs=${2:-1}
case "$mode" in
  tests)
    scripts/device-build.sh || exit 1
    for t in overlap_gpu_tests overlap_gpu_tests_per_thread; do
      build/h100/tests/$t --gtest_brief=1 >"$OUT/$t.log" 2>&1
      echo "$t rc=$? $(tail -1 "$OUT/$t.log")"
      grep -B2 -A8 "Failure" "$OUT/$t.log" | head -30
    done
    ;;
  bench) [ -x build/h100/tools/overlap/overlap ] || { echo "no build/h100: run 'tests' first" >&2; exit 2; } ;;
  *) echo "usage: scripts/bench-device-check.sh tests|bench N" >&2; exit 2 ;;
esac
first=$(($(ls "$OUT"/bench-*.json 2>/dev/null | wc -l) + 1))
for ((k = first; k < first + runs; ++k)); do
  t0=$SECONDS
  build/h100/tools/overlap/overlap bench --json -o "$OUT/bench-$k.json" 2>"$OUT/bench-$k.err"
  echo "bench $k rc=$? in $((SECONDS - t0)) s"
  python3 - "$OUT/bench-$k.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
failed = [v for v in d["verdicts"] if not v["pass"]]
print(f"  {len(d['verdicts']) - len(failed)} of {len(d['verdicts'])} verdicts pass")
for v in d["verdicts"]:
    mark = "PASS" if v["pass"] else "FAIL"
    print(f"  {mark} {v['name']}: {v['value']:.4f} (limit {v['limit']:.4f}){' caveat' if v.get('caveat') else ''}")
for w in d.get("workloads", []):
    c = w.get("link_floor", {}).get("chunked")
    if c:
        print(f"  {w['name']}: link floor {w['link_floor']['ms']:.3f} ms, chunked {c['ms']:.3f} ms "
              f"({c['ratio_to_link_floor']:.3f}x, {c['chunks']} chunks), one chunk's copies {c['chunk_copy_ms']}")
p = d.get("pageable", {})
if p:
    rows = " ".join(f"{v['kind'].replace('pageable_', '')}={v['median_ms']:.1f}[{v['min_ms']:.1f}..{v['max_ms']:.1f}]"
                    for v in p["variants"])
    print(f"  pageable: floor {p['floor_ms']:.2f} ms; {rows}")
    q = p.get("paired")
    if q:
        print("  pageable paired: " + ", ".join(f"{k} {s['median']:.3f} [{s['min']:.3f}..{s['max']:.3f}]"
                                               for k, s in q.items()))
g = d.get("graph", {}).get("dag")
if g:
    print("  dag: " + ", ".join(f"{k} {g[k]['median']:.1f} ms" for k in ("build_ms", "schedule_ms", "total_ms")
                                if isinstance(g.get(k), dict)))
PY
done
echo "done in $((SECONDS - started)) s"
