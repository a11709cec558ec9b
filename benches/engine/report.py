"""Prints the engine benchmark's table and ratios from the per-measurement time files run.sh wrote.

Usage: python3 report.py TIMES_DIR N RUNS TIMER JOBS DVC_FIRST VERSIONS
Each file in TIMES_DIR holds one measurement's seconds, one run a line.
"""

import os
import statistics
import sys

NOOP_TARGET = 10.0  # claimflow's no-op re-run at least this many times faster than each other tool
PLAN_TARGET_MS = 200.0

ROWS = [
    ("claimflow", "first run", "claimflow run", "claimflow_first"),
    ("claimflow", "no-op re-run", "claimflow run", "claimflow_noop"),
    ("claimflow", "dry run", "claimflow plan", "claimflow_plan"),
    ("dvc", "first run", "dvc repro", "dvc_first"),
    ("dvc", "no-op re-run", "dvc repro", "dvc_noop"),
    ("dvc", "dry run", "dvc status", "dvc_status"),
    ("snakemake", "first run", "snakemake --cores J", "snakemake_first"),
    ("snakemake", "no-op re-run", "snakemake --cores J", "snakemake_noop"),
    ("snakemake", "dry run", "snakemake -n", "snakemake_dry"),
]


def load(directory):
    times = {}
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if os.path.isfile(path) and "." not in name:
            with open(path, encoding="utf-8") as handle:
                values = [float(line) for line in handle if line.strip()]
            if values:
                times[name] = values
    return times


def show(seconds):
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.2f} s"


def main():
    directory, count, runs, timer, jobs, dvc_first, versions = sys.argv[1:8]
    times = load(directory)
    median = {name: statistics.median(values) for name, values in times.items()}
    print()
    print(f"engine benchmark: {count} items; median of {runs} runs after a warm-up ({timer})")
    print(versions)
    print()
    print(f"{'tool':<11}{'measurement':<14}{'command':<22}{'median':>10}{'min':>10}{'max':>10}")
    for tool, what, command, name in ROWS:
        command = command.replace("J", jobs)
        if name == "dvc_first" and dvc_first == "seed":
            what, command = "first run", "seed_dvc.py + repro"
        values = times[name]
        if len(values) == 1:
            spread = ("", "")
        else:
            spread = (show(min(values)), show(max(values)))
        print(
            f"{tool:<11}{what:<14}{command:<22}{show(median[name]):>10}"
            f"{spread[0]:>10}{spread[1]:>10}"
        )
    print("(first runs: one run each, informational)")
    if dvc_first == "seed":
        print(
            "(dvc's first run: seed_dvc.py ran the gen stages' commands and wrote their dvc.lock\n"
            " entries and cache objects; `dvc repro` then checked them and ran `all`. A real first\n"
            " `dvc repro` is O(N^2) in dvc.lock rewrites: BENCH_DVC_FIRST=repro to time it anyway.)"
        )
    print()

    noop = median["claimflow_noop"]
    plan = median["claimflow_plan"]
    print("ratios (other tool's median / claimflow's median):")
    for tool, name in [("dvc repro", "dvc_noop"), (f"snakemake --cores {jobs}", "snakemake_noop")]:
        ratio = median[name] / noop
        verdict = "met" if ratio >= NOOP_TARGET else "MISSED"
        print(
            f"  no-op re-run  {tool:<20} / claimflow run   {ratio:8.1f}x"
            f"   (target >= {NOOP_TARGET:.0f}x: {verdict})"
        )
    for tool, name in [("dvc status", "dvc_status"), ("snakemake -n", "snakemake_dry")]:
        ratio = median[name] / plan
        print(f"  dry run       {tool:<20} / claimflow plan  {ratio:8.1f}x")
    verdict = "met" if plan * 1000 < PLAN_TARGET_MS else "MISSED"
    print(f"  claimflow plan {plan * 1000:.0f} ms   (target < {PLAN_TARGET_MS:.0f} ms: {verdict})")


if __name__ == "__main__":
    main()
