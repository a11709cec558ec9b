//! A store taken whole: its totals (`cache stats`), a re-hash of everything in it (`cache verify`),
//! dropping what no live record names (`cache gc`), and copying records and objects between stores
//! (`cache export` and `cache import`).

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use super::{Store, StoreError, files_under, io_error};
use crate::cache::Digest;
use crate::cache::action_index::IndexEntry;

/// Totals for `cache stats`.
#[derive(Debug, Default, Clone, Serialize)]
pub struct StoreStats {
    pub objects: u64,
    pub object_bytes: u64,
    pub actions: u64,
    pub temp_files: u64,
    /// Bytes of the action log that frame no whole record (left by a killed run; `gc` drops them).
    pub torn_log_bytes: u64,
    /// Small blobs carried inside action records, and their bytes.
    pub logged_blobs: u64,
    pub logged_blob_bytes: u64,
}

/// What `cache verify` found.
#[derive(Debug, Default, Clone, Serialize)]
pub struct VerifyReport {
    pub objects_checked: u64,
    /// Objects whose bytes do not hash to their name.
    pub corrupt_objects: Vec<String>,
    /// Action records whose key record or output is missing or does not hash to its digest.
    pub broken_actions: Vec<String>,
    pub actions_checked: u64,
    /// Bytes of the action log that frame no whole record: a record torn by a killed run, which
    /// reads as a miss. Not a problem; `gc` drops them.
    pub torn_log_bytes: u64,
}

impl Store {
    /// Counts objects, bytes, action records and stray temp files.
    pub fn stats(&self) -> Result<StoreStats, StoreError> {
        let mut stats = StoreStats::default();
        for path in files_under(&self.root.join("objects"))? {
            stats.objects += 1;
            stats.object_bytes += fs::metadata(&path).map(|meta| meta.len()).unwrap_or(0);
        }
        let index = self.index();
        stats.actions = index.len() as u64;
        stats.torn_log_bytes = index.skipped_bytes();
        for entry in index.entries() {
            stats.logged_blobs += entry.blobs.len() as u64;
            stats.logged_blob_bytes += entry
                .blobs
                .iter()
                .map(|(_, bytes)| bytes.len() as u64)
                .sum::<u64>();
        }
        drop(index);
        stats.temp_files = files_under(&self.root.join("tmp"))?.len() as u64;
        Ok(stats)
    }

