"""tally: counting things.

``Tally`` counts hashable items, ``Inventory`` keeps stock levels on top of a tally, and
``count_words`` tallies the words of a text.
"""

from .counter import Tally
from .inventory import Inventory, OutOfStock
from .text import count_words, words

__all__ = ["Inventory", "OutOfStock", "Tally", "count_words", "words"]
