"""Recomputes claimflow's statistics with numpy, scipy and statsmodels.

Reads JSON on stdin: labels (0/1), arms ({name: [0/1 verdicts, none already read as held]}),
commits (the cluster key of each claim), seed, resamples, pairs. Writes JSON on stdout.
"""
import inspect
import json
import sys

import numpy as np
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar

GAMMA = np.uint64(0x9E3779B97F4A7C15)


def splitmix(seed, count):
    """Outputs 0..count of splitmix64 seeded with `seed` (as claimflow's SplitMix64::at)."""
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + np.arange(1, count + 1, dtype=np.uint64) * GAMMA
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def cluster_ids(keys):
    seen = {}
    return np.array([seen.setdefault(key, len(seen)) for key in keys])


def same_resamples(labels, arms, keys, seed, resamples):
    """Percentile intervals from exactly the resamples claimflow draws."""
    clusters = cluster_ids(keys)
    k = clusters.max() + 1
    index = (splitmix(seed, resamples * k) % np.uint64(k)).astype(np.int64).reshape(resamples, k)
    out = {}
    for name, pred in arms.items():
        tp_c = np.bincount(clusters, weights=pred * labels, minlength=k)
        fired_c = np.bincount(clusters, weights=pred, minlength=k)
        flipped_c = np.bincount(clusters, weights=labels, minlength=k)
        tp, fired, flipped = tp_c[index].sum(1), fired_c[index].sum(1), flipped_c[index].sum(1)
        with np.errstate(invalid="ignore", divide="ignore"):
            result = {}
            for stat, values in (("precision", tp / fired), ("recall", tp / flipped)):
                values = values[~np.isnan(values)]
                result[stat] = list(np.percentile(values, [2.5, 97.5])) if len(values) else None
        out[name] = result
    return out


def scipy_intervals(labels, arms, seed, resamples):
    """scipy.stats.bootstrap's percentile intervals (its own random draws)."""
    random = "rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state"

    def precision(pred, truth, axis=-1):
        return np.sum(pred * truth, axis=axis) / np.sum(pred, axis=axis)

    def recall(pred, truth, axis=-1):
        return np.sum(pred * truth, axis=axis) / np.sum(truth, axis=axis)

    out = {}
    for name, pred in arms.items():
        result = {}
        for stat, function, defined in (
            ("precision", precision, pred.sum() > 0 and pred.sum() < len(pred)),
            ("recall", recall, True),
        ):
            if not defined:
                result[stat] = None
                continue
            interval = stats.bootstrap(
                (pred, labels), function, paired=True, vectorized=True,
                n_resamples=resamples, method="percentile", confidence_level=0.95,
                **{random: np.random.default_rng(seed)},
            ).confidence_interval
            result[stat] = [float(interval.low), float(interval.high)]
        out[name] = result
    return out


def main():
    data = json.load(sys.stdin)
    labels = np.array(data["labels"], dtype=np.float64)
    arms = {name: np.array(v, dtype=np.float64) for name, v in data["arms"].items()}
    out = {"precision": {}, "recall": {}, "mcnemar": {}}
    for name, pred in arms.items():
        tp = float((pred * labels).sum())
        out["precision"][name] = tp / pred.sum() if pred.sum() else None
        out["recall"][name] = tp / labels.sum()
    for first, second in data["pairs"]:
        right_one = arms[first] == labels
        right_two = arms[second] == labels
        table = [[int((right_one & right_two).sum()), int((right_one & ~right_two).sum())],
                 [int((~right_one & right_two).sum()), int((~right_one & ~right_two).sum())]]
        result = mcnemar(table, exact=True)
        out["mcnemar"][f"{first}|{second}"] = {
            "b": table[0][1], "c": table[1][0], "p": float(result.pvalue),
            "binomtest": float(stats.binomtest(table[0][1], table[0][1] + table[1][0]).pvalue),
        }
    out["scipy"] = scipy_intervals(labels, arms, data["seed"], data["resamples"])
    out["same_resamples"] = {
        "claim": same_resamples(labels, arms, data["claims"], data["seed"], data["resamples"]),
        "commit": same_resamples(labels, arms, data["commits"], data["seed"], data["resamples"]),
    }
    json.dump(out, sys.stdout)


main()
