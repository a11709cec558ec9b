//! The report's figures as SVG (plotters' SVG backend): one circle per arm in every figure, so a
//! reader (and a test) can count the arms.
//!
//! - `arms.svg`: precision against recall per arm, with 95% intervals on both axes and the base
//!   rate (what always-invalidate reaches) as a dashed line.
//! - `question_information.svg`: the 2×2 arms' precision with intervals.
//! - `cost.svg`: cost per claim against precision, the frontier joined by a line.

use plotters::coord::Shift;
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

/// Precision against recall for `arms` (those with both rates defined).
pub fn arms(document: &StatsDocument, arms: &[(&str, &ArmStats)]) -> Result<String, FigureError> {
    let points: Vec<(&str, &ArmStats, f64, f64)> = arms
        .iter()
        .filter_map(|(name, stats)| Some((*name, *stats, stats.recall?, stats.precision?)))
        .collect();
    let base_rate = document.sample.base_rate;
    draw("arms", |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                "Precision and recall per arm (95% bootstrap intervals)",
                (FONT, 18),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(0f64..1.05f64, 0f64..1.05f64)?;
        chart
            .configure_mesh()
            .x_desc("recall")
            .y_desc("precision")
            .draw()?;
        if let Some(rate) = base_rate {
            chart.draw_series(DashedLineSeries::new(
                [(0.0, rate), (1.05, rate)],
                6,
                4,
                RED.stroke_width(1),
            ))?;
            chart.draw_series(std::iter::once(Text::new(
                format!("base rate {rate:.3}"),
                (0.01, rate + 0.015),
                (FONT, 12).into_font().color(&RED),
            )))?;
        }
        for (_, stats, recall, precision) in &points {
            if let Some([low, high]) = stats.precision_ci {
                chart.draw_series(std::iter::once(PathElement::new(
                    [(*recall, low), (*recall, high)],
                    BLACK.stroke_width(1),
                )))?;
            }
            if let Some([low, high]) = stats.recall_ci {
                chart.draw_series(std::iter::once(PathElement::new(
                    [(low, *precision), (high, *precision)],
                    BLACK.stroke_width(1),
                )))?;
            }
        }
        chart.draw_series(points.iter().map(|(_, _, recall, precision)| {
            Circle::new((*recall, *precision), 5, BLUE.filled())
        }))?;
        chart.draw_series(points.iter().map(|(name, _, recall, precision)| {
            Text::new(
                name.to_string(),
                (*recall + 0.012, *precision + 0.012),
                (FONT, 13),
            )
        }))?;
        Ok(())
    })
}

/// Precision with intervals for the 2×2 arms, in the order given.
pub fn question_information(
    document: &StatsDocument,
    arms: &[(&str, &ArmStats)],
) -> Result<String, FigureError> {
    let points: Vec<(usize, &str, &ArmStats, f64)> = arms
        .iter()
        .filter_map(|(name, stats)| Some((*name, *stats, stats.precision?)))
        .enumerate()
        .map(|(index, (name, stats, precision))| (index, name, stats, precision))
        .collect();
    let base_rate = document.sample.base_rate;
    let width = points.len() as f64;
    draw("question_information", |root| {
        let mut chart = ChartBuilder::on(root)
            .caption("Precision by question and information", (FONT, 18))
            .margin(12)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(-0.5f64..width - 0.5, 0f64..1.05f64)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc("precision")
            .draw()?;
        if let Some(rate) = base_rate {
            chart.draw_series(DashedLineSeries::new(
                [(-0.5, rate), (width - 0.5, rate)],
                6,
                4,
                RED.stroke_width(1),
            ))?;
        }
        for (index, _, stats, _) in &points {
            if let Some([low, high]) = stats.precision_ci {
                let x = *index as f64;
                chart.draw_series(std::iter::once(PathElement::new(
                    [(x, low), (x, high)],
                    BLACK.stroke_width(1),
                )))?;
            }
        }
        chart.draw_series(points.iter().map(|(index, _, _, precision)| {
            Circle::new((*index as f64, *precision), 6, BLUE.filled())
        }))?;
        chart.draw_series(points.iter().map(|(index, name, _, precision)| {
            Text::new(
                name.to_string(),
                (*index as f64 + 0.06, *precision),
                (FONT, 13),
            )
        }))?;
        Ok(())
    })
}

/// Cost per claim against precision for the arms that have both; `frontier` joined by a line.
pub fn cost(arms: &[(&str, &ArmStats)], frontier: &[String]) -> Result<String, FigureError> {
    let points: Vec<(&str, f64, f64)> = arms
        .iter()
        .filter_map(|(name, stats)| Some((*name, stats.cost.as_ref()?.per_claim, stats.precision?)))
        .filter(|(_, cost, _)| *cost > 0.0)
        .collect();
    let low = points
        .iter()
        .map(|point| point.1)
        .fold(f64::INFINITY, f64::min);
    let high = points.iter().map(|point| point.1).fold(0.0, f64::max);
    let (low, high) = if points.is_empty() {
        (1e-6, 1.0)
    } else {
        (low / 2.0, high * 2.0)
    };
    let line: Vec<(f64, f64)> = frontier
        .iter()
        .filter_map(|arm| points.iter().find(|point| point.0 == arm))
        .map(|(_, cost, precision)| (*cost, *precision))
        .collect();
    draw("cost", |root| {
        let mut chart = ChartBuilder::on(root)
            .caption("Cost per claim against precision", (FONT, 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d((low..high).log_scale(), 0f64..1.05f64)?;
        chart
            .configure_mesh()
            .x_desc("dollars per claim (log scale)")
            .y_desc("precision")
            .draw()?;
        chart.draw_series(LineSeries::new(line, BLUE.stroke_width(1)))?;
        chart.draw_series(
            points
                .iter()
                .map(|(_, cost, precision)| Circle::new((*cost, *precision), 5, BLUE.filled())),
        )?;
        chart.draw_series(points.iter().map(|(name, cost, precision)| {
            Text::new(
                name.to_string(),
                (*cost * 1.08, *precision + 0.012),
                (FONT, 13),
            )
        }))?;
        Ok(())
    })
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
