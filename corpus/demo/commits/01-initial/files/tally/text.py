"""Words and word counts of plain text."""

import re

from .counter import Tally

# A word is a run of letters, with apostrophes inside it ("it's", "o'clock").
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")


def words(text):
    """The words of ``text``, in order and as written."""
    return _WORD.findall(text)


def count_words(text):
    """A tally of the words of ``text``."""
    return Tally(words(text))
