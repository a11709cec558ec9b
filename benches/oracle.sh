#!/bin/sh
# The oracle's overhead over the pytest commands it issues, and the gain of a second slot.
#
# Builds the fixture library of the integration tests, then times (see examples/oracle_bench.rs):
#   raw_script_seconds       the oracle's pytest invocations, run one by one by `sh`
#   oracle_one_slot_seconds  the oracle judging the same commits with one worktree
#   oracle_two_slots_seconds the same with two worktrees
# Target: overhead_ratio (one slot / raw script) <= 1.10.
#
# Usage: benches/oracle.sh [RUNS] [COPIES]
#   RUNS    N, the runs per claim at the parent and at the child (default 5; the oracle's default is 10)
#   COPIES  how many times the three commits are queued (default 4: twelve judgements), so that the
#           two-slot measurement is not capped by one slot idling on the last commit
# The test environment (a venv with pytest 8.3.5) is created once under
# ${CLAIMFLOW_CACHE_DIR:-~/.cache/claimflow}/oracle-tests.
set -eu
cd "$(dirname "$0")/.."
cargo build --quiet --release --example oracle_bench
exec "${CARGO_TARGET_DIR:-target}/release/examples/oracle_bench" "${1:-5}" "${2:-4}"