    /// Re-hashes every object and every action record's key record and output.
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
        let entries: Vec<Arc<IndexEntry>> = self.index().entries().cloned().collect();
        report.torn_log_bytes = self.index().skipped_bytes();
        for entry in entries {
            report.actions_checked += 1;
            let record = self.record_bytes_of(&entry)?;
            let output = self.output_of(&entry)?;
            let problem = if record.is_none_or(|bytes| Digest::of(&bytes) != entry.key) {
                Some("its key record is missing or does not hash to its key")
            } else if output.is_none_or(|(_, bytes)| Digest::of(&bytes) != entry.output) {
                Some("its output is missing or does not hash to its digest")
            } else if !blobs_intact(&entry) {
                Some("a blob it carries does not hash to its digest")
            } else {
                None
            };
            if let Some(problem) = problem {
                report
                    .broken_actions
                    .push(format!("{} (step `{}`): {problem}", entry.key, entry.step));
            }
        }
        Ok(report)
    }

    /// Keeps the action record of every key in `live_keys` and drops the rest, rewriting the action
    /// log without them (and without torn records); then removes every object not in `live_objects`
    /// and not part of a kept record, then stray temp files. The caller holds the exclusive lock and
    /// passes every object a live output refers to. Returns (actions, objects) removed.
    pub fn gc(
        &self,
        live_keys: &BTreeSet<Digest>,
        live_objects: &BTreeSet<Digest>,
    ) -> Result<(u64, u64), StoreError> {
        let log = self.root.join("actions.log");
        let mut index = self.index();
        index.refresh().map_err(io_error("read", &log))?;
        let before = index.len() as u64;
        let kept: Vec<IndexEntry> = index
            .entries()
            .filter(|entry| live_keys.contains(&entry.key))
            .map(|entry| entry.as_ref().clone())
            .collect();
        let mut keep: BTreeSet<String> = live_objects.iter().map(Digest::hex).collect();
        for entry in &kept {
            keep.insert(entry.output.hex());
            keep.insert(entry.key.hex());
        }
        let removed_actions = before - kept.len() as u64;
        index
            .rewrite(&self.root.join("tmp"), kept)
            .map_err(io_error("rewrite", &log))?;
        drop(index);
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

    /// Copies the given action records and objects into `dest` (another store), for `cache export`.
    /// Returns (actions, objects) copied.
    pub fn export_to(
        &self,
        dest: &Store,
        keys: &BTreeSet<Digest>,
        objects: &BTreeSet<Digest>,
    ) -> Result<(u64, u64), StoreError> {
        let mut copied_actions = 0;
        // Small blobs travel inside the records copied: they are not copied again as files.
        let mut carried = BTreeSet::new();
        for key in keys {
            let Some(entry) = self.index().get(key) else {
                continue;
            };
            if let (Some(record), Some((output, output_bytes))) =
                (self.record_bytes_of(&entry)?, self.output_of(&entry)?)
            {
                dest.append_action(
                    (entry.key, output),
                    (&output_bytes, &record),
                    (&entry.step, entry.seconds),
                    entry.blobs.clone(),
                )?;
                carried.extend(entry.blobs.iter().map(|(digest, _)| *digest));
                copied_actions += 1;
            }
        }
        let mut copied_objects = 0;
        for digest in objects.difference(&carried) {
            if let Ok(bytes) = self.get(digest) {
                dest.put(&bytes)?;
                copied_objects += 1;
            }
        }
        Ok((copied_actions, copied_objects))
    }

    /// Takes every sound object and action record of `source` (an exported store), for
    /// `cache import`. Objects whose bytes do not hash to their name, and action records whose key
    /// record or output does not hash to its digest, are refused. Returns (actions, objects,
    /// refused).
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
        let entries: Vec<Arc<IndexEntry>> = source.index().entries().cloned().collect();
        refused += source.index().skipped_bytes().min(1);
        for entry in entries {
            match (source.record_bytes_of(&entry)?, source.output_of(&entry)?) {
                (Some(record), Some((output, output_bytes)))
                    if Digest::of(&record) == entry.key
                        && Digest::of(&output_bytes) == output
                        && blobs_intact(&entry) =>
                {
                    self.append_action(
                        (entry.key, output),
                        (&output_bytes, &record),
                        (&entry.step, entry.seconds),
                        entry.blobs.clone(),
                    )?;
                    actions += 1;
                }
                _ => refused += 1,
            }
        }
        Ok((actions, objects, refused))
    }
}

/// True if every blob an entry carries hashes to its digest.
fn blobs_intact(entry: &IndexEntry) -> bool {
    entry
        .blobs
        .iter()
        .all(|(digest, bytes)| Digest::of(bytes) == *digest)
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

#[cfg(test)]
mod tests {
    use super::super::tests::{key_record, object_files};
    use super::*;
    use crate::cache::action_index::INLINE_LIMIT;

    #[test]
    fn verify_finds_an_action_whose_output_object_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let big_output = vec![b'y'; INLINE_LIMIT + 1];
        let output = store
            .record_action(&key_record("true"), (&big_output, &[]), "gen", 0.1)
            .unwrap();
        fs::remove_file(store.object_path(&output)).unwrap();
        assert_eq!(store.verify().unwrap().broken_actions.len(), 1);
        assert_eq!(
            store.cached_output(&key_record("true").digest()).unwrap(),
            None
        );
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

    #[test]
    fn export_and_import_carry_the_blobs_inside_their_records() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("from")).unwrap();
        let key = key_record("echo");
        let blob = store.hold(b"carried".to_vec()).unwrap();
        let output = store
            .record_action(&key, (b"{}", &[blob]), "gen", 0.1)
            .unwrap();
        let exported = Store::open(dir.path().join("exported")).unwrap();
        let copied = store
            .export_to(
                &exported,
                &BTreeSet::from([key.digest()]),
                &BTreeSet::from([output, blob]),
            )
            .unwrap();
        assert_eq!(
            copied,
            (1, 0),
            "the blob travels in its record, not as a file"
        );
        assert!(object_files(&dir.path().join("exported")).is_empty());

        let imported = Store::open(dir.path().join("into")).unwrap();
        assert_eq!(imported.import_from(&exported).unwrap(), (1, 0, 0));
        assert_eq!(imported.get(&blob).unwrap(), b"carried");
        assert!(imported.verify().unwrap().broken_actions.is_empty());
    }
}
