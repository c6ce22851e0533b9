#!/usr/bin/env bash
# Screenshots one of overlap's HTML reports with headless Chromium.
#
#   scripts/screenshot-report.sh HTML PNG [WIDTHxHEIGHT]
#
# WIDTH defaults to 1400 px (the chart is at most 1210 px wide, so it is drawn
# at full size). Without a HEIGHT the page is measured at that width first and
# the screenshot is as tall as the whole page. Chromium: scripts/install-deps.sh.
#
#   build/default/tools/overlap/overlap simulate examples/seed004.yaml --format html -o seed004.html
#   scripts/screenshot-report.sh seed004.html docs/seed004-report.png
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 HTML PNG [WIDTHxHEIGHT]" >&2
  exit 2
fi
html=$(realpath "$1")
png=$(realpath -m "$2")
size=${3:-1400x}
width=${size%x*}
height=${size#*x}
[[ "$width" =~ ^[0-9]+$ ]] || { echo "$0: bad size '$size' (WIDTHxHEIGHT or WIDTHx)" >&2; exit 2; }
[ -f "$html" ] || { echo "$0: no such file: $1" >&2; exit 2; }

chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
[ -n "$chromium" ] || { echo "$0: chromium not installed (scripts/install-deps.sh installs it)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Chromium's own flags; a fresh profile each run. Its log goes to the
# terminal only on failure.
run_chromium() {
  rm -rf "$tmp/profile"
  "$chromium" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
    --user-data-dir="$tmp/profile" "$@" 2>"$tmp/log" || { cat "$tmp/log" >&2; return 1; }
}

if ! [[ "$height" =~ ^[0-9]+$ ]]; then
  # Measure: a copy of the page that writes its laid-out height into the DOM
  # once its own script has drawn the chart (a short window, so the height is
  # the content's, not the window's).
  sed 's|</body>|<script>document.documentElement.setAttribute("data-page-height", document.documentElement.scrollHeight);</script></body>|' \
    "$html" >"$tmp/measure.html"
  height=$(run_chromium --window-size="$width,100" --dump-dom "file://$tmp/measure.html" |
           sed -n 's/.*data-page-height="\([0-9]*\)".*/\1/p' | head -1)
  [ -n "$height" ] || { echo "$0: could not measure the page's height" >&2; exit 1; }
fi

run_chromium --window-size="$width,$height" --screenshot="$png" "file://$html" >/dev/null
echo "$png: ${width}x${height}"
