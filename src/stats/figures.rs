//! The report's figures as SVG (plotters' SVG backend): one circle per arm in every figure, so a
//! reader (and a test) can count the arms.
//!
//! - `arms.svg`: precision against recall per arm, with 95% intervals on both axes and the base
//!   rate (what always-invalidate reaches) as a dashed line; every arm labelled where no other
//!   label or point covers it.
//! - `question_information.svg`: the paper's Figure 3, the 2×2 of question × information.
//! - `cost.svg`: cost per claim against precision with intervals and the base rate, the frontier
//!   joined by a line.

use plotters::coord::Shift;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::document::{ArmStats, StatsDocument};

/// A figure could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("failed to draw figure `{figure}`: {message}")]
pub struct FigureError {
    pub figure: String,
    pub message: String,
}

const WIDTH: u32 = 720;
const HEIGHT: u32 = 480;
const FONT: &str = "sans-serif";

fn draw(
    figure: &str,
    paint: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), Box<dyn std::error::Error>>,
) -> Result<String, FigureError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        let drawn = root
            .fill(&WHITE)
            .map_err(|error| Box::new(error) as Box<dyn std::error::Error>)
            .and_then(|()| paint(&root))
            .and_then(|()| root.present().map_err(|error| Box::new(error) as _));
        drawn.map_err(|error| FigureError {
            figure: figure.to_string(),
            message: error.to_string(),
        })?;
    }
    Ok(svg)
}

/// Colours that stay distinct for readers with colour-blindness (Okabe and Ito); an arm's colour is
/// chosen by [`colour_of`].
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(120, 120, 120),
    RGBColor(0, 0, 0),
];
/// An arm's colour, the same in every figure of one report: its place among the document's arms
/// (and controls), in name order, picks the palette entry.
fn colour_of(document: &StatsDocument, arm: &str) -> RGBColor {
    let index = document
        .arms
        .keys()
        .chain(document.controls.keys())
        .position(|name| name == arm)
        .unwrap_or(0);
    PALETTE[index % PALETTE.len()]
}

/// The base rate's colour: what always-invalidate reaches.
const BASE_RATE: RGBColor = RGBColor(180, 40, 40);

/// The arms drawn at one pixel position (name and colour each), and that position.
type LabelGroup<'a> = (Vec<(&'a str, RGBColor)>, (i32, i32));

/// A label's box in pixels.
#[derive(Clone, Copy)]
struct Placed {
    left: i32,
    top: i32,
    right: i32,
    bottom: i32,
}

impl Placed {
    fn overlaps(&self, other: &Placed) -> bool {
        self.left < other.right
            && other.left < self.right
            && self.top < other.bottom
            && other.top < self.bottom
    }
}

impl Placed {
    /// A straight line from `from` to `to`, thickened to a box two pixels across: a label placed
    /// over it would be struck through.
    fn line(from: (i32, i32), to: (i32, i32)) -> Placed {
        Placed {
            left: from.0.min(to.0) - 1,
            top: from.1.min(to.1) - 1,
            right: from.0.max(to.0) + 1,
            bottom: from.1.max(to.1) + 1,
        }
    }
}

/// A label's text colour: its arm's colour darkened until it reads on white (the palette's yellow
/// and sky blue are for marks, not for letters).
fn ink(colour: RGBColor) -> RGBColor {
    let RGBColor(red, green, blue) = colour;
    let darken = |channel: u8| (f64::from(channel) * 0.7) as u8;
    RGBColor(darken(red), darken(green), darken(blue))
}

/// The pixels inside a chart's axes: labels stay there, off the axes' own labels.
fn plot_area<'a, X: Ranged, Y: Ranged>(
    chart: &ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
) -> Placed {
    let (x, y) = chart.plotting_area().get_pixel_range();
    Placed {
        left: x.start,
        top: y.start,
        right: x.end,
        bottom: y.end,
    }
}

/// Whether a label placed at `corner` (`height` pixels tall) sits beside its point at `anchor`,
/// so needs no leader line to it.
fn beside(corner: (i32, i32), height: i32, anchor: (i32, i32)) -> bool {
    corner.1 - 8 <= anchor.1 && anchor.1 <= corner.1 + height + 8
}

