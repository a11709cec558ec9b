# -*- coding: utf-8 -*-
"""claimflow's collection plugin: asks pytest which tests a set of files defines, without running any.

Written out by claimflow at run time and loaded with ``-p claimflow_collect`` under ``--collect-only``.
It must run on every interpreter claimflow supports, Python 2.7 included, so it sticks to syntax both
understand. Inputs come from environment variables:

- ``CLAIMFLOW_COLLECT_FILES``: a file listing the test files to collect, one per line (so thousands
  of files never reach the command line);
- ``CLAIMFLOW_COLLECT_OUT``: where to write one JSON object per line: an ``item`` per test, an
  ``error`` per collection error, and a final ``summary``;
- ``CLAIMFLOW_COLLECT_NOSE``: set when the project runs its tests with nose, whose rule (not
  ``python_files``) names its test modules.

For each test it reports the source text of the function pytest will call, found through the class's
MRO (tests inherited from mixins in helper modules have no text in their own file) and through
decorators (the test's own function, never a wrapper that a Python 2 decorator left in its place), the assertion
statements the interpreter's own ``ast`` finds in it (used when claimflow's parser cannot read
Python 2 source), and the fixtures it uses with the function behind each.
"""
from __future__ import print_function

import ast
import fnmatch
import inspect
import io
import json
import os
import re
import sys
import textwrap

import pytest

_RECORDS = []
_ERRORS = []

_RAISES = ("raises", "warns", "deprecated_call")


def pytest_load_initial_conftests(early_config, parser, args):
    listing = os.environ.get("CLAIMFLOW_COLLECT_FILES")
    if not listing:
        return
    with io.open(listing, encoding="utf-8") as handle:
        files = [line.strip() for line in handle if line.strip()]
    args.extend(files)


def _relative(path, root):
    path = os.path.abspath(str(path))
    root = os.path.abspath(str(root))
    if path == root or path.startswith(root + os.sep):
        return os.path.relpath(path, root).replace(os.sep, "/")
    return path


def _unwrap(function):
    seen = set()
    while hasattr(function, "__wrapped__") and id(function) not in seen:
        seen.add(id(function))
        function = function.__wrapped__
    return function


def _resolve_function(item):
    """The function object behind a test item: through the class MRO when it is a method."""
    name = getattr(item, "originalname", None) or item.name.split("[")[0]
    cls = getattr(item, "cls", None)
    owner = None
    function = None
    if cls is not None:
        for klass in inspect.getmro(cls):
            if name in vars(klass):
                owner = klass
                function = vars(klass)[name]
                break
    else:
        module = getattr(item, "module", None)
        function = getattr(module, name, None)
    if function is None:
        function = getattr(item, "obj", None)
    for attribute in ("__func__", "im_func"):
        function = getattr(function, attribute, function)
    return _unwrap(function), owner, name


def _source(function):
    try:
        lines, start = inspect.getsourcelines(function)
    except (IOError, OSError, TypeError):
        return None, None, None
    source = "".join(lines)
    try:
        path = inspect.getsourcefile(function) or inspect.getfile(function)
    except TypeError:
        path = None
    return source, path, start


def _code_name(function):
    code = getattr(function, "__code__", None) or getattr(function, "func_code", None)
    return getattr(code, "co_name", None)


def _own_function(function, name):
    """The function whose code is the test's own, or None when it cannot be found.

    A decorator that copies the name but sets no ``__wrapped__`` (``functools.wraps`` on Python 2,
    freezegun's ``freeze_time``) leaves a wrapper whose code has another name; the test is then
    looked for among the functions the wrapper closes over, recursively."""
    if _code_name(function) in (None, name):
        return function
    seen = set()
    pending = [function]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if _code_name(current) == name:
            return current
        cells = getattr(current, "__closure__", None) or getattr(current, "func_closure", None)
        for cell in cells or ():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            for attribute in ("__func__", "im_func"):
                value = getattr(value, attribute, value)
            if _code_name(value) is not None:
                pending.append(value)
    return None


