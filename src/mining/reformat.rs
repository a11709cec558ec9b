//! Telling an assertion that went away from one that was only reformatted.
//!
//! A formatter run (black, a re-indent, a call split over lines, a test moved within its file)
//! deletes every assertion line it touches and adds it back in another shape. Counted as deletions,
//! such a commit would rank first while retiring no expectation at all. So a deleted assertion line
//! counts only when its normalised text does not appear in the normalised text of the lines the same
//! commit added to the same file (or to the file it was renamed to).
//!
//! Normalising keeps what a formatter cannot change and drops what it can:
//! - whitespace goes, line breaks included, except that a run of it between two word characters
//!   (`[A-Za-z0-9_]`) becomes one space, so `not x` never reads as `notx`;
//! - `'` reads as `"` (black's string quotes);
//! - a comma right before `)`, `]` or `}` goes (black's "magic trailing comma" when it explodes a call).
//!
//! The added lines are normalised as one text, so an assertion split over several added lines is still
//! found whole, but where each added line starts and ends is remembered. A deleted line is found only
//! where an added line starts (a statement starts a line however it is wrapped), and, when its brackets
//! balance (a whole statement, not the first line of a call that continues), only where an added line
//! ends: `assert x == 2` is not found in `assert x == 2 * 3`. A match also may not run into a word
//! character (`assert f(x` is not found in `assert f(xs)`). The benchmark's PyDriller script mirrors
//! these rules exactly; change both.

/// The normalised text of the lines a commit added to one file, to look deleted lines up in.
#[derive(Debug, Default)]
pub struct AddedText {
    normalized: String,
    /// Where each added line ends in `normalized`, and where the line after it starts (after the
    /// space that keeps two words apart, if one went between them).
    lines: Lines,
}

impl AddedText {
    /// The text of `lines` (each without its line break), joined and normalised.
    pub fn new<'a>(lines: impl IntoIterator<Item = &'a str>) -> Self {
        let mut joined = String::new();
        for line in lines {
            joined.push_str(line);
            joined.push('\n');
        }
        let (normalized, lines) = normalize_lines(&joined);
        AddedText { normalized, lines }
    }

    /// True when `deleted` (one deleted line) still appears, normalised, in the added text: the line
    /// was reformatted or moved, not removed.
    pub fn still_has(&self, deleted: &str) -> bool {
        let needle = normalize(deleted);
        if needle.is_empty() {
            return false;
        }
        let haystack = self.normalized.as_bytes();
        let starts_with_word = is_word(needle.as_bytes()[0]);
        let ends_with_word = is_word(needle.as_bytes()[needle.len() - 1]);
        let whole_statement = balanced(&needle);
        let mut from = 0;
        while let Some(found) = self.normalized[from..].find(&needle) {
            let start = from + found;
            let end = start + needle.len();
            let starts_a_line = start == 0 || self.lines.starts.binary_search(&start).is_ok();
            let ends_a_line = end == haystack.len() || self.lines.ends.binary_search(&end).is_ok();
            let runs_in_before = starts_with_word && start > 0 && is_word(haystack[start - 1]);
            let runs_in_after = ends_with_word && end < haystack.len() && is_word(haystack[end]);
            if starts_a_line
                && (ends_a_line || !whole_statement)
                && !runs_in_before
                && !runs_in_after
            {
                return true;
            }
            // Try the next occurrence, overlapping ones included (the needle may repeat itself).
            from = start
                + self.normalized[start..]
                    .chars()
                    .next()
                    .map_or(1, char::len_utf8);
        }
        false
    }
}

/// True when `text` opens as many brackets as it closes (strings are not told apart: a bracket in a
/// string only makes a line look unfinished, which loosens the match).
fn balanced(text: &str) -> bool {
    let opened = text
        .chars()
        .filter(|c| matches!(c, '(' | '[' | '{'))
        .count();
    let closed = text
        .chars()
        .filter(|c| matches!(c, ')' | ']' | '}'))
        .count();
    opened == closed
}

fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

