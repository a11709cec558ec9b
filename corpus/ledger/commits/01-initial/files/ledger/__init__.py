"""A book of entries and its balance."""

from ledger.book import Book

__all__ = ["Book"]
