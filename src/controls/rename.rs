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
use crate::arms::python_source::{
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
}