fn is_space(character: char) -> bool {
    matches!(character, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

/// `text` with the formatting a formatter may change taken out (see the module docs).
pub fn normalize(text: &str) -> String {
    normalize_lines(text).0
}

/// Where the lines of a normalised text end and start (one of each per line break, in order).
#[derive(Debug, Default, PartialEq, Eq)]
struct Lines {
    ends: Vec<usize>,
    starts: Vec<usize>,
}

/// [`normalize`], with where each line break left a line's end and the next line's start.
fn normalize_lines(text: &str) -> (String, Lines) {
    let mut out = String::with_capacity(text.len());
    let mut lines = Lines::default();
    let mut pending_space = false;
    for character in text.chars() {
        if is_space(character) {
            if character == '\n' {
                lines.ends.push(out.len());
                lines.starts.push(out.len());
            }
            pending_space = true;
            continue;
        }
        let character = if character == '\'' { '"' } else { character };
        let last = out.as_bytes().last().copied();
        if pending_space
            && last.is_some_and(is_word)
            && character.is_ascii()
            && is_word(character as u8)
        {
            // The space belongs to neither line: a line that starts here starts after it.
            let at = out.len();
            out.push(' ');
            for offset in lines
                .starts
                .iter_mut()
                .rev()
                .take_while(|offset| **offset == at)
            {
                *offset += 1;
            }
        }
        pending_space = false;
        if matches!(character, ')' | ']' | '}') && last == Some(b',') {
            out.pop();
            let at = out.len();
            // The comma ended the line before: that line now ends, and the next starts, before it.
            for offset in lines
                .ends
                .iter_mut()
                .rev()
                .take_while(|offset| **offset > at)
            {
                *offset = at;
            }
            for offset in lines
                .starts
                .iter_mut()
                .rev()
                .take_while(|offset| **offset > at)
            {
                *offset = at;
            }
        }
        out.push(character);
    }
    (out, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalising_drops_what_black_changes() {
        assert_eq!(normalize("    assert x==1"), "assert x==1");
        assert_eq!(normalize("assert  x == 1  "), "assert x==1");
        assert_eq!(
            normalize("assert tally['pear'] == 1"),
            "assert tally[\"pear\"]==1"
        );
        assert_eq!(normalize("f(\n    a,\n    b,\n)"), "f(a,b)");
        assert_eq!(
            normalize("assert (\n    a\n    and b\n)"),
            "assert(a and b)"
        );
        assert_eq!(normalize("[1, 2, ]"), "[1,2]");
        assert_eq!(normalize("{'a': 1,}"), "{\"a\":1}");
    }

    #[test]
    fn a_reformatted_assertion_is_still_there() {
        let added = AddedText::new([
            "    assert tally[\"apple\"] == 2",
            "    self.assertEqual(",
            "        cache.get(1),",
            "        1,",
            "    )",
        ]);
        assert!(added.still_has("    assert tally['apple']==2"));
        assert!(added.still_has("        self.assertEqual(cache.get(1), 1)"));
        assert!(added.still_has("\tself.assertEqual(cache.get(1),"));
    }

    #[test]
    fn an_edited_assertion_is_gone() {
        let added = AddedText::new([
            "    assert f(1) == 2",
            "    assert g(x) == 10",
            "    assert h(y) == 2 * 3",
            "    x = check(z); assert z",
        ]);
        assert!(!added.still_has("    assert f(1) == 1"));
        assert!(
            !added.still_has("    assert g(x) == 1"),
            "a match may not run into a word"
        );
        assert!(!added.still_has("    assert not g(x) == 10"));
        assert!(
            !added.still_has("    assert h(y) == 2"),
            "a whole statement ends a line"
        );
        assert!(!added.still_has("assert z"), "a statement starts a line");
        assert!(!added.still_has("   "), "an empty line is never found");
    }

    #[test]
    fn the_first_line_of_a_call_is_found_in_the_joined_call() {
        let added = AddedText::new(["        self.assertEqual(cache.get(1), 1)"]);
        assert!(added.still_has("        self.assertEqual("));
        assert!(added.still_has("        self.assertEqual(cache.get(1),"));
        assert!(!added.still_has("        self.assertEqual(cache.get(1), 1, 'msg')"));
    }

    #[test]
    fn line_ends_and_starts_survive_spaces_and_trailing_commas() {
        let (text, lines) = normalize_lines("f(\n    a,\n)\nx\nand y\n");
        assert_eq!(text, "f(a)x and y");
        // `f(` | `a` (its comma gone) | `)` | `x` | a space | `and y` | the end.
        assert_eq!(lines.ends, [2, 3, 4, 5, 11]);
        assert_eq!(lines.starts, [2, 3, 4, 6, 11]);
    }

    #[test]
    fn a_match_may_follow_the_previous_added_line() {
        // Joined with line breaks, `x = 1` and `assert y` do not run together into `1assert`.
        let added = AddedText::new(["x = 1", "assert y"]);
        assert!(added.still_has("assert y"));
        assert!(!AddedText::new(["reassert y"]).still_has("assert y"));
    }

    #[test]
    fn a_later_occurrence_is_found_after_a_bad_one() {
        let added = AddedText::new(["assert g(x) == 10", "assert g(x) == 1"]);
        assert!(added.still_has("assert g(x) == 1"));
        let nothing = AddedText::new(std::iter::empty());
        assert!(!nothing.still_has("assert x"));
    }
}
