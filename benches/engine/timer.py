"""Times a command: wall seconds of each run, and the CPU seconds (user + system, the command and
the processes it waited for) averaged over the runs.

Usage: python3 timer.py NAME_PREFIX RUNS WARMUP LOG -- COMMAND...
Writes NAME_PREFIX (one wall time a line) and NAME_PREFIX.cpu; the command's output goes to LOG
(`-` discards it). Exits with the command's status if a run fails.
"""

import os
import subprocess
import sys
import time


def once(command, log):
    with open(os.devnull if log == "-" else log, "ab") as sink:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.exit(process.returncode or 1)
    return wall, usage.ru_utime + usage.ru_stime


def main():
    prefix, runs, warmup, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    command = sys.argv[sys.argv.index("--") + 1 :]
    for _ in range(warmup):
        once(command, log)
    measured = [once(command, log) for _ in range(runs)]
    with open(prefix, "w", encoding="utf-8") as handle:
        handle.writelines(f"{wall}\n" for wall, _ in measured)
    with open(prefix + ".cpu", "w", encoding="utf-8") as handle:
        handle.write(f"{sum(cpu for _, cpu in measured) / len(measured)}\n")


if __name__ == "__main__":
    main()
