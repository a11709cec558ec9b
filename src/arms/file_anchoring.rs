//! A3, file anchoring: invalidate a claim when its test module imports a module the commit's source
//! diff touched. This is the content-digest class of memory systems: it asks only whether the
//! artifact a claim came from changed, never what the claim says.
//!
//! "Imports" follows Python: `import a.b.c` loads `a`, `a.b` and `a.b.c`; `from a import b` loads
//! `a` and the submodule `a.b` if there is one; relative imports resolve against the test's package.
//! A name imported from a package that re-exports it counts as importing the module that defines it
//! (`from tally import count_words` imports `tally.text` when `tally/__init__.py` re-exports it
//! from there): the claim anchors to the file its names come from, not to the package's front door.
//! Imports anywhere in the test file count (a test may import inside its body). With `transitive`,
//! the repository modules those modules import count too, to a fixed point. Test files the commit
//! touched are left out: the oracle restores them at the child, so they carry no change.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::json;

use super::claim::{ArmError, Change, Claim};
use super::parse_cache::parse_at;
use super::resolver::Resolver;
use crate::records::{PredictionRecord, Verdict};
use crate::syntax::python::{Import, ParsedModule};

/// Options of the file-anchoring arm.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileAnchoring {
    /// Follow imports of imported repository modules.
    pub transitive: bool,
}

impl FileAnchoring {
    /// The arm's prediction for `claim` under `change`.
    pub fn predict(&self, claim: &Claim, change: &Change) -> Result<PredictionRecord, ArmError> {
        let test_path = claim.test_file();
        // Read first so a missing test file is an error naming the claim.
        change.test_source(claim)?;
        let touched_modules: Vec<String> = change.touched_modules().into_iter().collect();
        let parsed = parse_at(&change.parent, &test_path)?.expect("the test file was just read");
        let test_module = match parsed {
            Ok(module) => module,
            Err(failure) => {
                return Ok(prediction(
                    claim,
                    Verdict::None,
                    json!({"touched_modules": touched_modules, "unparsed": [failure.to_string()]}),
                ));
            }
        };
        let (loaded, unparsed) = self.loaded_modules(&test_module, change)?;
        let index = &change.parent_modules;
        let imported: BTreeMap<String, String> = loaded
            .iter()
            .filter(|path| **path != test_path)
            .map(|path| (index.module_name(path), path.clone()))
            .collect();
        let matched = imported
            .iter()
            .find(|(_, path)| change.diff().touched.source.contains(*path))
            .map(|(module, _)| module.clone());
        let mut evidence = json!({
            "touched_modules": touched_modules,
            "imported": imported.keys().collect::<Vec<_>>(),
            "matched": matched,
        });
        if !unparsed.is_empty() {
            evidence["unparsed"] = json!(unparsed);
        }
        let verdict = match matched {
            Some(_) => Verdict::Flipped,
            // A module we could not read may hide the import that would have fired.
            None if !unparsed.is_empty() => Verdict::None,
            None => Verdict::Held,
        };
        Ok(prediction(claim, verdict, evidence))
    }

    /// The repository files the test module loads (paths at the parent), and the files whose
    /// imports could not be read when following them transitively.
    fn loaded_modules(
        &self,
        test_module: &ParsedModule,
        change: &Change,
    ) -> Result<(BTreeSet<String>, Vec<String>), ArmError> {
        let index = &change.parent_modules;
        let resolver = Resolver::new(change);
        let mut loaded = BTreeSet::new();
        let mut unparsed = Vec::new();
        let mut queue = VecDeque::new();
        for import in test_module.imports() {
            let mut paths = index.loaded_by(&test_module.path, &import);
            paths.extend(defining_modules(&resolver, &test_module.path, &import)?);
            for path in paths {
                if loaded.insert(path.clone()) {
                    queue.push_back(path);
                }
            }
        }
        if !self.transitive {
            return Ok((loaded, unparsed));
        }
        while let Some(path) = queue.pop_front() {
            let module = match parse_at(&change.parent, &path)? {
                None => continue,
                Some(Ok(module)) => module,
                Some(Err(failure)) => {
                    unparsed.push(failure.to_string());
                    continue;
                }
            };
            for import in module.imports() {
                for next in index.loaded_by(&path, &import) {
                    if loaded.insert(next.clone()) {
                        queue.push_back(next);
                    }
                }
            }
        }
        Ok((loaded, unparsed))
    }
}

/// The files that define the names a `from ... import` statement imports, re-exports followed.
fn defining_modules(
    resolver: &Resolver,
    importer: &str,
    import: &Import,
) -> Result<BTreeSet<String>, ArmError> {
    let mut paths = BTreeSet::new();
    let Import::From {
        level,
        module,
        names,
    } = import
    else {
        return Ok(paths);
    };
    let index = resolver.index();
    let Some(base) = index.from_base(importer, *level, module.as_deref()) else {
        return Ok(paths);
    };
    for (name, _) in names {
        if name == "*" {
            continue;
        }
        let defined = resolver.canonical(&format!("{base}.{name}"), 0)?;
        if let Some((facts, _)) = resolver.split_module(&defined)?
            && let Some(path) = index.path_of(&facts.module)
        {
            paths.insert(path.to_string());
        }
    }
    Ok(paths)
}

