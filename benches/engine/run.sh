#!/usr/bin/env bash
# The engine benchmark: the same fan-out DAG under claimflow, ninja, DVC and Snakemake, side by side.
#
# usage: benches/engine/run.sh [N]        N items in the fan-out (default 5000)
#
# Each tool runs the DAG once (timed), then its no-op re-run and its dry run are timed
# (median of BENCH_RUNS runs, default 3, after BENCH_WARMUP warm-ups, default 1; hyperfine when
# installed, else timer.py). The script exits
# non-zero only on an error — a tool failing, a "no-op" that still had work, outputs that differ — never
# on a missed target: targets are reported.
#
# Environment: CLAIMFLOW_CACHE_DIR (default ~/.cache/claimflow) holds the ninja/DVC/Snakemake venv under
# bench/; BENCH_PYTHON picks the interpreter for that venv (default python3); BENCH_RUNS the timed runs;
# BENCH_JOBS the parallelism given to claimflow and Snakemake (default 2); BENCH_DVC_FIRST=repro|seed
# how DVC's first run is done (default: repro up to 300 items, else seed); BENCH_SNAKEMAKE_FIRST=
# run|batches the same for Snakemake (default: run up to 1,000 items); BENCH_KEEP=1 keeps the
# scratch directory; BENCH_SLOW_MAX (default 10000) is the largest N at which DVC and Snakemake run at
# all (above it they would take hours: only claimflow and ninja are timed, and the report says so);
# BENCH_CLAIMFLOW times a given claimflow binary instead of building one; CARGO_TARGET_DIR is honoured
# when finding the release binary. First runs of claimflow and ninja: BENCH_FIRST_ROUNDS rounds
# (default 3), each in a fresh copy of the project, alternating which tool goes first, the median
# reported; before them the filesystem is left quiet for BENCH_SETTLE seconds (default 65; 0: none).
set -euo pipefail

