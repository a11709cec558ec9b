//! The store on disk: `objects/` holds bytes by digest, `actions/` holds one action record per content
//! key, `tmp/` holds writes in progress.
//!
//! Every write goes to a fresh file in `tmp/` and is renamed into place, so a reader sees a whole file
//! or none, and a process killed mid-write leaves only a stray temp file. Objects are written before
//! the action record that names them, so an action record never points at a missing object unless a
//! `gc` removed it, which reads as a miss. Renames are atomic on one filesystem, so two processes
//! writing the same key race harmlessly; only `gc` needs the exclusive lock ([`Store::lock_exclusive`]).

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{Digest, KeyRecord};

/// Failures of the store, each naming the path it concerns.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file or directory of the store could not be read or written.
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// An object asked for is not in the store.
    #[error("object {0} is not in the cache (run `claimflow cache verify`)")]
    Missing(Digest),
    /// An object's bytes are not the JSON its reader expects.
    #[error("decode object {digest}: {source}")]
    Decode {
        digest: Digest,
        #[source]
        source: serde_json::Error,
    },
}

fn io_error<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// What the store knows about one computed item.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActionRecord {
    /// The key record the content key is the digest of, kept so `explain` can show it.
    pub key: KeyRecord,
    /// The digest of the item's output.
    pub output: Digest,
    /// The step that computed it (informational: the same key may serve several steps).
    pub step: String,
    /// Wall time the computation took.
    pub seconds: f64,
}

/// Totals for `cache stats`.
#[derive(Debug, Default, Clone, Serialize)]
pub struct StoreStats {
    pub objects: u64,
    pub object_bytes: u64,
    pub actions: u64,
    pub temp_files: u64,
}

/// What `cache verify` found.
#[derive(Debug, Default, Clone, Serialize)]
pub struct VerifyReport {
    pub objects_checked: u64,
    /// Objects whose bytes do not hash to their name.
    pub corrupt_objects: Vec<String>,
    /// Action records that do not parse, or whose output object is missing.
    pub broken_actions: Vec<String>,
}

/// A content-addressed store rooted at a directory (`<workdir>/cache`).
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

/// A held lock on the store; released on drop.
pub struct StoreLock {
    _file: File,
}

