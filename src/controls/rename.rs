//! The rename class: flips caused by a pure rename of a symbol the claim references.
//!
//! A pure rename keeps behaviour and still falsifies every claim that names the old symbol, so it
//! is the case where "does this diff preserve behaviour" must answer wrongly by construction. A
//! commit renames a symbol purely when a definition disappears from the parent's sources and a
//! definition of the same kind, under another (short) name, appears in the child's with the same
//! text once each name is read as a placeholder. A move under the same name is not a rename; a
//! rename that also edits the body is not pure. A claim is in the class when it flipped and its test
//! references the old name.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::arms::Change;
use crate::stats::rename_class::{RenameClassStats, RenameSplit};
use crate::syntax::python::{
    Definition, DefinitionKind, ParseFailure, ParsedModule, References, parse_function,
};

/// One Python source file of a commit's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    pub path: String,
    /// Its module name (`tally.inventory`).
    pub module: String,
    pub text: String,
}

/// A definition removed under one name and added, unchanged otherwise, under another.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Rename {
    /// Qualified names at the parent and at the child.
    pub old: String,
    pub new: String,
    /// The short names: what a claim's source spells.
    pub old_name: String,
    pub new_name: String,
}

/// Why the rename detector could not read a commit.
#[derive(Debug, thiserror::Error)]
pub enum RenameError {
    /// The repository could not be read.
    #[error("read the commit's sources: {0}")]
    Source(#[from] crate::arms::source::SourceError),
}

fn short(qualified: &str) -> &str {
    qualified.rsplit('.').next().unwrap_or(qualified)
}

fn is_identifier_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte >= 0x80
}

/// `text` with every whole-identifier occurrence of `name` replaced by a placeholder.
fn with_placeholder(text: &str, name: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut index = 0;
    while index < text.len() {
        let rest = &text[index..];
        let before_ok = index == 0 || !is_identifier_byte(bytes[index - 1]);
        let after = index + name.len();
        if before_ok
            && rest.starts_with(name)
            && (after >= text.len() || !is_identifier_byte(bytes[after]))
        {
            out.push_str("\u{0}renamed\u{0}");
            index = after;
        } else {
            let character = rest
                .chars()
                .next()
                .expect("index is on a character boundary");
            out.push(character);
            index += character.len_utf8();
        }
    }
    out
}

/// Definitions of `files`, keyed by qualified name; files that do not parse are left out (they
/// cannot show a rename either way).
fn definitions(files: &[SourceFile]) -> BTreeMap<String, Definition> {
    let mut all = BTreeMap::new();
    for file in files {
        if let Ok(parsed) = ParsedModule::parse(&file.path, &file.text) {
            all.extend(parsed.definitions(&file.module));
        }
    }
    all
}

/// The pure renames from `parent` to `child` (the touched source files at each commit).
pub fn renames(parent: &[SourceFile], child: &[SourceFile]) -> Vec<Rename> {
    let before = definitions(parent);
    let after = definitions(child);
    let removed: Vec<(&String, &Definition)> = before
        .iter()
        .filter(|(name, _)| !after.contains_key(*name))
        .collect();
    let added: Vec<(&String, &Definition)> = after
        .iter()
        .filter(|(name, _)| !before.contains_key(*name))
        .collect();
    let same_body = |old: (&String, &Definition), new: (&String, &Definition)| {
        old.1.kind == new.1.kind
            && old.1.kind != DefinitionKind::Variable
            && short(old.0) != short(new.0)
            && with_placeholder(&old.1.text, short(old.0))
                == with_placeholder(&new.1.text, short(new.0))
    };
    let mut found = Vec::new();
    for &old in &removed {
        let matches: Vec<_> = added.iter().filter(|&&new| same_body(old, new)).collect();
        // Two removed definitions with one body (or one with two new names) leave the pairing
        // ambiguous: neither is read as a rename.
        let [new] = matches.as_slice() else {
            continue;
        };
        let claimed = removed
            .iter()
            .filter(|&&other| same_body(other, **new))
            .count();
        if claimed == 1 {
            found.push(Rename {
                old: old.0.clone(),
                new: new.0.clone(),
                old_name: short(old.0).to_string(),
                new_name: short(new.0).to_string(),
            });
        }
    }
    found
}

/// The pure renames of a loaded commit, over the source files it touched.
pub fn renames_in(change: &Change) -> Result<Vec<Rename>, RenameError> {
    let mut parent = Vec::new();
    let mut child = Vec::new();
    for path in &change.touched.source {
        if let Some(text) = change.parent.read(path)? {
            parent.push(SourceFile {
                path: path.clone(),
                module: change.parent_modules.module_name(path),
                text,
            });
        }
        if let Some(text) = change.child.read(path)? {
            child.push(SourceFile {
                path: path.clone(),
                module: change.child_modules.module_name(path),
                text,
            });
        }
    }
    Ok(renames(&parent, &child))
}

