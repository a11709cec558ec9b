"""Brings a generated DVC project to the state `dvc repro` leaves its `gen@*` stages in, without
running `dvc repro` on them.

Why: `dvc repro` rewrites the whole dvc.lock after every stage, so a first run of N stages costs
O(N^2) YAML work; at 5,000 stages it takes hours on a 2-core machine. Only the no-op re-run is the
benchmark, so the first run of the `gen` stages is done here: each stage's command runs (one `sh`
for all of them), each output is copied into the DVC cache (read-only, as DVC leaves it) and dvc.lock
gets the entry DVC itself writes. `dvc repro` then runs the `all` stage and checks every `gen` stage
(a wrong seed shows up as a stage it re-runs, which run.sh treats as an error).

Usage: python3 seed_dvc.py PROJECT   (the project holds items.txt and dvc.yaml from generate.py)
"""

import hashlib
import os
import subprocess
import sys


def main():
    project = sys.argv[1]
    with open(os.path.join(project, "items.txt"), encoding="utf-8") as handle:
        names = [line.strip() for line in handle if line.strip()]
    commands = [f"echo {name} > out/{name}.txt" for name in names]
    subprocess.run(["sh", "-e"], input="\n".join(commands) + "\n", text=True, cwd=project, check=True)

    lines = ["schema: '2.0'", "stages:"]
    for name, command in zip(names, commands):
        path = f"out/{name}.txt"
        with open(os.path.join(project, path), "rb") as handle:
            data = handle.read()
        md5 = hashlib.md5(data).hexdigest()
        cached = os.path.join(project, ".dvc", "cache", "files", "md5", md5[:2], md5[2:])
        if not os.path.exists(cached):
            os.makedirs(os.path.dirname(cached), exist_ok=True)
            with open(cached, "wb") as handle:
                handle.write(data)
            os.chmod(cached, 0o444)
        lines += [
            f"  gen@{name}:",
            f"    cmd: {command}",
            "    outs:",
            f"    - path: {path}",
            "      hash: md5",
            f"      md5: {md5}",
            f"      size: {len(data)}",
        ]
    with open(os.path.join(project, "dvc.lock"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
