//! A byte-range edit of a file's text, and applying several at once: write-back only ever inserts
//! or replaces small spans, so every other byte of the file stays as it was.

use std::ops::Range;

/// Replace `range` (empty for an insertion) with `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub range: Range<usize>,
    pub text: String,
}

/// `text` with `edits` applied; edits at the same offset keep their given order.
pub fn apply(text: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|edit| edit.range.start);
    let mut out =
        String::with_capacity(text.len() + edits.iter().map(|edit| edit.text.len()).sum::<usize>());
    let mut at = 0;
    for edit in edits {
        out.push_str(&text[at..edit.range.start]);
        out.push_str(&edit.text);
        at = edit.range.end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_apply_in_offset_order_keeping_ties_in_order() {
        let edits = vec![
            Edit {
                range: 4..4,
                text: "X".into(),
            },
            Edit {
                range: 0..1,
                text: "A".into(),
            },
            Edit {
                range: 4..4,
                text: "Y".into(),
            },
        ];
        assert_eq!(apply("abcdef", edits), "AbcdXYef");
    }
}
