//! What each step reads from the steps it needs, checked against their roles.
//!
//! A kind declares the records it reads by role ([`crate::pipeline::Need`]): an oracle step reads
//! claims, `cutoff` reads labels and commit times. A step none of whose `needs` declares one of
//! those roles could only fail once it plans, an hour into a run and without its place in the
//! file; here it is reported at its `needs:` with every other problem of the pipeline.

use std::collections::BTreeMap;

use super::checker::Checker;
use super::steps::Places;
use crate::pipeline::suggest;
use crate::pipeline::{Kinds, StepSpec};

/// Reports every step lacking a need its kind declares. `specs` are the valid steps (roles
/// declared, ladders not yet expanded); a step needing one that is not valid is left alone, as
/// that step's own problem is reported and its role is unknown.
pub fn check(
    checker: &mut Checker,
    specs: &[StepSpec],
    places: &BTreeMap<String, Places>,
    registry: &dyn Kinds,
) {
    let by_name: BTreeMap<&str, &StepSpec> = specs
        .iter()
        .map(|spec| (spec.name.as_str(), spec))
        .collect();
    for spec in specs {
        let Some(kind) = registry.declaration(&spec.uses) else {
            continue;
        };
        let Some(needed) = spec
            .needs
            .iter()
            .map(|need| by_name.get(need.as_str()))
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        let Some(place) = places.get(&spec.name) else {
            continue;
        };
        for need in kind.requires(spec) {
            if needed.iter().any(|step| need.is_met_by(&step.role)) {
                continue;
            }
            let candidates: Vec<&str> = specs
                .iter()
                .filter(|candidate| candidate.name != spec.name && need.is_met_by(&candidate.role))
                .map(|candidate| candidate.name.as_str())
                .collect();
            let hint = if candidates.is_empty() {
                format!(
                    "add {} to the pipeline and list it in `needs` of step `{}`",
                    need.step, spec.name
                )
            } else {
                let which = if candidates.len() == 1 { "" } else { "one of " };
                format!(
                    "add {which}{} to `needs` of step `{}`",
                    suggest::quoted_list(&candidates),
                    spec.name
                )
            };
            let listed = if spec.needs.is_empty() {
                "it needs no step".to_string()
            } else {
                format!(
                    "none of its `needs` ({}) is one",
                    suggest::quoted_list(
                        &spec.needs.iter().map(String::as_str).collect::<Vec<_>>()
                    )
                )
            };
            checker.error(
                place.needs.unwrap_or(place.step),
                format!(
                    "step `{}` (`{}`) reads {} from {}, and {listed}",
                    spec.name, spec.uses, need.reads, need.step
                ),
                Some(hint),
            );
        }
    }
}
