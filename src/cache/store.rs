//! The store on disk: `objects/` holds bytes by digest, `actions.log` holds the action record of every
//! computed item ([`super::action_index`]), `file-digests` remembers the digests of unchanged files
//! ([`super::file_digests`]), `tmp/` holds writes in progress.
//!
//! Every object is written to a fresh file in `tmp/` and renamed into place, so a reader sees a whole
//! file or none, and a process killed mid-write leaves only a stray temp file. Objects are written
//! before the action record that names them, and a record is appended whole or read as torn, so an
//! action record never points at a missing object unless a `gc` removed it, which reads as a miss.
//! Renames are atomic on one filesystem and appends are made under the log's lock, so two processes
//! writing the same key race harmlessly; only `gc` needs the exclusive lock
//! ([`Store::lock_exclusive`]).
//!
//! A small blob (up to [`BLOB_INLINE_LIMIT`] bytes, most outputs of a `command` step) is not an
//! object file: [`Store::hold`] keeps it in memory until the action record of the item that
//! produced it is appended, and the record carries it inside ([`super::action_index`]). The rule
//! stays that a record is written last and names nothing missing: a record that names a blob
//! neither held, nor carried by another record, nor an object is refused.
//!
//! A store written before the action log kept one file per record under `actions/`; opening it
//! moves those records into the log. What `cache stats`, `verify`, `gc`, `export` and `import` do
//! with a whole store is in [`upkeep`].

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::action_index::{ActionIndex, BLOB_INLINE_LIMIT, INLINE_LIMIT, IndexEntry, Part};
use super::digest::DigestMap;
use super::file_digests::{self, Dir, FileDigests};
use super::{Digest, KeyRecord};

pub(super) mod upkeep;

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

/// An item's output bytes as [`Store::cached_output`] finds them: inside the action log in memory
/// (shared, not copied: a cached item costs no copy of its output), or read from an object.
#[derive(Debug, Clone)]
pub struct OutputBytes(Held);

#[derive(Debug, Clone)]
enum Held {
    /// Inside the log entry.
    Logged(Arc<IndexEntry>),
    /// Read from the object named by the output's digest.
    Read(Vec<u8>),
}

impl From<Vec<u8>> for OutputBytes {
    fn from(bytes: Vec<u8>) -> Self {
        OutputBytes(Held::Read(bytes))
    }
}

impl std::ops::Deref for OutputBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.0 {
            Held::Logged(entry) => match &entry.output_bytes {
                Part::Inline(bytes) => bytes,
                Part::Object => unreachable!("only an entry holding its output is served from it"),
            },
            Held::Read(bytes) => bytes,
        }
    }
}

impl PartialEq for OutputBytes {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

/// A content-addressed store rooted at a directory (`<workdir>/cache`).
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    index: Arc<Mutex<ActionIndex>>,
    files: Arc<Mutex<FileDigests>>,
    /// `objects/`, held open: an object is stat'ed by its name under it.
    objects: Arc<Dir>,
    /// Directories callers stat files under ([`Store::file_digest_under`]), opened on first use.
    bases: Arc<Mutex<Vec<Arc<Dir>>>>,
    /// Small blobs [`Store::hold`] keeps until the record of their item carries them.
    held: Arc<Mutex<DigestMap<bytes::Bytes>>>,
}

/// A held lock on the store; released on drop.
pub struct StoreLock {
    _file: File,
}

