//! The `report` step kind: renders `stats.json` as `report.md`, a CSV per table and SVG figures.
//!
//! The rendering is one item reading the stats step's output digest; the files are stored as blobs
//! in the cache and written out by `publish`, so a cached report is restored without rendering.
//! A second item renders the results page, `index.html` (see [`crate::view`]), from the outputs
//! of every step the report needs: the claims, labels and arms it should show are listed in its
//! `needs:` beside `stats`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::{
    ItemOutput, ItemPlan, ItemResult, ParamsDecl, Role, StepContext, StepError, StepKind, Upstream,
};
use crate::pipeline::Need;
use crate::pipeline::StepSpec;
use crate::stats::StatsDocument;
use crate::stats::report::{self, ReportConfig};

/// The `report` step kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReportStep;

/// The parameters of `uses: report`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportParams {
    /// The report's title (default: the pipeline's name).
    #[serde(default)]
    pub title: Option<String>,
    /// Which arm steps each table compares: arms, pairs, testmon, diff_only, diff_with_claim,
    /// claim_question, practitioner, prose, prose_reference, prose_baselines, ladder, cutoff
    /// (default: the arms declaring the paper's strategies).
    #[serde(default)]
    #[schemars(with = "Option<serde_json::Value>")]
    pub tables: Option<ReportConfig>,
}

impl ReportStep {
    fn stats<'a>(
        ctx: &StepContext,
        upstream: &'a Upstream,
    ) -> Result<&'a crate::engine::StepOutput, StepError> {
        upstream
            .first_with_role(|role| *role == Role::Stats)
            .ok_or_else(|| {
                StepError::Input(format!(
                    "step `{}`: needs a `stats` step; add it to `needs:`",
                    ctx.step.name
                ))
            })
    }
}

impl ReportStep {
    /// The report's title, the statistics and which arms each table compares.
    fn document(
        ctx: &StepContext,
        params: &ReportParams,
        stats: &crate::engine::StepOutput,
    ) -> Result<(String, StatsDocument, ReportConfig), StepError> {
        let document: StatsDocument = stats
            .decode_all::<StatsDocument>()?
            .into_iter()
            .next()
            .ok_or_else(|| {
                StepError::Invariant(format!("step `{}` produced no statistics", stats.step))
            })?;
        let title = params
            .title
            .clone()
            .unwrap_or_else(|| format!("claimflow report: {}", ctx.pipeline.name));
        let config = params
            .tables
            .clone()
            .unwrap_or_else(|| ReportConfig::declared(&document));
        Ok((title, document, config))
    }
}

/// What a step of this kind reads from the steps it needs.
const NEEDS: &[Need] = &[Need {
    roles: &[Role::Stats],
    step: "a `stats` step",
    reads: "the statistics it renders",
}];

impl StepKind for ReportStep {
    fn name(&self) -> &'static str {
        "report"
    }

    fn version(&self) -> u32 {
        // 2: the report gains "Flip density by ranking" (or a line saying what would fill it).
        // 3: a post-cutoff split in the statistics gets every table again in `post-cutoff/`.
        3
    }

    fn about(&self) -> &'static str {
        "the paper's tables as Markdown and CSV, SVG figures, and the results page index.html"
    }

    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<ReportParams>()
    }

    fn requires(&self, _step: &StepSpec) -> &'static [Need] {
        NEEDS
    }

    fn role(&self, _step: &StepSpec) -> Role {
        Role::Report
    }

    fn items(&self, ctx: &StepContext, upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let _: &ReportParams = ctx.params()?;
        let stats = Self::stats(ctx, upstream)?;
        let plan = ItemPlan::new("report").params(serde_json::json!({
            "pipeline": ctx.pipeline.name,
        }));
        Ok(vec![
            plan.read_outputs([stats]),
            super::report_page::plan(ctx, upstream)?,
        ])
    }

    fn run(
        &self,
        ctx: &StepContext,
        item: &ItemPlan,
        upstream: &Upstream,
    ) -> Result<ItemOutput, StepError> {
        let params: &ReportParams = ctx.params()?;
        let stats = Self::stats(ctx, upstream)?;
        let (title, document, config) = Self::document(ctx, params, stats)?;
        let files = report::render(&title, &document, &config)
            .map_err(|error| StepError::failed(format!("step `{}`", ctx.step.name), error))?;
        if item.id == super::report_page::ITEM {
            let parts = super::report_page::report_parts(&document, &config, &files);
            return super::report_page::run(ctx, upstream, &title, parts);
        }
        let mut output = ItemOutput::default();
        for (path, bytes) in files {
            let digest = ctx.store.put(&bytes)?;
            output
                .records
                .push(serde_json::json!({"file": path, "digest": digest}));
            output.blobs.insert(path, digest);
        }
        Ok(output)
    }

    fn publish(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<(), StepError> {
        for item in items {
            for (path, digest) in &item.output.blobs {
                let bytes = ctx.store.get(digest)?;
                ctx.write_result(path, &bytes)?;
            }
        }
        Ok(())
    }
}
