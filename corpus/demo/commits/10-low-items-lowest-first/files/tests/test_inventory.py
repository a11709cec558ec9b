"""Tests for tally.inventory."""

import pytest

from tally import Inventory, OutOfStock


def test_unknown_items_have_no_stock():
    inventory = Inventory()
    assert inventory.stock("apple") == 0
    assert "apple" not in inventory


def test_restock_adds_to_the_stock():
    inventory = Inventory()
    inventory.restock("apple", 2)
    inventory.restock("apple", 3)
    assert inventory.stock("apple") == 5


def test_take_removes_from_the_stock():
    inventory = Inventory.from_pairs([("pear", 4)])
    inventory.take("pear", 3)
    assert inventory.stock("pear") == 1


def test_taking_more_than_there_is_raises():
    inventory = Inventory.from_pairs([("pear", 1)])
    with pytest.raises(OutOfStock):
        inventory.take("pear", 2)
    assert inventory.stock("pear") == 1


def test_repeated_lines_add_up(inv):
    assert inv.stock("apple") == 5


def test_pear_needs_restock(inv):
    assert inv.needs_restock("pear")
    assert not inv.needs_restock("plum")


def test_threshold_of_its_own(inv):
    inv.set_threshold("plum", 10)
    assert inv.needs_restock("plum")


def test_low_items_lowest_stock_first():
    inventory = Inventory.from_pairs([("pear", 5), ("cherry", 0), ("apple", 1)])
    assert inventory.low_items() == ["cherry", "apple"]


def test_repr_lists_the_stock_in_order():
    inventory = Inventory.from_pairs([("pear", 2), ("apple", 0)])
    assert repr(inventory) == "Inventory(pear=2, apple=0)"