impl Store {
    /// Opens (creating if needed) the store at `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let root = root.into();
        for sub in ["objects", "tmp"] {
            let dir = root.join(sub);
            fs::create_dir_all(&dir).map_err(io_error("create", &dir))?;
        }
        let log = root.join("actions.log");
        let index = ActionIndex::load(&log).map_err(io_error("read", &log))?;
        let objects = root.join("objects");
        let store = Store {
            files: Arc::new(Mutex::new(FileDigests::load(&root.join("file-digests")))),
            index: Arc::new(Mutex::new(index)),
            objects: Arc::new(Dir::open(&objects).map_err(io_error("open", &objects))?),
            bases: Arc::default(),
            held: Arc::default(),
            root,
        };
        store.move_legacy_actions()?;
        Ok(store)
    }

    fn index(&self) -> MutexGuard<'_, ActionIndex> {
        self.index
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The digest of the file at `path` (None if there is none), read only if its stat changed
    /// since it was last hashed ([`super::file_digests`]).
    pub fn file_digest(&self, path: &Path) -> Result<Option<Digest>, StoreError> {
        file_digests::digest_of(&self.files, path).map_err(io_error("read", path))
    }

    /// [`Store::file_digest`] of the file `relative` names under the directory `base` (the project
    /// root): the same digest, the file stat'ed relative to `base` held open, which spares the
    /// kernel walking `base`'s own path again for every file under it.
    pub fn file_digest_under(
        &self,
        base: &Path,
        relative: &Path,
    ) -> Result<Option<Digest>, StoreError> {
        if relative.is_absolute() {
            return self.file_digest(relative);
        }
        let dir = {
            let mut bases = self
                .bases
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            // Compared as bytes: comparing paths walks their components, once per file.
            match bases
                .iter()
                .find(|dir| dir.path().as_os_str() == base.as_os_str())
            {
                Some(dir) => Arc::clone(dir),
                None => match Dir::open(base) {
                    Ok(dir) => {
                        let dir = Arc::new(dir);
                        bases.push(Arc::clone(&dir));
                        dir
                    }
                    // No directory to hold open (gone, or not one): the whole path says why.
                    Err(_) => {
                        drop(bases);
                        return self.file_digest(&base.join(relative));
                    }
                },
            }
        };
        file_digests::digest_at(&self.files, &dir, relative)
            .map_err(|source| io_error("read", &base.join(relative))(source))
    }

    /// Writes the remembered file digests, if this process learned new ones.
    pub fn save_file_digests(&self) -> Result<(), StoreError> {
        let mut files = self
            .files
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        files
            .save(&self.root.join("tmp"))
            .map_err(io_error("write", &self.root.join("file-digests")))
    }

    /// The directory the store lives in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn object_path(&self, digest: &Digest) -> PathBuf {
        self.objects.path().join(object_name_of(digest))
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
        let file = super::key_lock::lock(&dir, key).map_err(io_error("lock a key in", &dir))?;
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

    /// Keeps an output blob for the action record of the item that produced it, returning its
    /// digest: a small one in memory, to travel inside that record, a larger one as an object
    /// ([`Store::put`]). Until the record is appended a held blob is served from memory.
    pub fn hold(&self, bytes: Vec<u8>) -> Result<Digest, StoreError> {
        if bytes.len() > BLOB_INLINE_LIMIT {
            return self.put(&bytes);
        }
        let digest = Digest::of(&bytes);
        self.held_blobs().insert(digest, bytes.into());
        Ok(digest)
    }

    fn held_blobs(&self) -> MutexGuard<'_, DigestMap<bytes::Bytes>> {
        self.held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The bytes of a small blob held in memory or carried inside an action record, if they hash
    /// to `digest`.
    fn small_blob(&self, digest: &Digest) -> Option<bytes::Bytes> {
        if let Some(bytes) = self.held_blobs().get(digest) {
            return Some(bytes.clone());
        }
        self.index()
            .blob(digest)
            .filter(|bytes| Digest::of(bytes) == *digest)
    }

    /// True if the object is present (as a file, or a small blob in memory or in the log).
    pub fn has(&self, digest: &Digest) -> bool {
        self.small_blob(digest).is_some() || self.object_path(digest).is_file()
    }

    /// True if the object is present and its bytes hash to its name, checked through the
    /// remembered file digests ([`super::file_digests`]): an object whose stat has not changed since
    /// it was last hashed is not read again (objects are never rewritten in place, so a changed
    /// byte changes the stat). A damaged object is removed, as [`Store::get`] removes it.
    pub fn has_intact(&self, digest: &Digest) -> Result<bool, StoreError> {
        if self.small_blob(digest).is_some() {
            return Ok(true);
        }
        let name = object_name_of(digest);
        let found = file_digests::digest_at(&self.files, &self.objects, &name)
            .map_err(|source| io_error("read", &self.object_path(digest))(source))?;
        match found {
            None => Ok(false),
            Some(found) if found == *digest => Ok(true),
            Some(_) => {
                let _ = fs::remove_file(self.object_path(digest));
                Ok(false)
            }
        }
    }

    /// The bytes of an object.
    ///
    /// Bytes that do not hash to `digest` (a flipped byte, a truncated file) are never served: the
    /// object is removed, so the next `put` of the right bytes writes it again, and it reads as
    /// missing, which makes the item that needs it a cache miss.
    pub fn get(&self, digest: &Digest) -> Result<Vec<u8>, StoreError> {
        if let Some(bytes) = self.small_blob(digest) {
            return Ok(bytes.to_vec());
        }
        let path = self.object_path(digest);
        match fs::read(&path) {
            Ok(bytes) if Digest::of(&bytes) == *digest => Ok(bytes),
            Ok(_) => {
                let _ = fs::remove_file(&path);
                Err(StoreError::Missing(*digest))
            }
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

    /// The output digest and bytes recorded for a content key, if the item was computed and its
    /// output is still stored. This is the lookup every cached item of a run pays for: a probe of
    /// the index in memory, and no file unless the output is too large to sit in the log.
    pub fn cached_output(&self, key: &Digest) -> Result<Option<(Digest, OutputBytes)>, StoreError> {
        let Some(entry) = self.index().get(key) else {
            return Ok(None);
        };
        if matches!(entry.output_bytes, Part::Inline(_)) {
            return Ok(Some((entry.output, OutputBytes(Held::Logged(entry)))));
        }
        Ok(self
            .output_of(&entry)?
            .map(|(digest, bytes)| (digest, OutputBytes::from(bytes))))
    }

    /// Like [`Store::cached_output`], after reading what other runs appended to the log since this
    /// store read it: the check made under a key's lock, after another run may have computed it.
    pub fn cached_output_now(
        &self,
        key: &Digest,
    ) -> Result<Option<(Digest, OutputBytes)>, StoreError> {
        let log = self.root.join("actions.log");
        self.index().refresh().map_err(io_error("read", &log))?;
        self.cached_output(key)
    }

    fn output_of(&self, entry: &IndexEntry) -> Result<Option<(Digest, Vec<u8>)>, StoreError> {
        match &entry.output_bytes {
            Part::Inline(bytes) => Ok(Some((entry.output, bytes.to_vec()))),
            Part::Object => match self.get(&entry.output) {
                Ok(bytes) => Ok(Some((entry.output, bytes))),
                Err(StoreError::Missing(_)) => Ok(None),
                Err(error) => Err(error),
            },
        }
    }

    fn record_bytes_of(&self, entry: &IndexEntry) -> Result<Option<Vec<u8>>, StoreError> {
        match &entry.record_bytes {
            Part::Inline(bytes) => Ok(Some(bytes.to_vec())),
            Part::Object => match self.get(&entry.key) {
                Ok(bytes) => Ok(Some(bytes)),
                Err(StoreError::Missing(_)) => Ok(None),
                Err(error) => Err(error),
            },
        }
    }

    /// The key record a content key is the digest of, if the store has its action record (for
    /// `plan`'s reasons and `explain`).
    pub fn key_record(&self, key: &Digest) -> Result<Option<KeyRecord>, StoreError> {
        let Some(entry) = self.index().get(key) else {
            return Ok(None);
        };
        Ok(self
            .record_bytes_of(&entry)?
            .and_then(|bytes| serde_json::from_slice(&bytes).ok()))
    }

    /// The action record for a content key, if the item was computed and its output is still stored.
    pub fn action(&self, key: &Digest) -> Result<Option<ActionRecord>, StoreError> {
        let Some(entry) = self.index().get(key) else {
            return Ok(None);
        };
        if self.output_of(&entry)?.is_none() {
            return Ok(None);
        }
        let Some(record) = self.key_record(key)? else {
            return Ok(None);
        };
        Ok(Some(ActionRecord {
            key: record,
            output: entry.output,
            step: entry.step.clone(),
            seconds: entry.seconds,
        }))
    }

    /// Records that the item whose key record is `key` produced `output` (its canonical bytes),
    /// naming `blobs`. Called last, after every blob is stored: a small one held
    /// ([`Store::hold`]) or carried by another record travels inside this record, a larger one
    /// must be an object. A blob that is neither is [`StoreError::Missing`], and nothing is
    /// written. Returns the output's digest.
    pub fn record_action(
        &self,
        key: &KeyRecord,
        (output, blobs): (&[u8], &[Digest]),
        step: &str,
        seconds: f64,
    ) -> Result<Digest, StoreError> {
        let mut carried = Vec::new();
        for blob in blobs {
            if carried.iter().any(|(digest, _)| digest == blob) {
                continue;
            }
            match self.small_blob(blob) {
                Some(bytes) => carried.push((*blob, bytes)),
                None if self.object_path(blob).is_file() => {}
                None => return Err(StoreError::Missing(*blob)),
            }
        }
        let record = key.canonical_bytes();
        let digest = Digest::of(output);
        self.append_action(
            (Digest::of(&record), digest),
            (output, &record),
            (step, seconds),
            carried,
        )?;
        // Carried by the record now: memory need not hold them.
        let mut held = self.held_blobs();
        for blob in blobs {
            held.remove(blob);
        }
        Ok(digest)
    }

    /// Appends an action record whose parts are known to hash to `key` and `output`; parts too
    /// large to sit in the log become objects first.
    fn append_action(
        &self,
        (key, output): (Digest, Digest),
        (output_bytes, record_bytes): (&[u8], &[u8]),
        (step, seconds): (&str, f64),
        blobs: Vec<(Digest, bytes::Bytes)>,
    ) -> Result<(), StoreError> {
        let part = |digest: &Digest, bytes: &[u8]| -> Result<Part, StoreError> {
            if bytes.len() <= INLINE_LIMIT {
                return Ok(Part::Inline(bytes::Bytes::copy_from_slice(bytes)));
            }
            let path = self.object_path(digest);
            if !path.exists() {
                self.write_atomic(&path, bytes)?;
            }
            Ok(Part::Object)
        };
        let entry = IndexEntry {
            key,
            output,
            step: step.to_string(),
            seconds,
            output_bytes: part(&output, output_bytes)?,
            record_bytes: part(&key, record_bytes)?,
            blobs,
        };
        let log = self.root.join("actions.log");
        self.index()
            .append(entry)
            .map_err(io_error("append to", &log))
    }

    /// Moves the records of a store written before the action log (`actions/<xx>/<rest>.json`, one
    /// file per record, output stored as an object) into the log, then removes them.
    fn move_legacy_actions(&self) -> Result<(), StoreError> {
        let dir = self.root.join("actions");
        if !dir.is_dir() {
            return Ok(());
        }
        for path in files_under(&dir)? {
            let Ok(bytes) = fs::read(&path) else {
                continue;
            };
            if let Ok(record) = serde_json::from_slice::<ActionRecord>(&bytes)
                && self.has(&record.output)
            {
                let canonical = record.key.canonical_bytes();
                let key = Digest::of(&canonical);
                let mut index = self.index();
                if index.get(&key).is_none() {
                    let big = canonical.len() > INLINE_LIMIT;
                    if big && !self.has(&key) {
                        drop(index);
                        self.write_atomic(&self.object_path(&key), &canonical)?;
                        index = self.index();
                    }
                    let entry = IndexEntry {
                        key,
                        output: record.output,
                        step: record.step,
                        seconds: record.seconds,
                        output_bytes: Part::Object,
                        record_bytes: if big {
                            Part::Object
                        } else {
                            Part::Inline(canonical.into())
                        },
                        blobs: Vec::new(),
                    };
                    let log = self.root.join("actions.log");
                    index.append(entry).map_err(io_error("append to", &log))?;
                }
            }
            // Another process moving the same records may have removed it first.
            match fs::remove_file(&path) {
                Err(error) if error.kind() != io::ErrorKind::NotFound => {
                    return Err(StoreError::Io {
                        action: "remove",
                        path,
                        source: error,
                    });
                }
                _ => {}
            }
        }
        let _ = fs::remove_dir_all(&dir);
        Ok(())
    }
}

/// Writes `bytes` to `path` through a temp file created in `tmp_dir` and a rename. When `path`
/// is on another filesystem than `tmp_dir` (a workdir mounted apart from the results), the temp
/// file is made beside `path` instead, so the rename stays atomic.
pub fn write_atomic_in(tmp_dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let parent = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(io_error("create", parent))?;
    fs::create_dir_all(tmp_dir).map_err(io_error("create", tmp_dir))?;
    match write_through(tmp_dir, path, bytes) {
        Err(StoreError::Io { source, .. }) if source.kind() == io::ErrorKind::CrossesDevices => {
            write_through(parent, path, bytes)
        }
        result => result,
    }
}

/// Writes `bytes` to a temp file in `tmp_dir`, then renames it to `path`.
fn write_through(tmp_dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
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

/// Where an object lives under `objects/`: `<first two hex digits>/<the other 62>`.
fn object_name_of(digest: &Digest) -> PathBuf {
    let hex = digest.hex();
    let mut name = String::with_capacity(65);
    name.push_str(&hex[..2]);
    name.push('/');
    name.push_str(&hex[2..]);
    PathBuf::from(name)
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
    use std::collections::BTreeSet;

    use super::*;

    /// Regression: `get` served an object's bytes without hashing them, so a flipped byte reached a
    /// step as if it were the cached output.
    #[test]
    fn a_corrupt_object_is_never_served_and_put_writes_it_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let digest = store.put(b"hello world").unwrap();
        let path = store.object_path(&digest);
        std::fs::write(&path, b"hello worle").unwrap();
        assert!(matches!(store.get(&digest), Err(StoreError::Missing(_))));
        assert!(!path.exists(), "the corrupt object is removed");
        store.put(b"hello world").unwrap();
        assert_eq!(store.get(&digest).unwrap(), b"hello world");
    }

    #[test]
    fn has_intact_finds_a_present_object_and_refuses_a_damaged_or_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let digest = store.put(b"blob bytes").unwrap();
        assert!(store.has_intact(&digest).unwrap());
        let path = store.object_path(&digest);
        std::fs::write(&path, b"blob bytez").unwrap();
        assert!(!store.has_intact(&digest).unwrap());
        assert!(!path.exists(), "the damaged object is removed");
        assert!(!store.has_intact(&Digest::of(b"never stored")).unwrap());
    }

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

    pub(super) fn key_record(run: &str) -> KeyRecord {
        KeyRecord {
            schema: crate::cache::KEY_SCHEMA,
            kind: "command".into(),
            version: 1,
            params: serde_json::json!({"run": run}),
            item: "main".into(),
            item_params: serde_json::Value::Null,
            reads: Default::default(),
            files: Default::default(),
            tools: Default::default(),
            replicate: 0,
        }
    }

    #[test]
    fn a_recorded_action_is_found_by_its_key_and_survives_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = key_record("true");
        let output = store.record_action(&key, (b"{}", &[]), "gen", 0.5).unwrap();
        assert_eq!(output, Digest::of(b"{}"));
        let expected = Some((output, OutputBytes::from(b"{}".to_vec())));
        assert_eq!(store.cached_output(&key.digest()).unwrap(), expected);
        assert_eq!(store.cached_output(&Digest::of(b"unknown")).unwrap(), None);
        let reopened = Store::open(dir.path()).unwrap();
        assert_eq!(reopened.cached_output(&key.digest()).unwrap(), expected);
        assert_eq!(reopened.key_record(&key.digest()).unwrap(), Some(key));
    }

    #[test]
    fn large_outputs_and_key_records_become_objects_that_verify_and_gc_keep() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut key = key_record("true");
        key.reads = (0..2000)
            .map(|n| (format!("gen/{n}"), Digest::of(&[n as u8])))
            .collect();
        let big_output = vec![b'x'; INLINE_LIMIT + 1];
        let output = store
            .record_action(&key, (&big_output, &[]), "all", 1.0)
            .unwrap();
        assert!(store.has(&output));
        assert!(store.has(&key.digest()));
        let small = key_record("small");
        store
            .record_action(&small, (b"{}", &[]), "gen", 0.1)
            .unwrap();
        assert!(store.verify().unwrap().broken_actions.is_empty());

        let live = BTreeSet::from([key.digest()]);
        assert_eq!(store.gc(&live, &BTreeSet::new()).unwrap(), (1, 0));
        let reopened = Store::open(dir.path()).unwrap();
        assert_eq!(
            reopened.cached_output(&key.digest()).unwrap(),
            Some((output, OutputBytes::from(big_output)))
        );
        assert_eq!(reopened.cached_output(&small.digest()).unwrap(), None);
        assert!(reopened.verify().unwrap().broken_actions.is_empty());
    }

    #[test]
    fn records_of_a_store_from_before_the_log_move_into_it() {
        let dir = tempfile::tempdir().unwrap();
        let key = key_record("true");
        let output = Digest::of(b"{}");
        let hex = key.digest().hex();
        let legacy = dir.path().join("actions").join(&hex[..2]);
        fs::create_dir_all(&legacy).unwrap();
        let record = ActionRecord {
            key: key.clone(),
            output,
            step: "gen".into(),
            seconds: 0.5,
        };
        fs::write(
            legacy.join(format!("{}.json", &hex[2..])),
            serde_json::to_vec_pretty(&record).unwrap(),
        )
        .unwrap();
        let objects = dir.path().join("objects").join(&output.hex()[..2]);
        fs::create_dir_all(&objects).unwrap();
        fs::write(objects.join(&output.hex()[2..]), b"{}").unwrap();

        let store = Store::open(dir.path()).unwrap();
        assert!(!dir.path().join("actions").exists());
        assert_eq!(
            store.cached_output(&key.digest()).unwrap(),
            Some((output, OutputBytes::from(b"{}".to_vec())))
        );
        assert!(store.verify().unwrap().broken_actions.is_empty());
    }

    /// The object files under a store's `objects/`.
    pub(super) fn object_files(root: &Path) -> Vec<PathBuf> {
        files_under(&root.join("objects")).unwrap()
    }

    #[test]
    fn a_held_blob_is_served_at_once_and_travels_inside_its_record_not_as_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let small = store.hold(b"small output".to_vec()).unwrap();
        let large_bytes = vec![b'z'; BLOB_INLINE_LIMIT + 1];
        let large = store.hold(large_bytes.clone()).unwrap();
        assert_eq!(store.get(&small).unwrap(), b"small output");
        assert!(store.has_intact(&small).unwrap());
        // Only the large blob is a file.
        assert_eq!(object_files(dir.path()), vec![store.object_path(&large)]);

        let key = key_record("echo");
        store
            .record_action(&key, (b"{}", &[small, large]), "gen", 0.1)
            .unwrap();
        assert!(store.held_blobs().is_empty(), "the record carries it now");
        assert_eq!(object_files(dir.path()), vec![store.object_path(&large)]);
        let reopened = Store::open(dir.path()).unwrap();
        assert_eq!(reopened.get(&small).unwrap(), b"small output");
        assert_eq!(reopened.get(&large).unwrap(), large_bytes);
        assert!(reopened.has(&small));
        let stats = reopened.stats().unwrap();
        assert_eq!((stats.logged_blobs, stats.logged_blob_bytes), (1, 12));
        assert!(reopened.verify().unwrap().broken_actions.is_empty());

        // A second record naming the same blob carries it too, so either may be dropped alone.
        let other = key_record("echo again");
        reopened
            .record_action(&other, (b"{}", &[small]), "gen", 0.1)
            .unwrap();
        reopened
            .gc(&BTreeSet::from([other.digest()]), &BTreeSet::new())
            .unwrap();
        let after_gc = Store::open(dir.path()).unwrap();
        assert_eq!(after_gc.get(&small).unwrap(), b"small output");
        assert!(!after_gc.has(&large), "no live record or output names it");
    }

    #[test]
    fn a_record_naming_a_blob_never_stored_is_refused_and_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = key_record("echo");
        let missing = Digest::of(b"never stored");
        let held = store.hold(b"held".to_vec()).unwrap();
        assert!(matches!(
            store.record_action(&key, (b"{}", &[held, missing]), "gen", 0.1),
            Err(StoreError::Missing(digest)) if digest == missing
        ));
        assert_eq!(store.cached_output(&key.digest()).unwrap(), None);
        assert_eq!(Store::open(dir.path()).unwrap().stats().unwrap().actions, 0);
        // The held blob is still held, for a record that names only what exists.
        store
            .record_action(&key, (b"{}", &[held]), "gen", 0.1)
            .unwrap();
        assert_eq!(
            Store::open(dir.path()).unwrap().get(&held).unwrap(),
            b"held"
        );
    }

    #[test]
    fn a_carried_blob_whose_bytes_are_damaged_is_not_served_and_verify_names_its_record() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = key_record("echo");
        let blob = store.hold(b"carried".to_vec()).unwrap();
        store
            .record_action(&key, (b"{}", &[blob]), "gen", 0.1)
            .unwrap();
        // The entry's checksum guards its bytes; a damaged entry is skipped whole. A blob whose
        // digest disagrees with its bytes inside a sound entry is what a faulty writer leaves.
        let log = dir.path().join("actions.log");
        let mut entry = {
            let mut found = Vec::new();
            super::super::action_index::scan(&bytes::Bytes::from(fs::read(&log).unwrap()), |e| {
                found.push(e)
            });
            found.pop().unwrap()
        };
        entry.blobs[0].1 = bytes::Bytes::from_static(b"not it");
        fs::write(&log, entry.encode()).unwrap();
        let reopened = Store::open(dir.path()).unwrap();
        assert!(matches!(reopened.get(&blob), Err(StoreError::Missing(_))));
        assert!(!reopened.has_intact(&blob).unwrap());
        assert_eq!(reopened.verify().unwrap().broken_actions.len(), 1);
    }
}
