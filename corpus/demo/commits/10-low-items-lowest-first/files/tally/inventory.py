"""Stock levels, and knowing when an item needs restocking."""

from .counter import Tally


class OutOfStock(Exception):
    """Raised when more of an item is taken than there is in stock."""


class Inventory:
    """How much of each item is in stock, and how little is too little.

    Every item has a threshold: when its stock is at or below the threshold, the item needs
    restocking. An item's threshold is ``default_threshold`` unless ``set_threshold`` gave it
    one of its own.
    """

    def __init__(self, default_threshold=1):
        self.default_threshold = default_threshold
        self._stock = Tally()
        self._thresholds = {}
        # Every item ever stocked, in the order first seen: the tally forgets items at zero,
        # and an item at zero is exactly the one that needs restocking.
        self._items = []

    @classmethod
    def from_pairs(cls, pairs, default_threshold=1):
        """Build an inventory from (item, quantity) pairs, such as the lines of a delivery note.

        When an item appears on two lines, both quantities arrived: they add up.
        """
        inventory = cls(default_threshold)
        for item, quantity in pairs:
            inventory.restock(item, quantity)
        return inventory

    def set_stock(self, item, quantity):
        """Record that exactly ``quantity`` of ``item`` is in stock."""
        self._know(item)
        self._stock.discard(item, self._stock[item])
        self._stock.add(item, quantity)

    def restock(self, item, quantity):
        """Put ``quantity`` more of ``item`` into stock."""
        self._know(item)
        self._stock.add(item, quantity)

    def take(self, item, quantity=1):
        """Take ``quantity`` of ``item`` out of stock, or raise ``OutOfStock``."""
        in_stock = self._stock[item]
        if in_stock < quantity:
            raise OutOfStock("%s: %d wanted, %d in stock" % (item, quantity, in_stock))
        self._stock.discard(item, quantity)

    def stock(self, item):
        """How much of ``item`` is in stock; zero for an item never stocked."""
        return self._stock[item]

    def set_threshold(self, item, threshold):
        """Give ``item`` a threshold of its own."""
        self._know(item)
        self._thresholds[item] = threshold

    def threshold(self, item):
        """The stock level at or below which ``item`` needs restocking."""
        return self._thresholds.get(item, self.default_threshold)

    def needs_restock(self, item):
        """Whether ``item`` needs restocking: its stock is at or below its threshold."""
        return self.stock(item) <= self.threshold(item)

    def low_items(self):
        """The items that need restocking, lowest stock first; equal stock by name."""
        low = [item for item in self._items if self.stock(item) < self.threshold(item)]
        return sorted(low, key=lambda item: (self.stock(item), item))

    def __contains__(self, item):
        return item in self._items

    def __repr__(self):
        stock = ", ".join("%s=%d" % (item, self.stock(item)) for item in self._items)
        return "Inventory(%s)" % stock

    def _know(self, item):
        if item not in self._items:
            self._items.append(item)