impl Store {
    /// Opens (creating if needed) the store at `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let root = root.into();
        for sub in ["objects", "actions", "tmp"] {
            let dir = root.join(sub);
            fs::create_dir_all(&dir).map_err(io_error("create", &dir))?;
        }
        Ok(Store { root })
    }

    /// The directory the store lives in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn object_path(&self, digest: &Digest) -> PathBuf {
        let hex = digest.hex();
        self.root.join("objects").join(&hex[..2]).join(&hex[2..])
    }

    fn action_path(&self, key: &Digest) -> PathBuf {
        let hex = key.hex();
        self.root
            .join("actions")
            .join(&hex[..2])
            .join(format!("{}.json", &hex[2..]))
    }

    /// Takes the shared lock that every `run` holds; `gc` waits for all of them.
    pub fn lock_shared(&self) -> Result<StoreLock, StoreError> {
        let file = self.lock_file()?;
        file.lock_shared().map_err(io_error("lock", &self.root))?;
        Ok(StoreLock { _file: file })
    }

    /// Takes the exclusive lock `gc` needs.
    pub fn lock_exclusive(&self) -> Result<StoreLock, StoreError> {
        let file = self.lock_file()?;
        file.lock().map_err(io_error("lock", &self.root))?;
        Ok(StoreLock { _file: file })
    }

    /// Takes the lock of one content key, so that two runs never compute the same item at once: the
    /// second waits, then finds the first one's result in the cache.
    pub fn lock_key(&self, key: &Digest) -> Result<StoreLock, StoreError> {
        let dir = self.root.join("locks");
        fs::create_dir_all(&dir).map_err(io_error("create", &dir))?;
        let path = dir.join(key.hex());
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io_error("open", &path))?;
        file.lock().map_err(io_error("lock", &path))?;
        Ok(StoreLock { _file: file })
    }

    fn lock_file(&self) -> Result<File, StoreError> {
        let path = self.root.join("lock");
        File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io_error("open", &path))
    }

    /// Writes `bytes` to `path` through a temp file and a rename.
    pub fn write_atomic(&self, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
        write_atomic_in(&self.root.join("tmp"), path, bytes)
    }

    /// Stores `bytes`, returning their digest. Storing bytes already present is a no-op.
    pub fn put(&self, bytes: &[u8]) -> Result<Digest, StoreError> {
        let digest = Digest::of(bytes);
        let path = self.object_path(&digest);
        if !path.exists() {
            self.write_atomic(&path, bytes)?;
        }
        Ok(digest)
    }

    /// Stores a value as compact JSON.
    pub fn put_json<T: Serialize>(&self, value: &T) -> Result<Digest, StoreError> {
        self.put(&serde_json::to_vec(value).expect("values put in the store serialize"))
    }

    /// True if the object is present.
    pub fn has(&self, digest: &Digest) -> bool {
        self.object_path(digest).is_file()
    }

    /// The bytes of an object.
    pub fn get(&self, digest: &Digest) -> Result<Vec<u8>, StoreError> {
        let path = self.object_path(digest);
        match fs::read(&path) {
            Ok(bytes) => Ok(bytes),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                Err(StoreError::Missing(*digest))
            }
            Err(source) => Err(StoreError::Io {
                action: "read",
                path,
                source,
            }),
        }
    }

    /// An object decoded from JSON.
    pub fn get_json<T: DeserializeOwned>(&self, digest: &Digest) -> Result<T, StoreError> {
        let bytes = self.get(digest)?;
        serde_json::from_slice(&bytes).map_err(|source| StoreError::Decode {
            digest: *digest,
            source,
        })
    }

    /// The action record for a content key, if the item was computed and its output is still stored.
    pub fn action(&self, key: &Digest) -> Result<Option<ActionRecord>, StoreError> {
        let Some(bytes) = self.action_bytes(key)? else {
            return Ok(None);
        };
        // A record that does not parse can only come from outside tampering (writes are atomic);
        // treating it as a miss recomputes the item and overwrites it.
        let Ok(record) = serde_json::from_slice::<ActionRecord>(&bytes) else {
            return Ok(None);
        };
        Ok(self.has(&record.output).then_some(record))
    }

    /// The output digest the action record for a content key names, if there is a record. Unlike
    /// [`Store::action`] it decodes nothing else (the key record is most of the bytes) and does not
    /// check that the output is stored: the caller reads the output next and treats
    /// [`StoreError::Missing`] as a miss. This is the lookup every cached item of a run pays for.
    pub fn action_output(&self, key: &Digest) -> Result<Option<Digest>, StoreError> {
        #[derive(Deserialize)]
        struct OutputOnly {
            output: Digest,
        }
        let Some(bytes) = self.action_bytes(key)? else {
            return Ok(None);
        };
        Ok(serde_json::from_slice::<OutputOnly>(&bytes)
            .ok()
            .map(|record| record.output))
    }

    fn action_bytes(&self, key: &Digest) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.action_path(key);
        match fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StoreError::Io {
                action: "read",
                path,
                source,
            }),
        }
    }

    /// Records that the item with this content key produced `record.output`. Called last, after the
    /// output object is stored.
    pub fn record_action(&self, key: &Digest, record: &ActionRecord) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(record).expect("action records serialize");
        self.write_atomic(&self.action_path(key), &bytes)
    }

    /// Counts objects, bytes, action records and stray temp files.
    pub fn stats(&self) -> Result<StoreStats, StoreError> {
        let mut stats = StoreStats::default();
        for path in files_under(&self.root.join("objects"))? {
            stats.objects += 1;
            stats.object_bytes += fs::metadata(&path).map(|meta| meta.len()).unwrap_or(0);
        }
        stats.actions = files_under(&self.root.join("actions"))?.len() as u64;
        stats.temp_files = files_under(&self.root.join("tmp"))?.len() as u64;
        Ok(stats)
    }

    /// Re-hashes every object and checks every action record.
    pub fn verify(&self) -> Result<VerifyReport, StoreError> {
        let mut report = VerifyReport::default();
        for path in files_under(&self.root.join("objects"))? {
            report.objects_checked += 1;
            let bytes = fs::read(&path).map_err(io_error("read", &path))?;
            let expected = object_name(&path);
            if Digest::of(&bytes).hex() != expected {
                report.corrupt_objects.push(path.display().to_string());
            }
        }
        for path in files_under(&self.root.join("actions"))? {
            let bytes = fs::read(&path).map_err(io_error("read", &path))?;
            match serde_json::from_slice::<ActionRecord>(&bytes) {
                Ok(record) if self.has(&record.output) => {}
                _ => report.broken_actions.push(path.display().to_string()),
            }
        }
        Ok(report)
    }

    /// Removes every action record whose key is not in `live_keys`, then every object not reachable
    /// from `live_objects` or a kept action record's output, then stray temp files. The caller holds
    /// the exclusive lock and passes every object a live output refers to. Returns (actions, objects)
    /// removed.
    pub fn gc(
        &self,
        live_keys: &BTreeSet<Digest>,
        live_objects: &BTreeSet<Digest>,
    ) -> Result<(u64, u64), StoreError> {
        let mut removed_actions = 0;
        let mut keep: BTreeSet<String> = live_objects.iter().map(Digest::hex).collect();
        for path in files_under(&self.root.join("actions"))? {
            let key_hex = action_name(&path);
            let live = live_keys.iter().any(|key| key.hex() == key_hex);
            if live {
                if let Ok(bytes) = fs::read(&path)
                    && let Ok(record) = serde_json::from_slice::<ActionRecord>(&bytes)
                {
                    keep.insert(record.output.hex());
                }
            } else {
                fs::remove_file(&path).map_err(io_error("remove", &path))?;
                removed_actions += 1;
            }
        }
        let mut removed_objects = 0;
        for path in files_under(&self.root.join("objects"))? {
            if !keep.contains(&object_name(&path)) {
                fs::remove_file(&path).map_err(io_error("remove", &path))?;
                removed_objects += 1;
            }
        }
        // Under the exclusive lock no run holds a key lock, so the lock files can go too.
        for dir in ["tmp", "locks"] {
            for path in files_under(&self.root.join(dir))? {
                fs::remove_file(&path).map_err(io_error("remove", &path))?;
            }
        }
        Ok((removed_actions, removed_objects))
    }
}

