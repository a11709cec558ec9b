"""Tests for tally.counter."""

import random
import unittest

import pytest

from tally import Tally
from tests.mixins import CounterContract


class TestTally(CounterContract, unittest.TestCase):
    """Tally held to the counter contract."""

    def make(self, items=()):
        return Tally(items)


def test_counts_an_iterable():
    tally = Tally(['apple', 'pear', 'apple'])
    assert tally['apple'] == 2
    assert tally['pear'] == 1


def test_counts_a_mapping():
    tally = Tally({'apple': 2, 'pear': 1})
    assert tally == Tally(['apple', 'apple', 'pear'])


def test_len_and_total_differ_by_the_copies():
    tally = Tally(['apple', 'apple', 'apple', 'pear'])
    assert (len(tally), tally.total()) == (2, 4)


def test_negative_counts_are_refused():
    with pytest.raises(ValueError):
        Tally().add('apple', -1)


def test_most_common_first():
    tally = Tally({'apple': 1, 'pear': 3, 'plum': 2})
    assert tally.most_common(2) == [('pear', 3), ('plum', 2)]


def test_most_common_keeps_ties_in_insertion_order():
    tally = Tally(['fig', 'date', 'date', 'fig', 'kiwi'])
    assert tally.most_common() == [('fig', 2), ('date', 2), ('kiwi', 1)], 'ties keep the order of first addition'


def test_pick_follows_the_weights():
    rng = random.Random(20240311)
    tally = Tally(['apple', 'apple', 'apple', 'pear'])
    draws = 2000
    picks = Tally(tally.pick(rng) for _ in range(draws))
    assert 0.7 <= picks['apple'] / draws <= 0.8


def test_pick_from_an_empty_tally_raises():
    with pytest.raises(ValueError):
        Tally().pick()
