"""Entries in a book, summed."""


class Book:
    """Amounts recorded in order, in units of a currency."""

    def __init__(self):
        self.entries = []

    def record(self, amount, memo=""):
        """Records `amount` with an optional memo."""
        self.entries.append((amount, memo))

    def balance(self):
        """The sum of every amount recorded."""
        return float(sum(amount for amount, _ in self.entries))