def _defined_source(item, owner, name):
    """The source of ``def name`` as the test's module (or its owner class's module) writes it,
    found by parsing that file: for a test whose decorator hides it."""
    module = None
    if owner is not None:
        module = sys.modules.get(getattr(owner, "__module__", ""))
    if module is None:
        module = getattr(item, "module", None)
    path = getattr(module, "__file__", None)
    if not path:
        return None, None, None
    if path.endswith((".pyc", ".pyo")):
        path = path[:-1]
    try:
        with io.open(path, encoding="utf-8") as handle:
            text = handle.read()
        tree = ast.parse(text.encode("utf-8") if sys.version_info[0] == 2 else text, path)
    except (IOError, OSError, SyntaxError, ValueError):
        return None, None, None
    body = tree.body
    if owner is not None:
        classes = [node for node in body if isinstance(node, ast.ClassDef) and node.name == owner.__name__]
        if not classes:
            return None, None, None
        body = classes[-1].body
    definitions = [node for node in body if isinstance(node, ast.FunctionDef) and node.name == name]
    if not definitions:
        return None, None, None
    node = definitions[-1]
    lines = text.splitlines()
    start = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
    # Before Python 3.8 a decorated def's own line number is its first decorator's.
    header = start
    while header <= len(lines) and not lines[header - 1].lstrip().startswith(("def ", "async def ")):
        header += 1
    if header > len(lines):
        return None, None, None
    end = getattr(node, "end_lineno", None)
    if end is None:
        indentation = _indentation(lines[header - 1])
        end = header
        for number in range(header + 1, len(lines) + 1):
            line = lines[number - 1]
            if not line.strip():
                continue
            if _indentation(line) <= indentation:
                break
            end = number
    source = "\n".join(lines[start - 1:end]) + "\n"
    return source, path, start


def _segment(lines, node, end):
    text = textwrap.dedent("\n".join(lines[node.lineno - 1:end])).rstrip()
    while text.endswith("\\"):
        text = text[:-1].rstrip()
    return text


def _indentation(line):
    return len(line) - len(line.lstrip())


def _statement_end(node, lines, limit):
    """The last line of a statement; Python < 3.8 has no end_lineno, so it is found by indentation:
    the statement's lines are those more indented than its first, or closing brackets."""
    end = getattr(node, "end_lineno", None)
    if end is not None:
        return end
    first = lines[node.lineno - 1]
    indentation = _indentation(first)
    end = node.lineno
    for number in range(node.lineno + 1, limit + 1):
        line = lines[number - 1]
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if _indentation(line) > indentation or (
            _indentation(line) == indentation and stripped[0] in ")]}"
        ):
            end = number
            continue
        break
    return end


def _call_name(call):
    function = call.func
    if isinstance(function, ast.Attribute):
        owner = function.value
        owner_name = owner.id if isinstance(owner, ast.Name) else None
        return owner_name, function.attr
    if isinstance(function, ast.Name):
        return None, function.id
    return None, None


def _is_assertion_call(call):
    owner, name = _call_name(call)
    if name is None:
        return False
    if owner == "self" and (name.startswith("assert") or name.startswith("fail")):
        return True
    if owner == "pytest" and (name in _RAISES or name == "fail"):
        return True
    if name in ("eq_", "ok_") or name.startswith("assert_"):
        # nose, numpy.testing, mock: as ranking counts them (claimflow::mining::assertions).
        return True
    return owner is None and name in _RAISES


def _is_raises_context(expression):
    return isinstance(expression, ast.Call) and _is_assertion_call(expression)


def _with_items(node):
    if hasattr(node, "items"):
        return [item.context_expr for item in node.items]
    return [node.context_expr]


def _assertions(source):
    """Assertion statements in a test's source text, by the interpreter's own parser."""
    text = textwrap.dedent(source)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    lines = text.splitlines()
    found = []

    def visit(statements):
        for node in statements:
            end = _statement_end(node, lines, len(lines))
            if isinstance(node, ast.Assert):
                found.append(_segment(lines, node, end))
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and _is_assertion_call(node.value):
                found.append(_segment(lines, node, end))
            elif type(node).__name__ in ("With", "AsyncWith") and any(
                _is_raises_context(expression) for expression in _with_items(node)
            ):
                found.append(_segment(lines, node, end))
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    children = getattr(node, field, None)
                    if isinstance(children, list) and children and isinstance(children[0], ast.AST):
                        if field == "handlers":
                            for handler in children:
                                visit(handler.body)
                        else:
                            visit(children)

    visit(tree.body)
    return [statement for statement in found if statement]


