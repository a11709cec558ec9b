//! Which test at the parent a test at the child is: the child gate asks whether a test that fails
//! at the child already failed at the parent, and a commit may have moved it.
//!
//! Two moves are followed. A file git sees as renamed (`git diff -M`: 50% similarity) maps its
//! tests to the old path. A test function whose body is unchanged but whose name is new — and whose
//! old name the child's file no longer defines — maps to the old name. Bodies are compared as text,
//! dedented, blank lines and trailing spaces ignored; the parser is by indentation, so Python 2
//! source reads as well as Python 3.

use std::collections::BTreeMap;
use std::path::Path;

use git2::{DiffFindOptions, Oid, Repository};

use super::worktree::WorktreeError;

/// The moves of one commit's test files and test functions.
#[derive(Debug, Default)]
pub struct Lineage {
    /// Child path -> parent path, for files git sees as renamed.
    renamed_files: BTreeMap<String, String>,
    /// Per child path: function name at the child -> its name at the parent.
    renamed_functions: BTreeMap<String, BTreeMap<String, String>>,
}

impl Lineage {
    /// The moves from `parent` to `commit` of the test files `child_files` (paths at the child).
    pub fn of_commit(
        repository: &Repository,
        parent: Oid,
        commit: Oid,
        child_files: &[String],
    ) -> Result<Self, WorktreeError> {
        let tree = |id: Oid| {
            repository
                .find_commit(id)
                .and_then(|commit| commit.tree())
                .map_err(|source| WorktreeError::Git {
                    what: format!("the tree of commit {id}"),
                    source,
                })
        };
        let old = tree(parent)?;
        let new = tree(commit)?;
        let git_error = |source| WorktreeError::Git {
            what: format!("the renames of {parent}..{commit}"),
            source,
        };
        let mut diff = repository
            .diff_tree_to_tree(Some(&old), Some(&new), None)
            .map_err(git_error)?;
        let mut find = DiffFindOptions::new();
        find.renames(true).rename_threshold(50).rename_limit(1000);
        diff.find_similar(Some(&mut find)).map_err(git_error)?;
        let mut lineage = Lineage::default();
        for delta in diff.deltas() {
            if delta.status() != git2::Delta::Renamed {
                continue;
            }
            let path =
                |file: git2::DiffFile| file.path().and_then(Path::to_str).map(str::to_string);
            if let (Some(from), Some(to)) = (path(delta.old_file()), path(delta.new_file())) {
                lineage.renamed_files.insert(to, from);
            }
        }
        let text = |tree: &git2::Tree, path: &str| -> Option<String> {
            let entry = tree.get_path(Path::new(path)).ok()?;
            let blob = repository.find_blob(entry.id()).ok()?;
            Some(String::from_utf8_lossy(blob.content()).into_owned())
        };
        for file in child_files {
            let (Some(child_text), Some(parent_text)) =
                (text(&new, file), text(&old, lineage.parent_file(file)))
            else {
                continue;
            };
            let renamed = renamed_functions(&parent_text, &child_text);
            if !renamed.is_empty() {
                lineage.renamed_functions.insert(file.clone(), renamed);
            }
        }
        Ok(lineage)
    }

    /// The path at the parent of a test file at the child.
    pub fn parent_file<'a>(&'a self, child_file: &'a str) -> &'a str {
        self.renamed_files
            .get(child_file)
            .map_or(child_file, String::as_str)
    }

    /// The node id at the parent of a node id at the child (`file::Class::test[param]`).
    pub fn parent_node(&self, child_node: &str) -> String {
        let mut parts: Vec<&str> = child_node.split("::").collect();
        let file = parts[0];
        let parent_file = self.parent_file(file).to_string();
        let mut renamed_last = None;
        if let Some(last) = parts.last().filter(|_| parts.len() > 1)
            && let Some(functions) = self.renamed_functions.get(file)
        {
            let (name, parameters) = match last.find('[') {
                Some(index) => last.split_at(index),
                None => (*last, ""),
            };
            if let Some(old) = functions.get(name) {
                renamed_last = Some(format!("{old}{parameters}"));
            }
        }
        parts[0] = &parent_file;
        if let Some(last) = &renamed_last {
            let index = parts.len() - 1;
            parts[index] = last;
        }
        parts.join("::")
    }
}

