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

/// Every straight piece of every `<polyline>` of an SVG whose opacity is at least `opacity`:
/// (x1, y1, x2, y2), in pixels.
fn segments(svg: &str, opacity: f64) -> Vec<(f64, f64, f64, f64)> {
    let document = roxmltree::Document::parse(svg).expect("an SVG");
    let mut found = Vec::new();
    for node in document
        .descendants()
        .filter(|node| node.has_tag_name("polyline"))
    {
        let seen = node
            .attribute("opacity")
            .and_then(|value| value.parse::<f64>().ok())
            .unwrap_or(1.0);
        if seen < opacity {
            continue;
        }
        let points: Vec<(f64, f64)> = node
            .attribute("points")
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|pair| {
                let (x, y) = pair.split_once(',')?;
                Some((x.parse().ok()?, y.parse().ok()?))
            })
            .collect();
        for pair in points.windows(2) {
            found.push((pair[0].0, pair[0].1, pair[1].0, pair[1].1));
        }
    }
    found
}

/// The arm labels of a figure struck through by a bar, a leader or the base-rate line: a line of
/// the figure (not the faint grid) that crosses the label's box through its inside. plotters
/// writes a text's top-left corner (`dy` shifts the baseline down by the font's ascent).
fn struck_labels(svg: &str, arms: &[&str]) -> Vec<String> {
    let document = roxmltree::Document::parse(svg).expect("an SVG");
    let lines = segments(svg, 0.25);
    let mut struck = Vec::new();
    for node in document
        .descendants()
        .filter(|node| node.has_tag_name("text"))
    {
        let text = node.text().unwrap_or_default().trim().to_string();
        if !arms.contains(&text.as_str()) {
            continue;
        }
        let number = |name: &str| {
            node.attribute(name)
                .and_then(|value| value.parse::<f64>().ok())
                .unwrap()
        };
        let (left, top, size) = (number("x"), number("y"), number("font-size"));
        let (right, bottom) = (left + text.chars().count() as f64 * size * 0.55, top + size);
        for (x1, y1, x2, y2) in &lines {
            let across = (x1.min(*x2) < right - 1.0 && x1.max(*x2) > left + 1.0)
                && (y1.min(*y2) < bottom - 1.0 && y1.max(*y2) > top + 1.0);
            if across {
                struck.push(format!("{text} by ({x1},{y1})-({x2},{y2})"));
            }
        }
    }
    struck
}

/// Regression: each label sat to the right of its point, on the line of its own recall interval,
/// which struck it through (`a6_risk`, `a4`, `a5`), and `a5`'s also lay on the base-rate line.
/// Labels now sit beside the point's corner, clear of every bar and line.
#[test]
fn no_arm_label_is_struck_through_by_a_bar_or_a_line() {
    let root = tempfile::tempdir().unwrap();
    let pipeline = every_arm_reported(root.path());
    let arms = [
        "a0",
        "a1",
        "a3",
        "a4",
        "a4b",
        "a5",
        "a5c",
        "a6_base",
        "a6_risk",
        "a6_frontier",
        "prose",
    ];
    for figure in ["figures/arms.svg", "figures/cost.svg"] {
        let svg = read(&pipeline, figure);
        let struck = struck_labels(&svg, &arms);
        assert!(struck.is_empty(), "{figure}: {struck:#?}");
    }
}

/// Regression: the cost figure drew a log axis' minor lines (nine per decade, and as many across
/// precision) in a dark grid, every arm in one blue, no interval and no base rate; it is now drawn
/// like the precision/recall figure.
#[test]
fn the_cost_figure_has_intervals_the_base_rate_and_a_calm_grid() {
    let root = tempfile::tempdir().unwrap();
    let pipeline = every_arm_reported(root.path());
    let svg = read(&pipeline, "figures/cost.svg");
    let grid = segments(&svg, 0.0).len() - segments(&svg, 0.25).len();
    assert!(grid <= 20, "{grid} grid lines");
    assert!(svg.contains("base rate"), "no base rate");
    let circles = roxmltree::Document::parse(&svg)
        .unwrap()
        .descendants()
        .filter(|node| node.has_tag_name("circle"))
        .count();
    // One interval per priced arm: a bar and two caps, in the arm's colour.
    let bars = segments(&svg, 0.5)
        .into_iter()
        .filter(|(x1, y1, x2, y2)| x1 == x2 && (y1 - y2).abs() > 10.0)
        .count();
    assert!(
        circles >= 5 && bars >= circles,
        "{circles} arms, {bars} bars"
    );
    assert!(!svg.contains("#0000FF"), "every arm in plain blue");
}

/// The `fill` of each `<text>` whose first word is an arm's name, by that name.
fn label_inks(svg: &str) -> std::collections::BTreeMap<String, String> {
    let document = roxmltree::Document::parse(svg).expect("an SVG");
    document
        .descendants()
        .filter(|node| node.has_tag_name("text"))
        .filter_map(|node| {
            let text = node
                .descendants()
                .filter_map(|n| n.text())
                .collect::<String>();
            let first = text.split_whitespace().next()?.to_string();
            let fill = node.attribute("fill")?.to_string();
            first.starts_with('a').then_some((first, fill))
        })
        .collect()
}

#[test]
fn an_arm_has_one_colour_in_every_figure() {
    let root = tempfile::tempdir().unwrap();
    let pipeline = every_arm_reported(root.path());
    let figures: Vec<std::collections::BTreeMap<String, String>> =
        ["arms", "question_information", "cost"]
            .iter()
            .map(|figure| label_inks(&read(&pipeline, &format!("figures/{figure}.svg"))))
            .collect();
    let mut compared = 0;
    for arm in ["a5", "a5c", "a6_base", "a6_risk"] {
        let inks: Vec<&String> = figures.iter().filter_map(|inks| inks.get(arm)).collect();
        assert!(
            inks.len() >= 2,
            "{arm} is labelled in fewer than two figures: {figures:?}"
        );
        assert!(
            inks.windows(2).all(|pair| pair[0] == pair[1]),
            "{arm}: {inks:?}"
        );
        compared += 1;
    }
    // Different arms keep different colours.
    let a5 = &figures[1]["a5"];
    assert!(
        ["a5c", "a6_base", "a6_risk"]
            .iter()
            .all(|arm| figures[1][*arm] != *a5)
    );
    assert_eq!(compared, 4);
}
