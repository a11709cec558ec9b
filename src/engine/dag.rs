//! The steps of a pipeline as a graph: the order to run them in, what depends on what, and the
//! renderings `claimflow graph` prints.
//!
//! Edges point from a needed step to the step that needs it, the way data flows. Every listing is
//! deterministic: ties are broken by the order the file declares the steps in.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::fmt::Write as _;

use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::{Bfs, Reversed};

use crate::pipeline::Pipeline;

/// Why a pipeline's steps do not form a DAG, or a step is not in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DagError {
    /// A step needs a step the pipeline does not declare (a validated pipeline never does).
    #[error("step `{step}` needs `{need}`, which is not a step of the pipeline")]
    UnknownNeed { step: String, need: String },
    /// The steps form a cycle (a validated pipeline never does); lists the steps left unordered.
    #[error("steps {steps} form a cycle")]
    Cycle { steps: String },
    /// A step named on the command line (`--force`, `--until`, `explain`) does not exist.
    #[error("no step named `{step}` in the pipeline{}", suggestion.as_ref().map(|near| format!(" (did you mean `{near}`?)")).unwrap_or_default())]
    UnknownStep {
        step: String,
        suggestion: Option<String>,
    },
}

/// The step graph of one pipeline.
#[derive(Debug, Clone)]
pub struct Dag {
    /// Node weights are positions in the file.
    graph: DiGraph<usize, ()>,
    /// Step names in file order.
    names: Vec<String>,
    /// Step kinds in file order.
    kinds: Vec<String>,
    indices: BTreeMap<String, NodeIndex>,
    /// Positions in topological order.
    order: Vec<usize>,
}

impl Dag {
    /// Builds the graph of `pipeline`'s steps.
    pub fn new(pipeline: &Pipeline) -> Result<Dag, DagError> {
        let mut graph = DiGraph::new();
        let mut indices = BTreeMap::new();
        for (position, step) in pipeline.steps.iter().enumerate() {
            indices.insert(step.name.clone(), graph.add_node(position));
        }
        for step in &pipeline.steps {
            for need in &step.needs {
                let Some(&from) = indices.get(need) else {
                    return Err(DagError::UnknownNeed {
                        step: step.name.clone(),
                        need: need.clone(),
                    });
                };
                graph.add_edge(from, indices[&step.name], ());
            }
        }
        let names: Vec<String> = pipeline
            .steps
            .iter()
            .map(|step| step.name.clone())
            .collect();
        let order = topological_order(&graph).map_err(|left| DagError::Cycle {
            steps: left
                .iter()
                .map(|&position| format!("`{}`", names[position]))
                .collect::<Vec<_>>()
                .join(", "),
        })?;
        Ok(Dag {
            graph,
            kinds: pipeline
                .steps
                .iter()
                .map(|step| step.uses.clone())
                .collect(),
            names,
            indices,
            order,
        })
    }

    /// Step names in an order where every step comes after the steps it needs; among steps that
    /// could go next, the one declared first in the file goes first.
    pub fn topological(&self) -> Vec<&str> {
        self.order
            .iter()
            .map(|&position| self.names[position].as_str())
            .collect()
    }

    /// The steps `step` needs directly, in file order.
    pub fn needs(&self, step: &str) -> Result<Vec<&str>, DagError> {
        let node = self.index(step)?;
        let mut positions: Vec<usize> = self
            .graph
            .neighbors_directed(node, Direction::Incoming)
            .map(|need| self.graph[need])
            .collect();
        positions.sort_unstable();
        Ok(positions
            .into_iter()
            .map(|position| self.names[position].as_str())
            .collect())
    }

    /// Every step that depends on `step`, directly or through others (not `step` itself), in
    /// topological order: what `--force STEP` recomputes besides `step`.
    pub fn dependents(&self, step: &str) -> Result<Vec<&str>, DagError> {
        let start = self.index(step)?;
        let mut reached = BTreeSet::new();
        let mut search = Bfs::new(&self.graph, start);
        while let Some(node) = search.next(&self.graph) {
            reached.insert(self.graph[node]);
        }
        Ok(self.in_order(&reached, self.graph[start]))
    }

