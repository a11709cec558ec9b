"""Drawing items from a tally at random, in proportion to their counts."""

import random


def pick(tally):
    """Draw one item of ``tally``, weighted by count.

    An item counted three times is three times as likely as an item counted once.
    """
    items = list(tally)
    if not items:
        raise ValueError("cannot pick from an empty tally")
    weights = [tally[item] for item in items]
    return random.choices(items, weights=weights)[0]
