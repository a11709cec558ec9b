//! The `a4` stage: a claim anchored to code the range did not touch is cleared as held, with no
//! call. A symbol anchor (`src/url.py::parse_url`, `Client.get`) is touched when its definition's
//! text changed between the two commits, as A4 ([`crate::arms::symbol_anchoring`]) reads a
//! change: the definition or one of its members (a class's methods) differs, or exists on one side
//! only. A file anchor (or an `.mdc` glob) is touched when the range changed a file it names.
//!
//! A touched anchor does not flip the claim: A4 over-fires (impact is not invalidation), so the
//! claim passes on to the next stage. Neither does the stage clear what it cannot see: a claim
//! without anchors, an anchor naming nothing at the range's end (a typo, a file never there), or a
//! changed Python file that does not parse all pass the claim on.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use git2::{Delta, Oid, Repository, Tree};

use super::cascade::Decision;
use super::claim::{Anchor, MemoryClaim, Verdict};
use super::error::CheckError;
use crate::arms::symbol_anchoring::changed_names;
use crate::syntax::python::ParsedModule;

/// What the range changed, read once for every claim.
pub struct ChangedCode<'r> {
    repository: &'r Repository,
    from: Tree<'r>,
    to: Tree<'r>,
    /// Every path the range changed (both paths of a rename).
    paths: BTreeSet<String>,
    /// Per changed Python file, the definitions (`Class.method`) whose text changed.
    definitions: BTreeMap<String, BTreeSet<String>>,
    /// Changed Python files that did not parse on one side, and why.
    unparsed: BTreeMap<String, String>,
    /// Definitions at the range's end, by file, read when an anchor asks.
    defined_at_to: BTreeMap<String, Option<BTreeSet<String>>>,
    /// Every file at the range's end, listed when an anchor asks.
    files_at_to: Option<Vec<String>>,
}

/// Why the commit trees could not be read.
fn git_error(action: &str) -> impl FnOnce(git2::Error) -> CheckError + '_ {
    move |error| CheckError::failed(action.to_string(), error)
}

impl<'r> ChangedCode<'r> {
    /// Diffs `from` against `to` and reads the changed definitions of every changed Python file.
    pub fn read(repository: &'r Repository, from: Oid, to: Oid) -> Result<Self, CheckError> {
        let tree = |id: Oid| {
            repository
                .find_commit(id)
                .and_then(|commit| commit.tree())
                .map_err(git_error("read a commit's tree"))
        };
        let (from_tree, to_tree) = (tree(from)?, tree(to)?);
        let mut diff = repository
            .diff_tree_to_tree(Some(&from_tree), Some(&to_tree), None)
            .map_err(git_error("diff the range"))?;
        diff.find_similar(None)
            .map_err(git_error("detect renames in the range"))?;
        let mut paths = BTreeSet::new();
        for delta in diff.deltas() {
            if delta.status() == Delta::Unmodified {
                continue;
            }
            for file in [delta.old_file(), delta.new_file()] {
                if let Some(path) = file.path().and_then(Path::to_str) {
                    paths.insert(path.to_string());
                }
            }
        }
        let mut changed = ChangedCode {
            repository,
            from: from_tree,
            to: to_tree,
            paths,
            definitions: BTreeMap::new(),
            unparsed: BTreeMap::new(),
            defined_at_to: BTreeMap::new(),
            files_at_to: None,
        };
        let python: Vec<String> = changed
            .paths
            .iter()
            .filter(|path| path.ends_with(".py"))
            .cloned()
            .collect();
        for path in python {
            let before = changed.definitions_in(&changed.from, &path);
            let after = changed.definitions_in(&changed.to, &path);
            match (before, after) {
                (Ok(before), Ok(after)) => {
                    let names =
                        changed_names(&before.unwrap_or_default(), &after.unwrap_or_default());
                    changed.definitions.insert(path, names);
                }
                (Err(problem), _) | (_, Err(problem)) => {
                    changed.unparsed.insert(path, problem);
                }
            }
        }
        Ok(changed)
    }

