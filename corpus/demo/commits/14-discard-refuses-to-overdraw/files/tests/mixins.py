"""Shared tests: the behaviour every counter in tally promises.

A test class mixes ``CounterContract`` in ahead of ``unittest.TestCase`` and defines
``make``, which builds the counter under test from an iterable of items.
"""

import pytest


class CounterContract:
    """What every counter promises; subclasses define ``make(items)``."""

    def make(self, items=()):
        raise NotImplementedError("a counter test class defines make(items)")

    def test_missing_items_count_zero(self):
        assert self.make(["apple"])["pear"] == 0

    def test_discarding_more_than_there_is_raises(self):
        counter = self.make(["apple"])
        with pytest.raises(ValueError):
            counter.discard("apple", 5)
        assert counter["apple"] == 1

    def test_len_counts_distinct_items(self):
        assert len(self.make(["apple", "apple", "pear"])) == 2

    def test_total_counts_every_copy(self):
        assert self.make(["apple", "apple", "pear"]).total() == 3