/// Where to write `text` (about `height` pixels tall) next to a point at pixel `anchor`, so that it
/// covers nothing already placed (labels, points, interval bars, the base-rate line) and stays in
/// `bounds`: the first
/// free spot among the four corners beside the point (above right first: clear of the point's own
/// interval bars, which cross at it), right, left, then further and further up and down. Returns
/// the text's top-left corner.
fn place_label(
    anchor: (i32, i32),
    text: &str,
    height: i32,
    placed: &mut Vec<Placed>,
    bounds: Placed,
) -> (i32, i32) {
    // An average glyph of a 13-pixel sans-serif font is about 7 pixels wide.
    let width = text.chars().count() as i32 * 7 + 2;
    let (x, y) = anchor;
    // Clear of the point's circle (radius 5, reserved 6 around it) and of its bars.
    let mut candidates = vec![
        (x + 6, y - 7 - height),
        (x + 6, y + 7),
        (x - 6 - width, y - 7 - height),
        (x - 6 - width, y + 7),
        (x + 9, y - height / 2),
        (x - 9 - width, y - height / 2),
    ];
    for step in 1..40 {
        candidates.push((x + 6, y - 7 - height - step * (height + 2)));
        candidates.push((x + 6, y + 7 + step * (height + 2)));
    }
    let fits = |(left, top): (i32, i32)| {
        left >= bounds.left
            && top >= bounds.top
            && left + width <= bounds.right
            && top + height <= bounds.bottom
    };
    let chosen = candidates
        .iter()
        .copied()
        .filter(|corner| fits(*corner))
        .find(|(left, top)| {
            let candidate = Placed {
                left: *left,
                top: *top,
                right: left + width,
                bottom: top + height,
            };
            !placed.iter().any(|other| other.overlaps(&candidate))
        })
        .unwrap_or(candidates[0]);
    placed.push(Placed {
        left: chosen.0,
        top: chosen.1,
        right: chosen.0 + width,
        bottom: chosen.1 + height,
    });
    chosen
}

/// What a drawing step returns inside [`draw`].
type Drawn = Result<(), Box<dyn std::error::Error>>;

/// A chart on the SVG backend whose y axis is precision (0 to 1.05).
type Chart<'a, X> = ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, RangedCoordf64>>;

/// One arm placed in a chart: its name, its statistics, its position (x, y in the chart's values)
/// and its colour.
type Point<'a> = (&'a str, &'a ArmStats, f64, f64, RGBColor);

