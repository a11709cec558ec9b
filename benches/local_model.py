#!/usr/bin/env python3
"""The local model's throughput: calls per minute of A6-sized requests at 1 and at N slots.

Starts `claimflow models serve --parallel P` (the server every run starts, provisioned once per
machine) for each P, sends CALLS chat completions with P in flight, each a system prompt plus a
distinct ~3,000-character CLAIM + DIFF message under a strict json_schema response format, as the
A6 arms send, and prints calls per minute, latency and how many answers parsed as a verdict.

    benches/local_model.py                 # P = 1 and 4, 24 calls each
    benches/local_model.py --parallel 1 2 4 8 --calls 40
    benches/local_model.py --mix --parallel 1 4 --in-flight 1   # the demo's arms interleaved
    CLAIMFLOW=target/release/claimflow benches/local_model.py

`--mix` asks each message with the three claim-relative prompts of `prompts/` in turn (A5C, A6
base, A6 risk), as a run's arms interleave their calls; `--in-flight K` sends K at once whatever the
slots (default: as many as slots). The tokens the server evaluated per call (after its prompt cache)
are printed beside the prompt's size.

Targets are reported, not enforced: the script exits non-zero only on an error.
"""

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

SYSTEM = (
    "You are reviewing whether a stored claim about a repository is still true after a commit. "
    "The claim is a pytest test written against the parent commit; the diff is the commit's change "
    "to the source files (test files excluded). Think about what the test exercises and whether the "
    "change alters that behaviour. Answer with a JSON object: {\"verdict\": \"held\"} if the test "
    "still passes after the commit, {\"verdict\": \"flipped\"} if it now fails. Flip only when the "
    "diff plainly breaks what the test asserts; most changes leave most tests passing."
)

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["held", "flipped"]}},
    "required": ["verdict"],
    "additionalProperties": False,
}


def message(index):
    """A distinct CLAIM + DIFF message of about 3,000 characters (no two share a prefix past the
    first line, so the prompt cache helps only with the system prompt, as across real claims)."""
    test = (
        f"def test_cache_{index}_evicts_the_least_recently_used():\n"
        f"    cache = LRUCache(maxsize={index % 7 + 2})\n"
        f"    for key in range({index % 5 + 3}):\n"
        "        cache[key] = key * 2\n"
        "    cache[0]\n"
        f"    cache[{index}] = {index}\n"
        "    assert 0 in cache\n"
        "    assert len(cache) <= cache.maxsize\n"
    )
    diff = [
        f"diff --git a/src/pkg/module_{index}.py b/src/pkg/module_{index}.py\n",
        f"--- a/src/pkg/module_{index}.py\n+++ b/src/pkg/module_{index}.py\n",
    ]
    line = 0
    while sum(map(len, diff)) + len(test) < 2_950:
        line += 1
        diff.append(
            f"@@ -{10 * line},6 +{10 * line},7 @@ class Cache{index}:\n"
            f"-    def get_{line}(self, key, default=None):\n"
            f"+    def get_{line}(self, key, default=None, touch={line % 2 == 0}):\n"
            "         value = self.__data.get(key, default)\n"
            "-        self.__update(key)\n"
            "+        if touch:\n"
            "+            self.__update(key)\n"
            "         return value\n"
        )
    return f"CLAIM:\n{test}\nDIFF:\n{''.join(diff)}"


MIXED = ["a5c.txt", "a6_base.txt", "a6_risk.txt"]


def system_prompt(index, mix):
    """The system prompt of call `index`: A6's stand-in, or under `--mix` the shipped prompts in
    turn (the prompt file is sent without its final newline, as the arms send it)."""
    if not mix:
        return SYSTEM
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "prompts", MIXED[index % len(MIXED)])) as file:
        return file.read().removesuffix("\n")


