#!/bin/sh
# Builds the Rust side in release mode, makes sure the cached numpy/scipy venv exists, and runs
# the comparison. Run from the repository root: sh benches/bootstrap/run.sh [run.py options]
set -eu
cache="${CLAIMFLOW_CACHE_DIR:-$HOME/.cache/claimflow}/pytools"
venv="$cache/stats-venv"
packages="numpy scipy statsmodels"
if [ "$(cat "$venv/claimflow-ready" 2>/dev/null)" != "$packages" ]; then
    base=/root/.pyenv/versions/3.11.7/bin/python
    [ -x "$base" ] || base=python3
    rm -rf "$venv"
    mkdir -p "$cache"
    "$base" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $packages
    echo "$packages" > "$venv/claimflow-ready"
fi
cargo build --release --example bootstrap_bench
exec "$venv/bin/python" benches/bootstrap/run.py "$@"
