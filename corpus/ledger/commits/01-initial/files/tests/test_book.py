from ledger import Book


def test_balance_sums_entries():
    book = Book()
    book.record(12.5, "lunch")
    book.record(-2.5, "refund")
    assert book.balance() == 10.0


def test_new_book_has_no_entries():
    assert Book().entries == []


def test_record_keeps_the_memo():
    book = Book()
    book.record(3, "coffee")
    assert book.entries == [(3, "coffee")]
