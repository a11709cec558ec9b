"""Hand-vectorized numpy bootstrap over the same splitmix64 resamples claimflow draws.

Usage: numpy_bootstrap.py DATA.json RESAMPLES SEED  (prints {arm: {precision, recall}} as JSON)
"""
import json
import sys

import numpy as np

GAMMA = np.uint64(0x9E3779B97F4A7C15)


def splitmix(seed, count):
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + np.arange(1, count + 1, dtype=np.uint64) * GAMMA
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def main():
    path, resamples, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    data = json.load(open(path))
    labels = np.array(data["labels"], dtype=np.int64)
    n = len(labels)
    index = (splitmix(seed, resamples * n) % np.uint64(n)).astype(np.intp).reshape(resamples, n)
    flipped = labels[index].sum(1)
    out = {}
    for name, verdicts in data["arms"].items():
        pred = np.array(verdicts, dtype=np.int64)
        tp = (pred * labels)[index].sum(1)
        fired = pred[index].sum(1)
        result = {}
        with np.errstate(invalid="ignore", divide="ignore"):
            for stat, values in (("precision", tp / fired), ("recall", tp / flipped)):
                values = values[~np.isnan(values)]
                result[stat] = [float(v) for v in np.percentile(values, [2.5, 97.5])] if len(values) else None
        out[name] = result
    print(json.dumps(out))


main()
