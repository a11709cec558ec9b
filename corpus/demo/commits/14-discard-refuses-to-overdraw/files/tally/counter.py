"""A multiset: how many of each thing there is."""

import heapq
import random
from operator import itemgetter


class Tally:
    """Counts hashable items.

    A tally reads like a mapping from item to count in which an item never added counts
    zero. Counts are whole numbers and never go below zero; an item whose count drops to
    zero is forgotten.
    """

    def __init__(self, items=None):
        """Start from an iterable of items or a mapping of item to count."""
        self._counts = {}
        if items is not None:
            self.update(items)

    def add(self, item, count=1):
        """Add ``count`` copies of ``item``."""
        if count < 0:
            raise ValueError("cannot add a negative count: %r" % (count,))
        if count:
            self._counts[item] = self._counts.get(item, 0) + count

    def update(self, items):
        """Add each item of an iterable, or each (item, count) of a mapping."""
        if hasattr(items, "items"):
            for item, count in items.items():
                self.add(item, count)
        else:
            for item in items:
                self.add(item)

    def discard(self, item, count=1):
        """Remove ``count`` copies of ``item``; removing more than there are raises."""
        present = self._counts.get(item, 0)
        if count > present:
            raise ValueError(
                "cannot discard %d of %r: %d counted" % (count, item, present)
            )
        remaining = present - count
        if remaining > 0:
            self._counts[item] = remaining
        else:
            self._counts.pop(item, None)

    def total(self):
        """The number of items counted, copies included."""
        return sum(self._counts.values())

    def most_common(self, n=None):
        """The ``n`` most common (item, count) pairs, most common first.

        Items with equal counts keep the order in which they were first added; without
        ``n``, every item is listed.
        """
        # Both are stable, so ties come out in insertion order; nlargest avoids sorting
        # every item when only the first few are wanted.
        if n is None:
            return sorted(self._counts.items(), key=itemgetter(1), reverse=True)
        return heapq.nlargest(n, self._counts.items(), key=itemgetter(1))

    def pick(self, rng=None):
        """Draw one item at random, weighted by count.

        An item counted three times is three times as likely as an item counted once. Pass a
        ``random.Random`` as ``rng`` for draws that can be repeated; by default the draws come
        from the ``random`` module.
        """
        if not self._counts:
            raise ValueError("cannot pick from an empty tally")
        source = random if rng is None else rng
        return source.choices(list(self._counts), weights=list(self._counts.values()))[
            0
        ]

    def __getitem__(self, item):
        return self._counts.get(item, 0)

    def __contains__(self, item):
        return item in self._counts

    def __iter__(self):
        return iter(self._counts)

    def __len__(self):
        """The number of distinct items, as for a dict; ``total()`` counts every copy."""
        return len(self._counts)

    def __eq__(self, other):
        if not isinstance(other, Tally):
            return NotImplemented
        return self._counts == other._counts

    def __repr__(self):
        return "Tally(%r)" % (self._counts,)
