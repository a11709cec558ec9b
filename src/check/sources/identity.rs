//! Claim ids that survive re-runs and edits elsewhere in a file: the digest of a claim's normalized
//! text and its file (never its line), with an occurrence index so two identical claims in one file
//! stay two claims. A record that carries its own id keeps it.

use std::collections::BTreeMap;

/// Bumped when the normalization or the digested record changes, since every id changes with it.
const SCHEME: &str = "claimflow-memory-claim-v1";

/// Hands out the ids of one file's claims, in reading order.
pub struct ClaimIds {
    file: String,
    seen: BTreeMap<String, u32>,
}

impl ClaimIds {
    /// `file` is the claim's source as reported (repository-relative where possible).
    pub fn new(file: &str) -> Self {
        ClaimIds {
            file: file.to_string(),
            seen: BTreeMap::new(),
        }
    }

    /// The id of the next claim with `text`: `m-` and 12 hex digits. The first occurrence is 0, so
    /// adding a duplicate later in the file leaves the earlier claim's id alone.
    pub fn next(&mut self, text: &str) -> String {
        let normalized = normalize(text);
        let occurrence = self.seen.entry(normalized.clone()).or_insert(0);
        let mut hasher = blake3::Hasher::new();
        for part in [SCHEME, &self.file, &normalized, &occurrence.to_string()] {
            hasher.update(part.as_bytes());
            hasher.update(&[0]);
        }
        *occurrence += 1;
        let hex = hasher.finalize().to_hex();
        format!("m-{}", &hex[..12])
    }
}

/// The text a claim's id is computed from: whitespace folded to single spaces, Markdown emphasis
/// (`*`, `~~`, `_` used as emphasis) removed outside code spans, so rewrapping a paragraph or
/// bolding a word does not make a new claim.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    let characters: Vec<char> = text.chars().collect();
    for (at, &character) in characters.iter().enumerate() {
        let before = at.checked_sub(1).map(|before| characters[before]);
        let after = characters.get(at + 1).copied();
        if character == '`' {
            in_code = !in_code;
        }
        if !in_code && is_emphasis(character, before, after) {
            continue;
        }
        if character.is_whitespace() {
            if !out.is_empty() && !out.ends_with(' ') {
                out.push(' ');
            }
        } else {
            out.push(character);
        }
    }
    out.trim_end().to_string()
}

fn is_emphasis(character: char, before: Option<char>, after: Option<char>) -> bool {
    let word =
        |found: Option<char>| found.is_some_and(|found| found.is_alphanumeric() || found == '_');
    match character {
        '*' => true,
        '~' => before == Some('~') || after == Some('~'),
        // `_` inside a word (`parse_url`) or doubled (`__init__`) is part of a name; alone at a
        // word's edge it is emphasis (`_only_`).
        '_' => before != Some('_') && after != Some('_') && word(before) != word(after),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalization_folds_whitespace_and_emphasis_but_keeps_names() {
        assert_eq!(
            normalize("  **Always**  uses\n _the_ `parse_url`  and __init__ "),
            "Always uses the `parse_url` and __init__"
        );
        assert_eq!(normalize("`a*b` is ~~not~~ *x*"), "`a*b` is not x");
    }

    #[test]
    fn ids_depend_on_text_file_and_occurrence_not_on_order_of_other_claims() {
        let mut first = ClaimIds::new("CLAUDE.md");
        let a = first.next("`parse_url` returns a tuple.");
        let a_again = first.next("`parse_url`   returns a *tuple*.");
        let mut second = ClaimIds::new("CLAUDE.md");
        second.next("Something added above.");
        assert_eq!(second.next("`parse_url` returns a tuple."), a);
        assert_ne!(a, a_again, "a duplicate gets its own id");
        assert_ne!(
            ClaimIds::new("AGENTS.md").next("`parse_url` returns a tuple."),
            a
        );
        assert!(a.starts_with("m-") && a.len() == 14, "{a}");
    }
}