fn prediction(claim: &Claim, verdict: Verdict, evidence: serde_json::Value) -> PredictionRecord {
    PredictionRecord {
        claim: claim.id.clone(),
        verdict,
        evidence,
        tokens_in: None,
        tokens_out: None,
        cost: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arms::test_repository::{TwoCommits, two_commits};

    fn repository(changes: &[(&str, Option<&str>)]) -> TwoCommits {
        two_commits(
            &[
                ("src/pkg/__init__.py", "from .cache import Cache\n"),
                ("src/pkg/cache.py", "class Cache:\n    pass\n"),
                ("src/pkg/stack.py", "class Stack:\n    pass\n"),
                ("src/pkg/sub/__init__.py", ""),
                ("src/pkg/sub/deep.py", "DEPTH = 1\n"),
                ("src/pkg/tests/__init__.py", ""),
                (
                    "src/pkg/tests/test_inner.py",
                    "from ..cache import Cache\n\ndef test_inner():\n    assert Cache()\n",
                ),
                ("tests/__init__.py", ""),
                ("tests/unit/__init__.py", ""),
                ("tests/unit/helpers.py", "from pkg import stack\n"),
                (
                    "tests/unit/test_front.py",
                    "from pkg import Cache\n\ndef test_front():\n    assert Cache()\n",
                ),
                (
                    "tests/unit/test_outer.py",
                    "from . import helpers\nimport pkg.sub.deep\n\ndef test_outer():\n    assert helpers\n",
                ),
            ],
            changes,
        )
    }

    fn predict(fixture: &TwoCommits, node: &str, transitive: bool) -> PredictionRecord {
        let claim = Claim {
            id: format!("demo@{}::{node}", fixture.parent),
            repo: "demo".into(),
            parent: fixture.parent.clone(),
            commit: fixture.child.clone(),
            node: node.into(),
            source: String::new(),
            fixtures: Vec::new(),
            file: None,
        };
        let change = Change::load(&fixture.repository, &fixture.parent, &fixture.child).unwrap();
        FileAnchoring { transitive }
            .predict(&claim, &change)
            .unwrap()
    }

    #[test]
    fn a_relative_import_from_the_parent_package_fires() {
        let fixture = repository(&[("src/pkg/cache.py", Some("class Cache:\n    x = 1\n"))]);
        let prediction = predict(&fixture, "src/pkg/tests/test_inner.py::test_inner", false);
        assert_eq!(prediction.verdict, Verdict::Flipped);
        assert_eq!(prediction.evidence["matched"], json!("pkg.cache"));
        assert_eq!(prediction.evidence["touched_modules"], json!(["pkg.cache"]));
        // The outer test imports `pkg`, whose `__init__.py` imports the cache: only following
        // imports transitively reaches it.
        let outer = predict(&fixture, "tests/unit/test_outer.py::test_outer", false);
        assert_eq!(outer.verdict, Verdict::Held, "{}", outer.evidence);
        let outer = predict(&fixture, "tests/unit/test_outer.py::test_outer", true);
        assert_eq!(outer.verdict, Verdict::Flipped, "{}", outer.evidence);
    }

    #[test]
    fn importing_a_submodule_loads_every_package_on_the_way() {
        let fixture = repository(&[("src/pkg/sub/__init__.py", Some("VERSION = 2\n"))]);
        let prediction = predict(&fixture, "tests/unit/test_outer.py::test_outer", false);
        assert_eq!(prediction.verdict, Verdict::Flipped);
        assert_eq!(prediction.evidence["matched"], json!("pkg.sub"));
        assert_eq!(
            prediction.evidence["imported"],
            json!([
                "pkg",
                "pkg.sub",
                "pkg.sub.deep",
                "tests",
                "tests.unit",
                "tests.unit.helpers"
            ])
        );
    }

    #[test]
    fn a_re_exported_name_anchors_to_the_module_that_defines_it() {
        let fixture = repository(&[("src/pkg/cache.py", Some("class Cache:\n    x = 1\n"))]);
        let prediction = predict(&fixture, "tests/unit/test_front.py::test_front", false);
        assert_eq!(prediction.verdict, Verdict::Flipped);
        assert_eq!(prediction.evidence["imported"], json!(["pkg", "pkg.cache"]));
        let other = repository(&[("src/pkg/stack.py", Some("class Stack:\n    y = 2\n"))]);
        let prediction = predict(&other, "tests/unit/test_front.py::test_front", false);
        assert_eq!(prediction.verdict, Verdict::Held);
    }

    #[test]
    fn transitive_imports_count_only_when_asked_for() {
        let fixture = repository(&[("src/pkg/stack.py", Some("class Stack:\n    y = 2\n"))]);
        let direct = predict(&fixture, "tests/unit/test_outer.py::test_outer", false);
        assert_eq!(direct.verdict, Verdict::Held);
        let transitive = predict(&fixture, "tests/unit/test_outer.py::test_outer", true);
        assert_eq!(transitive.verdict, Verdict::Flipped);
        assert_eq!(transitive.evidence["matched"], json!("pkg.stack"));
    }

    #[test]
    fn touched_test_files_carry_no_change() {
        let fixture = repository(&[("tests/unit/helpers.py", Some("from pkg import cache\n"))]);
        let prediction = predict(&fixture, "tests/unit/test_outer.py::test_outer", false);
        assert_eq!(prediction.verdict, Verdict::Held);
        assert_eq!(prediction.evidence["touched_modules"], json!([]));
    }
}
