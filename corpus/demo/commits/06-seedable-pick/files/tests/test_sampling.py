"""Tests for tally.sampling."""

import random

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
    # Seeded, and with enough draws that the share of apples is close to three in four.
    rng = random.Random(20240311)
    tally = Tally(["apple", "apple", "apple", "pear"])
    draws = 2000
    picks = Tally(pick(tally, rng) for _ in range(draws))
    assert 0.7 <= picks["apple"] / draws <= 0.8


def test_seeded_picks_repeat():
    tally = Tally(["apple", "pear", "plum"])
    first = [pick(tally, random.Random(7)) for _ in range(5)]
    again = [pick(tally, random.Random(7)) for _ in range(5)]
    assert first == again
