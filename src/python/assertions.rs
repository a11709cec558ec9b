//! The assertion statements of a test, read statically from its source text: `assert` statements,
//! `self.assert*` / `self.fail*` calls, `pytest.fail`, `pytest.raises` / `warns` /
//! `deprecated_call` blocks or calls, and calls named `eq_`, `ok_` or `assert_*` (nose, numpy.testing,
//! mock) (a `with` block is one statement, body included). Nested
//! blocks (loops, branches, `try`, helper functions defined inside the test) are searched too.
//!
//! A pure function over text, so that a claim's assertions are exactly reproducible from its
//! source. Source that does not parse as Python 3 (the Python 2 era) yields `None`; the collection
//! plugin's answer, from the interpreter's own `ast`, is used then.

use rustpython_parser::Parse;
use rustpython_parser::ast::{self, Expr, Ranged, Stmt};

/// Callables of `pytest` (or imported from it) that assert an outcome.
const PYTEST_ASSERTIONS: [&str; 4] = ["raises", "warns", "deprecated_call", "fail"];

/// The assertion statements of the test whose source (a `def`, possibly indented and decorated) is
/// `source`, each dedented, in source order; `None` when it does not parse as Python 3.
pub fn assertion_statements(source: &str) -> Option<Vec<String>> {
    let text = dedent(source);
    let suite = ast::Suite::parse(&text, "<test>").ok()?;
    let mut found = Vec::new();
    let line_starts = line_starts(&text);
    visit(&suite, &text, &line_starts, &mut found);
    // `try` bodies are visited block by block; report statements in the order they are written.
    found.sort_by_key(|(start, _)| *start);
    Some(found.into_iter().map(|(_, statement)| statement).collect())
}

/// Removes the whitespace common to every non-blank line (Python's `textwrap.dedent`).
pub fn dedent(text: &str) -> String {
    let margin = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut dedented = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if line.trim().is_empty() {
            dedented.push_str(if line.ends_with('\n') { "\n" } else { "" });
        } else {
            dedented.push_str(&line[margin.min(line.len() - line.trim_start().len())..]);
        }
    }
    dedented
}

fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(index, _)| index + 1))
        .collect()
}

/// The whole lines a statement spans, dedented, without trailing whitespace.
fn statement_text(statement: &Stmt, text: &str, line_starts: &[usize]) -> String {
    let start = statement.range().start().to_usize();
    let end = statement.range().end().to_usize();
    let first_line = line_starts.partition_point(|&offset| offset <= start) - 1;
    let line_start = line_starts[first_line];
    let line_end = text[end..]
        .find('\n')
        .map_or(text.len(), |index| end + index);
    dedent(&text[line_start..line_end]).trim_end().to_string()
}

fn visit(statements: &[Stmt], text: &str, line_starts: &[usize], found: &mut Vec<(usize, String)>) {
    for statement in statements {
        if is_assertion(statement) {
            found.push((
                statement.range().start().to_usize(),
                statement_text(statement, text, line_starts),
            ));
            continue;
        }
        for body in bodies(statement) {
            visit(body, text, line_starts, found);
        }
    }
}

fn is_assertion(statement: &Stmt) -> bool {
    match statement {
        Stmt::Assert(_) => true,
        Stmt::Expr(expression) => {
            matches!(&*expression.value, Expr::Call(call) if is_assertion_call(call))
        }
        Stmt::With(ast::StmtWith { items, .. })
        | Stmt::AsyncWith(ast::StmtAsyncWith { items, .. }) => items
            .iter()
            .any(|item| matches!(&item.context_expr, Expr::Call(call) if is_assertion_call(call))),
        _ => false,
    }
}

fn is_assertion_call(call: &ast::ExprCall) -> bool {
    match &*call.func {
        Expr::Attribute(attribute) => {
            let name = attribute.attr.as_str();
            match &*attribute.value {
                Expr::Name(owner) if owner.id.as_str() == "self" => {
                    name.starts_with("assert") || name.starts_with("fail")
                }
                Expr::Name(owner) if owner.id.as_str() == "pytest" => {
                    PYTEST_ASSERTIONS.contains(&name)
                }
                _ => is_named_assertion(name),
            }
        }
        // `from pytest import raises`; a bare `fail(...)` is too ambiguous to count.
        Expr::Name(name) => {
            PYTEST_ASSERTIONS[..3].contains(&name.id.as_str()) || is_named_assertion(&name.id)
        }
        _ => false,
    }
}

/// Assertion functions named as such, as ranking counts them (`claimflow::mining::assertions`):
/// nose's `eq_`/`ok_`/`assert_*`, `numpy.testing.assert_*`, `assert_that`, mock's `assert_called*`.
/// more-itertools' 2017 suite asserted with nose's `eq_`; without these, 138 of the 198 tests of its
/// top-ranked commit were mined as having no assertion.
fn is_named_assertion(name: &str) -> bool {
    matches!(name, "eq_" | "ok_") || name.starts_with("assert_")
}

