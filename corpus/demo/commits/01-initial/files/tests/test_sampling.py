"""Tests for tally.sampling."""

import pytest

from tally import Tally
from tally.sampling import pick


def test_pick_from_a_single_item():
    assert pick(Tally(["apple"])) == "apple"


def test_pick_never_returns_a_discarded_item():
    tally = Tally(["apple", "pear"])
    tally.discard("pear")
    assert all(pick(tally) == "apple" for _ in range(50))


def test_pick_from_an_empty_tally_raises():
    with pytest.raises(ValueError):
        pick(Tally())


def test_pick_follows_the_weights():
    tally = Tally(["apple", "apple", "apple", "pear"])
    draws = 10
    picks = Tally(pick(tally) for _ in range(draws))
    assert picks["apple"] / draws >= 0.75
