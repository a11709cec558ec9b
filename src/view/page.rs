//! The results page: one self-contained HTML file. The overview (provenance, corpus and cost,
//! each arm's verdicts against the labels with its controls beside it, the figures and the
//! report's tables) and a plain table of the claims are rendered here, so the page reads without
//! JavaScript; the embedded data and the inlined script add the claims explorer and each claim's
//! page.

use std::fmt::Write as _;

use super::escape::{html, json_in_script};
use super::model::{ArmView, Cells, Claimed, Inputs, data, label_letter, verdict_letter};
use crate::records::TruthRecord;
use crate::stats::report::{Section, Table};

const STYLE: &str = include_str!("assets/view.css");
const SCRIPT: &str = include_str!("assets/view.js");

/// The id of the `<script>` element holding the data's index (the comparison reads it back).
pub const DATA_ID: &str = "claimflow-data";

/// The id of the `<script>` element holding the data's text: sources, diffs, evidence.
pub const TEXT_ID: &str = "claimflow-text";

/// The whole page.
pub fn render(inputs: &Inputs) -> String {
    let claimed = Claimed::of(inputs);
    let data = data(inputs);
    let (index, text) = (
        json_in_script(&data.index.to_string()),
        json_in_script(&data.text.to_string()),
    );
    let mut out = String::with_capacity(index.len() + text.len() + 64 * 1024);
    let title = html(&inputs.title);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n\
         <header class=\"top\"><div class=\"brand\">claimflow</div><h1>{title}</h1>\
         <nav class=\"tabs js-only\"><a href=\"#overview\" data-tab=\"overview\">Overview</a>\
         <a href=\"#claims\" data-tab=\"claims\">Claims <span class=\"count\">{count}</span></a>\
         <a href=\"#claims\" data-tab=\"claim\" class=\"claim-tab\" hidden>Claim</a></nav></header>\n<main>\n",
        count = claimed.ids.len(),
    );
    out.push_str("<section id=\"view-overview\" class=\"view\">\n");
    provenance(&mut out, inputs);
    summary(&mut out, inputs, &claimed);
    verdicts(&mut out, inputs, &claimed);
    figures(&mut out, inputs);
    report(&mut out, inputs);
    out.push_str("</section>\n");
    claims(&mut out, inputs, &claimed);
    out.push_str(
        "<section id=\"view-claim\" class=\"view\" hidden><div id=\"claim-page\"></div></section>\n",
    );
    let _ = write!(
        out,
        "</main>\n<script type=\"application/json\" id=\"{DATA_ID}\">{index}</script>\n\
         <script type=\"application/json\" id=\"{TEXT_ID}\">{text}</script>\n\
         <script>\n{SCRIPT}</script>\n</body>\n</html>\n"
    );
    out
}

fn provenance(out: &mut String, inputs: &Inputs) {
    let provenance = &inputs.provenance;
    out.push_str("<div class=\"card\"><h2>Provenance</h2><dl class=\"facts\">");
    let mut fact = |name: &str, value: &str| {
        let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", html(name), html(value));
    };
    fact("pipeline", &provenance.pipeline);
    fact("pipeline digest", &provenance.pipeline_digest);
    fact("claimflow", &provenance.version);
    let models: Vec<String> = provenance
        .models
        .iter()
        .map(|(name, model)| format!("{name}: {model}"))
        .collect();
    fact(
        "models",
        &if models.is_empty() {
            "none".to_string()
        } else {
            models.join("; ")
        },
    );
    let date = provenance
        .latest_commit
        .map_or_else(|| "unknown".to_string(), date_of);
    fact("newest commit", &date);
    out.push_str("</dl>");
    for line in &inputs.report.preamble {
        if !line.trim().is_empty() && !line.starts_with("![") {
            let _ = write!(out, "<p class=\"note\">{}</p>", html(line));
        }
    }
    out.push_str("</div>\n");
}

