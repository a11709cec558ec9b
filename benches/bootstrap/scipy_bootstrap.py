"""scipy.stats.bootstrap (percentile method), as a user would call it: one vectorized call per
arm and rate, with scipy's own random draws.

Usage: scipy_bootstrap.py DATA.json RESAMPLES SEED  (prints {arm: {precision, recall}} as JSON)
"""
import inspect
import json
import sys

import numpy as np
from scipy import stats


def precision(pred, truth, axis=-1):
    return np.sum(pred * truth, axis=axis) / np.sum(pred, axis=axis)


def recall(pred, truth, axis=-1):
    return np.sum(pred * truth, axis=axis) / np.sum(truth, axis=axis)


def main():
    path, resamples, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    data = json.load(open(path))
    labels = np.array(data["labels"], dtype=np.float64)
    random = "rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state"
    generator = np.random.default_rng(seed)
    out = {}
    for name, verdicts in data["arms"].items():
        pred = np.array(verdicts, dtype=np.float64)
        result = {}
        for stat, function in (("precision", precision), ("recall", recall)):
            if stat == "precision" and pred.sum() == 0:
                result[stat] = None
                continue
            with np.errstate(invalid="ignore", divide="ignore"):
                interval = stats.bootstrap(
                    (pred, labels), function, paired=True, vectorized=True,
                    n_resamples=resamples, method="percentile", confidence_level=0.95,
                    **{random: generator},
                ).confidence_interval
            result[stat] = [float(interval.low), float(interval.high)]
        out[name] = result
    print(json.dumps(out))


main()