/// The calm grid of every chart: faint major lines, no minor lines (a log axis otherwise draws
/// nine between each power of ten).
fn draw_calm_mesh<X>(chart: &mut Chart<'_, X>, x_description: &str) -> Drawn
where
    X: Ranged + ValueFormatter<X::ValueType>,
{
    chart
        .configure_mesh()
        .bold_line_style(BLACK.mix(0.08))
        .light_line_style(TRANSPARENT)
        .axis_style(BLACK.mix(0.5))
        .label_style((FONT, 13))
        .x_desc(x_description)
        .y_desc("precision")
        .draw()?;
    Ok(())
}

/// The base rate as a dashed line at `rate` from `from` to `to` on the x axis, with `label`
/// written at `corner` (its top-left pixel); the line and the label are reserved in `placed`.
fn draw_base_rate<X: Ranged<ValueType = f64>>(
    root: &DrawingArea<SVGBackend, Shift>,
    chart: &mut Chart<'_, X>,
    rate: f64,
    (from, to): (f64, f64),
    (label, corner): (String, (i32, i32)),
    placed: &mut Vec<Placed>,
) -> Drawn {
    chart.draw_series(DashedLineSeries::new(
        [(from, rate), (to, rate)],
        6,
        4,
        BASE_RATE.stroke_width(1),
    ))?;
    placed.push(Placed::line(
        chart.backend_coord(&(from, rate)),
        chart.backend_coord(&(to, rate)),
    ));
    placed.push(Placed {
        left: corner.0,
        top: corner.1,
        right: corner.0 + label.len() as i32 * 7,
        bottom: corner.1 + 15,
    });
    root.draw(&Text::new(
        label,
        corner,
        (FONT, 13).into_font().color(&BASE_RATE),
    ))?;
    Ok(())
}

/// The box a point's circle (radius 5) covers, with a pixel to spare.
fn circle_box((x, y): (i32, i32)) -> Placed {
    Placed {
        left: x - 6,
        top: y - 6,
        right: x + 6,
        bottom: y + 6,
    }
}

/// `text` in `colour` beside the point at pixel `anchor`, where it covers nothing in `placed`
/// (see [`place_label`]); a label moved away from its point keeps a thin leader to it.
fn draw_label(
    root: &DrawingArea<SVGBackend, Shift>,
    anchor: (i32, i32),
    text: String,
    colour: RGBColor,
    placed: &mut Vec<Placed>,
    bounds: Placed,
) -> Drawn {
    let corner = place_label(anchor, &text, 15, placed, bounds);
    if !beside(corner, 15, anchor) {
        root.draw(&PathElement::new(
            [anchor, (corner.0, corner.1 + 7)],
            BLACK.mix(0.3).stroke_width(1),
        ))?;
    }
    root.draw(&Text::new(
        text,
        corner,
        (FONT, 13).into_font().color(&colour),
    ))?;
    Ok(())
}

/// Precision against recall for `arms` (those with both rates defined): one coloured circle per
/// arm with its 95% intervals as capped bars, every arm's name placed where it covers no other
/// (arms at the same point share one label, `a0 = a3`, so none hides behind another), the base
/// rate as a labelled dashed line, on a faint grid.
pub fn arms(document: &StatsDocument, arms: &[(&str, &ArmStats)]) -> Result<String, FigureError> {
    let points: Vec<Point> = arms
        .iter()
        .filter_map(|(name, stats)| Some((*name, *stats, stats.recall?, stats.precision?)))
        .map(|(name, stats, recall, precision)| {
            (name, stats, recall, precision, colour_of(document, name))
        })
        .collect();
    let base_rate = document.sample.base_rate;
    draw("arms", |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                "Precision and recall per arm (95% bootstrap intervals)",
                (FONT, 18),
            )
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..1.05f64, 0f64..1.05f64)?;
        draw_calm_mesh(&mut chart, "recall")?;
        let mut placed: Vec<Placed> = Vec::new();
        if let Some(rate) = base_rate {
            let label = format!("base rate {rate:.3} (always invalidate)");
            let (x, y) = chart.backend_coord(&(0.02, rate));
            let label = (label, (x, y - 17));
            draw_base_rate(root, &mut chart, rate, (0.0, 1.05), label, &mut placed)?;
        }
        draw_recall_precision_intervals(&mut chart, &points, &mut placed)?;
        for (_, _, recall, precision, colour) in &points {
            chart.draw_series(std::iter::once(Circle::new(
                (*recall, *precision),
                5,
                colour.filled(),
            )))?;
        }
        let groups = label_groups(&chart, &points);
        // Reserve every circle first, so no label covers a point.
        placed.extend(groups.iter().map(|(_, at)| circle_box(*at)));
        let bounds = plot_area(&chart);
        for (names, anchor) in groups {
            let colour = if names.len() == 1 {
                ink(names[0].1)
            } else {
                BLACK
            };
            let text = names
                .iter()
                .map(|(name, _)| *name)
                .collect::<Vec<_>>()
                .join(" = ");
            draw_label(root, anchor, text, colour, &mut placed, bounds)?;
        }
        Ok(())
    })
}

