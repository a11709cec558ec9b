//! Cycles among `needs`: a pipeline must be a DAG.
//!
//! Every strongly connected component of more than one step is a cycle, and so is a step that needs
//! itself; each is named in full so the user sees which `needs` to cut.

use std::collections::{BTreeMap, VecDeque};

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};

use super::checker::Checker;
use super::steps::Checked;

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
    for component in &mut components {
        component.sort_by_key(|&node| graph[node]);
    }
    components.sort_by_key(|component| graph[component[0]]);

    for component in components {
        let start = component[0];
        let cycle = shortest_cycle(&graph, start, &component);
        let mut names: Vec<String> = cycle
            .iter()
            .map(|&node| format!("`{}`", steps.graph[graph[node]].name))
            .collect();
        names.push(names[0].clone());
        let caught: Vec<String> = component
            .iter()
            .filter(|node| !cycle.contains(node))
            .map(|&node| format!("`{}`", steps.graph[graph[node]].name))
            .collect();
        let mut message = format!("steps {} form a cycle", names.join(" -> "));
        if !caught.is_empty() {
            message.push_str(&format!(" (caught in it too: {})", caught.join(", ")));
        }
        checker.error(
            steps.graph[graph[start]].mark,
            message,
            Some("each step needs the next; remove one of these `needs`".to_string()),
        );
    }
}

/// The shortest path from `start` back to itself inside `component` (breadth-first, so the cycle
/// named is the simplest one to read; neighbours in file order, so it is stable).
fn shortest_cycle(
    graph: &DiGraph<usize, ()>,
    start: NodeIndex,
    component: &[NodeIndex],
) -> Vec<NodeIndex> {
    let mut previous: BTreeMap<NodeIndex, NodeIndex> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        let mut neighbours: Vec<NodeIndex> = graph
            .neighbors(node)
            .filter(|next| *next != node && component.contains(next))
            .collect();
        neighbours.sort_by_key(|&next| graph[next]);
        for next in neighbours {
            if next == start {
                let mut path = vec![node];
                let mut current = node;
                while current != start {
                    current = previous[&current];
                    path.push(current);
                }
                path.reverse();
                return path;
            }
            if !previous.contains_key(&next) {
                previous.insert(next, node);
                queue.push_back(next);
            }
        }
    }
    // A component of more than one node always has a cycle through each of its nodes.
    component.to_vec()
}
