#!/bin/sh
# The oracle's overhead over the pytest commands it issues, and the gain of a second slot.
#
# Builds the fixture library of the integration tests, then times (see examples/oracle_bench.rs):
#   raw_script_seconds       the oracle's pytest invocations, run one by one by `sh`
#   oracle_one_slot_seconds  the oracle judging the same commits with one worktree
#   oracle_two_slots_seconds the same with two worktrees
# Target: overhead_ratio (one slot / raw script) <= 1.10.
#
# Usage: benches/oracle.sh [RUNS]   (default 5; the oracle's default N is 10)
# The test environment (a venv with pytest 8.3.5) is created once under
# ${CLAIMFLOW_CACHE_DIR:-~/.cache/claimflow}/oracle-tests.
set -eu
cd "$(dirname "$0")/.."
cargo build --quiet --example oracle_bench
exec target/debug/examples/oracle_bench "${1:-5}"
