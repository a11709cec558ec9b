//! The results page as an item of the `report` step: planned beside the report's own item, keyed
//! by every output the report step needs (so it renders again exactly when a claim, a label or a
//! verdict changed), stored as the blob `index.html` and written out with the report's files.

use std::collections::BTreeMap;

use serde_json::json;

use super::page_inputs;
use crate::engine::{ItemOutput, ItemPlan, StepContext, StepError, Upstream};
use crate::stats::StatsDocument;
use crate::stats::report::{ReportConfig, build, files::preamble};
use crate::view::model::{ReportParts, SCHEMA};

/// The item's id.
pub const ITEM: &str = "view";

/// The page's file, relative to the results directory.
pub use crate::view::FILE;

/// The page's item: it reads every needed step's output, and what else shapes the page: the
/// renderer's version, the pipeline file (its digest is shown), the repositories' test-file
/// patterns and each model arm's diff limit (the diffs are computed from them).
pub fn plan(ctx: &StepContext, upstream: &Upstream) -> Result<ItemPlan, StepError> {
    let repositories: BTreeMap<&str, &Option<Vec<String>>> = ctx
        .pipeline
        .repos
        .iter()
        .map(|repo| (repo.name.as_str(), &repo.test_patterns))
        .collect();
    let params = json!({
        "pipeline": ctx.pipeline.name,
        "pipeline_digest": page_inputs::pipeline_digest(ctx),
        "claimflow": env!("CARGO_PKG_VERSION"),
        "schema": SCHEMA,
        "repositories": repositories,
        "diff_limits": page_inputs::diff_limits(ctx, upstream),
    });
    Ok(ItemPlan::new(ITEM)
        .params(params)
        .read_outputs(upstream.all()))
}

/// The report's tables, preamble and top-level figures, for the overview.
pub fn report_parts(
    document: &StatsDocument,
    config: &ReportConfig,
    files: &BTreeMap<String, Vec<u8>>,
) -> ReportParts {
    let figures = files
        .iter()
        .filter_map(|(path, bytes)| {
            let name = path.strip_prefix("figures/")?;
            Some((
                name.to_string(),
                String::from_utf8_lossy(bytes).into_owned(),
            ))
        })
        .collect();
    ReportParts {
        preamble: vec![preamble(document)],
        sections: build(document, config),
        figures,
    }
}

/// Renders the page and stores it.
pub fn run(
    ctx: &StepContext,
    upstream: &Upstream,
    title: &str,
    report: ReportParts,
) -> Result<ItemOutput, StepError> {
    let inputs = page_inputs::inputs(ctx, upstream, title, report)?;
    let page = crate::view::render(&inputs);
    let digest = ctx.store.put(page.as_bytes())?;
    let mut output = ItemOutput::default();
    output.records.push(json!({"file": FILE, "digest": digest}));
    output.blobs.insert(FILE.to_string(), digest);
    Ok(output)
}