    /// How many files the range changed.
    pub fn files(&self) -> usize {
        self.paths.len()
    }

    /// The definitions of the Python file at `path` in `tree`, by name within the file
    /// (`parse_url`, `Client.get`): `None` when the tree has no such file, an error saying why
    /// when it does not parse.
    fn definitions_in(
        &self,
        tree: &Tree,
        path: &str,
    ) -> Result<Option<BTreeMap<String, crate::syntax::python::Definition>>, String> {
        let Some(text) = self.text_in(tree, path) else {
            return Ok(None);
        };
        let module = ParsedModule::parse(path, &text).map_err(|failure| failure.to_string())?;
        Ok(Some(
            module
                .definitions("")
                .into_iter()
                .map(|(name, definition)| (name.trim_start_matches('.').to_string(), definition))
                .collect(),
        ))
    }

    fn text_in(&self, tree: &Tree, path: &str) -> Option<String> {
        let entry = tree.get_path(Path::new(path)).ok()?;
        let blob = self.repository.find_blob(entry.id()).ok()?;
        Some(String::from_utf8_lossy(blob.content()).into_owned())
    }

    /// The names defined in `path` at the range's end (`None`: no such file, or it does not parse).
    fn defined_at_to(&mut self, path: &str) -> Option<&BTreeSet<String>> {
        if !self.defined_at_to.contains_key(path) {
            let names = self
                .definitions_in(&self.to, path)
                .ok()
                .flatten()
                .map(|definitions| definitions.into_keys().collect());
            self.defined_at_to.insert(path.to_string(), names);
        }
        self.defined_at_to[path].as_ref()
    }

    /// Every file at the range's end (listed once).
    fn files_at_to(&mut self) -> &[String] {
        if self.files_at_to.is_none() {
            let mut files = Vec::new();
            let _ = self
                .to
                .walk(git2::TreeWalkMode::PreOrder, |directory, entry| {
                    if let Some(name) = entry.name()
                        && entry.kind() == Some(git2::ObjectType::Blob)
                    {
                        files.push(format!("{directory}{name}"));
                    }
                    git2::TreeWalkResult::Ok
                });
            self.files_at_to = Some(files);
        }
        self.files_at_to.as_deref().unwrap_or_default()
    }
}

/// How one anchor stands against the range.
enum Standing {
    /// Nothing it names changed.
    Untouched(String),
    /// Something it names changed: the claim passes on.
    Touched(String),
    /// It names nothing at the range's end, or its file did not parse: it cannot clear the claim.
    Unseen(String),
}

/// Decides the claims: held when every anchor is untouched, else passed on with the reason.
pub fn decide(changed: &mut ChangedCode, claims: &[&MemoryClaim]) -> Vec<Decision> {
    claims
        .iter()
        .map(|claim| decide_one(changed, claim))
        .collect()
}

fn decide_one(changed: &mut ChangedCode, claim: &MemoryClaim) -> Decision {
    if claim.anchors.is_empty() {
        return Decision::pass_on("no anchors");
    }
    let standings: Vec<Standing> = claim
        .anchors
        .iter()
        .map(|anchor| standing(changed, anchor))
        .collect();
    let mut touched = Vec::new();
    let mut unseen = Vec::new();
    let mut untouched = Vec::new();
    for standing in standings {
        match standing {
            Standing::Touched(what) => touched.push(what),
            Standing::Unseen(what) => unseen.push(what),
            Standing::Untouched(what) => untouched.push(what),
        }
    }
    if !touched.is_empty() {
        return Decision::pass_on(format!("touched: {}", touched.join(", ")));
    }
    if !unseen.is_empty() {
        return Decision::pass_on(format!("cannot clear: {}", unseen.join(", ")));
    }
    Decision::decided(
        Verdict::Held,
        format!(
            "untouched: {} (the range changed {} files, none of these)",
            untouched.join(", "),
            changed.files()
        ),
    )
}

