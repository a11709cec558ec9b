//! Two runs side by side: for each arm both ran, the claims whose verdict changed between them
//! (a prompt edit, another model), with both answers, so the effect of a change is read claim by
//! claim. Each run is read from the data its own results page embeds, so any two results
//! directories compare, whatever pipelines wrote them.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::ViewError;
use super::escape::html;
use super::model::SCHEMA;
use super::page::{DATA_ID, TEXT_ID};

/// One run's page data.
#[derive(Debug, Clone)]
pub struct Run {
    /// What the comparison calls it (the results directory's name).
    pub name: String,
    /// The page's index: claims, labels, verdicts.
    pub data: Value,
    /// The page's text: sources, diffs, evidence.
    pub text: Value,
}

impl Run {
    /// Reads the page `index.html` in `results`.
    pub fn read(results: &Path) -> Result<Self, ViewError> {
        let path = results.join(super::FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(ViewError::NoPage { path });
            }
            Err(source) => {
                return Err(ViewError::Io {
                    context: "read the results page",
                    path,
                    source,
                });
            }
        };
        let read = |id: &str| {
            embedded(&text, id).map_err(|problem| ViewError::Data {
                path: path.clone(),
                problem,
            })
        };
        let (data, text) = (read(DATA_ID)?, read(TEXT_ID)?);
        let name = results.file_name().map_or_else(
            || results.display().to_string(),
            |name| name.to_string_lossy().into_owned(),
        );
        Ok(Run { name, data, text })
    }
}

/// The data a page embeds in its `<script>` element `id`.
pub fn embedded(page: &str, id: &str) -> Result<Value, String> {
    let open = format!("<script type=\"application/json\" id=\"{id}\">");
    let start = page.find(&open).ok_or("no embedded claimflow data")? + open.len();
    let end = page[start..]
        .find("</script>")
        .ok_or("the embedded data is not closed")?;
    let data: Value = serde_json::from_str(&page[start..start + end])
        .map_err(|error| format!("the embedded data is not JSON: {error}"))?;
    if data["schema"] != SCHEMA {
        return Err(format!(
            "the embedded data has layout {}, this claimflow reads {SCHEMA}",
            data["schema"]
        ));
    }
    Ok(data)
}

/// A claim as one run has it: its label, and each arm's verdict with its evidence.
struct Seen<'a> {
    node: &'a str,
    label: &'a str,
}

fn claims(data: &Value) -> BTreeMap<&str, (usize, Seen<'_>)> {
    let mut claims = BTreeMap::new();
    for (index, claim) in data["claims"].as_array().into_iter().flatten().enumerate() {
        let id = claim[0].as_str().unwrap_or("");
        let seen = Seen {
            node: claim[1].as_str().unwrap_or(id),
            label: claim[4].as_str().unwrap_or("u"),
        };
        claims.insert(id, (index, seen));
    }
    claims
}

fn arms(data: &Value) -> BTreeMap<&str, &Value> {
    data["arms"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|arm| (arm["step"].as_str().unwrap_or(""), arm))
        .collect()
}

/// The evidence an arm gave for the claim at `index`, as text.
fn evidence(run: &Run, arm: &Value, index: usize) -> String {
    let row = arm["predictions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|row| row[0].as_u64() == Some(index as u64));
    let Some(row) = row else {
        return "not judged".to_string();
    };
    let evidence = &run.text["evidence"][row[1].as_u64().unwrap_or(0) as usize];
    match evidence.get("answer").and_then(Value::as_str) {
        Some(answer) => answer.to_string(),
        None => serde_json::to_string_pretty(evidence).expect("evidence serializes"),
    }
}

fn label_name(letter: &str) -> &'static str {
    match letter {
        "f" => "flipped",
        "h" => "held",
        "d" => "discarded",
        _ => "unlabelled",
    }
}

