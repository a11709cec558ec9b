//! `--format github`: a workflow annotation (`::warning file=…,line=…::…`) on the memory file's
//! line of each flipped claim, which GitHub shows on the pull request's diff and in the run, and a
//! Markdown summary fit for a pull-request comment or the job's step summary.

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
            result.source.replace('`', "'"),
            stage_name(result.decided_by.as_ref()),
            cell(&result.evidence, 200)
        ));
    }
    text
}

/// A table cell: one line, pipes escaped, cut.
fn cell(text: &str, width: usize) -> String {
    cut(text, width).replace('|', "\\|")
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
}
