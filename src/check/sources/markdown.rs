//! Markdown memory files (CLAUDE.md, AGENTS.md, `.claude/rules/`, `memory-bank/`, …) and Cursor
//! rules (`.mdc`): which of their items and sentences are claims, and what each is anchored to.
//!
//! The rule: a list item or a paragraph sentence is a claim when it mentions code — it holds a code
//! span, or a code-like word (`parse_url`, `src/url.py`, `Client.get()`) that names a file,
//! directory or Python definition of the repository. Prose that names no code ("Be concise",
//! "Run the tests before pushing") states nothing a commit could make false and is left out, as are
//! lines of links, headings, code blocks, HTML comments, tables and front matter.

pub mod front_matter;
pub mod sentences;
pub mod units;

use crate::check::claim::{Anchor, MemoryClaim};

use super::anchors;
use super::error::SourceError;
use super::identity::ClaimIds;
use super::input::{Input, push_unique};
use super::repository::LazyIndex;

/// The claims of one Markdown or `.mdc` file, in file order.
pub fn read(input: &Input, names: &LazyIndex) -> Result<Vec<MemoryClaim>, SourceError> {
    let document = units::parse(input.text);
    let globs = match &document.front_matter {
        Some((text, first_line)) => {
            front_matter::globs(text).map_err(|(line, message)| SourceError::BadFrontMatter {
                path: input.label.clone(),
                line: first_line + line,
                message,
            })?
        }
        None => Vec::new(),
    };
    let mut ids = ClaimIds::new(&input.label_text());
    let mut claims = Vec::new();
    for unit in document.units.into_iter().filter(|unit| !unit.link_only) {
        let index = names.get()?;
        let mut found = Vec::new();
        for span in &unit.code_spans {
            for anchor in anchors::of_code_span(index, span) {
                push_unique(&mut found, anchor);
            }
        }
        for anchor in anchors::of_bare_words(index, &without_code_spans(&unit.text)) {
            push_unique(&mut found, anchor);
        }
        if unit.code_spans.is_empty() && found.is_empty() {
            continue;
        }
        for glob in &globs {
            push_unique(&mut found, Anchor::File { path: glob.clone() });
        }
        let id = ids.next(&unit.text);
        claims.push(input.claim(id, unit.text, unit.line, found));
    }
    Ok(claims)
}

/// The text with its `` `code spans` `` cut out, so their words are not read twice.
fn without_code_spans(text: &str) -> String {
    text.split('`').step_by(2).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::claim::SourceFormat;
    use crate::check::sources::repository::RepositoryIndex;

    fn read_text(
        text: &str,
        label: &str,
        format: SourceFormat,
    ) -> Result<Vec<MemoryClaim>, SourceError> {
        let input = Input::of_text(label, text, format);
        let names = LazyIndex::with_index(RepositoryIndex::of_sources(&[(
            "src/url.py",
            "def parse_url(text):\n    return text\n",
        )]));
        read(&input, &names)
    }

    const CLAUDE: &str = "# Notes

- `parse_url` returns a tuple of scheme and host.
- Be concise in commit messages.
- The parse_url helper lives in src/url.py.
- Formatting uses `black`.

Always run the tests. The module src/url.py has no classes.
";

    #[test]
    fn items_and_sentences_mentioning_code_are_claims_with_anchors() {
        let claims = read_text(CLAUDE, "CLAUDE.md", SourceFormat::Markdown).unwrap();
        let summary: Vec<(u32, &str, usize)> = claims
            .iter()
            .map(|claim| (claim.source.line, claim.text.as_str(), claim.anchors.len()))
            .collect();
        assert_eq!(
            summary,
            [
                (3, "`parse_url` returns a tuple of scheme and host.", 1),
                (5, "The parse_url helper lives in src/url.py.", 2),
                (6, "Formatting uses `black`.", 0),
                (8, "The module src/url.py has no classes.", 1),
            ]
        );
        assert_eq!(
            claims[0].anchors,
            [Anchor::Symbol {
                path: "src/url.py".into(),
                name: "parse_url".into()
            }]
        );
    }

    #[test]
    fn ids_survive_edits_elsewhere_in_the_file() {
        let before = read_text(CLAUDE, "CLAUDE.md", SourceFormat::Markdown).unwrap();
        let edited = CLAUDE.replace(
            "# Notes\n",
            "# Notes\n\n- `extra` item added above.\n\nMore prose.\n",
        );
        let after = read_text(&edited, "CLAUDE.md", SourceFormat::Markdown).unwrap();
        let find = |claims: &[MemoryClaim], text: &str| {
            claims
                .iter()
                .find(|claim| claim.text == text)
                .map(|claim| (claim.id.clone(), claim.source.line))
        };
        let text = "Formatting uses `black`.";
        let (id_before, line_before) = find(&before, text).unwrap();
        let (id_after, line_after) = find(&after, text).unwrap();
        assert_eq!(id_before, id_after);
        assert_eq!((line_before, line_after), (6, 10));
    }

    #[test]
    fn mdc_globs_anchor_every_claim_and_bad_front_matter_names_its_line() {
        let rule = "---\ndescription: Python rules\nglobs: src/**/*.py\nalwaysApply: false\n---\n\n- Errors derive from `UrlError`.\n";
        let claims = read_text(rule, ".cursor/rules/python.mdc", SourceFormat::Mdc).unwrap();
        assert_eq!(claims.len(), 1);
        assert_eq!(claims[0].source.line, 7);
        assert_eq!(
            claims[0].anchors,
            [Anchor::File {
                path: "src/**/*.py".into()
            }]
        );
        let broken = "---\nglobs: [x\nthis line is not yaml\n---\n- `a` b\n";
        let error = read_text(broken, "r.mdc", SourceFormat::Mdc).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("parse r.mdc:3: bad front matter"),
            "{error}"
        );
    }
}
