//! A3, file anchoring: invalidate a claim when its test module imports a module the commit's source
//! diff touched. This is the content-digest class of memory systems: it asks only whether the
//! artifact a claim came from changed, never what the claim says.
//!
//! "Imports" follows Python: `import a.b.c` loads `a`, `a.b` and `a.b.c`; `from a import b` loads
//! `a` and the submodule `a.b` if there is one; relative imports resolve against the test's package.
//! Imports anywhere in the test file count (a test may import inside its body). With `transitive`,
//! the repository modules those modules import count too, to a fixed point. Test files the commit
//! touched are left out: the oracle restores them at the child, so they carry no change.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::json;

use super::claim::{ArmError, Change, Claim};
use super::python_source::ParsedModule;
use crate::records::{PredictionRecord, Verdict};

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
        let test_text = change.test_source(claim)?;
        let touched_modules: Vec<String> = change.touched_modules().into_iter().collect();
        let test_module = match ParsedModule::parse(&test_path, &test_text) {
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
            .find(|(_, path)| change.touched.source.contains(*path))
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
        let mut loaded = BTreeSet::new();
        let mut unparsed = Vec::new();
        let mut queue = VecDeque::new();
        for import in test_module.imports() {
            for path in index.loaded_by(&test_module.path, &import) {
                if loaded.insert(path.clone()) {
                    queue.push_back(path);
                }
            }
        }
        if !self.transitive {
            return Ok((loaded, unparsed));
        }
        while let Some(path) = queue.pop_front() {
            let Some(text) = change.parent.read(&path)? else {
                continue;
            };
            let module = match ParsedModule::parse(&path, &text) {
                Ok(module) => module,
                Err(failure) => {
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
