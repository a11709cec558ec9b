"""Drawing items from a tally at random, in proportion to their counts."""

import random


def pick(tally, rng=None):
    """Draw one item of ``tally``, weighted by count.

    An item counted three times is three times as likely as an item counted once. Pass a
    ``random.Random`` as ``rng`` for draws that can be repeated; by default the draws come
    from the ``random`` module.
    """
    items = list(tally)
    if not items:
        raise ValueError("cannot pick from an empty tally")
    weights = [tally[item] for item in items]
    source = random if rng is None else rng
    return source.choices(items, weights=weights)[0]