/// Each arm's 95% intervals of precision (vertical) and recall (horizontal) as capped bars, in
/// the arm's colour, faint enough that the circles read first; the bars are reserved in `placed`.
fn draw_recall_precision_intervals(
    chart: &mut Chart<'_, RangedCoordf64>,
    points: &[Point],
    placed: &mut Vec<Placed>,
) -> Drawn {
    for (_, stats, recall, precision, colour) in points {
        let style = colour.mix(0.55).stroke_width(1);
        if let Some([low, high]) = stats.precision_ci {
            chart.draw_series(std::iter::once(PathElement::new(
                [(*recall, low), (*recall, high)],
                style,
            )))?;
            placed.push(Placed::line(
                chart.backend_coord(&(*recall, low)),
                chart.backend_coord(&(*recall, high)),
            ));
            for end in [low, high] {
                chart.draw_series(std::iter::once(PathElement::new(
                    [(*recall - 0.008, end), (*recall + 0.008, end)],
                    style,
                )))?;
            }
        }
        if let Some([low, high]) = stats.recall_ci {
            chart.draw_series(std::iter::once(PathElement::new(
                [(low, *precision), (high, *precision)],
                style,
            )))?;
            placed.push(Placed::line(
                chart.backend_coord(&(low, *precision)),
                chart.backend_coord(&(high, *precision)),
            ));
            for end in [low, high] {
                chart.draw_series(std::iter::once(PathElement::new(
                    [(end, *precision - 0.008), (end, *precision + 0.008)],
                    style,
                )))?;
            }
        }
    }
    Ok(())
}

/// One label per distinct point: arms within two pixels of each other share it.
fn label_groups<'a>(
    chart: &Chart<'_, RangedCoordf64>,
    points: &[Point<'a>],
) -> Vec<LabelGroup<'a>> {
    let mut groups: Vec<LabelGroup> = Vec::new();
    for (name, _, recall, precision, colour) in points {
        let pixel = chart.backend_coord(&(*recall, *precision));
        match groups
            .iter_mut()
            .find(|(_, at)| (at.0 - pixel.0).abs() <= 2 && (at.1 - pixel.1).abs() <= 2)
        {
            Some((names, _)) => names.push((name, *colour)),
            None => groups.push((vec![(name, *colour)], pixel)),
        }
    }
    groups
}

/// The arms of Figure 3 in its 2×2 cells, by row (question) and column (information): the first
/// arm shown the diff only, the second the behaviour question with the claim, the rest the claim
/// question. The lower-left cell stays empty.
type Cells<'a> = [[Vec<(&'a str, &'a ArmStats)>; 2]; 2];

/// Figure 3's grid: the left and top edge of its cells, in pixels, and each cell's size.
const GRID_LEFT: i32 = 170;
const GRID_TOP: i32 = 70;
const CELL_WIDTH: i32 = 250;
const CELL_HEIGHT: i32 = 170;

/// The paper's Figure 3: precision in a 2×2 of question (does the change preserve behaviour? / does
/// this claim still hold?) by information (the diff / the claim and the diff). `arms` is in the
/// order the report names them: the diff-only arm (A5), the behaviour question shown the claim
/// (A5C), then the claim-question arms (A6 base, A6 risk, …), which share the lower-right cell.
/// The claim question cannot be asked of the diff alone, so that cell says so. Each arm is one
/// circle on its cell's precision scale, with its interval; the margins say what the information
/// (across the top row) and the question (down the right column) buy.
pub fn question_information(
    document: &StatsDocument,
    arms: &[(&str, &ArmStats)],
) -> Result<String, FigureError> {
    let base_rate = document.sample.base_rate;
    let cells = cells_of(arms);
    let information_buys = best_precision(&cells[0][1])
        .zip(best_precision(&cells[0][0]))
        .map(|(with, without)| with - without);
    let question_buys = best_precision(&cells[1][1])
        .zip(best_precision(&cells[0][1]))
        .map(|(claim, behaviour)| claim - behaviour);
    draw("question_information", |root| {
        let title = (FONT, 18).into_font();
        root.draw(&Text::new(
            "Precision by question and information (95% intervals)",
            (150, 10),
            title,
        ))?;
        draw_grid_headers(root)?;
        for (row, cells_of_row) in cells.iter().enumerate() {
            for (column, cell) in cells_of_row.iter().enumerate() {
                let origin = (
                    GRID_LEFT + column as i32 * CELL_WIDTH,
                    GRID_TOP + row as i32 * CELL_HEIGHT,
                );
                if row == 1 && column == 0 {
                    draw_unaskable_cell(root, origin)?;
                } else {
                    draw_cell(root, document, cell, origin)?;
                }
            }
        }
        draw_margins(root, information_buys, question_buys, base_rate)
    })
}

