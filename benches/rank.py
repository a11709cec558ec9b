#!/usr/bin/env python3
"""Benchmark: claimflow's commit scoring against PyDriller and bare `git log`, on a real repository.

    python3 benches/rank.py REPOSITORY [--branch BRANCH] [--repeat N]

Scores every commit of the branch's first-parent history three ways and prints the times and ratios:
  1. claimflow (`examples/rank.rs`, release build): assertion lines deleted from test files per commit,
     raw and without those the same commit added back reformatted or moved (src/mining/reformat.rs);
  2. PyDriller counting the same thing with the same rules (mirrored below; keep them in step with
     src/mining/assertions.rs, src/mining/reformat.rs and src/mining/test_files.rs);
  3. `git log --first-parent -p -M --unified=0 BRANCH > /dev/null`, the floor any diff-based tool pays.
Then it CHECKS that the per-commit counts (and candidacy) agree with PyDriller's and lists mismatches;
the exit status is 1 when any commit disagrees.

PyDriller is installed into a venv under $CLAIMFLOW_CACHE_DIR/bench/pydriller (default
~/.cache/claimflow), once. PyDriller reports no files for a merge commit, so for merges this script asks
PyDriller's own diff machinery (GitPython's diff against the first parent, wrapped in ModifiedFile),
which is what claimflow does with `merges: include`.
"""

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYDRILLER = "pydriller>=2.6,<3"

# --- the rules, mirrored from the Rust code ---------------------------------------------------

TEST_DIRECTORIES = {"test", "tests", "testing"}


def is_python(path):
    return path.endswith(".py")


def is_test(path):
    """The default test patterns: **/test/**, **/tests/**, **/testing/**, **/test_*.py,
    **/*_test.py, **/tests.py, **/conftest.py."""
    parts = path.split("/")
    if any(part in TEST_DIRECTORIES for part in parts[:-1]):
        return True
    name = parts[-1]
    return (
        (name.startswith("test_") and name.endswith(".py"))
        or (name.endswith("_test.py"))
        or name in ("tests.py", "conftest.py")
    )


CALL = re.compile(r"(?<![A-Za-z0-9_])([A-Za-z0-9_]+)[ \t]*\(")
QUALIFIER = re.compile(r"([A-Za-z0-9_]*)\.\Z")


def is_assertion_call(qualifier, name):
    if name.startswith("assert_") or (
        name.startswith("assert") and len(name) > 6 and "A" <= name[6] <= "Z"
    ):
        return True
    if name in ("raises", "warns", "deprecated_call"):
        return qualifier in (None, "pytest")
    if name == "fail":
        return qualifier in ("self", "pytest")
    if name in ("eq_", "ok_"):
        return True
    return qualifier == "self" and (name.startswith("failIf") or name.startswith("failUnless"))


def is_assertion_line(line):
    text = line.lstrip(" \t")
    if text.startswith("#") or text.startswith(("def ", "async def ", "class ")):
        return False
    if text.startswith("assert"):
        rest = text[len("assert"):]
        if rest == "" or rest[0] in " \t(":
            return True
    code = text.split("#")[0]
    for match in CALL.finditer(code):
        start = match.start(1)
        qualifier = None
        if start > 0 and code[start - 1] == ".":
            qualifier = QUALIFIER.search(code[:start]).group(1)
        if is_assertion_call(qualifier, match.group(1)):
            return True
    return False


SPACES = " \t\n\r\x0b\x0c"
CLOSERS = ")]}"


def is_word(character):
    return character.isascii() and (character.isalnum() or character == "_")


