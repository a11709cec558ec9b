//! The `prose-render` step kind: each claim rewritten by a model as a short prose note, from the
//! parent's test source alone (no diff, no child, no label), for the prose arm.
//!
//! ```yaml
//! prose_render: {uses: prose-render, needs: [claims], with: {prompt: prompts/prose_render.txt, model: local}}
//! ```
//! One call per claim, keyed like an arm's call (the prompt file's content, the source's digest,
//! the model's settings). A claim whose note comes back empty is kept with the reason in
//! `notes/<step>.jsonl`; the prose arm gives it no verdict and says why.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::claim_groups::claims_by_commit;
use super::model_calls::{self, CallRecord, call_params, model_spec, prompt_file};
use crate::cache::Digest;
use crate::engine::{
    Execution, ItemFuture, ItemOutput, ItemPlan, ItemResult, ModelName, ParamsDecl, Planned, Pool,
    ProjectFile, StepContext, StepError, StepKind, Upstream,
};
use crate::models::ask::note;
use crate::models::{Totals, render_request};
use crate::pipeline::{Need, Role, StepSpec};

/// The parameters of `uses: prose-render`. Both are names, kept out of the key: the prompt's
/// content and the model's settings enter each item instead.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProseRenderParams {
    /// The renderer's system prompt (prompts/prose_render.txt); its content enters every key.
    #[serde(skip_serializing)]
    pub prompt: ProjectFile,
    /// The `models:` entry asked.
    #[serde(skip_serializing)]
    pub model: ModelName,
}

/// One claim's rendering: the note, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RenderRecord {
    pub claim: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    pub call: CallRecord,
}

/// What a step's planning read for its calls: the prompt, and each claim's source by claim id.
/// The engine hands it to every call.
struct Plan {
    prompt: String,
    sources: BTreeMap<String, String>,
}

/// The `prose-render` step kind.
#[derive(Default)]
pub struct ProseRender;

impl ProseRender {
    /// Asks for one claim's note.
    async fn render(
        &self,
        ctx: &StepContext<'_>,
        item: &ItemPlan,
    ) -> Result<ItemOutput, StepError> {
        let params: &ProseRenderParams = ctx.params()?;
        let plan: &Plan = ctx.plan()?;
        let source = plan.sources.get(&item.id).ok_or_else(|| {
            StepError::Invariant(format!(
                "step `{}`: item {} was not planned",
                ctx.step.name, item.id
            ))
        })?;
        let request = render_request(&plan.prompt, source);
        let completion =
            model_calls::complete(ctx, params.model.as_str(), &item.id, &request).await?;
        let spec = model_spec(ctx, params.model.as_str())?;
        let (note, problem) = match note(&completion.text) {
            Ok(note) => (Some(note), None),
            Err(problem) => (None, Some(problem)),
        };
        Ok(ItemOutput::records([RenderRecord {
            claim: item.id.clone(),
            note,
            problem,
            call: CallRecord {
                provider: spec.provider.name().to_string(),
                model: spec.model.clone(),
                completion,
                reading: None,
            },
        }]))
    }
}

/// What a step of this kind reads from the steps it needs.
const NEEDS: &[Need] = &[Need {
    roles: &[Role::Claims],
    step: "a `mine-claims` step",
    reads: "the claims it renders",
}];

impl StepKind for ProseRender {
    fn name(&self) -> &'static str {
        "prose-render"
    }

    fn version(&self) -> u32 {
        1
    }

    fn about(&self) -> &'static str {
        "each claim rewritten by a model as a short prose note from its test source alone"
    }

    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<ProseRenderParams>()
    }

    fn requires(&self, _step: &StepSpec) -> &'static [Need] {
        NEEDS
    }

    fn execution(&self) -> Execution {
        Execution::Async
    }

    fn plan(&self, ctx: &StepContext, upstream: &Upstream) -> Result<Planned, StepError> {
        let params: &ProseRenderParams = ctx.params()?;
        let spec = model_spec(ctx, params.model.as_str())?;
        let (prompt, prompt_digest) = prompt_file(ctx, params.prompt.as_str())?;
        let mut sources = BTreeMap::new();
        let mut items = Vec::new();
        for claim in claims_by_commit(ctx, upstream)?.into_iter().flatten() {
            items.push(
                ItemPlan::new(&claim.id)
                    .params(json!({"call": call_params(spec), "sample": 0}))
                    .read("claim", Digest::of(claim.source.as_bytes()))
                    .file("prompt", prompt_digest)
                    .pool(Pool::Model(params.model.to_string())),
            );
            sources.insert(claim.id, claim.source);
        }
        Ok(Planned::items(items).with_plan(Plan { prompt, sources }))
    }

    fn run_async<'a>(
        &'a self,
        ctx: &'a StepContext<'a>,
        item: &'a ItemPlan,
        _upstream: &'a Upstream,
    ) -> ItemFuture<'a> {
        Box::pin(self.render(ctx, item))
    }

    fn publish(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<(), StepError> {
        let params: &ProseRenderParams = ctx.params()?;
        let price = model_spec(ctx, params.model.as_str())?.price_per_mtok;
        let mut totals = Totals::default();
        let mut lines = Vec::new();
        let mut failed = 0;
        let cached = items.iter().filter(|item| item.cached).count();
        for item in items {
            for record in item.output.decode::<RenderRecord>()? {
                let usage = &record.call.completion.usage;
                totals.add(usage, price);
                failed += usize::from(record.note.is_none());
                lines.push(json!({
                    "claim": record.claim,
                    "note": record.note,
                    "problem": record.problem,
                    "answer": record.call.completion.text,
                    "tokens_in": usage.tokens_in,
                    "tokens_out": usage.tokens_out,
                    "cost": usage.cost(price),
                }));
            }
        }
        ctx.write_jsonl(&format!("notes/{}.jsonl", ctx.step.name), &lines)?;
        ctx.note(&format!(
            "{}; {failed} claims without a note",
            model_calls::describe(&totals, Some(cached))
        ));
        let summary = json!({
            "cached": cached,
            "step": ctx.step.name,
            "model": params.model,
            "claims": lines.len(),
            "rendered": lines.len() - failed,
            "failed": failed,
            "calls": totals.calls,
            "tokens_in": totals.tokens_in,
            "tokens_out": totals.tokens_out,
            "cost": totals.cost,
        });
        ctx.write_result(
            &format!("calls/{}.json", ctx.step.name),
            serde_json::to_string_pretty(&summary)
                .expect("a summary serializes")
                .as_bytes(),
        )
    }
}
