//! What `check` prints: the results as JSON Lines (the default; one [`CheckResult`] per line),
//! as GitHub workflow annotations with a Markdown summary ([`super::github`]), or as SARIF
//! ([`super::sarif`]); and a short table for the person at the terminal. The command's edge
//! writes these strings where they belong (stdout, stderr, the step summary).

use super::claim::{CheckResult, Stage, Verdict};

/// The output formats `--format` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// One JSON object per claim on stdout.
    #[default]
    Jsonl,
    /// Workflow annotations on each flipped claim's line, and a Markdown summary.
    Github,
    /// SARIF 2.1.0 for code-scanning uploads.
    Sarif,
}

/// The results as JSON Lines.
pub fn jsonl(results: &[CheckResult]) -> String {
    let mut text = String::new();
    for result in results {
        text.push_str(&serde_json::to_string(result).expect("results serialize"));
        text.push('\n');
    }
    text
}

/// Counts of a check's results, for summaries.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counts {
    pub flipped: usize,
    pub held: usize,
    pub none: usize,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost: f64,
}

impl Counts {
    pub fn of(results: &[CheckResult]) -> Self {
        let mut counts = Counts::default();
        for result in results {
            match result.verdict {
                Verdict::Flipped => counts.flipped += 1,
                Verdict::Held => counts.held += 1,
                Verdict::None => counts.none += 1,
            }
            counts.tokens_in += result.tokens_in;
            counts.tokens_out += result.tokens_out;
            counts.cost += result.cost;
        }
        counts
    }

    /// `5 claims: 1 flipped, 3 held, 1 without a verdict; 1,234 tokens in, 12 out, $0.0012`.
    pub fn line(&self) -> String {
        let total = self.flipped + self.held + self.none;
        let mut line = format!(
            "{total} claim{}: {} flipped, {} held, {} without a verdict",
            if total == 1 { "" } else { "s" },
            self.flipped,
            self.held,
            self.none
        );
        if self.tokens_in + self.tokens_out > 0 {
            line.push_str(&format!(
                "; model: {} tokens in, {} out, ${:.4}",
                self.tokens_in, self.tokens_out, self.cost
            ));
        }
        line
    }
}

/// The verdict's word.
pub fn verdict_name(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Flipped => "flipped",
        Verdict::Held => "held",
        Verdict::None => "none",
    }
}

/// The stage's name, or `-` for a claim no stage decided.
pub fn stage_name(stage: Option<&Stage>) -> &str {
    stage.map_or("-", Stage::name)
}

/// `text` cut to `width` characters, with an ellipsis when cut.
pub fn cut(text: &str, width: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= width {
        return flat;
    }
    let mut cut: String = flat.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// A short table for the terminal: flipped claims first, then those without a verdict, then
/// held ones; and the counts.
pub fn table(results: &[CheckResult], range: &str) -> String {
    let mut ordered: Vec<&CheckResult> = results.iter().collect();
    ordered.sort_by_key(|result| match result.verdict {
        Verdict::Flipped => 0,
        Verdict::None => 1,
        Verdict::Held => 2,
    });
    let source_width = ordered
        .iter()
        .map(|result| result.source.chars().count())
        .max()
        .unwrap_or(6)
        .clamp(6, 40);
    let mut text = format!(
        "{:<8} {:<8} {:<source_width$} CLAIM\n",
        "VERDICT", "STAGE", "SOURCE"
    );
    for result in ordered {
        text.push_str(&format!(
            "{:<8} {:<8} {:<source_width$} {}\n",
            verdict_name(result.verdict),
            stage_name(result.decided_by.as_ref()),
            cut(&result.source, source_width),
            cut(&result.text, 60)
        ));
    }
    text.push_str(&format!("{} ({range})\n", Counts::of(results).line()));
    text
}

/// The file and line of a result's `source` (`path:line`).
pub fn location(result: &CheckResult) -> (String, u32) {
    match result.source.rsplit_once(':') {
        Some((file, line)) => match line.parse() {
            Ok(line) => (file.to_string(), line),
            Err(_) => (result.source.clone(), 1),
        },
        None => (result.source.clone(), 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(verdict: Verdict, stage: Option<Stage>) -> CheckResult {
        CheckResult {
            id: "c1".into(),
            source: "docs/CLAUDE.md:12".into(),
            text: "parse_url returns a tuple".into(),
            verdict,
            decided_by: stage,
            evidence: "test failed".into(),
            tokens_in: 10,
            tokens_out: 2,
            cost: 0.5,
        }
    }

    #[test]
    fn the_table_puts_flipped_claims_first_and_counts_them() {
        let results = [
            result(Verdict::Held, Some(Stage::A4)),
            result(Verdict::Flipped, Some(Stage::Exec)),
        ];
        let table = table(&results, "abc..def");
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[1].starts_with("flipped  exec"), "{table}");
        assert!(lines[2].starts_with("held     a4"), "{table}");
        assert_eq!(
            lines[3],
            "2 claims: 1 flipped, 1 held, 0 without a verdict; model: 20 tokens in, 4 out, $1.0000 (abc..def)"
        );
    }

    #[test]
    fn a_location_is_split_at_the_last_colon() {
        let (file, line) = location(&result(Verdict::Held, None));
        assert_eq!((file.as_str(), line), ("docs/CLAUDE.md", 12));
    }

    #[test]
    fn a_result_line_is_the_contract_fields() {
        let line = jsonl(&[result(
            Verdict::Flipped,
            Some(Stage::Model("a6_risk".into())),
        )]);
        let value: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
        assert_eq!(value["verdict"], "flipped");
        assert_eq!(value["decided_by"], "a6_risk");
        assert_eq!(value["source"], "docs/CLAUDE.md:12");
    }
}
