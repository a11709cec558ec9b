//! Recognising an assertion in one line of Python test code.
//!
//! Ranking scores a commit by the assertion lines it deletes from test files: a deleted assertion is
//! the direct signature of a retired expectation. The classifier sees one diff line at a time, with no
//! parse tree (a deleted line is rarely a whole statement), so it reads tokens: the `assert` statement,
//! and calls whose name is an assertion in the styles real suites use (unittest's `self.assert*` and
//! `self.fail*`, pytest's `raises`/`warns`, nose's `assert_*`/`eq_`/`ok_`, assertpy and hamcrest's
//! `assert_that`, `numpy.testing.assert_*`, mock's `assert_called*`). A multi-line assertion counts
//! once, on its first line. The benchmark's PyDriller script mirrors these rules exactly; change both.

/// True when `line` (one line of Python, without its diff marker) starts or holds an assertion.
pub fn is_assertion_line(line: &str) -> bool {
    let text = line.trim_start_matches([' ', '\t']);
    if text.starts_with('#') || is_definition(text) {
        return false;
    }
    if is_assert_statement(text) {
        return true;
    }
    // A `#` inside a string cuts the line short; the assertion call almost always comes first.
    let code = text.split('#').next().unwrap_or("");
    called_names(code).any(|(qualifier, name)| is_assertion_call(qualifier, name))
}

fn is_definition(text: &str) -> bool {
    ["def ", "async def ", "class "]
        .iter()
        .any(|keyword| text.starts_with(keyword))
}

fn is_assert_statement(text: &str) -> bool {
    text.strip_prefix("assert")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '(']))
}

fn is_assertion_call(qualifier: Option<&str>, name: &str) -> bool {
    let assert_named = name.starts_with("assert_")
        || name
            .strip_prefix("assert")
            .and_then(|rest| rest.chars().next())
            .is_some_and(|first| first.is_ascii_uppercase());
    if assert_named {
        return true;
    }
    match name {
        "raises" | "warns" | "deprecated_call" => matches!(qualifier, None | Some("pytest")),
        "fail" => matches!(qualifier, Some("self" | "pytest")),
        "eq_" | "ok_" => true,
        _ => {
            qualifier == Some("self")
                && (name.starts_with("failIf") || name.starts_with("failUnless"))
        }
    }
}

fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Every word followed by `(` (spaces or tabs between allowed), with the word right before a `.` that
/// precedes it (`self` in `self.assertEqual(`, `pytest` in `pytest.raises(`).
fn called_names(code: &str) -> impl Iterator<Item = (Option<&str>, &str)> {
    let bytes = code.as_bytes();
    let mut index = 0;
    std::iter::from_fn(move || {
        while index < bytes.len() {
            if !is_word(bytes[index]) {
                index += 1;
                continue;
            }
            let start = index;
            while index < bytes.len() && is_word(bytes[index]) {
                index += 1;
            }
            let end = index;
            let mut after = end;
            while after < bytes.len() && matches!(bytes[after], b' ' | b'\t') {
                after += 1;
            }
            if bytes.get(after) != Some(&b'(') {
                continue;
            }
            let qualifier = (start > 0 && bytes[start - 1] == b'.').then(|| {
                let dot = start - 1;
                let mut begin = dot;
                while begin > 0 && is_word(bytes[begin - 1]) {
                    begin -= 1;
                }
                &code[begin..dot]
            });
            return Some((qualifier, &code[start..end]));
        }
        None
    })
}

/// The number of assertion lines among `lines`.
pub fn count_assertions<'a>(lines: impl IntoIterator<Item = &'a str>) -> u32 {
    lines
        .into_iter()
        .filter(|line| is_assertion_line(line))
        .count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assert_statements() {
        for line in [
            "assert x == 1",
            "    assert result is None, 'message'",
            "\tassert(x)",
            "assert",
            "        assert cache.get(1) == pytest.approx(0.5)",
            "assert not funcutils.wraps(f).__doc__",
        ] {
            assert!(is_assertion_line(line), "{line:?}");
        }
    }

    #[test]
    fn unittest_methods() {
        for line in [
            "        self.assertEqual(cache[1], 1)",
            "self.assertTrue(x)",
            "self.assertRaises(KeyError, cache.pop, 2)",
            "        with self.assertRaises(TypeError):",
            "with self.assertRaisesRegex(ValueError, 'bad'):",
            "self.assertThat(result, Equals(3))",
            "self.assert_(x)",
            "self.assertEquals(a, b)",
            "self.failUnless(x)",
            "self.failIfEqual(a, b)",
            "self.fail('should not get here')",
            "self.assertAlmostEqual(1.0, 1.0000001)",
            "with self.assertWarns(DeprecationWarning):",
            "self.assertLogs('x')",
            "self.assertEqual (a, b)",
        ] {
            assert!(is_assertion_line(line), "{line:?}");
        }
    }

    #[test]
    fn pytest_forms() {
        for line in [
            "    with pytest.raises(ValueError):",
            "with pytest.raises(ValueError, match='x') as info:",
            "pytest.raises(KeyError, cache.pop, 1)",
            "with pytest.warns(UserWarning):",
            "with pytest.deprecated_call():",
            "    pytest.fail('boom')",
            "with raises(ZeroDivisionError):",
            "@raises(ValueError)",
            "async with pytest.raises(RuntimeError):",
            "with pytest.raises(A), pytest.warns(B):",
        ] {
            assert!(is_assertion_line(line), "{line:?}");
        }
    }

    #[test]
    fn nose_numpy_assertpy_hamcrest_and_mock_forms() {
        for line in [
            "assert_equal(a, b)",
            "nt.assert_true(x)",
            "eq_(a, b)",
            "ok_(x, 'msg')",
            "tools.eq_(1, 1)",
            "np.testing.assert_allclose(a, b)",
            "numpy.testing.assert_array_equal(a, b)",
            "npt.assert_almost_equal(x, 1.0)",
            "assert_that(result).is_equal_to(3)",
            "assert_that(result, equal_to(3))",
            "tm.assert_frame_equal(left, right)",
            "mocked.assert_called_once_with(1, 2)",
            "factory().assert_not_called()",
            "x = self.assertRaises(ValueError, f)",
            "assertThat(value, is_(3))",
        ] {
            assert!(is_assertion_line(line), "{line:?}");
        }
    }

    #[test]
    fn non_assertions() {
        for line in [
            "",
            "    ",
            "x = compute()",
            "# assert x == 1",
            "    # self.assertEqual(a, b)",
            "def assert_valid(self, value):",
            "    def test_fail(self):",
            "async def assert_eventually(cond):",
            "class AssertionHelpers(object):",
            "assertion = make()",
            "self.assertion_count += 1",
            "asserted = True",
            "raise AssertionError('x')",
            "self.failureException = MyError",
            "self.failureException('x')",
            "result = cache.fail(1)",
            "mod.raises(1)",
            "x.warns(2)",
            "self.assertEqual",
            "    return assert_ok",
            "print('assert_equal')",
            "),",
            "    a, b,",
            "my_assert(x)",
            "reassert(x)",
            "count = 1  # then assert_equal(x) runs",
            "@pytest.mark.parametrize('x', [1, 2])",
        ] {
            assert!(!is_assertion_line(line), "{line:?}");
        }
    }

    #[test]
    fn counts_lines_not_calls() {
        let lines = [
            "assert a == b",
            "x = 1",
            "self.assertEqual(a, b); self.assertEqual(c, d)",
            "    1,",
        ];
        assert_eq!(count_assertions(lines), 2);
    }
}