/// The nested statement lists of a compound statement.
fn bodies(statement: &Stmt) -> Vec<&[Stmt]> {
    match statement {
        Stmt::FunctionDef(node) => vec![&node.body],
        Stmt::AsyncFunctionDef(node) => vec![&node.body],
        Stmt::ClassDef(node) => vec![&node.body],
        Stmt::For(node) => vec![&node.body, &node.orelse],
        Stmt::AsyncFor(node) => vec![&node.body, &node.orelse],
        Stmt::While(node) => vec![&node.body, &node.orelse],
        Stmt::If(node) => vec![&node.body, &node.orelse],
        Stmt::With(node) => vec![&node.body],
        Stmt::AsyncWith(node) => vec![&node.body],
        Stmt::Match(node) => node.cases.iter().map(|case| case.body.as_slice()).collect(),
        Stmt::Try(ast::StmtTry {
            body,
            handlers,
            orelse,
            finalbody,
            ..
        })
        | Stmt::TryStar(ast::StmtTryStar {
            body,
            handlers,
            orelse,
            finalbody,
            ..
        }) => {
            let mut bodies: Vec<&[Stmt]> = vec![body, orelse, finalbody];
            for handler in handlers {
                let ast::ExceptHandler::ExceptHandler(handler) = handler;
                bodies.push(&handler.body);
            }
            bodies
        }
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assertions(source: &str) -> Vec<String> {
        assertion_statements(source).expect("parses")
    }

    #[test]
    fn plain_asserts_with_messages_and_continuations() {
        let source = "def test_sum():\n    total = 1 + 1\n    assert total == 2, \"sum\"\n    assert (\n        total\n        > 1\n    )\n";
        assert_eq!(
            assertions(source),
            [
                "assert total == 2, \"sum\"",
                "assert (\n    total\n    > 1\n)"
            ]
        );
    }

    #[test]
    fn unittest_methods_indented_in_a_class() {
        let source = "    @decorated\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n        self.assertTrue(x)  # why\n        self.failUnless(y)\n        self.helper()\n        other.assertEqual(1, 1)\n";
        assert_eq!(
            assertions(source),
            [
                "self.assertEqual(add(1, 2), 3)",
                "self.assertTrue(x)  # why",
                "self.failUnless(y)"
            ]
        );
    }

    #[test]
    fn raises_blocks_are_one_statement_with_their_body() {
        let source = "def test_raises():\n    with pytest.raises(ValueError, match='x'):\n        int('x')\n        assert False\n    pytest.raises(TypeError, int, None)\n    with raises(KeyError) as info:\n        {}['k']\n    with self.assertRaises(KeyError):\n        pass\n    with pytest.warns(UserWarning):\n        warn()\n    with open('f') as handle:\n        assert handle\n";
        assert_eq!(
            assertions(source),
            [
                "with pytest.raises(ValueError, match='x'):\n    int('x')\n    assert False",
                "pytest.raises(TypeError, int, None)",
                "with raises(KeyError) as info:\n    {}['k']",
                "with self.assertRaises(KeyError):\n    pass",
                "with pytest.warns(UserWarning):\n    warn()",
                "assert handle",
            ]
        );
    }

    #[test]
    fn nested_blocks_and_inner_helpers() {
        let source = "async def test_nested():\n    for value in values:\n        if value:\n            assert value > 0\n        else:\n            pytest.fail('empty')\n    try:\n        go()\n    except Error:\n        self.fail('boom')\n    finally:\n        assert done\n    def check(item):\n        assert item\n    match x:\n        case 1:\n            assert x == 1\n";
        assert_eq!(
            assertions(source),
            [
                "assert value > 0",
                "pytest.fail('empty')",
                "self.fail('boom')",
                "assert done",
                "assert item",
                "assert x == 1"
            ]
        );
    }

    #[test]
    fn nose_numpy_and_mock_assertions_count_as_ranking_counts_them() {
        // more-itertools before PR #162 asserted with nose's eq_ and assert_raises.
        assert_eq!(
            assertions(
                "def test_old(self):\n    eq_(list(f([])), [])\n    tools.ok_(True)\n    assert_raises(ValueError, f, 1)\n    np.testing.assert_allclose(a, b)\n    m.assert_called_once_with(1)\n    self.equal(1, 1)\n    helper_eq(1)\n"
            ),
            [
                "eq_(list(f([])), [])",
                "tools.ok_(True)",
                "assert_raises(ValueError, f, 1)",
                "np.testing.assert_allclose(a, b)",
                "m.assert_called_once_with(1)",
            ]
        );
    }

    #[test]
    fn a_test_without_assertions_has_none() {
        assert_eq!(
            assertions("def test_smoke():\n    run()\n    fail('x')\n"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn python_2_source_does_not_parse() {
        assert_eq!(
            assertion_statements("def test_old():\n    print 'x'\n    assert 1\n"),
            None
        );
    }

    #[test]
    fn dedent_keeps_relative_indentation_and_blank_lines() {
        assert_eq!(
            dedent("    def f():\n\n        pass\n"),
            "def f():\n\n    pass\n"
        );
    }
}
