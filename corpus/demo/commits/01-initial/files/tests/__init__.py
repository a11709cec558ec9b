"""The tests of tally; a package so that test modules can share ``tests.mixins``."""
