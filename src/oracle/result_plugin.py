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
import json
import os

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


def pytest_configure(config):
    global _recorder
    path = os.environ.get("CLAIMFLOW_RESULT_FILE")
    if path:
        _recorder = _Recorder(path)
        _record({"event": "start"})


def pytest_unconfigure(config):
    global _recorder
    if _recorder is not None:
        _recorder.close()
        _recorder = None


def pytest_collection_modifyitems(session, config, items):
    path = os.environ.get("CLAIMFLOW_SELECT_FILE")
    if not path:
        return
    with open(path) as handle:
        wanted = set(line.strip() for line in handle if line.strip())
    selected = []
    deselected = []
    for item in items:
        if item.nodeid in wanted:
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
    if hasattr(report, "wasxfail"):
        record["xfail"] = True
    # pytest-subtests and pytest's own subtests report each sub-result with a `context`.
    if getattr(report, "context", None) is not None:
        record["subtest"] = True
    if report.failed:
        record["longrepr"] = _text(report.longrepr, _LONGREPR_LIMIT)
    _record(record)


def pytest_sessionfinish(session, exitstatus):
    _record({"event": "finish", "exitstatus": int(exitstatus)})
