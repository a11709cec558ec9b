"""Writes the same DAG four ways: a claimflow pipeline, a DVC project, a Snakemake project and a
build.ninja.

The DAG: `gen` fans out over N items, each writing `out/<item>.txt` with one shell command; `all`
concatenates every `out/*.txt` into `all.txt`. Each tool gets its own directory under the scratch
root so their metadata (.claimflow, .dvc, .snakemake, .ninja_log) never meets.

Usage: python3 generate.py ROOT N
"""

import os
import sys


def items(count):
    width = max(5, len(str(count - 1)))
    return [f"i{index:0{width}d}" for index in range(count)]


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def claimflow(root, names):
    foreach = "\n".join(f"        - {name}" for name in names)
    write(
        os.path.join(root, "pipeline.yaml"),
        f"""version: 1
name: bench
steps:
  gen:
    uses: command
    with:
      run: "echo {{item}} > out/{{item}}.txt"
      outputs: ["out/{{item}}.txt"]
      foreach:
{foreach}
  all:
    uses: command
    needs: [gen]
    with:
      run: "cat out/*.txt > all.txt"
      outputs: ["all.txt"]
""",
    )


def dvc(root, names):
    # seed_dvc.py reads the items from here.
    write(os.path.join(root, "items.txt"), "".join(f"{name}\n" for name in names))
    listed = "\n".join(f"      - {name}" for name in names)
    # `deps: [out]` makes `all` depend on every file the `gen` stages write under out/.
    write(
        os.path.join(root, "dvc.yaml"),
        f"""stages:
  gen:
    foreach:
{listed}
    do:
      cmd: echo ${{item}} > out/${{item}}.txt
      outs:
        - out/${{item}}.txt
  all:
    cmd: cat out/*.txt > all.txt
    deps:
      - out
    outs:
      - all.txt
""",
    )


def snakemake(root, names):
    write(os.path.join(root, "items.txt"), "".join(f"{name}\n" for name in names))
    write(
        os.path.join(root, "Snakefile"),
        """ITEMS = [line.strip() for line in open("items.txt") if line.strip()]


rule all:
    input:
        "all.txt",


rule gen:
    output:
        "out/{item}.txt",
    shell:
        "echo {wildcards.item} > {output}"


rule aggregate:
    input:
        expand("out/{item}.txt", item=ITEMS),
    output:
        "all.txt",
    shell:
        "cat out/*.txt > {output}"
""",
    )


def ninja(root, names):
    # `all` lists every output as an input, as the other tools' `all` needs every `gen` output.
    inputs = "".join(f" $\n    out/{name}.txt" for name in names)
    builds = "".join(f"build out/{name}.txt: gen\n  item = {name}\n" for name in names)
    write(
        os.path.join(root, "build.ninja"),
        f"""rule gen
  command = echo $item > $out
rule gather
  command = cat out/*.txt > $out
{builds}build all.txt: gather{inputs}
default all.txt
""",
    )


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: generate.py ROOT N")
    root, count = sys.argv[1], int(sys.argv[2])
    if count < 1:
        sys.exit("N must be at least 1")
    names = items(count)
    for tool, writer in [
        ("claimflow", claimflow),
        ("dvc", dvc),
        ("snakemake", snakemake),
        ("ninja", ninja),
    ]:
        project = os.path.join(root, tool)
        # Every command writes into out/; the directory exists up front so no tool pays for mkdir.
        os.makedirs(os.path.join(project, "out"), exist_ok=True)
        writer(project, names)


if __name__ == "__main__":
    main()