/// `YYYY-MM-DD` of a time in seconds since the epoch (UTC), by the civil-from-days algorithm.
pub fn date_of(seconds: i64) -> String {
    let days = seconds.div_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

fn summary(out: &mut String, inputs: &Inputs, claimed: &Claimed) {
    let mut labels = [0u64; 4];
    for id in &claimed.ids {
        let index = match label_letter(claimed.label(id)) {
            'f' => 0,
            'h' => 1,
            'd' => 2,
            _ => 3,
        };
        labels[index] += 1;
    }
    let commits: std::collections::BTreeSet<(&str, &str)> = claimed
        .claims
        .values()
        .map(|claim| (claim.repo.as_str(), claim.commit.as_str()))
        .collect();
    out.push_str("<div class=\"card\"><h2>Corpus and cost</h2><div class=\"stats\">");
    let mut stat = |value: String, name: &str| {
        let _ = write!(
            out,
            "<div class=\"stat\"><b>{}</b><span>{}</span></div>",
            html(&value),
            html(name)
        );
    };
    stat(inputs.repositories.len().to_string(), "repositories");
    stat(commits.len().to_string(), "commits");
    stat(claimed.ids.len().to_string(), "claims");
    stat(labels[0].to_string(), "flipped");
    stat(labels[1].to_string(), "held");
    stat(labels[2].to_string(), "discarded");
    if labels[3] > 0 {
        stat(labels[3].to_string(), "unlabelled");
    }
    let costs: Vec<f64> = inputs
        .arms
        .iter()
        .flat_map(|arm| arm.predictions.iter())
        .filter_map(|prediction| prediction.cost)
        .collect();
    if !costs.is_empty() {
        // Summed from zero: an empty or all-zero sum must not print as -0.
        let spent = costs.iter().fold(0.0, |sum, cost| sum + cost);
        stat(format!("${spent:.4}"), "model cost");
    }
    out.push_str("</div>");
    let model_arms: Vec<&ArmView> = inputs
        .arms
        .iter()
        .filter(|arm| arm.predictions.iter().any(|p| p.tokens_in.is_some()))
        .collect();
    if !model_arms.is_empty() {
        out.push_str(
            "<table class=\"grid\"><thead><tr><th>model arm</th><th>model</th><th class=\"num\">claims</th>\
             <th class=\"num\">tokens in</th><th class=\"num\">tokens out</th><th class=\"num\">cost</th></tr></thead><tbody>",
        );
        for arm in model_arms {
            let sum = |read: fn(&crate::records::PredictionRecord) -> Option<u64>| -> u64 {
                arm.predictions.iter().filter_map(read).sum()
            };
            let cost = arm
                .predictions
                .iter()
                .filter_map(|p| p.cost)
                .fold(0.0, |sum, cost| sum + cost);
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">${cost:.4}</td></tr>",
                html(&arm.step),
                html(arm.model.as_deref().unwrap_or("")),
                arm.predictions.len(),
                sum(|p| p.tokens_in),
                sum(|p| p.tokens_out),
            );
        }
        out.push_str("</tbody></table>");
    }
    out.push_str("</div>\n");
}

/// Each arm's verdicts against the labels, its controls in the rows under it; every cell links
/// to its claims in the explorer.
fn verdicts(out: &mut String, inputs: &Inputs, claimed: &Claimed) {
    if inputs.arms.is_empty() {
        return;
    }
    out.push_str(
        "<div class=\"card\"><h2>Verdicts against the labels</h2>\
         <p class=\"note\">Over every labelled claim each step judged (discarded claims left out); \
         a control sits under the arm it wraps. Each count opens its claims.</p>\
         <table class=\"grid matrix\"><thead><tr><th>step</th><th>strategy</th>\
         <th class=\"num\" title=\"said flipped, label flipped\">TP</th>\
         <th class=\"num\" title=\"said flipped, label held\">FP</th>\
         <th class=\"num\" title=\"said held, label flipped\">FN</th>\
         <th class=\"num\" title=\"said held, label held\">TN</th>\
         <th class=\"num\" title=\"no verdict\">none</th><th class=\"num\">precision</th>\
         <th class=\"num\">recall</th></tr></thead><tbody>",
    );
    let top: Vec<&ArmView> = inputs
        .arms
        .iter()
        .filter(|arm| {
            arm.control_of
                .as_ref()
                .is_none_or(|of| !inputs.arms.iter().any(|other| &other.step == of))
        })
        .collect();
    for arm in top {
        verdict_row(out, arm, claimed, false);
        for control in inputs
            .arms
            .iter()
            .filter(|other| other.control_of.as_deref() == Some(arm.step.as_str()))
        {
            verdict_row(out, control, claimed, true);
        }
    }
    out.push_str("</tbody></table></div>\n");
}

