//! The dry run: for each step, how many items it has, how many must be computed and why — without
//! computing anything. A step's items can only be listed once the steps it needs are complete in the
//! cache, so a step downstream of missing work says which step it waits for.

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use crate::cache::{Digest, KeyRecord};
use crate::engine::executor::{Engine, EngineError, key_parts};
use crate::engine::state::{changes_since, reasons};
use crate::engine::{ItemPlan, ItemResult, Planned, StepKind, StepOutput, Upstream};

/// The plan of one step.
#[derive(Debug, Clone, Serialize)]
pub struct StepPlan {
    pub name: String,
    pub uses: String,
    /// None while a needed step still has work to do.
    pub items_total: Option<usize>,
    pub items_to_run: Option<usize>,
    /// Why items must run, with counts (`3 items: new item`), or what the step waits for.
    pub reasons: Vec<String>,
}

/// The plan of a whole pipeline, steps in dependency order.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub steps: Vec<StepPlan>,
}

/// One item as the engine would key it now, with what changed since the last run.
#[derive(Debug, Clone, Serialize)]
pub struct ItemExplanation {
    pub item: String,
    pub key: String,
    pub cached: bool,
    pub record: KeyRecord,
    /// What differs from the key record of the last run (empty if unchanged or never run).
    pub changed: Vec<String>,
    /// False when the item did not exist in the last run.
    pub ran_before: bool,
}

/// A step's items, keyed, with the upstream they were planned against: a cached item's result
/// (its plan inside), or the plan of an item to run. Key records are made only for the items that
/// need one (those to run, or those explained).
struct Keyed {
    kind: Arc<dyn StepKind>,
    params: serde_json::Value,
    items: Vec<Result<ItemResult, ItemPlan>>,
    /// What the kind planned beyond the items, and its digest.
    planned: Option<Arc<dyn Any + Send + Sync>>,
    plan_digest: Digest,
}

/// The plan of a keyed item, cached or not.
fn plan_of(item: &Result<ItemResult, ItemPlan>) -> &ItemPlan {
    match item {
        Ok(hit) => &hit.plan,
        Err(plan) => plan,
    }
}

