//! What the last run of each step computed: the key and output digest of every item, by item id.
//!
//! `plan` compares new keys against it to say *why* an item must run, `explain` shows the
//! difference (the earlier key records come from the store's action records, which `gc` keeps for
//! exactly these keys), and `cache gc` keeps what the last run of every pipeline in the workdir used.
//! It lives at `<workdir>/state/<pipeline>/<step>.json`: a header line with the digest of the
//! content, then one line per item. It is replaced atomically after each step, and not at all when
//! the digest says nothing changed, so a re-run that computes nothing writes nothing here.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cache::{Digest, KeyRecord, Store, StoreError, write_atomic_in};
use crate::engine::ItemOutput;

/// The last run of one step.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StepState {
    /// The step kind, for messages.
    pub kind: String,
    /// Every item's content key and output digest, in item order.
    pub items: Vec<ItemState>,
}

/// One item of a step's last run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemState {
    pub id: String,
    pub key: Digest,
    pub output: Digest,
}

impl StepState {
    /// The item with id `id`.
    pub fn item(&self, id: &str) -> Option<&ItemState> {
        self.items.iter().find(|item| item.id == id)
    }

    /// Items by id, for looking up many.
    pub fn by_id(&self) -> BTreeMap<&str, &ItemState> {
        self.items
            .iter()
            .map(|item| (item.id.as_str(), item))
            .collect()
    }

    /// The digest of the state's content: what decides whether the file needs writing.
    fn digest(&self) -> Digest {
        digest_of(&self.kind, self.borrowed())
    }

    fn borrowed(&self) -> impl Iterator<Item = (&str, Digest, Digest)> + Clone {
        self.items
            .iter()
            .map(|item| (item.id.as_str(), item.key, item.output))
    }
}

/// The digest of a state of `kind` with `items` (id, key, output digest).
fn digest_of<'i>(kind: &str, items: impl Iterator<Item = (&'i str, Digest, Digest)>) -> Digest {
    let mut hasher = blake3::Hasher::new();
    hasher.update(kind.as_bytes());
    hasher.update(&[0]);
    for (id, key, output) in items {
        hasher.update(&(id.len() as u64).to_le_bytes());
        hasher.update(id.as_bytes());
        hasher.update(key.as_bytes());
        hasher.update(output.as_bytes());
    }
    Digest::from_hasher(&hasher)
}

/// The first line of a state file.
#[derive(Serialize, Deserialize)]
struct Header {
    kind: String,
    digest: Digest,
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
        read_state(&self.path(step))
    }

    /// Replaces the state of `step`, unless the file already holds exactly this state.
    pub fn save(&self, step: &str, state: &StepState) -> Result<(), StoreError> {
        self.save_items(step, &state.kind, state.borrowed())
    }

    /// Replaces the state of `step` with that of `kind` and `items` (id, key, output digest, in
    /// item order), unless the file already holds exactly that: a re-run that changed nothing
    /// hashes the items it borrows and copies none of them.
    pub fn save_items<'i>(
        &self,
        step: &str,
        kind: &str,
        items: impl Iterator<Item = (&'i str, Digest, Digest)> + Clone,
    ) -> Result<(), StoreError> {
        let path = self.path(step);
        let digest = digest_of(kind, items.clone());
        if read_header(&path).is_some_and(|header| header.digest == digest) {
            return Ok(());
        }
        let header = Header {
            kind: kind.to_string(),
            digest,
        };
        let mut bytes = serde_json::to_vec(&header).expect("a state header serializes");
        bytes.push(b'\n');
        for (id, key, output) in items {
            serde_json::to_writer(&mut bytes, &(id, key, output)).expect("state lines serialize");
            bytes.push(b'\n');
        }
        write_atomic_in(&self.tmp, &path, &bytes)
    }

    /// Replaces the state of the reduction of `step` ([`crate::engine::StepKind::reduction`]):
    /// its key and output digest, kept by `cache gc` beside the items'. It lives beside the
    /// step's state under a name no step can have.
    pub fn save_reduction(
        &self,
        step: &str,
        kind: &str,
        key: Digest,
        output: Digest,
    ) -> Result<(), StoreError> {
        let name = format!("{step}@reduced");
        self.save_items(&name, kind, std::iter::once(("@reduced", key, output)))
    }
}

fn read_header(path: &Path) -> Option<Header> {
    let mut line = String::new();
    BufReader::new(fs::File::open(path).ok()?)
        .read_line(&mut line)
        .ok()?;
    serde_json::from_str(&line).ok()
}