fn verdict_row(out: &mut String, arm: &ArmView, claimed: &Claimed, control: bool) {
    let cells = Cells::of(&arm.step, claimed);
    let step = html(&arm.step);
    let link = |cell: &str, count: u64| {
        format!(
            "<td class=\"num cell-{cell}\"><a href=\"#claims?arm={step}&amp;cell={cell}\">{count}</a></td>"
        )
    };
    let ratio = |part: u64, whole: u64| {
        if whole == 0 {
            "—".to_string()
        } else {
            format!("{:.3}", part as f64 / whole as f64)
        }
    };
    let name = if control {
        format!(
            "<span class=\"control\">↳ {step}</span> <span class=\"tag\">{}</span>",
            html(arm.control.as_deref().unwrap_or("control"))
        )
    } else {
        format!("<b>{step}</b>")
    };
    let _ = write!(
        out,
        "<tr{}><td>{name}</td><td>{}</td>{}{}{}{}{}<td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        if control { " class=\"is-control\"" } else { "" },
        html(arm.strategy.as_deref().unwrap_or("")),
        link("tp", cells.tp),
        link("fp", cells.fp),
        link("fn", cells.false_negatives),
        link("tn", cells.tn),
        link("none", cells.none),
        ratio(cells.tp, cells.tp + cells.fp),
        ratio(cells.tp, cells.tp + cells.false_negatives),
    );
}

fn figures(out: &mut String, inputs: &Inputs) {
    if inputs.report.figures.is_empty() {
        return;
    }
    out.push_str("<div class=\"card\"><h2>Figures</h2><div class=\"figures\">");
    for (name, svg) in &inputs.report.figures {
        // The SVGs are the report's own, drawn from numbers; an XML prolog is not HTML.
        let start = svg.find("<svg").unwrap_or(0);
        let _ = write!(
            out,
            "<figure>{}<figcaption>{}</figcaption></figure>",
            &svg[start..],
            html(name)
        );
    }
    out.push_str("</div></div>\n");
}

fn report(out: &mut String, inputs: &Inputs) {
    if inputs.report.sections.is_empty() {
        return;
    }
    out.push_str("<div class=\"card\"><h2>The report's tables</h2>");
    for section in &inputs.report.sections {
        match section {
            Section::Table(one) => table(out, one),
            Section::Omitted { title, needs } => {
                let _ = write!(
                    out,
                    "<p class=\"omitted\"><b>{}</b> is left out: {}</p>",
                    html(title),
                    html(needs)
                );
            }
        }
    }
    out.push_str("</div>\n");
}

