"""Prints the engine benchmark's table and ratios from the time files run.sh wrote.

Usage: python3 report.py TIMES_DIR N RUNS WARMUP TIMER JOBS DVC_FIRST SNAKEMAKE_FIRST VERSIONS
TIMES_DIR holds, per measurement, NAME (wall seconds, one run a line) and NAME.cpu (mean CPU seconds).
"""

import os
import statistics
import sys

NOOP_TARGET = 10.0  # claimflow's no-op re-run at least this many times faster than DVC and Snakemake
PLAN_TARGET_MS = 200.0
NINJA_NOOP_TARGET = 2.0  # claimflow's no-op and plan at most this many times ninja's no-op
NINJA_FIRST_TARGET = 1.1  # claimflow's first run at most this many times ninja's

ROWS = [
    ("claimflow", "first run", "claimflow run -j {jobs}", "claimflow_first"),
    ("claimflow", "no-op re-run", "claimflow run -j {jobs}", "claimflow_noop"),
    ("claimflow", "dry run", "claimflow plan", "claimflow_plan"),
    ("ninja", "first run", "ninja -j {jobs}", "ninja_first"),
    ("ninja", "no-op re-run", "ninja -j {jobs}", "ninja_noop"),
    ("ninja", "dry run", "ninja -n -j {jobs}", "ninja_dry"),
    ("dvc", "first run", "dvc repro", "dvc_first"),
    ("dvc", "no-op re-run", "dvc repro", "dvc_noop"),
    ("dvc", "dry run", "dvc status", "dvc_status"),
    ("snakemake", "first run", "snakemake --cores {jobs}", "snakemake_first"),
    ("snakemake", "no-op re-run", "snakemake --cores {jobs}", "snakemake_noop"),
    ("snakemake", "dry run", "snakemake -n", "snakemake_dry"),
]


def load(directory):
    """Each measurement's wall times and mean CPU seconds. A measurement taken in rounds (the
    first runs) has a file per round, NAME.ROUND and NAME.ROUND.cpu: its rounds are pooled."""
    walls, cpus = {}, {}
    for name in os.listdir(directory):
        if name.endswith(".json"):  # hyperfine's own export
            continue
        path = os.path.join(directory, name)
        with open(path, encoding="utf-8") as handle:
            values = [float(line) for line in handle if line.strip()]
        is_cpu = name.endswith(".cpu")
        measurement, _, round_ = (name[: -len(".cpu")] if is_cpu else name).partition(".")
        if round_ and not round_.isdigit():
            continue
        (cpus if is_cpu else walls).setdefault(measurement, []).extend(values)
    return walls, {name: sum(values) / len(values) for name, values in cpus.items()}


def show(seconds):
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.2f} s"


