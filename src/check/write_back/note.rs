//! Marking a flipped Markdown claim: a `<!-- claimflow: false since <commit>: <reason> (claim <id>) -->`
//! line after the item (or the sentence's paragraph), indented to stay inside it. The claim's id in
//! the note is what makes a second write find it and add nothing. In a file that changed since its
//! claims were read (another writer's notes shifted the lines), a claim is found by its id, which
//! does not depend on its line.

use crate::check::claim::MemoryClaim;
use crate::check::sources::identity::ClaimIds;
use crate::check::sources::markdown::units::{self, NotePlace};

use super::WriteError;
use super::edit::Edit;

/// The note for `claim`, or None when the note is already there. `Err` when the claim is not in
/// `text`: not at its line, or, when the file `moved` since it was read, nowhere under its id.
pub fn note_edit(
    text: &str,
    claim: &MemoryClaim,
    short_commit: &str,
    reason: &str,
    moved: bool,
) -> Result<Option<Edit>, WriteError> {
    let place = place_of(text, claim, moved)?;
    if existing_notes(text, place.at).any(|note| note.contains(&marker(&claim.id))) {
        return Ok(None);
    }
    // A file written with CRLF line endings keeps them.
    let line_end = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let newline = match place.at == text.len() && !text.is_empty() && !text.ends_with('\n') {
        true => line_end,
        false => "",
    };
    Ok(Some(Edit {
        range: place.at..place.at,
        text: format!(
            "{newline}{}<!-- claimflow: false since {short_commit}: {} {} -->{line_end}",
            place.indent,
            one_line(reason),
            marker(&claim.id)
        ),
    }))
}

fn place_of(text: &str, claim: &MemoryClaim, moved: bool) -> Result<NotePlace, WriteError> {
    let units = units::parse(text).units;
    let found = match moved {
        false => units
            .into_iter()
            .find(|unit| unit.line == claim.source.line && unit.text == claim.text),
        // The ids the Markdown reader hands out: every unit of the same text counts towards the
        // occurrence, and a unit of another text does not, whether or not it is a claim.
        true => {
            let label = claim.source.file.to_string_lossy().replace('\\', "/");
            let mut ids = ClaimIds::new(&label);
            units
                .into_iter()
                .filter(|unit| !unit.link_only)
                .find(|unit| ids.next(&unit.text) == claim.id)
        }
    };
    found
        .map(|unit| unit.note)
        .ok_or_else(|| WriteError::NotFound {
            path: claim.source.file.clone(),
            line: claim.source.line,
            id: claim.id.clone(),
        })
}

fn marker(id: &str) -> String {
    format!("(claim {id})")
}

/// The claimflow notes on the lines starting at `at`, up to the first other line.
fn existing_notes(text: &str, at: usize) -> impl Iterator<Item = &str> {
    text[at..].lines().map_while(|line| {
        let bare = line.trim_start_matches(|c: char| c.is_whitespace() || c == '>');
        bare.starts_with("<!-- claimflow:").then_some(bare)
    })
}

/// The reason on one line, without anything that would end the comment early.
fn one_line(reason: &str) -> String {
    let folded = reason
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace("--", "-");
    match folded.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &folded[..cut]),
        None => folded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::claim::{SourceFormat, SourceSpan};
    use crate::check::write_back::edit::apply;

    fn claim(text: &str, line: u32) -> MemoryClaim {
        MemoryClaim {
            id: "m-000000000001".into(),
            text: text.into(),
            source: SourceSpan {
                file: "CLAUDE.md".into(),
                line,
            },
            format: SourceFormat::Markdown,
            anchors: Vec::new(),
            test: None,
            check: None,
            record_key: None,
            origin: None,
        }
    }

    #[test]
    fn a_note_goes_after_the_item_and_is_added_once() {
        let text = "- `a` is b\n  - `c` is d\n- `e` is f";
        let edit = note_edit(
            text,
            &claim("`c` is d", 2),
            "abc1234",
            "c --> changed\nreally",
            false,
        )
        .unwrap()
        .unwrap();
        let once = apply(text, vec![edit]);
        assert_eq!(
            once,
            "- `a` is b\n  - `c` is d\n    <!-- claimflow: false since abc1234: c -> changed really (claim m-000000000001) -->\n- `e` is f"
        );
        assert_eq!(
            note_edit(&once, &claim("`c` is d", 2), "abc1234", "again", false).unwrap(),
            None
        );
        let last = note_edit(text, &claim("`e` is f", 3), "abc1234", "r", false)
            .unwrap()
            .unwrap();
        assert!(apply(text, vec![last]).ends_with(
            "- `e` is f\n  <!-- claimflow: false since abc1234: r (claim m-000000000001) -->\n"
        ));
    }

    #[test]
    fn a_claim_no_longer_at_its_line_is_an_error() {
        let error =
            note_edit("- `a` is b\n", &claim("`a` is b", 2), "abc1234", "r", false).unwrap_err();
        assert!(error.to_string().contains("CLAUDE.md:2"), "{error}");
    }

    #[test]
    fn crlf_files_keep_their_line_endings() {
        let text = "- `a` is b\r\n- `c` is d\r\n";
        let edit = note_edit(text, &claim("`a` is b", 1), "abc1234", "r", false)
            .unwrap()
            .unwrap();
        assert_eq!(
            apply(text, vec![edit]),
            "- `a` is b\r\n  <!-- claimflow: false since abc1234: r (claim m-000000000001) -->\r\n- `c` is d\r\n"
        );
    }
}
