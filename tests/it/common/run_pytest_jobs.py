"""Run pytest in-process over many checkouts, so a test pays for one interpreter start.

Reads a JSON list of jobs on stdin, each {"dir": ..., "args": [...], "repeat": n}, and prints
one JSON object per job: {"runs": [{"outcomes": {nodeid: outcome}, "uncollectable": [...]}]}.
An outcome is "passed", "failed:<exception class>" or "error" (setup or teardown failed).
Between runs every module loaded from under "root" is forgotten and sys.path restored, so
each checkout imports its own copy of the code under test.
"""

import json
import os
import sys

import pytest


class Recorder:
    """Collects each test's outcome and each module that failed to collect."""

    def __init__(self):
        self.outcomes = {}
        self.exceptions = {}
        self.uncollectable = []

    def pytest_runtest_makereport(self, item, call):
        if call.when == "call" and call.excinfo is not None:
            self.exceptions[item.nodeid] = call.excinfo.typename

    def pytest_runtest_logreport(self, report):
        if report.when == "call":
            if report.failed:
                exception = self.exceptions.get(report.nodeid, "unknown")
                self.outcomes[report.nodeid] = "failed:" + exception
            else:
                self.outcomes[report.nodeid] = report.outcome
        elif report.failed:
            self.outcomes[report.nodeid] = "error"

    def pytest_collectreport(self, report):
        if report.failed:
            self.uncollectable.append(report.nodeid)


def forget_checkouts(root, original_path):
    for name, module in list(sys.modules.items()):
        if os.path.abspath(getattr(module, "__file__", None) or "").startswith(root):
            del sys.modules[name]
    sys.path[:] = original_path


def main():
    request = json.load(sys.stdin)
    root = os.path.abspath(request["root"])
    original_path = list(sys.path)
    with open(os.devnull, "w") as quiet:
        for job in request["jobs"]:
            runs = []
            for _ in range(job["repeat"]):
                forget_checkouts(root, original_path)
                os.chdir(job["dir"])
                recorder = Recorder()
                stdout = sys.stdout
                sys.stdout = quiet
                try:
                    pytest.main(
                        ["-p", "no:cacheprovider", "-q", "--continue-on-collection-errors"]
                        + job["args"],
                        plugins=[recorder],
                    )
                finally:
                    sys.stdout = stdout
                runs.append(
                    {"outcomes": recorder.outcomes, "uncollectable": recorder.uncollectable}
                )
            print(json.dumps({"runs": runs}), flush=True)


if __name__ == "__main__":
    main()