def main():
    directory, count, runs, warmup, timer, jobs, dvc_first, snakemake_first, first_rounds, versions = (
        sys.argv[1:11]
    )
    wall, cpu = load(directory)
    median = {name: statistics.median(values) for name, values in wall.items()}
    with open("/proc/loadavg", encoding="utf-8") as handle:
        load_average = " ".join(handle.read().split()[:3])
    print()
    print(
        f"engine benchmark: {count} items; wall = median of {runs} run(s) after {warmup} warm-up(s)"
        f" ({timer}); cpu = mean user+system"
    )
    print(f"{versions}; {os.cpu_count()} cores, load average now {load_average}")
    print()
    print(f"{'tool':<11}{'measurement':<14}{'command':<26}{'wall':>10}{'min':>10}{'max':>10}{'cpu':>10}")
    for tool, what, command, name in ROWS:
        command = command.format(jobs=jobs)
        if name == "dvc_first" and dvc_first == "seed":
            command = "seed_dvc.py + dvc repro"
        if name == "snakemake_first" and snakemake_first == "batches":
            command = "seed_snakemake.sh"
        if name not in wall:
            continue
        values = wall[name]
        spread = ("", "") if len(values) == 1 else (show(min(values)), show(max(values)))
        print(
            f"{tool:<11}{what:<14}{command:<26}{show(median[name]):>10}"
            f"{spread[0]:>10}{spread[1]:>10}{show(cpu[name]):>10}"
        )
    print(
        f"(first runs: claimflow's and ninja's the median of {first_rounds} round(s), each in a fresh"
        " copy of the project,\n alternating which goes first; DVC's and Snakemake's one run each)"
    )
    if "dvc_noop" not in wall:
        print("(DVC and Snakemake left out at this size: BENCH_SLOW_MAX)")
    if dvc_first == "seed" and "dvc_first" in wall:
        print(
            "(dvc's first run: seed_dvc.py ran the gen stages' commands and wrote their dvc.lock\n"
            " entries and cache objects; `dvc repro` then checked them and ran `all`. A real first\n"
            " `dvc repro` is O(N^2) in dvc.lock rewrites: BENCH_DVC_FIRST=repro to time it anyway.)"
        )
    if snakemake_first == "batches" and "snakemake_first" in wall:
        print(
            "(snakemake's first run: seed_snakemake.sh, `snakemake --cores J` over a batch of targets\n"
            " (500 by default) at a time, then once for `all`; one call over every job slows per job\n"
            " as N grows: BENCH_SNAKEMAKE_FIRST=run to time it anyway.)".replace("J", jobs)
        )
    print()

    print("ratios against ninja (claimflow / ninja; wall, and cpu in parentheses):")
    for what, ours, theirs, target in [
        ("no-op re-run  claimflow run  / ninja no-op", "claimflow_noop", "ninja_noop", NINJA_NOOP_TARGET),
        ("dry run       claimflow plan / ninja no-op", "claimflow_plan", "ninja_noop", NINJA_NOOP_TARGET),
        ("dry run       claimflow plan / ninja -n   ", "claimflow_plan", "ninja_dry", None),
        ("first run     claimflow run  / ninja      ", "claimflow_first", "ninja_first", NINJA_FIRST_TARGET),
    ]:
        ratio = median[ours] / median[theirs]
        cpu_ratio = cpu[ours] / cpu[theirs] if cpu[theirs] > 0 else float("inf")
        verdict = ""
        if target is not None:
            verdict = f"   target <= {target:g}x: " + ("met" if ratio <= target else "MISSED")
            verdict += " (cpu: " + ("met" if cpu_ratio <= target else "missed") + ")"
        print(f"  {what} {ratio:8.2f}x ({cpu_ratio:.2f}x){verdict}")
    for name in ["claimflow_noop", "claimflow_plan", "ninja_noop"]:
        print(f"  {name:<16} per item: {median[name] / int(count) * 1e6:.2f} us wall, "
              f"{cpu[name] / int(count) * 1e6:.2f} us cpu")
    if "dvc_noop" not in wall:
        return
    print()
    print("ratios (other tool / claimflow; wall, and cpu in parentheses):")
    for tool, name in [("dvc repro", "dvc_noop"), (f"snakemake --cores {jobs}", "snakemake_noop")]:
        ratio = median[name] / median["claimflow_noop"]
        cpu_ratio = cpu[name] / cpu["claimflow_noop"]
        verdict = "met" if ratio >= NOOP_TARGET else "MISSED"
        print(
            f"  no-op re-run  {tool:<20} / claimflow run   {ratio:8.1f}x ({cpu_ratio:.1f}x)"
            f"   target >= {NOOP_TARGET:.0f}x: {verdict}"
        )
    for tool, name in [("dvc status", "dvc_status"), ("snakemake -n", "snakemake_dry")]:
        ratio = median[name] / median["claimflow_plan"]
        cpu_ratio = cpu[name] / cpu["claimflow_plan"]
        print(f"  dry run       {tool:<20} / claimflow plan  {ratio:8.1f}x ({cpu_ratio:.1f}x)")
    plan_ms = median["claimflow_plan"] * 1000
    verdict = "met" if plan_ms < PLAN_TARGET_MS else "MISSED"
    print(
        f"  claimflow plan {plan_ms:.0f} ms wall, {cpu['claimflow_plan'] * 1000:.0f} ms cpu"
        f"   target < {PLAN_TARGET_MS:.0f} ms (wall): {verdict}"
    )


if __name__ == "__main__":
    main()