fn table(out: &mut String, table: &Table) {
    let _ = write!(
        out,
        "<h3 id=\"table-{}\">{}</h3><p class=\"context\">{}</p><div class=\"scroll\"><table class=\"grid\"><thead><tr>",
        html(&table.slug),
        html(&table.title),
        html(&table.context)
    );
    for column in &table.columns {
        let _ = write!(out, "<th>{}</th>", html(column));
    }
    out.push_str("</tr></thead><tbody>");
    for row in &table.rows {
        out.push_str("<tr>");
        for value in row {
            let class = match value {
                crate::stats::report::Value::Text(_) => "",
                _ => " class=\"num\"",
            };
            let _ = write!(out, "<td{class}>{}</td>", html(&value.display()));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    for note in &table.notes {
        let _ = write!(out, "<p class=\"note\">{}</p>", html(note));
    }
}

/// The explorer's frame, and the plain table of every claim for a reader without JavaScript
/// (inside `<noscript>`, so a browser running the script does not build it).
fn claims(out: &mut String, inputs: &Inputs, claimed: &Claimed) {
    out.push_str(
        "<section id=\"view-claims\" class=\"view\"><div class=\"card\"><h2>Claims</h2>\
         <form id=\"filters\" class=\"filters js-only\" autocomplete=\"off\"></form>\
         <div id=\"claims-summary\" class=\"js-only\"></div><div id=\"claims-table\" class=\"js-only\"></div>\
         <noscript><table class=\"grid plain\"><thead><tr><th>claim</th><th>repository</th>\
         <th>commit</th><th>label</th><th>reason</th>",
    );
    for arm in &inputs.arms {
        let _ = write!(out, "<th>{}</th>", html(&arm.step));
    }
    out.push_str("</tr></thead><tbody>");
    for id in &claimed.ids {
        let claim = claimed.claims.get(id);
        let truth: Option<&&TruthRecord> = claimed.truth.get(id);
        let _ = write!(
            out,
            "<tr><td class=\"mono\">{}</td><td>{}</td><td class=\"mono\">{}</td><td>{}</td><td>{}</td>",
            html(id),
            html(claimed.repository(id)),
            html(claim.map_or("", |claim| &claim.commit[..claim.commit.len().min(10)])),
            label_name(label_letter(truth.map(|truth| truth.label))),
            html(
                truth
                    .and_then(|truth| truth.reason.as_deref())
                    .unwrap_or("")
            ),
        );
        for arm in &inputs.arms {
            let letter = verdict_letter(claimed.verdict(&arm.step, id));
            let _ = write!(out, "<td class=\"v v-{letter}\">{letter}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></noscript></div></section>\n");
}

fn label_name(letter: char) -> &'static str {
    match letter {
        'f' => "flipped",
        'h' => "held",
        'd' => "discarded",
        _ => "unlabelled",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::compare::embedded;

    /// A results set whose claim source, commit subject, model answer and repository's split carry
    /// markup and a `</script>`.
    pub(crate) fn hostile() -> Inputs {
        let mut inputs = crate::view::synthetic::inputs(30, 10, 2);
        inputs.claims[0].source =
            "def test_x():\n    assert '</script><script>alert(1)</script>' != '<b>bold</b>'\n"
                .into();
        inputs.commits[0].subject = "<img src=x onerror=alert(2)> & </script>".into();
        let claim = inputs.claims[0].id.clone();
        for arm in &mut inputs.arms {
            for prediction in &mut arm.predictions {
                if prediction.claim == claim {
                    prediction.evidence =
                        serde_json::json!({"answer": "</script><h1>owned</h1>\u{2028}"});
                }
            }
        }
        inputs.title = "<title>report</title>".into();
        inputs
    }

    #[test]
    fn hostile_text_stays_text_in_the_page() {
        let inputs = hostile();
        let page = render(&inputs);
        // One script closes each script element the page opens, no more.
        assert_eq!(
            page.matches("</script>").count(),
            3,
            "a `</script>` broke out"
        );
        assert!(!page.contains("<h1>owned"));
        assert!(!page.contains("<img src=x"));
        assert!(!page.contains("<title>report</title>"));
        assert!(page.contains("&lt;title&gt;report&lt;/title&gt;"));
        // The data reads back as the very text.
        let text = embedded(&page, TEXT_ID).unwrap();
        let sources: Vec<&str> = text["sources"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|source| source.as_str())
            .collect();
        assert!(
            sources
                .iter()
                .any(|source| source.contains("</script><script>alert(1)"))
        );
        let index = embedded(&page, DATA_ID).unwrap();
        assert!(index.to_string().contains("<img src=x onerror=alert(2)>"));
    }

    #[test]
    fn the_same_inputs_render_the_same_bytes() {
        let first = render(&crate::view::synthetic::inputs(120, 10, 9));
        let second = render(&crate::view::synthetic::inputs(120, 10, 9));
        assert!(first == second, "two renders differ");
        assert!(
            !first.contains("http://") && !first.contains("https://"),
            "a network reference"
        );
    }

    #[test]
    fn dates_are_civil_days_in_utc() {
        assert_eq!(date_of(0), "1970-01-01");
        assert_eq!(date_of(1_709_164_800), "2024-02-29");
        assert_eq!(date_of(-86_400), "1969-12-31");
    }
}
