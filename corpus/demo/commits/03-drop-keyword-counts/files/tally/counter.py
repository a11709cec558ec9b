"""A multiset: how many of each thing there is."""


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
            raise ValueError('cannot add a negative count: %r' % (count,))
        if count:
            self._counts[item] = self._counts.get(item, 0) + count

    def update(self, items):
        """Add each item of an iterable, or each (item, count) of a mapping."""
        if hasattr(items, 'items'):
            for item, count in items.items():
                self.add(item, count)
        else:
            for item in items:
                self.add(item)

    def discard(self, item, count=1):
        """Remove up to ``count`` copies of ``item``; a count never drops below zero."""
        remaining = self._counts.get(item, 0) - count
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
        ranked = sorted(self._counts.items(), key=lambda pair: -pair[1])
        if n is None:
            return ranked
        return ranked[:n]

    def __getitem__(self, item):
        return self._counts.get(item, 0)

    def __contains__(self, item):
        return item in self._counts

    def __iter__(self):
        return iter(self._counts)

    def __len__(self):
        """The number of items counted, copies included: the same as ``total()``."""
        return self.total()

    def __eq__(self, other):
        if not isinstance(other, Tally):
            return NotImplemented
        return self._counts == other._counts

    def __repr__(self):
        return 'Tally(%r)' % (self._counts,)