impl Store {
    /// Copies the given action records and objects into `dest` (another store), for `cache export`.
    /// Returns (actions, objects) copied.
    pub fn export_to(
        &self,
        dest: &Store,
        keys: &BTreeSet<Digest>,
        objects: &BTreeSet<Digest>,
    ) -> Result<(u64, u64), StoreError> {
        let mut copied_objects = 0;
        for digest in objects {
            if let Ok(bytes) = self.get(digest) {
                dest.put(&bytes)?;
                copied_objects += 1;
            }
        }
        let mut copied_actions = 0;
        for key in keys {
            if let Some(record) = self.action(key)? {
                dest.put(&self.get(&record.output)?)?;
                dest.record_action(key, &record)?;
                copied_actions += 1;
            }
        }
        Ok((copied_actions, copied_objects))
    }

    /// Takes every sound object and action record of `source` (an exported store), for
    /// `cache import`. Objects whose bytes do not hash to their name, and action records whose key
    /// record does not hash to their name, are refused. Returns (actions, objects, refused).
    pub fn import_from(&self, source: &Store) -> Result<(u64, u64, u64), StoreError> {
        let (mut actions, mut objects, mut refused) = (0, 0, 0);
        for path in files_under(&source.root.join("objects"))? {
            let bytes = fs::read(&path).map_err(io_error("read", &path))?;
            if Digest::of(&bytes).hex() == object_name(&path) {
                self.put(&bytes)?;
                objects += 1;
            } else {
                refused += 1;
            }
        }
        for path in files_under(&source.root.join("actions"))? {
            let bytes = fs::read(&path).map_err(io_error("read", &path))?;
            match serde_json::from_slice::<ActionRecord>(&bytes) {
                Ok(record)
                    if record.key.digest().hex() == action_name(&path)
                        && self.has(&record.output) =>
                {
                    self.record_action(&record.key.digest(), &record)?;
                    actions += 1;
                }
                _ => refused += 1,
            }
        }
        Ok((actions, objects, refused))
    }
}

