# Written out by claimflow's testmon arm and loaded with `-p claimflow_testmon_probe`.
# After collection (and testmon's deselection) it records which tests pytest would run and what
# testmon thought of its database, so the arm never has to parse pytest's console output.
import json
import os


def pytest_collection_finish(session):
    data = getattr(session.config, "testmon_data", None)
    report = {
        "selected": [item.nodeid for item in session.items],
        "testmon_active": data is not None,
        "new_db": bool(getattr(data, "new_db", False)),
        "packages_changed": bool(getattr(data, "system_packages_change", False)),
    }
    with open(os.environ["CLAIMFLOW_TESTMON_REPORT"], "w") as handle:
        json.dump(report, handle)
