"""Fixtures shared by the test modules."""

import pytest

from tally import Inventory


@pytest.fixture(name="inv")
def inventory_fixture():
    """The stock of a small greengrocer, read from the lines of a stock sheet.

    The sheet lists apples on two lines.
    """
    return Inventory.from_pairs([("apple", 2), ("pear", 1), ("plum", 6), ("apple", 3)])
