//! Roles, declared once the steps are known: each kind says what its step's records are
//! ([`crate::engine::StepKind::role`]), and an arm step that needs a manipulating step (a shuffle,
//! a paraphrase) becomes a control of its twin, the same arm without the manipulation.
//!
//! The twin is the arm step of the same kind with the same `with:` (apart from `replicates`: asking
//! each call again does not make another arm), itself no control, whose needs are among the
//! control's (the control adds the manipulating step); the one with the most needs when several are. Without a twin the control is named by its kind and parameters, and is still
//! never scored as an arm of its own.

use std::collections::{BTreeMap, BTreeSet};

use crate::pipeline::Kinds;
use crate::pipeline::Role;
use crate::pipeline::StepSpec;

/// Parses each step's parameters again from its final `with:` (a ladder's rung has its own
/// `model:`), and declares every step's role.
pub fn declare(specs: &mut [StepSpec], registry: &dyn Kinds) {
    for spec in specs.iter_mut() {
        let Some(kind) = registry.declaration(&spec.uses) else {
            continue;
        };
        if spec.params.key().get("model") != spec.with.get("model")
            && let Ok(params) = kind.params().parse(&spec.with)
        {
            spec.params = params;
        }
        spec.role = kind.role(spec);
        spec.declare_strategy_version(kind.as_ref());
    }
    let manipulations: BTreeMap<String, String> = specs
        .iter()
        .filter_map(|spec| match &spec.role {
            Role::Manipulation { control } => Some((spec.name.clone(), control.clone())),
            _ => None,
        })
        .collect();
    let manipulated = |spec: &StepSpec| {
        spec.needs
            .iter()
            .find_map(|need| manipulations.get(need).cloned())
    };
    let mut controls = Vec::new();
    for (index, spec) in specs.iter().enumerate() {
        let Role::Predictions { model, .. } = &spec.role else {
            continue;
        };
        let Some(control) = manipulated(spec) else {
            continue;
        };
        let needs: BTreeSet<&String> = spec.needs.iter().collect();
        let twin = specs
            .iter()
            .filter(|candidate| {
                candidate.name != spec.name
                    && matches!(candidate.role, Role::Predictions { .. })
                    && manipulated(candidate).is_none()
                    && candidate.uses == spec.uses
                    && same_arm(&candidate.with, &spec.with)
                    && candidate.needs.iter().all(|need| needs.contains(need))
            })
            .max_by_key(|candidate| {
                (
                    candidate.needs.len(),
                    std::cmp::Reverse(candidate.name.clone()),
                )
            });
        let of = match twin {
            Some(twin) => twin.name.clone(),
            None => format!("{} {}", spec.uses, spec.with),
        };
        controls.push((
            index,
            Role::Control {
                of,
                control,
                model: model.clone(),
            },
        ));
    }
    for (index, role) in controls {
        specs[index].role = role;
    }
}

/// Parameters that repeat an arm's work rather than change what it decides.
const REPEATS: &[&str] = &["replicates"];

/// Whether two `with:` maps make the same arm: equal apart from [`REPEATS`].
fn same_arm(left: &serde_json::Value, right: &serde_json::Value) -> bool {
    let decided = |with: &serde_json::Value| match with {
        serde_json::Value::Object(map) => serde_json::Value::Object(
            map.iter()
                .filter(|(key, _)| !REPEATS.contains(&key.as_str()))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
        ),
        other => other.clone(),
    };
    decided(left) == decided(right)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::pipeline::Role;
    use crate::pipeline::load_str;
    use crate::steps::Registry;

    const PIPELINE: &str = r#"version: 1
name: roles
repos:
  - {name: demo, url: "https://example.com/demo.git", branch: main}
steps:
  rank:   {uses: rank-commits}
  claims: {uses: mine-claims, needs: [rank]}
  truth:  {uses: oracle, needs: [claims]}
  sample: {uses: stratify, needs: [truth]}
  post:   {uses: cutoff, needs: [rank, truth], with: {date: 2024-03-10}}
  a4:     {uses: arm, needs: [claims], with: {arm: symbol-anchoring}}
  a4_sampled:  {uses: arm, needs: [claims, sample], with: {arm: symbol-anchoring}}
  shuffled:    {uses: shuffle, needs: [rank, claims]}
  a4_shuffled: {uses: arm, needs: [claims, shuffled], with: {arm: symbol-anchoring}}
  a3_shuffled: {uses: arm, needs: [claims, shuffled], with: {arm: file-anchoring}}
  a6_risk: {uses: llm-arm, needs: [claims, sample], with: {question: a6_risk, prompt: prompts/a6_risk.txt, model: judge, replicates: 3}}
  a6_risk_shuffled:
    uses: llm-arm
    needs: [claims, sample, shuffled]
    with: {question: a6_risk, prompt: prompts/a6_risk.txt, model: judge}
models:
  judge: {provider: llama-server}
"#;

    fn role(name: &str) -> Role {
        let registry = Registry::builtin();
        let pipeline = load_str(
            PIPELINE,
            Path::new("roles.yaml"),
            Path::new(env!("CARGO_MANIFEST_DIR")),
            &registry,
        )
        .unwrap_or_else(|problems| panic!("{problems}"));
        pipeline.step(name).unwrap().role.clone()
    }

    #[test]
    fn each_kind_declares_what_its_records_are() {
        assert_eq!(role("claims"), Role::Claims);
        assert_eq!(role("truth"), Role::Labels);
        assert_eq!(role("sample"), Role::LabelSample);
        assert_eq!(role("post"), Role::LabelSplit);
        assert_eq!(
            role("a4"),
            Role::Predictions {
                strategy: "a4".into(),
                model: None
            }
        );
        // A sampled arm is still the arm: the selection narrows what it judges.
        assert_eq!(role("a4_sampled").strategy(), Some("a4"));
        assert_eq!(role("shuffled").control(), Some("shuffled-diff"));
    }

    #[test]
    fn an_arm_needing_a_manipulation_is_declared_a_control_of_its_twin() {
        assert_eq!(
            role("a4_shuffled"),
            Role::Control {
                of: "a4".into(),
                control: "shuffled-diff".into(),
                model: None
            }
        );
        // Regression: the twin asks each call three times, the control once; they are one arm.
        assert_eq!(role("a6_risk_shuffled").control_of(), Some("a6_risk"));
        // No twin among the steps: named by its kind and parameters, still a control.
        let untwinned = role("a3_shuffled");
        assert!(untwinned.is_scored() && untwinned.strategy().is_none());
        assert!(untwinned.control_of().unwrap().starts_with("arm "));
    }
}