/// A state file: a header line and one line per item, or the single JSON document of earlier
/// versions (whose key records are ignored: the store has them).
fn read_state(path: &Path) -> Option<StepState> {
    let bytes = fs::read(path).ok()?;
    let mut lines = bytes.split(|byte| *byte == b'\n');
    if let Some(Ok(header)) = lines.next().map(serde_json::from_slice::<Header>) {
        let mut items = Vec::new();
        for line in lines.filter(|line| !line.is_empty()) {
            let (id, key, output) = serde_json::from_slice(line).ok()?;
            items.push(ItemState { id, key, output });
        }
        let state = StepState {
            kind: header.kind,
            items,
        };
        return (state.digest() == header.digest).then_some(state);
    }
    serde_json::from_slice(&bytes).ok()
}

/// What the last run of every pipeline in `workdir` used: what `cache gc` keeps and `cache export`
/// copies.
#[derive(Debug, Default)]
pub struct LiveSet {
    /// The content keys of the items, but for those that name a blob whose object is gone.
    pub keys: BTreeSet<Digest>,
    /// The output digests of the items and the blobs their outputs name.
    pub objects: BTreeSet<Digest>,
    /// Blobs named by an item's cached output whose objects are gone (deleted from the store by
    /// hand, or lost). A run serves such an item while the workspace holds the file the blob stands
    /// for, and computes it again once it does not; dropping its key lets `gc` remove its action
    /// record, so the next run computes it again at once and stores the object.
    pub missing: Vec<MissingBlob>,
}

/// A blob whose object is gone, and the item whose output names it.
#[derive(Debug, Clone, PartialEq)]
pub struct MissingBlob {
    pub step: String,
    pub item: String,
    /// The blob's name in the output (for `command`, the output file's path).
    pub name: String,
    pub digest: Digest,
}

/// The keys and objects the last run of every pipeline in `workdir` used.
pub fn live_set(workdir: &Path, store: &Store) -> Result<LiveSet, StoreError> {
    let mut live = LiveSet::default();
    let state_root = workdir.join("state");
    let Ok(pipelines) = fs::read_dir(&state_root) else {
        return Ok(live);
    };
    for pipeline in pipelines.flatten() {
        let Ok(steps) = fs::read_dir(pipeline.path()) else {
            continue;
        };
        for step in steps.flatten() {
            let Some(state) = read_state(&step.path()) else {
                continue;
            };
            let step_name = step
                .path()
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_default();
            for item in state.items {
                live.objects.insert(item.output);
                let mut whole = true;
                if let Some((_, bytes)) = store.cached_output(&item.key)?
                    && let Ok(output) = serde_json::from_slice::<ItemOutput>(&bytes)
                {
                    for (name, blob) in &output.blobs {
                        live.objects.insert(*blob);
                        if !store.has(blob) {
                            whole = false;
                            live.missing.push(MissingBlob {
                                step: step_name.clone(),
                                item: item.id.clone(),
                                name: name.clone(),
                                digest: *blob,
                            });
                        }
                    }
                }
                if whole {
                    live.keys.insert(item.key);
                }
            }
        }
    }
    Ok(live)
}

/// What changed in an item's key record since the last run, for `plan` and `explain`: None if the
/// item did not run last time; no parts if the key is the same.
pub fn changes_since(
    record: &KeyRecord,
    previous: Option<&ItemState>,
    store: &Store,
) -> Result<Option<Vec<String>>, StoreError> {
    let Some(previous) = previous else {
        return Ok(None);
    };
    if previous.key == record.digest() {
        return Ok(Some(Vec::new()));
    }
    Ok(Some(match store.key_record(&previous.key)? {
        Some(earlier) => record.changed_parts(&earlier),
        // `gc` keeps the records the state names; without one, what changed cannot be told.
        None => vec!["key changed (the last run's key record is not in the cache)".to_string()],
    }))
}

/// Counts of items by the reason they must run, for `plan`.
pub fn reasons(
    now: &[(String, KeyRecord)],
    earlier: Option<&StepState>,
    store: &Store,
) -> Result<BTreeMap<String, usize>, StoreError> {
    let mut counts = BTreeMap::new();
    let earlier = earlier.map(StepState::by_id).unwrap_or_default();
    for (id, record) in now {
        let reasons = match changes_since(record, earlier.get(id.as_str()).copied(), store)? {
            None => vec!["new item".to_string()],
            Some(parts) if parts.is_empty() => vec!["output missing from the cache".to_string()],
            Some(parts) => parts,
        };
        for reason in reasons {
            *counts.entry(reason).or_insert(0) += 1;
        }
    }
    Ok(counts)
}