/// `arms`, in the report's order, in their cells of Figure 3.
fn cells_of<'a>(arms: &[(&'a str, &'a ArmStats)]) -> Cells<'a> {
    let cell_of = |index: usize| match index {
        0 => (0usize, 0usize),
        1 => (0, 1),
        _ => (1, 1),
    };
    let mut cells: Cells = Default::default();
    for (index, arm) in arms.iter().enumerate() {
        let (row, column) = cell_of(index);
        cells[row][column].push(*arm);
    }
    cells
}

/// The best precision among a cell's arms, if any has one.
fn best_precision(cell: &[(&str, &ArmStats)]) -> Option<f64> {
    cell.iter()
        .filter_map(|(_, stats)| stats.precision)
        .fold(None, |best: Option<f64>, value| {
            Some(best.map_or(value, |best| best.max(value)))
        })
}

/// The information above each column of Figure 3 and the question left of each row.
fn draw_grid_headers(root: &DrawingArea<SVGBackend, Shift>) -> Drawn {
    let header = (FONT, 14).into_font();
    for (column, text) in ["the diff", "the claim + the diff"].iter().enumerate() {
        root.draw(&Text::new(
            format!("shown {text}"),
            (GRID_LEFT + column as i32 * CELL_WIDTH + 60, GRID_TOP - 22),
            header.clone(),
        ))?;
    }
    for (row, lines) in [
        ["does the change", "preserve behaviour?"],
        ["does this claim", "still hold?"],
    ]
    .iter()
    .enumerate()
    {
        for (line, text) in lines.iter().enumerate() {
            root.draw(&Text::new(
                *text,
                (
                    14,
                    GRID_TOP + row as i32 * CELL_HEIGHT + 70 + line as i32 * 18,
                ),
                header.clone(),
            ))?;
        }
    }
    Ok(())
}

/// The frame of the cell whose top-left pixel is `(x0, y0)`.
fn cell_frame((x0, y0): (i32, i32)) -> [(i32, i32); 2] {
    [(x0, y0), (x0 + CELL_WIDTH - 8, y0 + CELL_HEIGHT - 8)]
}

/// The lower-left cell: the claim question cannot be asked of the diff alone.
fn draw_unaskable_cell(root: &DrawingArea<SVGBackend, Shift>, (x0, y0): (i32, i32)) -> Drawn {
    let small = (FONT, 12).into_font();
    root.draw(&Rectangle::new(
        cell_frame((x0, y0)),
        BLACK.mix(0.04).filled(),
    ))?;
    root.draw(&Text::new(
        "cannot be asked of",
        (x0 + 60, y0 + 65),
        small.clone().color(&BLACK.mix(0.6)),
    ))?;
    root.draw(&Text::new(
        "the diff alone",
        (x0 + 72, y0 + 83),
        small.color(&BLACK.mix(0.6)),
    ))?;
    Ok(())
}

/// One cell of Figure 3 at `(x0, y0)`: a precision scale across it (0 at the left, 1 at the
/// right) and one line per arm with its name, precision, interval and the base rate's tick.
fn draw_cell(
    root: &DrawingArea<SVGBackend, Shift>,
    document: &StatsDocument,
    cell: &[(&str, &ArmStats)],
    (x0, y0): (i32, i32),
) -> Drawn {
    let small = (FONT, 12).into_font();
    root.draw(&Rectangle::new(
        cell_frame((x0, y0)),
        BLACK.mix(0.25).stroke_width(1),
    ))?;
    let scale = |value: f64| x0 + 16 + ((CELL_WIDTH - 40) as f64 * value) as i32;
    let axis_y = y0 + CELL_HEIGHT - 34;
    root.draw(&PathElement::new(
        [(scale(0.0), axis_y), (scale(1.0), axis_y)],
        BLACK.mix(0.3).stroke_width(1),
    ))?;
    for tick in [0.0, 0.5, 1.0] {
        root.draw(&Text::new(
            format!("{tick}"),
            (scale(tick) - 6, axis_y + 5),
            small.clone().color(&BLACK.mix(0.5)),
        ))?;
    }
    for (slot, (name, stats)) in cell.iter().enumerate() {
        let y = y0 + 40 + slot as i32 * 44;
        draw_cell_arm(root, document, (name, stats), (x0, y), &scale)?;
    }
    Ok(())
}