def normalize_lines(text):
    """Mirrors src/mining/reformat.rs: `'` reads as `"`, whitespace goes (a run between two word
    characters becomes one space), and a comma right before a closing bracket goes. Returns the
    text and, per line break, where the line before ends and where the line after starts."""
    out, ends, starts = [], [], []
    pending_space = False
    for character in text:
        if character in SPACES:
            if character == "\n":
                ends.append(len(out))
                starts.append(len(out))
            pending_space = True
            continue
        if character == "'":
            character = '"'
        last = out[-1] if out else None
        if pending_space and last is not None and is_word(last) and is_word(character):
            at = len(out)
            out.append(" ")
            index = len(starts) - 1
            while index >= 0 and starts[index] == at:
                starts[index] += 1
                index -= 1
        pending_space = False
        if character in CLOSERS and last == ",":
            out.pop()
            at = len(out)
            for offsets in (ends, starts):
                index = len(offsets) - 1
                while index >= 0 and offsets[index] > at:
                    offsets[index] = at
                    index -= 1
        out.append(character)
    return "".join(out), set(ends), set(starts)


def still_added(deleted, added):
    """True when the deleted line, normalised, appears in the normalised added text (`added`, from
    normalize_lines) where an added line starts, ending where one ends unless its brackets do not
    balance, and not running into a word character: it was reformatted or moved, not removed."""
    haystack, ends, starts = added
    needle = normalize_lines(deleted)[0]
    if not needle:
        return False
    whole_statement = sum(needle.count(c) for c in "([{") == sum(needle.count(c) for c in CLOSERS)
    start = haystack.find(needle)
    while start != -1:
        end = start + len(needle)
        starts_a_line = start == 0 or start in starts
        ends_a_line = end == len(haystack) or end in ends
        runs_in_before = is_word(needle[0]) and start > 0 and is_word(haystack[start - 1])
        runs_in_after = is_word(needle[-1]) and end < len(haystack) and is_word(haystack[end])
        if (
            starts_a_line
            and (ends_a_line or not whole_statement)
            and not runs_in_before
            and not runs_in_after
        ):
            return True
        start = haystack.find(needle, start + 1)
    return False


# --- the PyDriller side (runs inside the venv) -------------------------------------------------


def pydriller_worker(repository, branch):
    from pydriller import Git, ModificationType
    from pydriller.domain.commit import ModifiedFile

    git = Git(repository)
    out = sys.stdout
    for commit in git.get_list_commits(rev=branch, first_parent=True, reverse=False):
        parents = commit._c_object.parents
        if not parents:
            # A root commit has no parent to be a claim's t; claimflow scores it 0.
            files = []
        elif len(parents) > 1:
            diffs = parents[0].diff(other=commit._c_object, paths=None, create_patch=True)
            files = [ModifiedFile(diff=diff) for diff in diffs]
        else:
            files = commit.modified_files
        deleted = raw = 0
        test_files, source_files = set(), set()
        for modified in files:
            old, new = modified.old_path, modified.new_path
            for path in (old, new):
                if path and is_test(path):
                    test_files.add(path)
                elif path and is_python(path):
                    source_files.add(path)
            if old and modified.change_type != ModificationType.ADD and is_python(old) and is_test(old):
                parsed = modified.diff_parsed
                assertions = [line for _, line in parsed["deleted"] if is_assertion_line(line)]
                if assertions:
                    added = normalize_lines("".join(line + "\n" for _, line in parsed["added"]))
                    raw += len(assertions)
                    deleted += sum(1 for line in assertions if not still_added(line, added))
        candidate = bool(parents) and bool(source_files) and any(map(is_python, test_files))
        out.write(
            json.dumps(
                {
                    "commit": commit.hash,
                    "assertions_deleted": deleted,
                    "deleted_assertion_lines": raw,
                    "candidate": candidate,
                }
            )
            + "\n"
        )


# --- the driver ---------------------------------------------------------------------------------


def cache_dir():
    return Path(os.environ.get("CLAIMFLOW_CACHE_DIR") or Path.home() / ".cache" / "claimflow")


