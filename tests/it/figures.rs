//! The report's figures as a reader sees them: every arm's label legible (no label over another,
//! so `a0` no longer hides behind `a3`), the base rate shown, and the paper's Figure 3 drawn from
//! the model arms' predictions. Set `CLAIMFLOW_FIGURES_DIR` to keep the SVG files for a look.

use crate::stats::{every_arm_reported, read};

/// Every `<text>` of an SVG: its content and its box (x, y of the baseline's start, width by the
/// font's size, height), in pixels.
fn texts(svg: &str) -> Vec<(String, f64, f64, f64, f64)> {
    let document = roxmltree::Document::parse(svg).expect("an SVG");
    document
        .descendants()
        .filter(|node| node.has_tag_name("text"))
        .map(|node| {
            let number = |name: &str| node.attribute(name).and_then(|v| v.parse::<f64>().ok());
            let size = node
                .attribute("font-size")
                .and_then(|v| v.trim_end_matches("px").parse::<f64>().ok())
                .unwrap_or(13.0);
            // plotters writes the text once as the element's content; take its first line.
            let text = node
                .descendants()
                .filter_map(|n| n.text())
                .flat_map(str::lines)
                .map(str::trim)
                .find(|line| !line.is_empty())
                .unwrap_or_default()
                .to_string();
            let width = text.chars().count() as f64 * size * 0.5;
            (
                text,
                number("x").unwrap_or(0.0),
                number("y").unwrap_or(0.0),
                width,
                size,
            )
        })
        .collect()
}

#[test]
fn every_arm_is_labelled_where_no_other_label_covers_it() {
    let root = tempfile::tempdir().unwrap();
    let pipeline = every_arm_reported(root.path());
    let svg = read(&pipeline, "figures/arms.svg");
    if let Some(directory) = std::env::var_os("CLAIMFLOW_FIGURES_DIR") {
        for figure in ["arms", "question_information", "cost"] {
            let name = format!("figures/{figure}.svg");
            std::fs::write(
                std::path::Path::new(&directory).join(format!("{figure}.svg")),
                read(&pipeline, &name),
            )
            .unwrap();
        }
    }
    let labels = texts(&svg);
    let arm_labels: Vec<&(String, f64, f64, f64, f64)> = labels
        .iter()
        .filter(|(text, ..)| text.starts_with('a') && !text.contains(' ') || text.contains(" = "))
        .collect();
    for arm in ["a0", "a3", "a4", "a4b", "a5", "a6_risk"] {
        assert!(
            arm_labels
                .iter()
                .any(|(text, ..)| text.split(" = ").any(|name| name == arm)),
            "{arm} has no label: {arm_labels:?}"
        );
    }
    // No two labels' boxes overlap (the boxes are generous: half the font size per character).
    for (index, first) in arm_labels.iter().enumerate() {
        for second in &arm_labels[index + 1..] {
            let overlap_x = first.1 < second.1 + second.3 && second.1 < first.1 + first.3;
            let overlap_y = first.2 < second.2 + second.4 && second.2 < first.2 + first.4;
            assert!(
                !(overlap_x && overlap_y),
                "`{}` and `{}` overlap",
                first.0,
                second.0
            );
        }
    }
    assert!(svg.contains("base rate"));
}

#[test]
fn figure_three_is_the_two_by_two_of_question_and_information() {
    let root = tempfile::tempdir().unwrap();
    let pipeline = every_arm_reported(root.path());
    let svg = read(&pipeline, "figures/question_information.svg");
    let all: Vec<String> = texts(&svg).into_iter().map(|(text, ..)| text).collect();
    for expected in [
        "shown the diff",
        "shown the claim + the diff",
        "preserve behaviour?",
        "still hold?",
        "cannot be asked of",
    ] {
        assert!(
            all.iter().any(|text| text.contains(expected)),
            "{expected}: {all:?}"
        );
    }
    for arm in ["a5", "a5c", "a6_base", "a6_risk"] {
        assert!(
            all.iter().any(|text| text.starts_with(&format!("{arm}  "))),
            "{arm}: {all:?}"
        );
    }
    assert!(all.iter().any(|text| text.starts_with("information buys")));
    assert!(all.iter().any(|text| text.starts_with("question buys")));
}