def call(base_url, model, index, mix=False):
    body = {
        "model": model,
        "messages": [
            {"role": "system", "content": system_prompt(index, mix)},
            {"role": "user", "content": message(index // len(MIXED) if mix else index)},
        ],
        "temperature": 0,
        "seed": 1,
        "max_tokens": 32,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "verdict", "strict": True, "schema": SCHEMA},
        },
    }
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=600) as response:
        answer = json.load(response)
    elapsed = time.monotonic() - started
    content = answer["choices"][0]["message"]["content"]
    try:
        verdict = json.loads(content).get("verdict")
    except (ValueError, AttributeError):
        verdict = None
    usage = dict(answer.get("usage", {}))
    usage["evaluated"] = answer.get("timings", {}).get("prompt_n", usage.get("prompt_tokens", 0))
    return elapsed, verdict, usage


def serve(claimflow, parallel):
    """Starts `claimflow models serve`; returns the process and the base URL it printed."""
    process = subprocess.Popen(
        claimflow + ["models", "serve", "--parallel", str(parallel)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    line = process.stdout.readline().strip()
    if not line.startswith("http://"):
        process.kill()
        sys.exit(f"`claimflow models serve` printed no URL (got {line!r}); run it by hand to see why")
    return process, line


def measure(claimflow, parallel, calls, in_flight=None, mix=False):
    in_flight = in_flight or parallel
    process, base_url = serve(claimflow, parallel)
    try:
        model = json.load(urllib.request.urlopen(f"{base_url}/models", timeout=30))["data"][0]["id"]
        # One warm-up call: the first decode allocates buffers.
        call(base_url, model, 10_000)
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=in_flight) as pool:
            results = list(
                pool.map(lambda index: call(base_url, model, index, mix), range(calls))
            )
        wall = time.monotonic() - started
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    latencies = sorted(elapsed for elapsed, _, _ in results)
    verdicts = [verdict for _, verdict, _ in results]
    prompt_tokens = sum(usage.get("prompt_tokens", 0) for _, _, usage in results) / calls
    evaluated = sum(usage.get("evaluated", 0) for _, _, usage in results) / calls
    return {
        "parallel": parallel,
        "in_flight": in_flight,
        "mix": mix,
        "evaluated_tokens": evaluated,
        "calls": calls,
        "wall_s": wall,
        "calls_per_minute": calls * 60 / wall,
        "median_latency_s": latencies[len(latencies) // 2],
        "prompt_tokens": prompt_tokens,
        "held": verdicts.count("held"),
        "flipped": verdicts.count("flipped"),
        "no_verdict": sum(1 for verdict in verdicts if verdict not in ("held", "flipped")),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parallel", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--calls", type=int, default=24)
    parser.add_argument("--in-flight", type=int, help="calls sent at once (default: the slots)")
    parser.add_argument("--mix", action="store_true", help="interleave the A5C/A6 prompts")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    arguments = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    claimflow = shlex.split(
        os.environ.get("CLAIMFLOW")
        or f"cargo run --quiet --locked --manifest-path {shlex.quote(os.path.join(root, 'Cargo.toml'))} --"
    )
    # Provision first (instant when cached), so no measurement includes the build.
    subprocess.run(claimflow + ["models", "provision"], check=True, stdout=subprocess.DEVNULL)
    rows = []
    for parallel in arguments.parallel:
        rows.append(
            measure(claimflow, parallel, arguments.calls, arguments.in_flight, arguments.mix)
        )
        # Each row as it comes: a slow machine may not wait for the last.
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(f"cores: {os.cpu_count()}, load average: {open('/proc/loadavg').read().split()[:3]}")
    print(f"{'slots':>5}  {'sent':>4}  {'calls':>5}  {'wall s':>7}  {'calls/min':>9}  "
          f"{'median s':>8}  {'prompt tok':>10}  {'evaluated':>9}  held/flipped/none")
    for row in rows:
        print(f"{row['parallel']:>5}  {row['in_flight']:>4}  {row['calls']:>5}  "
              f"{row['wall_s']:>7.1f}  {row['calls_per_minute']:>9.1f}  "
              f"{row['median_latency_s']:>8.2f}  {row['prompt_tokens']:>10.0f}  "
              f"{row['evaluated_tokens']:>9.0f}  {row['held']}/{row['flipped']}/{row['no_verdict']}")
    if arguments.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