def venv_python():
    venv = cache_dir() / "bench" / "pydriller"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    probe = subprocess.run([str(python), "-c", "import pydriller"], capture_output=True)
    if probe.returncode != 0:
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", PYDRILLER], check=True
        )
    return python


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repository")
    parser.add_argument("--branch", help="the branch to walk (default: the checked-out branch)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of the fast tools (median kept)")
    parser.add_argument(
        "--pydriller-repeat", type=int, default=1, help="runs of PyDriller (median kept)"
    )
    parser.add_argument("--pydriller-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    repository = str(Path(args.repository).resolve())
    branch = args.branch or subprocess.run(
        ["git", "-C", repository, "symbolic-ref", "--short", "HEAD"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    if args.pydriller_worker:
        pydriller_worker(repository, branch)
        return 0

    subprocess.run(
        ["cargo", "build", "--quiet", "--release", "--example", "rank"], cwd=ROOT, check=True
    )
    target = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    rank = (ROOT / target) / "release" / "examples" / "rank"
    python = venv_python()

    claimflow = measure(args.repeat, [str(rank), repository, branch], capture=True)
    git = measure(
        args.repeat,
        ["git", "-C", repository, "log", "--first-parent", "-p", "-M", "--unified=0", branch],
    )
    pydriller = measure(
        args.pydriller_repeat,
        [str(python), __file__, repository, "--branch", branch, "--pydriller-worker"],
        capture=True,
    )

    ours = [json.loads(line) for line in claimflow[2].splitlines()]
    theirs = [json.loads(line) for line in pydriller[2].splitlines()]
    print(f"repository: {repository} (branch {branch}), {len(ours)} first-parent commits")
    print(f"load average: {Path('/proc/loadavg').read_text().strip()}")
    print(f"{'':10} {'wall s':>8} {'cpu s':>8}   claimflow is … faster (wall, cpu)")
    for name, (wall, cpu, _) in (("claimflow", claimflow), ("git log", git), ("pydriller", pydriller)):
        ratio = "" if name == "claimflow" else (
            f"   {wall / claimflow[0]:6.1f}x {cpu / claimflow[1]:6.1f}x"
        )
        print(f"{name:10} {wall:8.3f} {cpu:8.3f}{ratio}")
    print(
        f"assertions deleted (not reformatted): claimflow {sum(r['assertions_deleted'] for r in ours)}, "
        f"pydriller {sum(r['assertions_deleted'] for r in theirs)}; "
        f"assertion lines deleted: claimflow {sum(r['deleted_assertion_lines'] for r in ours)}, "
        f"pydriller {sum(r['deleted_assertion_lines'] for r in theirs)}; "
        f"candidates: claimflow {sum(r['candidate'] for r in ours)}, "
        f"pydriller {sum(r['candidate'] for r in theirs)}"
    )
    return compare(ours, theirs)


def measure(repeat, command, capture=False):
    """Median wall time and median CPU time (user + system, of the command and its children) over
    `repeat` runs with stdout sent to /dev/null; with `capture`, one more untimed run keeps stdout.
    On a loaded machine the CPU time is the steadier measure, so both are reported."""
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        with open(os.devnull, "wb") as sink:
            subprocess.run(command, stdout=sink, check=True)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(
            (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        )
    output = None
    if capture:
        output = subprocess.run(command, stdout=subprocess.PIPE, check=True).stdout.decode()
    return statistics.median(walls), statistics.median(cpus), output


def compare(ours, theirs):
    mismatches = []
    if [row["commit"] for row in ours] != [row["commit"] for row in theirs]:
        mismatches.append("the two tools walked different commits")
    theirs_by_commit = {row["commit"]: row for row in theirs}
    for row in ours:
        other = theirs_by_commit.get(row["commit"])
        if other is None:
            continue
        for field in ("assertions_deleted", "deleted_assertion_lines", "candidate"):
            if row[field] != other[field]:
                mismatches.append(
                    f"{row['commit']}: {field} claimflow={row[field]} pydriller={other[field]}"
                )
    if mismatches:
        print(f"MISMATCHES ({len(mismatches)}):")
        for mismatch in mismatches[:50]:
            print(f"  {mismatch}")
        return 1
    print(f"per-commit counts agree on all {len(ours)} commits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