    /// Every step `step` needs, directly or through others (not `step` itself), in topological
    /// order: what `--until STEP` runs before `step`.
    pub fn ancestors(&self, step: &str) -> Result<Vec<&str>, DagError> {
        let start = self.index(step)?;
        let reversed = Reversed(&self.graph);
        let mut reached = BTreeSet::new();
        let mut search = Bfs::new(reversed, start);
        while let Some(node) = search.next(reversed) {
            reached.insert(self.graph[node]);
        }
        Ok(self.in_order(&reached, self.graph[start]))
    }

    /// The graph in Graphviz's dot language.
    pub fn dot(&self) -> String {
        let mut text = String::from("digraph pipeline {\n  rankdir=LR;\n  node [shape=box];\n");
        for (position, name) in self.names.iter().enumerate() {
            let label = format!("{name}\n({})", self.kinds[position]);
            let _ = writeln!(text, "  {} [label={}];", dot_quote(name), dot_quote(&label));
        }
        for (from, to) in self.edges() {
            let _ = writeln!(
                text,
                "  {} -> {};",
                dot_quote(&self.names[from]),
                dot_quote(&self.names[to])
            );
        }
        text.push_str("}\n");
        text
    }

    /// The graph as a Mermaid flowchart. Node ids are positions (`s0`, `s1`, …) because step names
    /// may hold characters Mermaid reads as syntax; the labels carry the names.
    pub fn mermaid(&self) -> String {
        let mut text = String::from("flowchart LR\n");
        for (position, name) in self.names.iter().enumerate() {
            let label = format!("{name}<br/>({})", self.kinds[position]);
            let _ = writeln!(text, "  s{position}[\"{}\"]", mermaid_escape(&label));
        }
        for (from, to) in self.edges() {
            let _ = writeln!(text, "  s{from} --> s{to}");
        }
        text
    }

    fn index(&self, step: &str) -> Result<NodeIndex, DagError> {
        self.indices
            .get(step)
            .copied()
            .ok_or_else(|| DagError::UnknownStep {
                step: step.to_string(),
                suggestion: crate::pipeline::suggest::nearest(
                    step,
                    self.names.iter().map(String::as_str),
                )
                .map(str::to_string),
            })
    }

    /// The names of `reached` except `exclude`, in topological order.
    fn in_order(&self, reached: &BTreeSet<usize>, exclude: usize) -> Vec<&str> {
        self.order
            .iter()
            .filter(|&&position| position != exclude && reached.contains(&position))
            .map(|&position| self.names[position].as_str())
            .collect()
    }

    /// Edges as (needed, needing) positions, sorted by the needing step's position, then the needed
    /// step's, so renderings do not depend on insertion order.
    fn edges(&self) -> Vec<(usize, usize)> {
        let mut edges: Vec<(usize, usize)> = self
            .graph
            .raw_edges()
            .iter()
            .map(|edge| (self.graph[edge.source()], self.graph[edge.target()]))
            .collect();
        edges.sort_unstable_by_key(|&(from, to)| (to, from));
        edges.dedup();
        edges
    }
}

