# claimflow's result plugin: pytest loads it with `-p claimflow_result_plugin`.
#
# It answers the one question the oracle asks pytest: what happened to each selected test, phase by
# phase. It writes one JSON object per line to $CLAIMFLOW_RESULT_FILE and flushes after every line,
# so a run that crashes leaves every record written before the crash. It keeps only the node ids
# listed (one per line) in $CLAIMFLOW_SELECT_FILE, so the command line carries test files, never
# thousands of node ids.
#
# The syntax stays valid under Python 2.7 and every Python 3: old repositories run on old
# interpreters.
#
# Sub-tests. pytest-subtests (and pytest 9's own sub-tests) report each sub-test of `subtests.test`
# and unittest's `self.subTest` with a `context`; the record names it. Without them, unittest runs
# no further sub-test after the first that fails and the test's one report cannot say which it was,
# so `subTest` is wrapped to mark the exception leaving it with the sub-test's description. The
# wrapper re-raises whatever it sees: what the test does and how it ends are unchanged.
import contextlib
import json
import os
import re
import unittest

import pytest

_LONGREPR_LIMIT = 4000


class _Recorder(object):
    def __init__(self, path):
        self._file = open(path, "a")

    def write(self, record):
        self._file.write(json.dumps(record, sort_keys=True) + "\n")
        self._file.flush()

    def close(self):
        self._file.close()


_recorder = None
_original_subtest = None
_SUBTEST_MARK = "_claimflow_subtest"
_NO_MESSAGE = object()


def _record(record):
    if _recorder is not None:
        _recorder.write(record)


def _text(value, limit):
    try:
        text = str(value)
    except Exception:  # a repr that raises must not lose the record
        text = "<unprintable>"
    if len(text) > limit:
        # The end of a traceback names the exception; keep it.
        text = text[-limit:]
    return text


def _exception_name(kind):
    module = getattr(kind, "__module__", "")
    name = getattr(kind, "__name__", str(kind))
    if module in ("builtins", "exceptions", "__builtin__", ""):
        return name
    return module + "." + name


_STAR_IMPORT = re.compile(r"^\s*from\s+\S+\s+import\s+\*", re.MULTILINE)


def _undefined_name_in_test_file(item, excinfo):
    """True when the test's own module code used a name the module never defines: a NameError
    raised in a frame of the test's file, which imports nothing with `*` (through which a name
    the library removed would surface as the same error)."""
    if not issubclass(excinfo.type, NameError):
        return False
    try:
        raised_in = os.path.realpath(str(excinfo.traceback[-1].path))
        own = getattr(item, "path", None)
        if own is None:
            own = item.fspath
        own = os.path.realpath(str(own))
        if raised_in != own:
            return False
        with open(own) as handle:
            return _STAR_IMPORT.search(handle.read()) is None
    except Exception:  # no traceback, no file: not known, so not claimed
        return False


def _describe_subtest(message, params):
    """A sub-test as unittest and pytest-subtests print it: `[message] (name=value, ...)`."""
    parts = []
    if isinstance(message, str):
        parts.append("[%s]" % message)
    if params:
        parts.append("(%s)" % ", ".join("%s=%r" % (name, value) for name, value in params.items()))
    return " ".join(parts) or "(<subtest>)"


def _marking_subtest(original):
    @contextlib.contextmanager
    def subTest(self, msg=_NO_MESSAGE, **params):
        arguments = () if msg is _NO_MESSAGE else (msg,)
        with original(self, *arguments, **params):
            try:
                yield
            except BaseException as error:
                # The innermost sub-test names the failure; an outer one must not rename it.
                if getattr(error, _SUBTEST_MARK, None) is None:
                    message = None if msg is _NO_MESSAGE else msg
                    try:
                        setattr(error, _SUBTEST_MARK, _describe_subtest(message, params))
                    except Exception:  # an exception that takes no attributes stays unnamed
                        pass
                raise

    return subTest


def pytest_configure(config):
    global _recorder, _original_subtest
    path = os.environ.get("CLAIMFLOW_RESULT_FILE")
    if path:
        _recorder = _Recorder(path)
        _record({"event": "start"})
        original = getattr(unittest.TestCase, "subTest", None)
        if original is not None:
            _original_subtest = original
            unittest.TestCase.subTest = _marking_subtest(original)


def pytest_unconfigure(config):
    global _recorder, _original_subtest
    if _original_subtest is not None:
        unittest.TestCase.subTest = _original_subtest
        _original_subtest = None
    if _recorder is not None:
        _recorder.close()
        _recorder = None
_original_subtest = None
_SUBTEST_MARK = "_claimflow_subtest"
_NO_MESSAGE = object()


def pytest_collection_modifyitems(session, config, items):
    path = os.environ.get("CLAIMFLOW_SELECT_FILE")
    if not path:
        return
    with open(path) as handle:
        wanted = set(line.strip() for line in handle if line.strip())
    selected = []
    deselected = []
    for item in items:
        # A test file's path selects every test in it (the child's own check runs whole files).
        if item.nodeid in wanted or item.nodeid.split("::", 1)[0] in wanted:
            selected.append(item)
        else:
            deselected.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
    items[:] = selected
    _record({"event": "selected", "nodes": sorted(item.nodeid for item in selected)})


def pytest_collectreport(report):
    if report.failed:
        _record(
            {
                "event": "collect",
                "node": report.nodeid,
                "outcome": "failed",
                "longrepr": _text(report.longrepr, _LONGREPR_LIMIT),
            }
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    excinfo = call.excinfo
    if excinfo is not None:
        report.claimflow_exception = _exception_name(excinfo.type)
        report.claimflow_assertion = issubclass(excinfo.type, AssertionError)
        report.claimflow_undefined_name = _undefined_name_in_test_file(item, excinfo)
        subtest = getattr(excinfo.value, _SUBTEST_MARK, None)
        if subtest is not None:
            report.claimflow_subtest = subtest


def pytest_runtest_logreport(report):
    record = {
        "event": "test",
        "node": report.nodeid,
        "phase": report.when,
        "outcome": report.outcome,
    }
    exception = getattr(report, "claimflow_exception", None)
    if exception is not None:
        record["exception"] = exception
        record["assertion"] = bool(getattr(report, "claimflow_assertion", False))
        if getattr(report, "claimflow_undefined_name", False):
            record["undefined_name_in_test_file"] = True
    if hasattr(report, "wasxfail"):
        record["xfail"] = True
    # pytest-subtests and pytest's own sub-tests report each sub-result with a `context`.
    context = getattr(report, "context", None)
    if context is not None:
        record["subtest"] = _describe_subtest(
            getattr(context, "msg", None), getattr(context, "kwargs", None)
        )
    elif getattr(report, "claimflow_subtest", None) is not None:
        record["subtest"] = report.claimflow_subtest
    if report.failed:
        record["longrepr"] = _text(report.longrepr, _LONGREPR_LIMIT)
    _record(record)


def pytest_sessionfinish(session, exitstatus):
    _record({"event": "finish", "exitstatus": int(exitstatus)})
