"""Tests for tally.text."""

from tally import count_words, words


def test_words_are_runs_of_letters():
    assert words("It's a dog-eat-dog world.") == ["It's", "a", "dog", "eat", "dog", "world"]


def test_count_words():
    counts = count_words("the cat saw the dog")
    assert counts["the"] == 2
    assert counts["cat"] == 1


def test_counting_ignores_case():
    counts = count_words("The cat saw the dog")
    assert counts["the"] == 2
    assert counts["The"] == 0


def test_no_words_in_an_empty_text():
    assert count_words("").total() == 0