/// One arm's line at pixel row `y` of the cell whose left edge is `x0`, on the cell's precision
/// `scale`.
fn draw_cell_arm(
    root: &DrawingArea<SVGBackend, Shift>,
    document: &StatsDocument,
    (name, stats): (&str, &ArmStats),
    (x0, y): (i32, i32),
    scale: &impl Fn(f64) -> i32,
) -> Drawn {
    let colour = colour_of(document, name);
    let value = stats
        .precision
        .map_or("precision —".to_string(), |precision| {
            format!("{precision:.2}")
        });
    let interval = stats.precision_ci.map_or(String::new(), |[low, high]| {
        format!(" [{low:.2}, {high:.2}]")
    });
    root.draw(&Text::new(
        format!("{name}  {value}{interval}"),
        (x0 + 14, y - 24),
        (FONT, 14).into_font().color(&ink(colour)),
    ))?;
    if let Some(rate) = document.sample.base_rate {
        // The base rate as a short tick on the arm's own line, clear of the text.
        let x = scale(rate);
        root.draw(&PathElement::new(
            [(x, y - 8), (x, y + 8)],
            BASE_RATE.stroke_width(2),
        ))?;
    }
    if let Some([low, high]) = stats.precision_ci {
        root.draw(&PathElement::new(
            [(scale(low), y), (scale(high), y)],
            colour.mix(0.6).stroke_width(2),
        ))?;
    }
    if let Some(precision) = stats.precision {
        root.draw(&Circle::new((scale(precision), y), 5, colour.filled()))?;
    }
    Ok(())
}

/// Under Figure 3: what the information and the question buy, and the base rate's tick.
fn draw_margins(
    root: &DrawingArea<SVGBackend, Shift>,
    information_buys: Option<f64>,
    question_buys: Option<f64>,
    base_rate: Option<f64>,
) -> Drawn {
    let note = (FONT, 13).into_font().color(&BLACK.mix(0.7));
    let gap = |value: Option<f64>| value.map_or("—".to_string(), |value| format!("{value:+.2}"));
    let bottom = GRID_TOP + 2 * CELL_HEIGHT;
    root.draw(&Text::new(
        format!(
            "information buys {} (top row, left to right)",
            gap(information_buys)
        ),
        (GRID_LEFT, bottom + 4),
        note.clone(),
    ))?;
    root.draw(&Text::new(
        format!(
            "question buys {} (right column, top to bottom)",
            gap(question_buys)
        ),
        (GRID_LEFT, bottom + 22),
        note,
    ))?;
    if let Some(rate) = base_rate {
        root.draw(&Text::new(
            format!("red tick: base rate {rate:.3}"),
            (GRID_LEFT + 2 * CELL_WIDTH - 170, bottom + 4),
            (FONT, 12).into_font().color(&BASE_RATE),
        ))?;
    }
    Ok(())
}

