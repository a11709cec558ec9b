"""Writes N anchored claims against one commit of a repository, for benches/check/run.sh.

Every Python definition at the commit (functions, classes, methods, module constants, as A4 reads
them) and every file becomes an anchor; claims cycle through them, so N claims repeat anchors once
N exceeds their number. Each claim has one symbol anchor, and every fifth a file anchor too.
Usage: make_claims.py REPO REV N OUT
"""

import ast
import json
import subprocess
import sys


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def definitions(source):
    """Qualified names of a module's definitions: top-level and class members."""
    names = []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return names

    def walk(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.append(prefix + node.name)
            elif isinstance(node, ast.ClassDef):
                names.append(prefix + node.name)
                walk(node.body, prefix + node.name + ".")
            elif isinstance(node, ast.Assign) and not prefix:
                names.extend(t.id for t in node.targets if isinstance(t, ast.Name))

    walk(tree.body, "")
    return names


def main():
    repo, rev, count, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    files = git(repo, "ls-tree", "-r", "--name-only", rev).split()
    symbols = []
    for path in files:
        if path.endswith(".py"):
            symbols.extend((path, name) for name in definitions(git(repo, "show", f"{rev}:{path}")))
    if not symbols:
        sys.exit(f"no Python definitions at {rev} in {repo}")
    with open(out, "w") as claims:
        for index in range(count):
            path, name = symbols[index % len(symbols)]
            anchors = [f"{path}::{name}"]
            if index % 5 == 0:
                anchors.append(files[index % len(files)])
            record = {"id": f"c{index:05d}", "text": f"claim {index} about {name}", "anchors": anchors}
            claims.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