def _fixtures(item):
    names = [name for name in getattr(item, "fixturenames", []) if name != "request"]
    info = getattr(item, "_fixtureinfo", None)
    definitions = getattr(info, "name2fixturedefs", {}) or {}
    direct = set()
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        direct = set(getattr(callspec, "params", {}) or {})
    fixtures = []
    functions = {}
    for name in names:
        chain = definitions.get(name) or ()
        definition = chain[-1] if chain else None
        function = getattr(definition, "func", None)
        module = getattr(function, "__module__", "") or ""
        if name in direct and (definition is None or module.startswith("_pytest")):
            # A direct @pytest.mark.parametrize argument, not a fixture.
            continue
        if name.startswith("_") and module.startswith("_pytest"):
            # pytest's own plumbing for unittest and xunit-style setup methods.
            continue
        fixtures.append(name)
        if function is not None:
            functions[name] = getattr(_unwrap(function), "__name__", name)
    return fixtures, functions


_NOSE_TEST_MATCH = re.compile(r"(?:^|[_.-])[Tt]est")


def _matches_python_files(config, path):
    patterns = config.getini("python_files") or ["test_*.py", "*_test.py"]
    basename = os.path.basename(str(path))
    if os.environ.get("CLAIMFLOW_COLLECT_NOSE") and basename.endswith(".py"):
        # The project runs its tests with nose, whose testMatch names its test modules.
        if _NOSE_TEST_MATCH.search(basename[:-3]):
            return True
    return any(fnmatch.fnmatch(basename, pattern) for pattern in patterns)


def pytest_collectreport(report):
    if report.failed:
        _ERRORS.append({"kind": "error", "node": report.nodeid, "message": str(report.longrepr)[-4000:]})


def pytest_collection_finish(session):
    # pytest >= 7 has pathlib paths; older ones only py.path (kept working under 2.7's pytest 4.6).
    root = str(getattr(session.config, "rootpath", None) or session.config.rootdir)
    for item in session.items:
        path = getattr(item, "path", None) or getattr(item, "fspath", None)
        record = {
            "kind": "item",
            "node": item.nodeid,
            "file": _relative(path, root),
            "class": None,
            "function": None,
            "owner": None,
            "source": None,
            "source_file": None,
            "source_line": None,
            "assertions": [],
            "fixtures": [],
            "fixture_functions": {},
            "test_module": _matches_python_files(session.config, path),
        }
        try:
            function, owner, name = _resolve_function(item)
            cls = getattr(item, "cls", None)
            record["class"] = cls.__name__ if cls is not None else None
            record["function"] = name
            record["owner"] = owner.__name__ if owner is not None else None
            own = _own_function(function, name)
            if own is not None:
                source, source_file, line = _source(own)
            else:
                source, source_file, line = _defined_source(item, owner, name)
                if source is None:
                    source, source_file, line = _source(function)
            if source is not None:
                record["source"] = source
                record["source_file"] = _relative(source_file, root) if source_file else None
                record["source_line"] = line
                record["assertions"] = _assertions(source)
            record["fixtures"], record["fixture_functions"] = _fixtures(item)
        except Exception as error:  # a test we cannot describe is reported, not fatal
            record["problem"] = "%s: %s" % (type(error).__name__, error)
        _RECORDS.append(record)


def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("CLAIMFLOW_COLLECT_OUT")
    if not out:
        return
    summary = {
        "kind": "summary",
        "exit_status": int(exitstatus),
        "pytest": pytest.__version__,
        "python": "%d.%d.%d" % tuple(sys.version_info[:3]),
        "items": len(_RECORDS),
        "errors": len(_ERRORS),
    }
    with io.open(out, "w", encoding="utf-8") as handle:
        for record in _RECORDS + _ERRORS + [summary]:
            line = json.dumps(record, sort_keys=True, ensure_ascii=True)
            if not isinstance(line, type(u"")):
                line = line.decode("ascii")
            handle.write(line + u"\n")