/// Cost per claim against precision for the arms that have both: one coloured circle per arm with
/// its precision interval, each labelled where it covers no other mark, `frontier` joined by a
/// grey line, the base rate dashed, on the same calm grid as the precision/recall figure.
pub fn cost(
    document: &StatsDocument,
    arms: &[(&str, &ArmStats)],
    frontier: &[String],
) -> Result<String, FigureError> {
    let points: Vec<Point> = arms
        .iter()
        .filter_map(|(name, stats)| {
            Some((
                *name,
                *stats,
                stats.cost.as_ref()?.per_claim,
                stats.precision?,
            ))
        })
        .filter(|(_, _, cost, _)| *cost > 0.0)
        .map(|(name, stats, cost, precision)| {
            (name, stats, cost, precision, colour_of(document, name))
        })
        .collect();
    let (low, high) = cost_range(&points);
    let line: Vec<(f64, f64)> = frontier
        .iter()
        .filter_map(|arm| points.iter().find(|point| point.0 == arm))
        .map(|(_, _, cost, precision, _)| (*cost, *precision))
        .collect();
    let base_rate = document.sample.base_rate;
    draw("cost", |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                "Cost per claim against precision (95% intervals)",
                (FONT, 18),
            )
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(56)
            .build_cartesian_2d((low..high).log_scale(), 0f64..1.05f64)?;
        draw_calm_mesh(&mut chart, "dollars per claim (log scale)")?;
        let mut placed: Vec<Placed> = Vec::new();
        if let Some(rate) = base_rate {
            // At the right end: the cheapest arms sit at the left.
            let label = format!("base rate {rate:.3}");
            let (x, y) = chart.backend_coord(&(high, rate));
            let corner = (x - 4 - label.len() as i32 * 7, y - 17);
            draw_base_rate(
                root,
                &mut chart,
                rate,
                (low, high),
                (label, corner),
                &mut placed,
            )?;
        }
        let frontier_style = BLACK.mix(0.35).stroke_width(1);
        chart.draw_series(LineSeries::new(line.iter().copied(), frontier_style))?;
        for pair in line.windows(2) {
            placed.push(Placed::line(
                chart.backend_coord(&pair[0]),
                chart.backend_coord(&pair[1]),
            ));
        }
        let at = side_by_side(
            points
                .iter()
                .map(|(_, _, cost, precision, _)| chart.backend_coord(&(*cost, *precision)))
                .collect(),
        );
        draw_precision_intervals(root, &chart, &points, &at, &mut placed)?;
        for ((.., colour), at) in points.iter().zip(&at) {
            root.draw(&Circle::new(*at, 5, colour.filled()))?;
            placed.push(circle_box(*at));
        }
        let bounds = plot_area(&chart);
        for ((name, .., colour), anchor) in points.iter().zip(&at) {
            draw_label(
                root,
                *anchor,
                name.to_string(),
                ink(*colour),
                &mut placed,
                bounds,
            )?;
        }
        Ok(())
    })
}

/// The cost axis' range for `points`, with room on the left for the labels of the cheapest arms,
/// which often share one cost.
fn cost_range(points: &[Point]) -> (f64, f64) {
    let low = points
        .iter()
        .map(|point| point.2)
        .fold(f64::INFINITY, f64::min);
    let high = points.iter().map(|point| point.2).fold(0.0, f64::max);
    if points.is_empty() {
        (1e-6, 1.0)
    } else {
        (low / 5.0, high * 2.0)
    }
}

/// Points moved apart where they share one cost (arms asking one model the same number of
/// calls): such arms stand side by side, 10 pixels apart, so their intervals do not cover each
/// other.
fn side_by_side(mut at: Vec<(i32, i32)>) -> Vec<(i32, i32)> {
    for index in 0..at.len() {
        let column: Vec<usize> = (0..at.len())
            .filter(|other| (at[*other].0 - at[index].0).abs() <= 3)
            .collect();
        if column.len() > 1 {
            let rank = column.iter().position(|other| *other == index).unwrap() as i32;
            at[index].0 += rank * 10 - (column.len() as i32 - 1) * 5;
        }
    }
    at
}

/// Each arm's precision interval as a capped vertical bar at its pixel column in `at`, reserved
/// in `placed`.
fn draw_precision_intervals<X: Ranged<ValueType = f64>>(
    root: &DrawingArea<SVGBackend, Shift>,
    chart: &Chart<'_, X>,
    points: &[Point],
    at: &[(i32, i32)],
    placed: &mut Vec<Placed>,
) -> Drawn {
    for ((_, stats, cost, _, colour), (x, _)) in points.iter().zip(at) {
        let Some([low, high]) = stats.precision_ci else {
            continue;
        };
        let style = colour.mix(0.55).stroke_width(1);
        let (_, top) = chart.backend_coord(&(*cost, high));
        let (_, bottom) = chart.backend_coord(&(*cost, low));
        root.draw(&PathElement::new([(*x, top), (*x, bottom)], style))?;
        for y in [top, bottom] {
            root.draw(&PathElement::new([(x - 3, y), (x + 3, y)], style))?;
        }
        placed.push(Placed::line((*x, top), (*x, bottom)));
    }
    Ok(())
}

/// The arms that can appear in the cost figure.
pub fn priced(document: &StatsDocument) -> Vec<(&str, &ArmStats)> {
    document
        .arms
        .iter()
        .filter(|(_, stats)| stats.cost.is_some() && stats.precision.is_some())
        .map(|(name, stats)| (name.as_str(), stats))
        .collect()
}