/// Functions of `child` whose body is that of a function of `parent` of another name, which the
/// child no longer defines: new name -> old name. A body several functions share says nothing.
fn renamed_functions(parent: &str, child: &str) -> BTreeMap<String, String> {
    let before = functions(parent);
    let after = functions(child);
    let mut by_body: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (name, body) in &before {
        if !after.contains_key(name) {
            by_body.entry(body.as_str()).or_default().push(name);
        }
    }
    after
        .iter()
        .filter(|(name, _)| !before.contains_key(*name))
        .filter_map(|(name, body)| match by_body.get(body.as_str()) {
            Some(old) if old.len() == 1 && !body.is_empty() => {
                Some((name.clone(), old[0].to_string()))
            }
            _ => None,
        })
        .collect()
}

/// Every `def` of a module (top level or in a class) by name, with its normalized body. A name
/// defined twice keeps the last definition, as Python does.
fn functions(text: &str) -> BTreeMap<String, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = BTreeMap::new();
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let Some(name) = trimmed
            .strip_prefix("def ")
            .or_else(|| trimmed.strip_prefix("async def "))
            .and_then(|rest| rest.split('(').next())
            .map(str::trim)
            .filter(|name| !name.is_empty())
        else {
            index += 1;
            continue;
        };
        // The header ends at the line whose code ends with `:` (it may span lines).
        let mut end = index;
        while end < lines.len() && !code_of(lines[end]).trim_end().ends_with(':') {
            end += 1;
        }
        let mut body = Vec::new();
        let mut next = end + 1;
        while next < lines.len() {
            let candidate = lines[next];
            if candidate.trim().is_empty() {
                next += 1;
                continue;
            }
            if candidate.len() - candidate.trim_start().len() <= indent {
                break;
            }
            body.push(candidate.trim_end());
            next += 1;
        }
        let margin = body
            .iter()
            .map(|line| line.len() - line.trim_start().len())
            .min()
            .unwrap_or(0);
        let normalized: Vec<&str> = body.iter().map(|line| &line[margin..]).collect();
        found.insert(name.to_string(), normalized.join("\n"));
        index = end + 1;
    }
    found
}

/// A line without its trailing comment (a `#` inside a string is rare in a `def` header).
fn code_of(line: &str) -> &str {
    line.split('#').next().unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_renamed_with_its_body_maps_to_its_old_name() {
        let parent = "def test_a():\n    check(1)\n\n\nclass T:\n    def test_b(self,\n               x):\n        assert x\n";
        let child = "def test_renamed():\n    check(1)\n\n\nclass T:\n    def test_c(self,\n               x):  # new name\n        assert x\n";
        let renamed = renamed_functions(parent, child);
        assert_eq!(
            renamed,
            BTreeMap::from([
                ("test_renamed".to_string(), "test_a".to_string()),
                ("test_c".to_string(), "test_b".to_string()),
            ])
        );
    }

    #[test]
    fn a_new_function_with_a_new_body_or_a_kept_name_is_not_a_rename() {
        let parent = "def test_a():\n    check(1)\n";
        // The old name still exists: the new function is a copy, not a rename.
        let copy = "def test_a():\n    check(1)\n\ndef test_b():\n    check(1)\n";
        assert!(renamed_functions(parent, copy).is_empty());
        let new = "def test_b():\n    check(2)\n";
        assert!(renamed_functions(parent, new).is_empty());
    }

    #[test]
    fn parent_nodes_follow_file_and_function_renames() {
        let mut lineage = Lineage::default();
        lineage
            .renamed_files
            .insert("tests/test_new.py".into(), "tests/test_old.py".into());
        lineage.renamed_functions.insert(
            "tests/test_new.py".into(),
            BTreeMap::from([("test_b".to_string(), "test_a".to_string())]),
        );
        assert_eq!(
            lineage.parent_node("tests/test_new.py::T::test_b[1-2]"),
            "tests/test_old.py::T::test_a[1-2]"
        );
        assert_eq!(
            lineage.parent_node("tests/test_new.py::test_c"),
            "tests/test_old.py::test_c"
        );
        assert_eq!(
            lineage.parent_node("tests/test_same.py::test_b"),
            "tests/test_same.py::test_b"
        );
    }
}