/// Writes `bytes` to `path` through a temp file created in `tmp_dir` (same filesystem) and a rename.
pub fn write_atomic_in(tmp_dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(io_error("create", parent))?;
    }
    fs::create_dir_all(tmp_dir).map_err(io_error("create", tmp_dir))?;
    let mut temp = tempfile::NamedTempFile::new_in(tmp_dir)
        .map_err(io_error("create a temp file in", tmp_dir))?;
    temp.write_all(bytes)
        .map_err(io_error("write", temp.path()))?;
    temp.persist(path).map_err(|error| StoreError::Io {
        action: "rename into",
        path: path.to_path_buf(),
        source: error.error,
    })?;
    Ok(())
}

fn object_name(path: &Path) -> String {
    let file = path
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default();
    let dir = path
        .parent()
        .and_then(Path::file_name)
        .and_then(|name| name.to_str())
        .unwrap_or_default();
    format!("{dir}{file}")
}

fn action_name(path: &Path) -> String {
    object_name(path).trim_end_matches(".json").to_string()
}

fn files_under(dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let entries = match fs::read_dir(&current) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
            Err(source) => {
                return Err(StoreError::Io {
                    action: "list",
                    path: current,
                    source,
                });
            }
        };
        for entry in entries {
            let entry = entry.map_err(io_error("list", &current))?;
            let path = entry.path();
            if entry.file_type().map(|kind| kind.is_dir()).unwrap_or(false) {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_then_get_returns_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let digest = store.put(b"hello").unwrap();
        assert_eq!(digest, Digest::of(b"hello"));
        assert_eq!(store.get(&digest).unwrap(), b"hello");
        assert!(matches!(
            store.get(&Digest::of(b"other")),
            Err(StoreError::Missing(_))
        ));
    }

    #[test]
    fn action_output_names_the_recorded_output_and_nothing_for_an_unknown_key() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let output = store.put(b"{}").unwrap();
        let key = KeyRecord {
            schema: crate::cache::KEY_SCHEMA,
            kind: "command".into(),
            version: 1,
            params: serde_json::json!({"run": "true"}),
            item: "main".into(),
            item_params: serde_json::Value::Null,
            reads: Default::default(),
            files: Default::default(),
            tools: Default::default(),
            replicate: 0,
        };
        let record = ActionRecord {
            key: key.clone(),
            output,
            step: "gen".into(),
            seconds: 0.5,
        };
        store.record_action(&key.digest(), &record).unwrap();
        assert_eq!(store.action_output(&key.digest()).unwrap(), Some(output));
        assert_eq!(store.action_output(&Digest::of(b"unknown")).unwrap(), None);
    }

    #[test]
    fn verify_finds_a_corrupted_object() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let digest = store.put(b"hello").unwrap();
        fs::write(store.object_path(&digest), b"tampered").unwrap();
        let report = store.verify().unwrap();
        assert_eq!(report.objects_checked, 1);
        assert_eq!(report.corrupt_objects.len(), 1);
    }
}