fn verdict_name(letter: char) -> &'static str {
    match letter {
        'f' => "flipped",
        'h' => "held",
        'n' => "no verdict",
        _ => "not judged",
    }
}

/// One changed verdict.
struct Change<'a> {
    id: &'a str,
    node: &'a str,
    label: &'a str,
    before: char,
    after: char,
    before_evidence: String,
    after_evidence: String,
}

/// The claims of both runs whose verdict from `step` differs.
fn changes<'a>(first: &'a Run, second: &'a Run, step: &str) -> Vec<Change<'a>> {
    let (first_claims, second_claims) = (claims(&first.data), claims(&second.data));
    let (first_arm, second_arm) = (arms(&first.data)[step], arms(&second.data)[step]);
    let letters = |arm: &Value| {
        arm["verdicts"]
            .as_str()
            .unwrap_or("")
            .chars()
            .collect::<Vec<_>>()
    };
    let (before_letters, after_letters) = (letters(first_arm), letters(second_arm));
    let mut changed = Vec::new();
    for (id, (before_index, _)) in &first_claims {
        let Some((after_index, seen)) = second_claims.get(id) else {
            continue;
        };
        let before = before_letters.get(*before_index).copied().unwrap_or('.');
        let after = after_letters.get(*after_index).copied().unwrap_or('.');
        if before == after || before == '.' || after == '.' {
            continue;
        }
        changed.push(Change {
            id,
            node: seen.node,
            label: seen.label,
            before,
            after,
            before_evidence: evidence(first, first_arm, *before_index),
            after_evidence: evidence(second, second_arm, *after_index),
        });
    }
    changed
}

