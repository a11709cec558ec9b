#!/bin/sh
# claimflow check, static stages, on anchored claims against the demo corpus (benches/README.md).
#
#   benches/check/run.sh            # 1,000 / 2,000 / 4,000 claims, ranges of 1, 4 and 8 commits
#
# The corpus is materialized as the demo pipeline does (a `rank-commits` step over corpus/demo);
# claims are written by make_claims.py; each check runs with `--cascade exec,a4` (no claim has a
# test or check, so `exec` passes every claim on at once) in a fresh workdir, then again (the
# repeated check). A model stage is never reached, so no request is made. Times are the median of
# BENCH_ROUNDS runs (default 5). Uses the release build unless CLAIMFLOW_BIN names one.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rounds=${BENCH_ROUNDS:-5}
scratch=$(mktemp -d)
[ -n "${BENCH_KEEP:-}" ] || trap 'rm -rf "$scratch"' EXIT

# CLAIMFLOW_BIN names another build to time (a debug build, an installed binary).
if [ -n "${CLAIMFLOW_BIN:-}" ]; then
    claimflow=$CLAIMFLOW_BIN
else
    cargo build --release --quiet --manifest-path "$root/Cargo.toml"
    claimflow="${CARGO_TARGET_DIR:-$root/target}/release/claimflow"
fi

cat > "$scratch/corpus.yaml" <<YAML
version: 1
name: bench-check
workdir: $scratch/workdir
results: $scratch/results
repos:
  - {name: demo, corpus: corpus/demo, branch: main}
steps:
  rank: {uses: rank-commits, with: {by: assertion-deletions, top: 40, min_score: 0}}
YAML
(cd "$root" && "$claimflow" -q run "$scratch/corpus.yaml")
repo=$(find "$scratch/workdir" -type d -name demo -path '*corpus*' | head -n 1)
[ -d "$repo" ] || { echo "the demo corpus was not materialized" >&2; exit 1; }
commits=$(git -C "$repo" rev-list --count main)
echo "demo corpus: $repo ($commits commits)"

# Median wall time of a command, in seconds.
median() {
    python3 - "$rounds" "$@" <<'PY'
import statistics, subprocess, sys, time
rounds, command = int(sys.argv[1]), sys.argv[2:]
times = []
for _ in range(rounds):
    start = time.perf_counter()
    code = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    times.append(time.perf_counter() - start)
    if code not in (0, 1):
        sys.exit(f"{command} exited {code}")
print(f"{statistics.median(times):.3f}")
PY
}

printf '%-8s %-8s %-10s %-10s %s\n' claims range first_s repeat_s "held/flipped/none"
for span in 1 4 8; do
    [ "$span" -lt "$commits" ] || continue
    for count in 1000 2000 4000; do
        python3 "$here/make_claims.py" "$repo" main "$count" "$scratch/claims-$count.jsonl"
        work="$scratch/check-$span-$count"
        check="$claimflow -q check --repo $repo --from main~$span --to main --cascade exec,a4 --workdir $work $scratch/claims-$count.jsonl"
        # First: a fresh workdir each round.
        first=$(median sh -c "rm -rf $work; $check")
        repeat=$(median sh -c "$check")
        counts=$($check | python3 -c 'import json,sys,collections; c=collections.Counter(json.loads(l)["verdict"] for l in sys.stdin); print("%d/%d/%d" % (c["held"], c["flipped"], c["none"]))' || true)
        printf '%-8s %-8s %-10s %-10s %s\n' "$count" "main~$span" "$first" "$repeat" "$counts"
    done
done
