//! `--format github`: a workflow annotation (`::warning file=…,line=…::…`) on the memory file's
//! line of each flipped claim, which GitHub shows on the pull request's diff and in the run, and a
//! Markdown summary fit for a pull-request comment or the job's step summary.
//!
//! The summary is posted where people read it (a pull-request comment), and its cells hold text
//! nobody vetted: a claim as an agent wrote it, a model's reason. Every such cell is escaped so it
//! renders as the text it is: no table pipe, HTML tag, image, link, code span or `@mention` in it
//! stays live.

use super::claim::{CheckResult, Verdict};
use super::report::{Counts, cut, location, stage_name};

/// One `::warning` line per flipped claim.
pub fn annotations(results: &[CheckResult], range: &str) -> String {
    let mut text = String::new();
    for result in results
        .iter()
        .filter(|result| result.verdict == Verdict::Flipped)
    {
        let (file, line) = location(result);
        text.push_str(&format!(
            "::warning file={},line={line},title={}::{}\n",
            property(&file),
            property(&format!("claim falsified by {range}")),
            data(&format!(
                "{} (decided by {}: {})",
                result.text.trim(),
                stage_name(result.decided_by.as_ref()),
                result.evidence
            ))
        ));
    }
    text
}

/// A Markdown summary: the counts, and a table of the flipped claims and those without a verdict.
pub fn summary(results: &[CheckResult], range: &str) -> String {
    let counts = Counts::of(results);
    let mut text = format!(
        "### claimflow check: {} of {} claims falsified by `{range}`\n\n{}\n",
        counts.flipped,
        results.len(),
        counts.line()
    );
    let listed: Vec<&CheckResult> = results
        .iter()
        .filter(|result| result.verdict != Verdict::Held)
        .collect();
    if listed.is_empty() {
        return text;
    }
    text.push_str("\n| verdict | claim | where | decided by | evidence |\n|---|---|---|---|---|\n");
    for result in listed {
        let verdict = match result.verdict {
            Verdict::Flipped => "**flipped**",
            _ => "no verdict",
        };
        text.push_str(&format!(
            "| {verdict} | {} | `{}` | {} | {} |\n",
            cell(&result.text, 120),
            code_cell(&result.source),
            cell(stage_name(result.decided_by.as_ref()), 60),
            cell(&result.evidence, 200)
        ));
    }
    text
}

/// A table cell of plain text: one line, cut, and escaped so that nothing in it is Markdown or
/// HTML any more.
fn cell(text: &str, width: usize) -> String {
    let mut escaped = String::new();
    for character in cut(text, width).chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            // A table's cell ends at a bare pipe; an escaped bracket opens no link or image, an
            // escaped backtick no code span, and an escaped backslash cannot escape the escapes.
            '|' | '[' | ']' | '`' | '\\' | '*' | '_' | '~' => {
                escaped.push('\\');
                escaped.push(character);
            }
            // A zero-width joiner after `@` keeps the text and stops GitHub notifying the user
            // (or team) it would name.
            '@' => escaped.push_str("@\u{200D}"),
            _ => escaped.push(character),
        }
    }
    escaped
}

/// A cell shown as code (a `file:line`): inside a code span nothing but a backtick or a pipe
/// (which GitHub splits table cells on even there) is read, and a line break ends the row.
fn code_cell(text: &str) -> String {
    text.chars()
        .map(|character| match character {
            '`' => "'".to_string(),
            '|' => "\\|".to_string(),
            character if character.is_control() => " ".to_string(),
            character => character.to_string(),
        })
        .collect()
}

/// A workflow command's message, escaped as the runner reads it.
fn data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value, escaped as the runner reads it.
fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::claim::Stage;

    #[test]
    fn an_annotation_escapes_what_the_runner_reads() {
        let result = CheckResult {
            id: "a".into(),
            source: "notes/CLAUDE.md:7".into(),
            text: "rate is 50%,\nnot more".into(),
            verdict: Verdict::Flipped,
            decided_by: Some(Stage::A4),
            evidence: "x".into(),
            tokens_in: 0,
            tokens_out: 0,
            cost: 0.0,
        };
        assert_eq!(
            annotations(&[result], "a..b"),
            "::warning file=notes/CLAUDE.md,line=7,title=claim falsified by a..b::rate is 50%25,%0Anot more (decided by a4: x)\n"
        );
    }

    /// A claim whose text is hostile Markdown and HTML.
    fn hostile() -> CheckResult {
        CheckResult {
            id: "h".into(),
            source: "notes/we|ird`.md:3".into(),
            text: "a | b <img src=x onerror=alert(1)> &amp; @octocat \
                   ![p](https://e.invalid/p) [c](https://e.invalid) `code` **s** \\| x\ny"
                .into(),
            verdict: Verdict::Flipped,
            decided_by: Some(Stage::Model("a6_<i>risk</i>".into())),
            evidence: "the model said [see](javascript:alert(1)) | <script>x</script>".into(),
            tokens_in: 0,
            tokens_out: 0,
            cost: 0.0,
        }
    }

    #[test]
    fn hostile_claim_text_renders_inert_in_the_summary() {
        use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
        let summary = summary(&[hostile()], "a..b");
        let mut cells: Vec<String> = Vec::new();
        let mut rows = 0;
        for event in Parser::new_ext(&summary, Options::ENABLE_TABLES) {
            match event {
                Event::Html(html) | Event::InlineHtml(html) => panic!("live HTML {html:?}"),
                Event::Start(Tag::Image { .. } | Tag::Link { .. }) => panic!("a live link"),
                // The verdict's own `**flipped**` is the one emphasis meant.
                Event::Start(Tag::Emphasis | Tag::Strong) if cells.len() > 1 => {
                    panic!("live emphasis in cell {}", cells.len())
                }
                Event::Start(Tag::TableRow) => {
                    rows += 1;
                    cells.clear();
                }
                Event::Start(Tag::TableCell) => cells.push(String::new()),
                Event::Text(text) | Event::Code(text) => {
                    if let Some(cell) = cells.last_mut() {
                        cell.push_str(&text);
                    }
                }
                Event::End(TagEnd::TableRow) => break,
                _ => {}
            }
        }
        assert_eq!(rows, 1, "one row for the one claim:\n{summary}");
        assert_eq!(cells.len(), 5, "{cells:?}");
        assert_eq!(
            cells[1],
            "a | b <img src=x onerror=alert(1)> &amp; @\u{200D}octocat \
             ![p](https://e.invalid/p) [c](https://e.invalid) `code` **s** \\| x y",
            "the claim reads as written, every construct in it inert"
        );
        assert_eq!(cells[2], "notes/we|ird'.md:3");
        assert_eq!(cells[3], "a6_<i>risk</i>");
        assert!(!summary.contains("@octocat"), "{summary}");
    }
}
