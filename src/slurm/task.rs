//! What a worker needs to compute one item, stored in the content-addressed store and found by
//! the item's content key.
//!
//! A [`Task`] holds the item's plan and key record, the pipeline's text (so the worker loads the
//! very pipeline the coordinator planned), and for each step the item's step needs, the digest of
//! a [`Manifest`]: every item of that step with its output digest. Manifests are stored once per
//! step, not per task, so a thousand oracle items that read the same claims store those claims'
//! listing once. `<cache>/tasks/<key hex>` names the task object; the worker is given only the
//! key.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::cache::{Digest, KeyRecord, Store, StoreError};
use crate::engine::{ItemPlan, StepOutput};

/// Bumped when the layout of [`Task`] or [`Manifest`] changes: a worker refuses a task it cannot
/// read rather than misread it.
pub const TASK_SCHEMA: u32 = 1;

/// One item's computation, as a worker finds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub schema: u32,
    /// The pipeline the coordinator planned.
    pub pipeline: PipelineSource,
    /// The step the item belongs to.
    pub step: String,
    pub plan: ItemPlan,
    /// The item's content key and the record it is the digest of.
    pub key: Digest,
    pub record: KeyRecord,
    /// The [`Manifest`] of each step the item's step needs, by step name.
    pub upstream: BTreeMap<String, Digest>,
    /// Compute the item even when the store has it (`run --force STEP`).
    pub force: bool,
}

/// The pipeline file as the coordinator loaded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineSource {
    /// The file as the user named it (messages only).
    pub file: PathBuf,
    /// The project root relative paths resolve against.
    pub root: PathBuf,
    /// The digest of the file's text, stored as an object.
    pub text: Digest,
}

/// Every item of one finished step, with its output digest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub schema: u32,
    pub step: String,
    pub kind: String,
    pub items: Vec<ManifestItem>,
    /// The object of the step's reduction, when its kind reduces its items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduced: Option<Digest>,
}

/// One item of a [`Manifest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestItem {
    pub plan: ItemPlan,
    pub output: Digest,
}

/// Why a task could not be stored or read back.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No task was stored for the key (or `cache gc` removed it).
    #[error("no task is stored for key {key} in {store} (was it removed by `cache gc`?)")]
    Missing { key: Digest, store: PathBuf },
    /// The task was written by a claimflow with another layout.
    #[error("the task for key {key} has schema {found}, this claimflow reads {TASK_SCHEMA}")]
    Schema { key: Digest, found: u32 },
    /// The pointer to the task does not name a digest.
    #[error("the task pointer {path} is damaged: {reason}")]
    Pointer { path: PathBuf, reason: String },
}

/// Stores `output`'s manifest; returns its digest (the same for the same items). Each item's
/// output is stored as an object too: the action log keeps small outputs inline, and a job reads
/// its upstream outputs as objects.
pub fn store_manifest(store: &Store, output: &StepOutput) -> Result<Digest, StoreError> {
    let mut items = Vec::with_capacity(output.items.len());
    for item in &output.items {
        items.push(ManifestItem {
            plan: item.plan.clone(),
            output: store.put_json(item.output.as_ref())?,
        });
    }
    let manifest = Manifest {
        schema: TASK_SCHEMA,
        step: output.step.clone(),
        kind: output.kind.clone(),
        items,
        reduced: output
            .reduced
            .as_ref()
            .map(|reduced| store.put_json(reduced.output.as_ref()))
            .transpose()?,
    };
    store.put_json(&manifest)
}

/// Reads a manifest back.
pub fn load_manifest(store: &Store, digest: &Digest) -> Result<Manifest, StoreError> {
    store.get_json(digest)
}

fn pointer(store: &Store, key: &Digest) -> PathBuf {
    store.root().join("tasks").join(key.hex())
}

/// Stores `task` and points its key at it.
pub fn store_task(store: &Store, task: &Task) -> Result<Digest, StoreError> {
    let digest = store.put_json(task)?;
    store.write_atomic(&pointer(store, &task.key), digest.to_string().as_bytes())?;
    Ok(digest)
}

/// The task stored for `key`.
pub fn load_task(store: &Store, key: &Digest) -> Result<Task, TaskError> {
    let path = pointer(store, key);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(TaskError::Missing {
                key: *key,
                store: store.root().to_path_buf(),
            });
        }
        Err(source) => {
            return Err(StoreError::Io {
                action: "read",
                path,
                source,
            }
            .into());
        }
    };
    let digest: Digest = text
        .trim()
        .parse()
        .map_err(|error: crate::cache::DigestParseError| TaskError::Pointer {
            path: path.clone(),
            reason: error.to_string(),
        })?;
    let value: serde_json::Value = match store.get_json(&digest) {
        Ok(value) => value,
        Err(StoreError::Missing(_)) => {
            return Err(TaskError::Missing {
                key: *key,
                store: store.root().to_path_buf(),
            });
        }
        Err(error) => return Err(error.into()),
    };
    let found = value
        .get("schema")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    if found != u64::from(TASK_SCHEMA) {
        return Err(TaskError::Schema {
            key: *key,
            found: u32::try_from(found).unwrap_or(u32::MAX),
        });
    }
    serde_json::from_value(value).map_err(|source| StoreError::Decode { digest, source }.into())
}

/// Removes the pointer of a task whose job has ended (the object goes with the next `gc`).
pub fn forget_task(store: &Store, key: &Digest) {
    let _ = std::fs::remove_file(pointer(store, key));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::KEY_SCHEMA;
    use crate::engine::Pool;

    fn task(key: Digest) -> Task {
        let plan = ItemPlan::new("demo@abc")
            .params(serde_json::json!({"commit": "abc"}))
            .tool("python", "3.11.7")
            .pool(Pool::Pytest);
        Task {
            schema: TASK_SCHEMA,
            pipeline: PipelineSource {
                file: "pipelines/smoke.yaml".into(),
                root: "/shared/project".into(),
                text: Digest::of(b"version: 1"),
            },
            step: "truth".into(),
            record: KeyRecord {
                schema: KEY_SCHEMA,
                kind: "oracle".into(),
                version: 1,
                params: serde_json::json!({"runs": 10}),
                item: plan.id.clone(),
                item_params: plan.params.value().clone(),
                reads: plan.reads.clone(),
                files: plan.files.clone(),
                tools: plan.tools.clone(),
                replicate: 0,
            },
            plan,
            key,
            upstream: BTreeMap::from([("claims".to_string(), Digest::of(b"manifest"))]),
            force: false,
        }
    }

    #[test]
    fn a_task_is_found_again_by_its_key() {
        let directory = tempfile::tempdir().unwrap();
        let store = Store::open(directory.path()).unwrap();
        let key = Digest::of(b"key");
        let stored = task(key);
        store_task(&store, &stored).unwrap();
        assert_eq!(load_task(&store, &key).unwrap(), stored);
        forget_task(&store, &key);
        assert!(matches!(
            load_task(&store, &key),
            Err(TaskError::Missing { .. })
        ));
    }

    #[test]
    fn a_task_of_another_schema_is_refused() {
        let directory = tempfile::tempdir().unwrap();
        let store = Store::open(directory.path()).unwrap();
        let key = Digest::of(b"key");
        let mut stored = task(key);
        stored.schema = TASK_SCHEMA + 1;
        store_task(&store, &stored).unwrap();
        assert!(matches!(
            load_task(&store, &key),
            Err(TaskError::Schema { found, .. }) if found == TASK_SCHEMA + 1
        ));
    }
}
