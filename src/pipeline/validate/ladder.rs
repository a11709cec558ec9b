//! Model ladders: a step whose `model:` is a list (`model: [small, large]`) stands for one step per
//! entry, named `<step>@<entry>` (`a6_risk@small`, `a6_risk@large`), each with `model:` set to its
//! entry. A step that needs a laddered step needs every rung of it, unless it is laddered itself
//! and the needed ladder has its entry: then it needs that rung only (`prose@small` reads
//! `prose_render@small`), and a top-level parameter naming that needed step (`notes:`) names that
//! rung too.

use std::collections::BTreeMap;

use serde_json::Value;

use super::steps::Places;
use crate::pipeline::StepSpec;

/// The name of the rung of `step` on the model entry `model`.
pub fn rung_name(step: &str, model: &str) -> String {
    format!("{step}@{model}")
}

/// The steps with every ladder expanded, in file order (rungs in the list's order); `places` gets
/// an entry per rung, the laddered step's own.
pub fn expand(specs: Vec<StepSpec>, places: &mut BTreeMap<String, Places>) -> Vec<StepSpec> {
    let ladders: BTreeMap<String, Vec<String>> = specs
        .iter()
        .filter_map(|spec| {
            let models = spec.with.get("model")?.as_array()?;
            let models = models
                .iter()
                .filter_map(|model| model.as_str().map(str::to_string))
                .collect();
            Some((spec.name.clone(), models))
        })
        .collect();
    if ladders.is_empty() {
        return specs;
    }
    let needs_of = |spec: &StepSpec, rung: Option<&str>| -> Vec<String> {
        let mut needs = Vec::new();
        for need in &spec.needs {
            match ladders.get(need) {
                None => needs.push(need.clone()),
                Some(models) => {
                    match rung.filter(|rung| models.iter().any(|model| model == rung)) {
                        Some(rung) => needs.push(rung_name(need, rung)),
                        None => needs.extend(models.iter().map(|model| rung_name(need, model))),
                    }
                }
            }
        }
        needs
    };
    let mut expanded = Vec::new();
    for spec in specs {
        let Some(models) = ladders.get(&spec.name) else {
            let needs = needs_of(&spec, None);
            expanded.push(StepSpec { needs, ..spec });
            continue;
        };
        for model in models {
            let name = rung_name(&spec.name, model);
            let mut with = spec.with.clone();
            if let Some(map) = with.as_object_mut() {
                for (key, value) in map.iter_mut() {
                    if key == "model" {
                        *value = Value::String(model.clone());
                    } else if let Some(step) = value.as_str()
                        && spec.needs.iter().any(|need| need == step)
                        && ladders
                            .get(step)
                            .is_some_and(|rungs| rungs.iter().any(|rung| rung == model))
                    {
                        *value = Value::String(rung_name(step, model));
                    }
                }
            }
            if let Some(place) = places.get(&spec.name) {
                let copy = Places {
                    step: place.step,
                    needs: place.needs,
                    with: place.with.clone(),
                };
                places.insert(name.clone(), copy);
            }
            expanded.push(StepSpec {
                name,
                uses: spec.uses.clone(),
                needs: needs_of(&spec, Some(model)),
                with,
                // Parsed again with the rung's own `model:` once every ladder is expanded.
                params: spec.params.clone(),
                role: spec.role.clone(),
                line: spec.line,
            });
        }
        places.remove(&spec.name);
    }
    expanded
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn step(name: &str, needs: &[&str], with: Value) -> StepSpec {
        StepSpec {
            name: name.into(),
            uses: "llm-arm".into(),
            needs: needs.iter().map(|need| need.to_string()).collect(),
            with,
            params: crate::pipeline::ParsedParams::of(crate::pipeline::NoParams {}),
            role: crate::pipeline::Role::Other,
            line: 1,
        }
    }

    #[test]
    fn a_list_of_models_makes_a_rung_per_entry_and_needs_follow_the_rung() {
        let specs = vec![
            step("claims", &[], json!({})),
            step("render", &["claims"], json!({"model": ["small", "large"]})),
            step(
                "prose",
                &["claims", "render"],
                json!({"model": ["small", "large"], "notes": "render"}),
            ),
            step(
                "a6",
                &["claims"],
                json!({"model": ["small"], "question": "render"}),
            ),
            step("stats", &["prose", "a6"], json!({})),
        ];
        let mut places = BTreeMap::new();
        let expanded = expand(specs, &mut places);
        let summary: Vec<(String, Vec<String>, Value)> = expanded
            .into_iter()
            .map(|spec| (spec.name, spec.needs, spec.with))
            .collect();
        let owned = |names: &[&str]| {
            names
                .iter()
                .map(|name| name.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            summary,
            vec![
                ("claims".into(), owned(&[]), json!({})),
                (
                    "render@small".into(),
                    owned(&["claims"]),
                    json!({"model": "small"})
                ),
                (
                    "render@large".into(),
                    owned(&["claims"]),
                    json!({"model": "large"})
                ),
                (
                    "prose@small".into(),
                    owned(&["claims", "render@small"]),
                    json!({"model": "small", "notes": "render@small"})
                ),
                (
                    "prose@large".into(),
                    owned(&["claims", "render@large"]),
                    json!({"model": "large", "notes": "render@large"})
                ),
                (
                    "a6@small".into(),
                    owned(&["claims"]),
                    json!({"model": "small", "question": "render"})
                ),
                (
                    "stats".into(),
                    owned(&["prose@small", "prose@large", "a6@small"]),
                    json!({})
                ),
            ]
        );
    }
}
