#!/usr/bin/env bash
# The results page at scale: writes the page of a synthetic results set (10,000 claims x 10 arms by
# default) through the same rendering a run uses (`examples/view_bench.rs`), then loads it in headless
# Chromium BENCH_ROUNDS times (default 5) and reports the page's size and, per load, the milliseconds
# from navigation start until the browser reached the page's script (the HTML read and parsed) and
# until the page was ready (data parsed, explorer built, first view drawn: the `claimflow-ready`
# performance mark, written to <body data-ready-ms>). Target: ready under 2,000 ms.
#
#   benches/view/run.sh              # 10,000 claims, 10 arms
#   benches/view/run.sh 2000 10      # any size
set -euo pipefail
cd "$(dirname "$0")/../.."
claims="${1:-10000}"
arms="${2:-10}"
rounds="${BENCH_ROUNDS:-5}"
command -v chromium >/dev/null || { echo "chromium is not installed (apt-get install chromium)" >&2; exit 1; }
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# The page is the same bytes whatever the profile; the debug build spares a release build.
cargo build --quiet --example view_bench
"${CARGO_TARGET_DIR:-target}/debug/examples/view_bench" "$scratch/index.html" "$claims" "$arms"
bytes=$(stat -c %s "$scratch/index.html")
echo "page: $claims claims x $arms arms, $bytes bytes ($((bytes / claims)) bytes a claim)"
for round in $(seq "$rounds"); do
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$scratch/profile" --dump-dom "file://$scratch/index.html" 2>/dev/null \
    | grep -o 'data-[a-z]*-ms="[0-9]*"' | tr '\n' ' ' | sed "s/^/load $round: /"
  echo
done