fn standing(changed: &mut ChangedCode, anchor: &Anchor) -> Standing {
    match anchor {
        Anchor::File { path } => file_standing(changed, path),
        Anchor::Symbol { path, name } if path.is_empty() => name_standing(changed, name),
        Anchor::Symbol { path, name } if !path.ends_with(".py") => {
            // A symbol of a file A4 cannot parse is as good as the file.
            match file_standing(changed, path) {
                Standing::Untouched(_) => Standing::Untouched(format!("{path}::{name}")),
                Standing::Touched(_) => Standing::Touched(format!("{path}::{name} (file changed)")),
                other => other,
            }
        }
        Anchor::Symbol { path, name } => symbol_standing(changed, path, name),
    }
}

fn file_standing(changed: &mut ChangedCode, pattern: &str) -> Standing {
    let glob = glob::Pattern::new(pattern).ok();
    let matches = |path: &str| {
        path == pattern
            || path.starts_with(&format!("{}/", pattern.trim_end_matches('/')))
            || glob.as_ref().is_some_and(|glob| glob.matches(path))
    };
    if let Some(path) = changed.paths.iter().find(|path| matches(path)) {
        return Standing::Touched(format!("{pattern} ({path} changed)"));
    }
    let exists = changed.files_at_to().iter().any(|path| matches(path));
    if exists {
        Standing::Untouched(pattern.to_string())
    } else {
        Standing::Unseen(format!("{pattern} (no such file at the range's end)"))
    }
}

/// Whether `name` or one of its members is among `names`.
fn names_touch(names: &BTreeSet<String>, name: &str) -> Vec<String> {
    let member = format!("{name}.");
    names
        .iter()
        .filter(|changed| *changed == name || changed.starts_with(&member))
        .cloned()
        .collect()
}

fn symbol_standing(changed: &mut ChangedCode, path: &str, name: &str) -> Standing {
    let shown = format!("{path}::{name}");
    if let Some(problem) = changed.unparsed.get(path) {
        return Standing::Unseen(format!("{shown} ({problem})"));
    }
    if let Some(names) = changed.definitions.get(path) {
        let hits = names_touch(names, name);
        if !hits.is_empty() {
            return Standing::Touched(format!("{shown} (changed: {})", hits.join(", ")));
        }
    }
    match changed.defined_at_to(path) {
        Some(names) if names.contains(name) => Standing::Untouched(shown),
        Some(_) => Standing::Unseen(format!("{shown} (not defined at the range's end)")),
        None => Standing::Unseen(format!("{shown} (no such Python file at the range's end)")),
    }
}

/// A symbol named without its file: touched if a changed file's changed definitions hold it (as
/// a whole name or a dotted suffix, `get` for `Client.get`), cleared only if some file at the
/// range's end defines it.
fn name_standing(changed: &mut ChangedCode, name: &str) -> Standing {
    let suffix = format!(".{name}");
    let holds = |defined: &str| defined == name || defined.ends_with(&suffix);
    for (path, names) in &changed.definitions {
        let hits: Vec<&String> = names
            .iter()
            .filter(|defined| holds(defined) || defined.starts_with(&format!("{name}.")))
            .collect();
        if !hits.is_empty() {
            let hits: Vec<String> = hits.into_iter().cloned().collect();
            return Standing::Touched(format!("{name} ({path}: changed {})", hits.join(", ")));
        }
    }
    if !changed.unparsed.is_empty() {
        let files: Vec<&String> = changed.unparsed.keys().collect();
        return Standing::Unseen(format!(
            "{name} (changed files that do not parse may define it: {})",
            files
                .iter()
                .map(|path| path.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let python: Vec<String> = changed
        .files_at_to()
        .iter()
        .filter(|path| path.ends_with(".py"))
        .cloned()
        .collect();
    for path in python {
        if changed
            .defined_at_to(&path)
            .is_some_and(|names| names.iter().any(|defined| holds(defined)))
        {
            return Standing::Untouched(name.to_string());
        }
    }
    Standing::Unseen(format!("{name} (defined nowhere at the range's end)"))
}