count=${1:-5000}
if ! [[ $count =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [N]   (N: item count, a positive integer)" >&2
    exit 2
fi
runs=${BENCH_RUNS:-3}
warmup=${BENCH_WARMUP:-1}
# `dvc repro` rewrites dvc.lock after every stage (O(N^2)): past a few hundred stages its first run
# takes hours here, so above 300 items seed_dvc.py does the `gen` stages' first run (see its doc).
dvc_first=${BENCH_DVC_FIRST:-$(((count <= 300)) && echo repro || echo seed)}
if [[ $dvc_first != repro && $dvc_first != seed ]]; then
    echo "BENCH_DVC_FIRST must be repro or seed, not $dvc_first" >&2
    exit 2
fi
# One `snakemake` call over N jobs spends per-job time that grows with N: above 1,000 items
# seed_snakemake.sh builds the outputs 500 targets per call (see its doc).
snakemake_first=${BENCH_SNAKEMAKE_FIRST:-$(((count <= 1000)) && echo run || echo batches)}
if [[ $snakemake_first != run && $snakemake_first != batches ]]; then
    echo "BENCH_SNAKEMAKE_FIRST must be run or batches, not $snakemake_first" >&2
    exit 2
fi
jobs=${BENCH_JOBS:-2}
settle=${BENCH_SETTLE:-65}
if ! [[ $settle =~ ^[0-9]+$ ]]; then
    echo "BENCH_SETTLE must be a whole number of seconds, not $settle" >&2
    exit 2
fi
first_rounds=${BENCH_FIRST_ROUNDS:-3}
if ! [[ $first_rounds =~ ^[1-9][0-9]*$ ]]; then
    echo "BENCH_FIRST_ROUNDS must be a positive whole number, not $first_rounds" >&2
    exit 2
fi
slow_max=${BENCH_SLOW_MAX:-10000}
if ((count <= slow_max)); then slow=1; else slow=0; fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${CLAIMFLOW_CACHE_DIR:-$HOME/.cache/claimflow}/bench
python=${BENCH_PYTHON:-python3}

# Pinned so numbers from different days compare; bump deliberately.
dvc_version=3.67.1
snakemake_version=9.27.1
ninja_version=1.13.2

log() { printf '[bench] %s\n' "$*" >&2; }

# --- the ninja, DVC and Snakemake venv, installed once -------------------------------------------
venv=$cache/venv
wanted="dvc==$dvc_version snakemake==$snakemake_version ninja==$ninja_version"
if [[ ! -x $venv/bin/python || "$(cat "$venv/.installed" 2>/dev/null)" != "$wanted" ]]; then
    log "installing $wanted into $venv"
    mkdir -p "$cache"
    [[ -x $venv/bin/python ]] || "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check $wanted
    echo "$wanted" > "$venv/.installed"
fi
dvc=$venv/bin/dvc
snakemake=$venv/bin/snakemake
ninja=$venv/bin/ninja
# DVC would otherwise start a background process to report usage; nothing here may phone home.
export DVC_NO_ANALYTICS=1

# --- claimflow, release build (or BENCH_CLAIMFLOW, a binary built already) -------------------------
if [[ -n ${BENCH_CLAIMFLOW:-} ]]; then
    built=$BENCH_CLAIMFLOW
else
    log "building claimflow (release)"
    cargo build --release --quiet --manifest-path "$repo/Cargo.toml"
    built=${CARGO_TARGET_DIR:-$repo/target}/release/claimflow
fi
[[ -x $built ]] || { echo "no binary at $built" >&2; exit 1; }

# --- the scratch projects ------------------------------------------------------------------------
scratch=$(mktemp -d "${TMPDIR:-/tmp}/claimflow-bench.XXXXXX")
if [[ ${BENCH_KEEP:-0} == 1 ]]; then
    log "keeping $scratch"
else
    trap 'rm -rf "$scratch"' EXIT
fi
# A copy, so a rebuild while the benchmark runs cannot swap the binary under it.
claimflow=$scratch/bin/claimflow
mkdir -p "$scratch/bin"
cp "$built" "$claimflow"
"$python" "$here/generate.py" "$scratch" "$count"
mkdir -p "$scratch/times" "$scratch/logs"
if ((slow)); then
    (cd "$scratch/dvc" && "$dvc" init --no-scm --quiet && "$dvc" config core.analytics false)
else
    log "$count items > BENCH_SLOW_MAX=$slow_max: DVC and Snakemake are left out"
fi

if command -v hyperfine > /dev/null; then
    timer=hyperfine
else
    timer=timer.py
fi

# measure NAME DIR COMMAND...: times COMMAND (run in DIR) $runs times after $warmup warm-ups, writing
# the wall seconds of each run, one a line, to $scratch/times/NAME and the mean CPU seconds to NAME.cpu.
measure() {
    local name=$1 dir=$2
    shift 2
    log "timing $name: $*"
    if [[ $timer == hyperfine ]]; then
        local quoted
        quoted=$(printf '%q ' "$@")
        (cd "$dir" && hyperfine --style none -N --warmup "$warmup" --runs "$runs" \
            --export-json "$scratch/times/$name.json" "$quoted" > /dev/null)
        "$python" -c 'import json, sys
result = json.load(open(sys.argv[1]))["results"][0]
open(sys.argv[2], "w").writelines(f"{t}\n" for t in result["times"])
open(sys.argv[2] + ".cpu", "w").write(str(result["user"] + result["system"]) + "\n")' \
            "$scratch/times/$name.json" "$scratch/times/$name"
    else
        (cd "$dir" && "$python" "$here/timer.py" "$scratch/times/$name" "$runs" "$warmup" - -- "$@")
    fi
}

# first NAME DIR COMMAND...: runs COMMAND once in DIR, timed; its output goes to a log.
first() {
    local name=$1 dir=$2
    shift 2
    log "first run, $name: $* (log: $scratch/logs/$name.log)"
    if ! (cd "$dir" && "$python" "$here/timer.py" "$scratch/times/$name" 1 0 \
        "$scratch/logs/$name.log" -- "$@"); then
        echo "$name failed; the end of its log:" >&2
        tail -n 30 "$scratch/logs/$name.log" >&2
        exit 1
    fi
}

cf=$scratch/claimflow
nj=$scratch/ninja
dv=$scratch/dvc
sm=$scratch/snakemake

# claimflow's and ninja's first runs, BENCH_FIRST_ROUNDS of each: every round in its own fresh copy
# of the project (copied now, before anything ran), the last in $cf and $nj, which the no-op timings
# then use; report.py pools the rounds' times. Nothing is deleted between rounds, and the order alternates, so neither tool runs in the
# other's wake more than the other does.
round_dirs=()
for ((round = 1; round < first_rounds; round++)); do
    mkdir -p "$scratch/first-$round"
    cp -R "$cf" "$nj" "$scratch/first-$round/"
    round_dirs+=("$scratch/first-$round")
done
round_dirs+=("$scratch")
# ext4 without a journal will not reuse an inode deleted in the last 60 s (recently_deleted() in its
# inode allocator) and reads past each such one: a first run started soon after many deletions (a
# previous benchmark's scratch, a clean) pays for them, measured here at 4.6 s against 3.0 s for the
# same 5,000 items. Write the deletions back and let them age before the first runs.
if ((settle > 0)); then
    log "leaving the filesystem quiet for $settle s (BENCH_SETTLE)"
    sync
    sleep "$settle"
fi
for ((round = 1; round <= first_rounds; round++)); do
    dir=${round_dirs[round - 1]}
    if ((round % 2)); then
        first "claimflow_first.$round" "$dir/claimflow" "$claimflow" run pipeline.yaml -j "$jobs"
        first "ninja_first.$round" "$dir/ninja" "$ninja" -j "$jobs"
    else
        first "ninja_first.$round" "$dir/ninja" "$ninja" -j "$jobs"
        first "claimflow_first.$round" "$dir/claimflow" "$claimflow" run pipeline.yaml -j "$jobs"
    fi
done
if ((slow)); then
    if [[ $dvc_first == repro ]]; then
        first dvc_first "$dv" "$dvc" repro
    else
        first dvc_first "$dv" sh -c "$(printf '%q ' "$python" "$here/seed_dvc.py" .) && $(printf '%q' "$dvc") repro"
        if grep -q "Running stage 'gen@" "$scratch/logs/dvc_first.log"; then
            echo "dvc re-ran seeded gen stages: seed_dvc.py no longer matches what DVC writes" >&2
            exit 1
        fi
    fi
    if [[ $snakemake_first == run ]]; then
        first snakemake_first "$sm" "$snakemake" --cores "$jobs"
    else
        first snakemake_first "$sm" "$here/seed_snakemake.sh" "$snakemake" "$jobs"
    fi
    projects=("$cf" "$nj" "$dv" "$sm")
else
    projects=("$cf" "$nj")
fi

# The tools must have built the same thing, or the comparison means nothing.
for ((round = 1; round < first_rounds; round++)); do
    projects+=("$scratch/first-$round/claimflow" "$scratch/first-$round/ninja")
done
for project in "${projects[@]}"; do
    produced=$(find "$project/out" -name '*.txt' | wc -l)
    if [[ $produced -ne $count ]]; then
        echo "$project produced $produced of $count outputs" >&2
        exit 1
    fi
    cmp "$cf/all.txt" "$project/all.txt"
done

measure claimflow_noop "$cf" "$claimflow" run pipeline.yaml -j "$jobs"
measure claimflow_plan "$cf" "$claimflow" plan pipeline.yaml
measure ninja_noop "$nj" "$ninja" -j "$jobs"
measure ninja_dry "$nj" "$ninja" -n -j "$jobs"
if ((slow)); then
    measure dvc_noop "$dv" "$dvc" repro
    measure dvc_status "$dv" "$dvc" status
    measure snakemake_noop "$sm" "$snakemake" --cores "$jobs"
    measure snakemake_dry "$sm" "$snakemake" -n
fi

# A no-op that did work would be timing something else: check each tool still has nothing to do.
"$claimflow" -C "$cf" plan pipeline.yaml --json > "$scratch/logs/claimflow_plan.json"
"$python" - "$scratch/logs/claimflow_plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
pending = {step["name"]: step["items_to_run"] for step in plan["steps"] if step["items_to_run"] != 0}
if pending:
    sys.exit(f"claimflow still has work after its no-op runs: {pending}")
PY
(cd "$nj" && "$ninja" -n) > "$scratch/logs/ninja_dry.txt"
grep -q "no work to do" "$scratch/logs/ninja_dry.txt" || {
    echo "ninja still has work after its no-op runs:" >&2
    tail -n 20 "$scratch/logs/ninja_dry.txt" >&2
    exit 1
}
if ((slow)); then
    (cd "$dv" && "$dvc" status) > "$scratch/logs/dvc_status.txt"
    grep -q "up to date" "$scratch/logs/dvc_status.txt" || {
        echo "dvc still has work after its no-op runs:" >&2
        cat "$scratch/logs/dvc_status.txt" >&2
        exit 1
    }
    (cd "$sm" && "$snakemake" -n) > "$scratch/logs/snakemake_dry.txt" 2>&1
    grep -q "Nothing to be done" "$scratch/logs/snakemake_dry.txt" || {
        echo "snakemake still has work after its no-op runs:" >&2
        tail -n 20 "$scratch/logs/snakemake_dry.txt" >&2
        exit 1
    }
fi

"$python" "$here/report.py" "$scratch/times" "$count" "$runs" "$warmup" "$timer" "$jobs" "$dvc_first" \
    "$snakemake_first" "$first_rounds" \
    "claimflow $("$claimflow" --version | awk '{print $2}'), ninja $ninja_version, dvc $dvc_version, snakemake $snakemake_version"