impl Engine<'_> {
    /// Plans every step (or those `until` covers), without computing anything.
    pub fn plan(&self, force: &[String], until: Option<&str>) -> Result<Plan, EngineError> {
        let selected = self.selected(until)?;
        self.preflight(&selected, false)?;
        let mut known: BTreeMap<String, Arc<StepOutput>> = BTreeMap::new();
        let mut steps = Vec::new();
        for name in self.order()? {
            let step = self.pipeline.step(&name).expect("ordered steps exist");
            if !selected.contains(&name) {
                continue;
            }
            let waiting: Vec<&String> = step
                .needs
                .iter()
                .filter(|need| !known.contains_key(*need))
                .collect();
            if !waiting.is_empty() {
                let names: Vec<String> = waiting.iter().map(|need| format!("`{need}`")).collect();
                steps.push(StepPlan {
                    name: step.name.clone(),
                    uses: step.uses.clone(),
                    items_total: None,
                    items_to_run: None,
                    reasons: vec![format!(
                        "items known once {} ha{} run",
                        names.join(", "),
                        if names.len() == 1 { "s" } else { "ve" }
                    )],
                });
                continue;
            }
            let upstream = Upstream {
                steps: step
                    .needs
                    .iter()
                    .map(|need| (need.clone(), Arc::clone(&known[need])))
                    .collect(),
            };
            let keyed = self.key_items(&name, &upstream)?;
            let forced = force.iter().any(|forced| forced == &name);
            let missing: Vec<(String, KeyRecord)> = keyed
                .items
                .iter()
                .filter(|item| forced || item.is_err())
                .map(|item| (plan_of(item).id.clone(), keyed.record(plan_of(item))))
                .collect();
            let mut why: Vec<String> = if forced && !missing.is_empty() {
                vec![format!("{}: forced", count(missing.len()))]
            } else if missing.is_empty() {
                // Nothing to explain, so the last run's state (megabytes for a big fan-out) is not read.
                Vec::new()
            } else {
                reasons(&missing, self.state.load(&name).as_ref(), &self.store)?
                    .into_iter()
                    .map(|(reason, n)| format!("{}: {reason}", count(n)))
                    .collect()
            };
            why.sort();
            steps.push(StepPlan {
                name: step.name.clone(),
                uses: step.uses.clone(),
                items_total: Some(keyed.items.len()),
                items_to_run: Some(missing.len()),
                reasons: why,
            });
            if missing.is_empty() {
                known.insert(name.clone(), Arc::new(self.output_of(&name, keyed)?));
            }
        }
        // Only a shortcut for the next run: failing to write it fails nothing.
        let _ = self.store.save_file_digests();
        Ok(Plan { steps })
    }

    /// Explains the items of `step` (or the one with id `item`): the key record each would have now and
    /// what changed since the last run. Fails if a step it needs is not complete in the cache.
    pub fn explain(
        &self,
        step_name: &str,
        item: Option<&str>,
    ) -> Result<Vec<ItemExplanation>, EngineError> {
        let step = self
            .pipeline
            .step(step_name)
            .ok_or_else(|| EngineError::Input(format!("the pipeline has no step `{step_name}`")))?;
        let mut upstream = Upstream::default();
        for need in &step.needs {
            upstream
                .steps
                .insert(need.clone(), Arc::new(self.cached_output(need)?));
        }
        let keyed = self.key_items(step_name, &upstream)?;
        let earlier = self.state.load(step_name).unwrap_or_default();
        let earlier = earlier.by_id();
        let mut explanations = Vec::new();
        for keyed_item in &keyed.items {
            let plan = plan_of(keyed_item);
            if item.is_some_and(|wanted| wanted != plan.id) {
                continue;
            }
            let (id, record) = (plan.id.clone(), keyed.record(plan));
            let changed = changes_since(&record, earlier.get(id.as_str()).copied(), &self.store)?;
            explanations.push(ItemExplanation {
                key: record.digest().to_string(),
                cached: keyed_item.is_ok(),
                ran_before: changed.is_some(),
                changed: changed.unwrap_or_default(),
                item: id,
                record,
            });
        }
        if let Some(wanted) = item
            && explanations.is_empty()
        {
            return Err(EngineError::Input(format!(
                "step `{step_name}` has no item `{wanted}`"
            )));
        }
        Ok(explanations)
    }

    /// The output of `step` as the cache holds it now, computing nothing.
    fn cached_output(&self, name: &str) -> Result<StepOutput, EngineError> {
        let step = self.pipeline.step(name).expect("needs name existing steps");
        let mut upstream = Upstream::default();
        for need in &step.needs {
            upstream
                .steps
                .insert(need.clone(), Arc::new(self.cached_output(need)?));
        }
        let keyed = self.key_items(name, &upstream)?;
        if keyed.items.iter().any(Result::is_err) {
            return Err(EngineError::Input(format!(
                "step `{name}` has items not in the cache yet; run the pipeline first"
            )));
        }
        self.output_of(name, keyed)
    }

    /// The output of step `name` whose items are all cached: its items, and its reduction as the
    /// cache holds it (or made again here, unstored, when only the items are cached).
    fn output_of(&self, name: &str, keyed: Keyed) -> Result<StepOutput, EngineError> {
        let step = self.pipeline.step(name).expect("step exists");
        let items: Vec<ItemResult> = keyed
            .items
            .into_iter()
            .map(|item| item.expect("every item is cached"))
            .collect();
        let scope = self.looking(false);
        let mut ctx = self.context(step, &scope);
        ctx.planned = keyed.planned;
        let reduced = self
            .reduction(keyed.kind.as_ref(), &ctx, keyed.plan_digest, &items)
            .map_err(|error| EngineError::Input(format!("step `{name}`: {}", error.chain())))?
            .map(|(reduced, _)| reduced);
        Ok(StepOutput {
            step: name.to_string(),
            kind: step.uses.clone(),
            role: step.role.clone(),
            items,
            reduced,
        })
    }

    fn key_items(&self, name: &str, upstream: &Upstream) -> Result<Keyed, EngineError> {
        let step = self.pipeline.step(name).expect("step exists");
        let kind = self.kind(step)?;
        // Planning stops for nothing and fetches what it must to key the items.
        let scope = self.looking(false);
        let ctx = self.context(step, &scope);
        let Planned {
            items: plans,
            plan: planned,
            digest: plan_digest,
        } = kind
            .plan(&ctx, upstream)
            .map_err(|error| EngineError::Input(format!("step `{name}`: {}", error.chain())))?;
        let params = step.params.key().clone();
        let mut items = Vec::with_capacity(plans.len());
        for plan in plans {
            let key = key_parts(kind.as_ref(), &params, &plan).digest();
            // A cached item's plan moves into its result, uncopied.
            items.push(match self.lookup(kind.as_ref(), &ctx, &key)? {
                Some((digest, output, in_place)) => Ok(ItemResult {
                    plan,
                    digest,
                    output: Arc::new(output),
                    cached: true,
                    in_place,
                }),
                None => Err(plan),
            });
        }
        Ok(Keyed {
            kind,
            params,
            items,
            planned,
            plan_digest,
        })
    }
}

impl Keyed {
    /// The key record of one of the step's items.
    fn record(&self, plan: &ItemPlan) -> KeyRecord {
        key_parts(self.kind.as_ref(), &self.params, plan).to_record()
    }
}

fn count(n: usize) -> String {
    format!("{n} item{}", if n == 1 { "" } else { "s" })
}
