//! Cycles among `needs`: a pipeline must be a DAG.
//!
//! petgraph's strongly connected components find where cycles are; every elementary cycle inside
//! each is then named in full, and every step that needs itself, so the user sees which `needs` to
//! cut.

use std::collections::{BTreeMap, BTreeSet};

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};

use super::checker::Checker;
use super::steps::{Checked, Edges};

/// Reports every cycle among the declared steps.
pub fn check(checker: &mut Checker, steps: &Checked) {
    // Edges point from a step to what it needs, so a path follows `needs` as the message reads.
    let mut graph: DiGraph<usize, ()> = DiGraph::new();
    let indices: BTreeMap<&str, NodeIndex> = steps
        .graph
        .iter()
        .enumerate()
        .map(|(position, step)| (step.name.as_str(), graph.add_node(position)))
        .collect();
    for step in &steps.graph {
        for need in &step.needs {
            if let Some(&target) = indices.get(need.as_str()) {
                graph.add_edge(indices[step.name.as_str()], target, ());
            }
        }
    }

    for step in &steps.graph {
        if step.needs.contains(&step.name) {
            checker.error(
                step.mark,
                format!("step `{}` needs itself", step.name),
                Some(format!("remove `{}` from its own `needs`", step.name)),
            );
        }
    }

    let mut components: Vec<Vec<NodeIndex>> = tarjan_scc(&graph)
        .into_iter()
        .filter(|component| component.len() > 1)
        .collect();
    components.sort_by_key(|component| component.iter().map(|&node| graph[node]).min());

    for component in components {
        let positions: BTreeSet<usize> = component.iter().map(|&node| graph[node]).collect();
        let cycles = elementary_cycles(&steps.graph, &positions);
        let shown = cycles.len().min(MAX_CYCLES_NAMED);
        for (index, cycle) in cycles.iter().take(shown).enumerate() {
            let mut names: Vec<String> = cycle
                .iter()
                .map(|&position| format!("`{}`", steps.graph[position].name))
                .collect();
            names.push(names[0].clone());
            let mut message = format!("steps {} form a cycle", names.join(" -> "));
            if index + 1 == shown && cycles.len() > shown {
                message.push_str(" (more cycles among these steps are not listed)");
            }
            checker.error(
                steps.graph[cycle[0]].mark,
                message,
                Some("each step needs the next; remove one of these `needs`".to_string()),
            );
        }
    }
}

/// Enough cycles to act on; a densely tangled component could have exponentially many.
const MAX_CYCLES_NAMED: usize = 20;

/// Every elementary cycle (no step twice, self-loops excluded) among `component`, each once:
/// rooted at its first step in file order and followed through `needs` in file order.
fn elementary_cycles(steps: &[Edges], component: &BTreeSet<usize>) -> Vec<Vec<usize>> {
    let positions: BTreeMap<&str, usize> = steps
        .iter()
        .enumerate()
        .map(|(position, step)| (step.name.as_str(), position))
        .collect();
    let needs = |position: usize| -> Vec<usize> {
        let mut needed: Vec<usize> = steps[position]
            .needs
            .iter()
            .filter_map(|need| positions.get(need.as_str()).copied())
            .filter(|need| component.contains(need))
            .collect();
        needed.sort_unstable();
        needed.dedup();
        needed
    };
    let mut cycles = Vec::new();
    for &start in component {
        // Only steps after `start` may appear, so each cycle is found from its first step alone.
        let mut path = vec![start];
        let mut pending = vec![needs(start).into_iter()];
        while let Some(next) = pending.last_mut() {
            match next.next() {
                Some(need) if need == start && path.len() > 1 => cycles.push(path.clone()),
                Some(need) if need > start && !path.contains(&need) => {
                    path.push(need);
                    pending.push(needs(need).into_iter());
                }
                Some(_) => {}
                None => {
                    pending.pop();
                    path.pop();
                }
            }
            if cycles.len() > MAX_CYCLES_NAMED {
                return cycles;
            }
        }
    }
    cycles
}