/// The renames whose old name the test `source` references (as a name, an attribute, a call).
pub fn referenced<'a>(
    source: &str,
    renames: &'a [Rename],
) -> Result<Vec<&'a Rename>, ParseFailure> {
    if renames.is_empty() {
        return Ok(Vec::new());
    }
    let function = parse_function("claim", source)?;
    let references = References::of_function(&function);
    let spelled = |name: &str| {
        references
            .chains
            .iter()
            .chain(&references.calls)
            .any(|chain| chain.iter().any(|part| part == name))
            || references.loose_attributes.contains(name)
            || references
                .receiver_calls
                .iter()
                .any(|(receiver, attribute)| {
                    attribute == name || receiver.iter().any(|part| part == name)
                })
    };
    Ok(renames
        .iter()
        .filter(|rename| spelled(&rename.old_name))
        .collect())
}

/// Below this many rename-class flips a recall is not reported: one or two claims say nothing.
pub const MIN_EVALUABLE: u64 = 5;

/// One claim whose test references a symbol its commit renamed purely (`rename_class.jsonl`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenameClaim {
    pub claim: String,
    pub renames: Vec<Rename>,
}

/// The rename class per split: `members` are the claims referencing a renamed symbol, `labels`
/// the oracle's (flipped or not) per labelled claim, `split_of` a claim's split, `fired` per arm
/// the claims it fired on.
pub fn rename_class(
    members: &[RenameClaim],
    labels: &BTreeMap<String, bool>,
    split_of: impl Fn(&str) -> String,
    fired: &BTreeMap<String, std::collections::BTreeSet<String>>,
) -> RenameClassStats {
    let mut by_split: BTreeMap<String, (Vec<String>, u64)> = BTreeMap::new();
    for member in members {
        let Some(&flipped) = labels.get(&member.claim) else {
            continue;
        };
        let entry = by_split.entry(split_of(&member.claim)).or_default();
        if flipped {
            entry.0.push(member.claim.clone());
        } else {
            entry.1 += 1;
        }
    }
    let splits = by_split
        .into_iter()
        .map(|(split, (flipped, held))| {
            let n = flipped.len() as u64;
            let evaluable = n >= MIN_EVALUABLE;
            let detected: BTreeMap<String, u64> = fired
                .iter()
                .map(|(arm, claims)| {
                    let hits = flipped
                        .iter()
                        .filter(|claim| claims.contains(*claim))
                        .count();
                    (arm.clone(), hits as u64)
                })
                .collect();
            let recall = detected
                .iter()
                .map(|(arm, hits)| {
                    let rate = (evaluable && n > 0).then(|| *hits as f64 / n as f64);
                    (arm.clone(), rate)
                })
                .collect();
            RenameSplit {
                split,
                flipped,
                held,
                detected,
                recall,
                evaluable,
            }
        })
        .collect();
    RenameClassStats {
        min_evaluable: MIN_EVALUABLE,
        splits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(module: &str, text: &str) -> SourceFile {
        SourceFile {
            path: format!("{}.py", module.replace('.', "/")),
            module: module.into(),
            text: text.into(),
        }
    }

    const PARENT: &str = "\
class Inventory:
    def is_low(self, item):
        \"\"\"Whether to restock.\"\"\"
        return self.stock(item) <= self.threshold(item)

    def low_items(self):
        return sorted(i for i in self._items if self.is_low(i))


def helper(x):
    return x + 1
";

    #[test]
    fn a_method_renamed_with_its_body_unchanged_is_a_rename() {
        let child = PARENT
            .replace("def is_low", "def needs_restock")
            .replace("self.is_low(i)", "self.needs_restock(i)");
        let found = renames(&[file("pkg.inv", PARENT)], &[file("pkg.inv", &child)]);
        assert_eq!(
            found,
            vec![Rename {
                old: "pkg.inv.Inventory.is_low".into(),
                new: "pkg.inv.Inventory.needs_restock".into(),
                old_name: "is_low".into(),
                new_name: "needs_restock".into(),
            }]
        );
    }

    #[test]
    fn a_rename_that_also_edits_the_body_is_not_pure() {
        let child = PARENT
            .replace("def is_low", "def needs_restock")
            .replace("<= self.threshold", "< self.threshold");
        assert!(renames(&[file("pkg.inv", PARENT)], &[file("pkg.inv", &child)]).is_empty());
    }

    #[test]
    fn a_move_under_the_same_name_is_not_a_rename() {
        let parent = [file("pkg.a", "def helper(x):\n    return x + 1\n")];
        let child = [file("pkg.b", "def helper(x):\n    return x + 1\n")];
        assert!(renames(&parent, &child).is_empty());
    }

    #[test]
    fn a_recursive_function_renamed_is_a_rename() {
        let parent = [file(
            "m",
            "def walk(n):\n    return walk(n - 1) if n else 0\n",
        )];
        let child = [file(
            "m",
            "def descend(n):\n    return descend(n - 1) if n else 0\n",
        )];
        assert_eq!(renames(&parent, &child).len(), 1);
    }

    #[test]
    fn two_candidates_for_one_body_are_ambiguous() {
        let parent = [file("m", "def a(x):\n    return x\n")];
        let child = [file(
            "m",
            "def b(x):\n    return x\n\n\ndef c(x):\n    return x\n",
        )];
        assert!(renames(&parent, &child).is_empty());
    }

    #[test]
    fn a_claim_references_the_old_name_as_an_attribute_or_a_call() {
        let found = vec![Rename {
            old: "pkg.inv.Inventory.is_low".into(),
            new: "pkg.inv.Inventory.needs_restock".into(),
            old_name: "is_low".into(),
            new_name: "needs_restock".into(),
        }];
        let uses = "def test_pear(inv):\n    assert inv.is_low('pear')\n";
        let other = "def test_stock(inv):\n    assert inv.stock('pear') == 1\n";
        assert_eq!(referenced(uses, &found).unwrap().len(), 1);
        assert!(referenced(other, &found).unwrap().is_empty());
    }

    #[test]
    fn the_placeholder_replaces_whole_identifiers_only() {
        assert_eq!(
            with_placeholder("is_low(x) + is_lower", "is_low"),
            "\u{0}renamed\u{0}(x) + is_lower"
        );
    }

    /// Every commit of the demo corpus, diffed against its parent: the rename of
    /// `Inventory.is_low` in `04-rename-is-low` is the only pure rename, and of the tests at its
    /// parent exactly the two that call `is_low` reference it.
    #[test]
    fn finds_the_demo_rename_and_nothing_else() {
        let directory = tempfile::tempdir().unwrap();
        let demo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/demo");
        let materialized =
            crate::corpus::materialize(&demo, &directory.path().join("demo")).unwrap();
        let repository = git2::Repository::open(&materialized.path).unwrap();
        let mut found = Vec::new();
        for pair in materialized.commits.windows(2) {
            let change = Change::load(&repository, &pair[0].id, &pair[1].id).unwrap();
            for rename in renames_in(&change).unwrap() {
                found.push((pair[1].name.clone(), rename));
            }
        }
        let names: Vec<(String, String, String)> = found
            .iter()
            .map(|(commit, rename)| (commit.clone(), rename.old.clone(), rename.new.clone()))
            .collect();
        assert_eq!(
            names,
            vec![(
                "04-rename-is-low".to_string(),
                "tally.inventory.Inventory.is_low".to_string(),
                "tally.inventory.Inventory.needs_restock".to_string(),
            )]
        );
        let (commit, _) = &found[0];
        let index = materialized
            .commits
            .iter()
            .position(|candidate| &candidate.name == commit)
            .unwrap();
        let parent =
            crate::arms::source::RepoFiles::at(&repository, &materialized.commits[index - 1].id)
                .unwrap();
        let tests = parent.read("tests/test_inventory.py").unwrap().unwrap();
        let module = ParsedModule::parse("tests/test_inventory.py", &tests).unwrap();
        let renames: Vec<Rename> = found.into_iter().map(|(_, rename)| rename).collect();
        let mut referencing = Vec::new();
        for (name, definition) in module.definitions("tests.test_inventory") {
            if definition.kind == DefinitionKind::Function
                && name.rsplit('.').next().unwrap().starts_with("test_")
                && !referenced(&definition.text, &renames).unwrap().is_empty()
            {
                referencing.push(name);
            }
        }
        assert_eq!(
            referencing,
            vec![
                "tests.test_inventory.test_pear_is_low".to_string(),
                "tests.test_inventory.test_threshold_of_its_own".to_string(),
            ]
        );
    }

    #[test]
    fn a_tiny_class_reports_counts_and_no_rate() {
        let members = vec![
            RenameClaim {
                claim: "r@p::a".into(),
                renames: Vec::new(),
            },
            RenameClaim {
                claim: "r@p::b".into(),
                renames: Vec::new(),
            },
        ];
        let labels = BTreeMap::from([("r@p::a".to_string(), true), ("r@p::b".to_string(), false)]);
        let fired = BTreeMap::from([(
            "a4".to_string(),
            std::collections::BTreeSet::from(["r@p::a".to_string()]),
        )]);
        let stats = rename_class(&members, &labels, |_| "dev".into(), &fired);
        let split = &stats.splits[0];
        assert_eq!((split.flipped.len(), split.held), (1, 1));
        assert_eq!(split.detected["a4"], 1);
        assert_eq!(split.recall["a4"], None);
        assert!(!split.evaluable);
    }
}
