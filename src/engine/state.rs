//! What the last run of each step computed: the key of every item, by item id.
//!
//! `plan` compares new keys against it to say *why* an item must run, `explain` shows the
//! difference, and `cache gc` keeps what the last run of every pipeline in the workdir used.
//! It lives at `<workdir>/state/<pipeline>/<step>.json` and is replaced atomically after each step.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cache::{Digest, KeyRecord, Store, StoreError, write_atomic_in};
use crate::engine::ItemOutput;

/// The last run of one step.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StepState {
    /// The step kind, for messages.
    pub kind: String,
    /// Item id -> its key record and content key, in item order.
    pub items: Vec<ItemState>,
}

/// One item of a step's last run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ItemState {
    pub id: String,
    pub key: Digest,
    pub record: KeyRecord,
    pub output: Digest,
}

impl StepState {
    /// The item with id `id`.
    pub fn item(&self, id: &str) -> Option<&ItemState> {
        self.items.iter().find(|item| item.id == id)
    }
}

/// The state directory of one pipeline in a workdir.
#[derive(Debug, Clone)]
pub struct RunState {
    dir: PathBuf,
    tmp: PathBuf,
}

impl RunState {
    pub fn new(workdir: &Path, pipeline: &str) -> Self {
        RunState {
            dir: workdir.join("state").join(pipeline),
            tmp: workdir.join("tmp"),
        }
    }

    fn path(&self, step: &str) -> PathBuf {
        self.dir.join(format!("{step}.json"))
    }

    /// The last run of `step`, if any (an unreadable file reads as none: it only explains).
    pub fn load(&self, step: &str) -> Option<StepState> {
        let bytes = fs::read(self.path(step)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Replaces the state of `step`.
    pub fn save(&self, step: &str, state: &StepState) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(state).expect("step state serializes");
        write_atomic_in(&self.tmp, &self.path(step), &bytes)
    }
}

/// The keys and objects the last run of every pipeline in `workdir` used: what `cache gc` keeps.
pub fn live_set(
    workdir: &Path,
    store: &Store,
) -> Result<(BTreeSet<Digest>, BTreeSet<Digest>), StoreError> {
    let mut keys = BTreeSet::new();
    let mut objects = BTreeSet::new();
    let state_root = workdir.join("state");
    let Ok(pipelines) = fs::read_dir(&state_root) else {
        return Ok((keys, objects));
    };
    for pipeline in pipelines.flatten() {
        let Ok(steps) = fs::read_dir(pipeline.path()) else {
            continue;
        };
        for step in steps.flatten() {
            let Ok(bytes) = fs::read(step.path()) else {
                continue;
            };
            let Ok(state) = serde_json::from_slice::<StepState>(&bytes) else {
                continue;
            };
            for item in state.items {
                keys.insert(item.key);
                objects.insert(item.output);
                if let Ok(output) = store.get_json::<ItemOutput>(&item.output) {
                    objects.extend(output.blobs.values().copied());
                }
            }
        }
    }
    Ok((keys, objects))
}

/// Counts of items by the reason they must run, for `plan`.
pub fn reasons(
    now: &[(String, KeyRecord)],
    earlier: Option<&StepState>,
) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for (id, record) in now {
        let reasons = match earlier.and_then(|state| state.item(id)) {
            None => vec!["new item".to_string()],
            Some(previous) if previous.record == *record => {
                vec!["output missing from the cache".to_string()]
            }
            Some(previous) => record.changed_parts(&previous.record),
        };
        for reason in reasons {
            *counts.entry(reason).or_insert(0) += 1;
        }
    }
    counts
}
