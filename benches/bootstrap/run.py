"""Times claimflow's bootstrap against scipy.stats.bootstrap and a hand-vectorized numpy version.

Each side is a whole process over the same data file (10,000 resamples x 9 arms x 600 claims by
default); wall time includes start-up and loading. claimflow and numpy draw the same splitmix64
resamples, so their intervals must be identical; scipy draws its own, so it agrees within
Monte-Carlo error. Run from the repository root (see README.md in this directory).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def make_data(claims, arms, seed):
    rng = np.random.default_rng(seed)
    labels = (rng.random(claims) < 0.25).astype(int)
    data = {"labels": labels.tolist(), "arms": {}}
    for arm in range(arms):
        hit, false_alarm = 0.4 + 0.06 * arm, 0.6 - 0.06 * arm
        fire = np.where(labels == 1, rng.random(claims) < hit, rng.random(claims) < false_alarm)
        data["arms"][f"arm{arm}"] = fire.astype(int).tolist()
    return data


def timed(command, repeats):
    times, output = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        output = json.loads(done.stdout)
    return statistics.median(times), output


def largest_difference(left, right):
    worst = 0.0
    for arm, rates in left.items():
        for rate, interval in rates.items():
            other = right[arm][rate]
            if interval is None or other is None:
                assert interval is None and other is None, (arm, rate)
                continue
            worst = max(worst, abs(interval[0] - other[0]), abs(interval[1] - other[1]))
    return worst


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default="target/release/examples/bootstrap_bench")
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--arms", type=int, default=9)
    parser.add_argument("--claims", type=int, default=600)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "data.json")
        with open(path, "w") as file:
            json.dump(make_data(args.claims, args.arms, args.seed), file)
        tail = [path, str(args.resamples), str(args.seed)]
        rust_time, rust = timed([args.binary] + tail, args.repeats)
        numpy_time, numpy = timed([sys.executable, os.path.join(HERE, "numpy_bootstrap.py")] + tail, args.repeats)
        scipy_time, scipy = timed([sys.executable, os.path.join(HERE, "scipy_bootstrap.py")] + tail, args.repeats)

    print(f"bootstrap: {args.resamples} resamples x {args.arms} arms x {args.claims} claims, "
          f"precision and recall, 95% percentile; median wall time of {args.repeats} whole-process runs")
    print(f"{'implementation':<28}{'seconds':>10}{'claimflow faster by':>22}")
    print(f"{'claimflow (Rust, rayon)':<28}{rust_time:>10.3f}{'':>22}")
    print(f"{'numpy, hand-vectorized':<28}{numpy_time:>10.3f}{numpy_time / rust_time:>21.1f}x")
    print(f"{'scipy.stats.bootstrap':<28}{scipy_time:>10.3f}{scipy_time / rust_time:>21.1f}x")
    same = largest_difference(rust, numpy)
    drift = largest_difference(rust, scipy)
    print(f"largest interval difference, claimflow vs numpy (same resamples): {same:.2e}")
    print(f"largest interval difference, claimflow vs scipy (own resamples):  {drift:.4f}")
    if same > 1e-12:
        sys.exit("claimflow and numpy disagree on identical resamples")


main()