/// The comparison page of `first` (before) and `second` (after).
pub fn render(first: &Run, second: &Run) -> String {
    let title = format!("claimflow: {} → {}", first.name, second.name);
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n\
         <style>\n{}</style>\n</head>\n<body>\n<header class=\"top\"><div class=\"brand\">claimflow</div>\
         <h1>{}</h1></header>\n<main>\n",
        html(&title),
        include_str!("assets/view.css"),
        html(&title)
    );
    let (first_arms, second_arms) = (arms(&first.data), arms(&second.data));
    let both: Vec<&str> = first_arms
        .keys()
        .filter(|step| second_arms.contains_key(*step))
        .copied()
        .collect();
    let _ = write!(
        out,
        "<div class=\"card\"><h2>Verdicts that changed</h2><p class=\"note\">Claims both runs hold, \
         judged by an arm of the same step name in both; before is <b>{}</b>, after is <b>{}</b>. \
         Arms in one run only: {}.</p><table class=\"grid\"><thead><tr><th>arm</th><th>changed</th>\
         <th>held → flipped</th><th>flipped → held</th><th>to or from no verdict</th></tr></thead><tbody>",
        html(&first.name),
        html(&second.name),
        html(&only_in_one(&first_arms, &second_arms)),
    );
    let per_arm: Vec<(&str, Vec<Change>)> = both
        .iter()
        .map(|step| (*step, changes(first, second, step)))
        .collect();
    for (step, changed) in &per_arm {
        let count = |before: char, after: char| {
            changed
                .iter()
                .filter(|change| change.before == before && change.after == after)
                .count()
        };
        let none = changed
            .iter()
            .filter(|change| change.before == 'n' || change.after == 'n')
            .count();
        let _ = write!(
            out,
            "<tr><td><a href=\"#arm-{0}\">{0}</a></td><td class=\"num\">{1}</td><td class=\"num\">{2}</td>\
             <td class=\"num\">{3}</td><td class=\"num\">{none}</td></tr>",
            html(step),
            changed.len(),
            count('h', 'f'),
            count('f', 'h'),
        );
    }
    out.push_str("</tbody></table></div>\n");
    for (step, changed) in &per_arm {
        arm_section(&mut out, step, changed, first, second);
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

fn only_in_one(first: &BTreeMap<&str, &Value>, second: &BTreeMap<&str, &Value>) -> String {
    let only: Vec<&str> = first
        .keys()
        .filter(|step| !second.contains_key(*step))
        .chain(second.keys().filter(|step| !first.contains_key(*step)))
        .copied()
        .collect();
    if only.is_empty() {
        "none".to_string()
    } else {
        only.join(", ")
    }
}

fn arm_section(out: &mut String, step: &str, changed: &[Change], first: &Run, second: &Run) {
    let _ = write!(
        out,
        "<div class=\"card\" id=\"arm-{0}\"><h2>{0}: {1} changed</h2>",
        html(step),
        changed.len()
    );
    if changed.is_empty() {
        out.push_str("<p class=\"note\">Every verdict is the same in both runs.</p></div>\n");
        return;
    }
    let _ = write!(
        out,
        "<table class=\"grid\"><thead><tr><th>claim</th><th>label</th><th>{}</th><th>{}</th>\
         <th>what each said</th></tr></thead><tbody>",
        html(&first.name),
        html(&second.name)
    );
    for change in changed {
        let _ = write!(
            out,
            "<tr><td class=\"mono\" title=\"{}\">{}</td><td>{}</td><td class=\"v v-{}\">{}</td>\
             <td class=\"v v-{}\">{}</td><td><details><summary>answers</summary>\
             <pre class=\"answer\">{}</pre><pre class=\"answer\">{}</pre></details></td></tr>",
            html(change.id),
            html(change.node),
            html(label_name(change.label)),
            change.before,
            verdict_name(change.before),
            change.after,
            verdict_name(change.after),
            html(&change.before_evidence),
            html(&change.after_evidence),
        );
    }
    out.push_str("</tbody></table></div>\n");
}

/// Where the comparison of `first` with `second` is written: beside the first run's page.
pub fn output_path(first: &Path, second: &Run) -> PathBuf {
    let name: String = second
        .name
        .chars()
        .map(|character| {
            if character.is_ascii_alphanumeric() || "-_.".contains(character) {
                character
            } else {
                '_'
            }
        })
        .collect();
    first.join(format!("compare-{name}.html"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, inputs: &crate::view::Inputs) -> Run {
        let page = crate::view::render(inputs);
        Run {
            name: name.to_string(),
            data: embedded(&page, DATA_ID).unwrap(),
            text: embedded(&page, TEXT_ID).unwrap(),
        }
    }

    #[test]
    fn a_changed_verdict_is_listed_with_both_answers_and_an_unchanged_one_is_not() {
        let before = crate::view::synthetic::inputs(40, 10, 4);
        let mut after = before.clone();
        let risk = after
            .arms
            .iter_mut()
            .find(|arm| arm.step == "a6_risk")
            .unwrap();
        let prediction = risk
            .predictions
            .iter_mut()
            .find(|prediction| prediction.verdict == crate::records::Verdict::Held)
            .unwrap();
        prediction.verdict = crate::records::Verdict::Flipped;
        prediction.evidence = serde_json::json!({"answer": "now <flipped>"});
        let changed_claim = prediction.claim.clone();
        let (first, second) = (run("v1", &before), run("v2", &after));
        let changed = changes(&first, &second, "a6_risk");
        assert_eq!(changed.len(), 1);
        assert_eq!(changed[0].id, changed_claim);
        assert_eq!((changed[0].before, changed[0].after), ('h', 'f'));
        assert_eq!(changed[0].after_evidence, "now <flipped>");
        assert!(changes(&first, &second, "a4").is_empty());
        let page = render(&first, &second);
        assert!(page.contains("a6_risk: 1 changed"));
        assert!(page.contains("now &lt;flipped&gt;"));
    }

    #[test]
    fn a_page_without_claimflow_data_is_refused() {
        assert!(embedded("<html></html>", DATA_ID).is_err());
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            Run::read(dir.path()),
            Err(ViewError::NoPage { .. })
        ));
    }
}