/// Kahn's algorithm with a min-heap of file positions; on a cycle, returns the positions left over.
fn topological_order(graph: &DiGraph<usize, ()>) -> Result<Vec<usize>, Vec<usize>> {
    let mut waiting: BTreeMap<NodeIndex, usize> = graph
        .node_indices()
        .map(|node| {
            let needs = graph.neighbors_directed(node, Direction::Incoming).count();
            (node, needs)
        })
        .collect();
    let mut ready: BinaryHeap<Reverse<(usize, NodeIndex)>> = waiting
        .iter()
        .filter(|(_, needs)| **needs == 0)
        .map(|(&node, _)| Reverse((graph[node], node)))
        .collect();
    let mut order = Vec::with_capacity(graph.node_count());
    while let Some(Reverse((position, node))) = ready.pop() {
        order.push(position);
        waiting.remove(&node);
        // `neighbors` yields a node once per edge, so a duplicated need is counted down twice,
        // matching the in-degree counted above.
        for next in graph.neighbors(node) {
            if let Some(needs) = waiting.get_mut(&next) {
                *needs -= 1;
                if *needs == 0 {
                    ready.push(Reverse((graph[next], next)));
                }
            }
        }
    }
    if waiting.is_empty() {
        Ok(order)
    } else {
        let mut left: Vec<usize> = waiting.keys().map(|&node| graph[node]).collect();
        left.sort_unstable();
        Err(left)
    }
}

/// A dot string literal.
fn dot_quote(text: &str) -> String {
    let mut quoted = String::from("\"");
    for character in text.chars() {
        match character {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            other => quoted.push(other),
        }
    }
    quoted.push('"');
    quoted
}

/// Text inside a quoted Mermaid label: `"` has to be an entity.
fn mermaid_escape(text: &str) -> String {
    text.replace('"', "#quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::StepSpec;

    fn pipeline(steps: &[(&str, &[&str])]) -> Pipeline {
        Pipeline {
            file: "p.yaml".into(),
            root: "/project".into(),
            version: 1,
            name: "p".into(),
            workdir: "/project/.claimflow".into(),
            results: "/project/results/p".into(),
            repos: Vec::new(),
            models: BTreeMap::new(),
            executor: Default::default(),
            steps: steps
                .iter()
                .enumerate()
                .map(|(line, (name, needs))| StepSpec {
                    name: (*name).to_string(),
                    uses: "command".to_string(),
                    needs: needs.iter().map(|need| (*need).to_string()).collect(),
                    with: serde_json::json!({}),
                    params: crate::engine::ParsedParams::of(crate::engine::NoParams {}),
                    role: crate::engine::Role::Other,
                    line: line + 1,
                })
                .collect(),
        }
    }

    #[test]
    fn ties_follow_file_order() {
        let dag = Dag::new(&pipeline(&[
            ("report", &["stats"]),
            ("b", &[]),
            ("stats", &["b", "a"]),
            ("a", &[]),
        ]))
        .unwrap();
        assert_eq!(dag.topological(), ["b", "a", "stats", "report"]);
    }

    #[test]
    fn dependents_and_ancestors_are_transitive() {
        let dag = Dag::new(&pipeline(&[
            ("rank", &[]),
            ("claims", &["rank"]),
            ("truth", &["claims"]),
            ("a0", &["truth"]),
            ("other", &[]),
            ("stats", &["a0", "truth"]),
        ]))
        .unwrap();
        assert_eq!(dag.dependents("claims").unwrap(), ["truth", "a0", "stats"]);
        assert_eq!(dag.ancestors("a0").unwrap(), ["rank", "claims", "truth"]);
        assert_eq!(dag.needs("stats").unwrap(), ["truth", "a0"]);
        assert!(dag.dependents("stats").unwrap().is_empty());
    }

    #[test]
    fn unknown_steps_get_a_suggestion() {
        let dag = Dag::new(&pipeline(&[("rank", &[])])).unwrap();
        assert_eq!(
            dag.dependents("rnak").unwrap_err().to_string(),
            "no step named `rnak` in the pipeline (did you mean `rank`?)"
        );
    }

    #[test]
    fn a_cycle_is_an_error() {
        let error = Dag::new(&pipeline(&[("a", &["b"]), ("b", &["a"]), ("c", &[])])).unwrap_err();
        assert_eq!(error.to_string(), "steps `a`, `b` form a cycle");
    }

    #[test]
    fn a_missing_need_is_an_error() {
        let error = Dag::new(&pipeline(&[("a", &["zzz"])])).unwrap_err();
        assert!(matches!(error, DagError::UnknownNeed { .. }));
    }
}
