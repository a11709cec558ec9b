#!/usr/bin/env bash
# Snakemake's first run of a big fan-out in batches: one `snakemake` call over all N jobs spends
# time per job that grows with N (measured here: 500 jobs took ~50 s, 5,000 jobs ran at ~1.7 s a job
# and would take hours), so the `gen` outputs are built 500 targets per call, then a last call
# builds `all`. Every output is still made, and its metadata written, by Snakemake itself.
#
# usage: seed_snakemake.sh SNAKEMAKE JOBS   (run in the project directory, which holds items.txt)
set -euo pipefail
snakemake=$1
jobs=$2
batch=${BENCH_SNAKEMAKE_BATCH:-500}
mapfile -t items < items.txt
for ((start = 0; start < ${#items[@]}; start += batch)); do
    targets=()
    for item in "${items[@]:start:batch}"; do
        targets+=("out/$item.txt")
    done
    "$snakemake" --cores "$jobs" --rerun-incomplete "${targets[@]}"
done
"$snakemake" --cores "$jobs"
