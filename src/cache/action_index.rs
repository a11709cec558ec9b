//! The action index: every action record of the store in one append-only file, `actions.log`.
//!
//! A re-run that computes nothing asks the store about every item; with one file per record that
//! was an open and a read per item. Here the whole log is read once when the store opens and kept
//! in memory, so a lookup is a hash-map probe. An item's output (the JSON of its records and blob
//! names) and its key record sit inside the entry when they are small, so a cached item costs no
//! file at all; larger ones are objects of the store, named by their digest (the key record's digest
//! is the content key itself).
//!
//! Each entry is framed: a magic number, the body's length, and the first bytes of the body's blake3
//! digest. An entry is appended with one write while holding the log's file lock, so entries from
//! two runs never interleave. A run killed in the middle of a write leaves a torn entry; reading
//! skips bytes that do not frame a whole entry with a matching checksum, up to the next magic number,
//! so a torn entry reads as a miss (the item is computed again), never as a wrong record. `gc`
//! rewrites the log with the live entries only, through a temp file and a rename.
//!
//! The log is read into one buffer (mapped, when it is large: [`super::mapped`]), and an entry's
//! inline parts are slices of it ([`Bytes`]), not copies: opening a store of many small records
//! costs one read and one allocation per entry, which is most of what a re-run that computes
//! nothing pays before its first item.
//!
//! A small blob (a file of a `command` step's outputs, up to [`BLOB_INLINE_LIMIT`] bytes) travels
//! inside the entry of the item that produced it, after the two parts, instead of being an object
//! file of its own: on a filesystem where creating a file costs a quarter of a millisecond, one
//! file per small output was most of what a first run spent beside its commands. An entry carries
//! every small blob its output names, so any entry can be kept or dropped alone (`gc`, `export`).
//! Entries without blobs encode exactly as before.
//!
//! The log stays open once read: a refresh that finds nothing new (the check made under every
//! computed item's key lock) is one `fstat`. A log replaced by `gc`'s rename is noticed by its link
//! count falling to zero, and read whole again from the new file.

use std::fs::{self, File};
use std::io::{self, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use super::Digest;
use super::digest::DigestMap;

/// The first bytes of every entry.
const MAGIC: [u8; 4] = *b"CFA1";
/// Magic, body length (u32), checksum (8 bytes).
const FRAME: usize = 4 + 4 + 8;
/// Outputs and key records up to this size live inside the entry; larger ones are objects.
pub const INLINE_LIMIT: usize = 16 * 1024;
/// Blobs up to this size travel inside the entry of the item that produced them.
pub const BLOB_INLINE_LIMIT: usize = 1024;

/// Where a part of an entry (its output, its key record) is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Inside the entry (a slice of the log as read, or the bytes appended).
    Inline(Bytes),
    /// An object of the store, named by the part's digest.
    Object,
}

/// One action record as the log holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexEntry {
    /// The content key: the digest of the key record's canonical bytes.
    pub key: Digest,
    /// The digest of the item's output bytes.
    pub output: Digest,
    /// The step that computed it (informational).
    pub step: String,
    /// Wall seconds the computation took.
    pub seconds: f64,
    /// The output bytes, or [`Part::Object`] when they are the object named `output`.
    pub output_bytes: Part,
    /// The key record's canonical bytes, or [`Part::Object`] when they are the object named `key`.
    pub record_bytes: Part,
    /// The small blobs the output names, each with its digest, carried inside the entry.
    pub blobs: Vec<(Digest, Bytes)>,
}

impl IndexEntry {
    /// The framed bytes of the entry, ready to append.
    pub fn encode(&self) -> Vec<u8> {
        let blob_bytes: usize = self.blobs.iter().map(|(_, bytes)| 36 + bytes.len()).sum();
        let mut body = Vec::with_capacity(
            128 + part_len(&self.output_bytes) + part_len(&self.record_bytes) + blob_bytes,
        );
        body.extend_from_slice(self.key.as_bytes());
        body.extend_from_slice(self.output.as_bytes());
        body.extend_from_slice(&self.seconds.to_le_bytes());
        let step = self.step.as_bytes();
        let step = &step[..step.len().min(u16::MAX as usize)];
        body.extend_from_slice(&(step.len() as u16).to_le_bytes());
        body.extend_from_slice(step);
        for part in [&self.output_bytes, &self.record_bytes] {
            match part {
                Part::Inline(bytes) => {
                    body.push(0);
                    body.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                    body.extend_from_slice(bytes);
                }
                Part::Object => body.push(1),
            }
        }
        if !self.blobs.is_empty() {
            body.extend_from_slice(&(self.blobs.len() as u32).to_le_bytes());
            for (digest, bytes) in &self.blobs {
                body.extend_from_slice(digest.as_bytes());
                body.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                body.extend_from_slice(bytes);
            }
        }
        let mut framed = Vec::with_capacity(FRAME + body.len());
        framed.extend_from_slice(&MAGIC);
        framed.extend_from_slice(&(body.len() as u32).to_le_bytes());
        framed.extend_from_slice(&checksum(&body));
        framed.extend_from_slice(&body);
        framed
    }

    /// Decodes a body whose checksum matched; None if it does not parse. Inline parts are slices
    /// of `body`, sharing its buffer.
    fn decode(body: &Bytes) -> Option<IndexEntry> {
        let mut reader = Reader {
            whole: body,
            at: 0,
            bytes: body,
        };
        let key = Digest::from_bytes(reader.array()?);
        let output = Digest::from_bytes(reader.array()?);
        let seconds = f64::from_le_bytes(reader.array()?);
        let step_len = u16::from_le_bytes(reader.array()?) as usize;
        let step = String::from_utf8(reader.take(step_len)?.to_vec()).ok()?;
        let output_bytes = reader.part()?;
        let record_bytes = reader.part()?;
        let blobs = if reader.bytes.is_empty() {
            Vec::new()
        } else {
            reader.blobs()?
        };
        reader.bytes.is_empty().then_some(IndexEntry {
            key,
            output,
            step,
            seconds,
            output_bytes,
            record_bytes,
            blobs,
        })
    }
}

fn part_len(part: &Part) -> usize {
    match part {
        Part::Inline(bytes) => bytes.len(),
        Part::Object => 0,
    }
}

fn checksum(body: &[u8]) -> [u8; 8] {
    let hash = blake3::hash(body);
    let mut check = [0; 8];
    check.copy_from_slice(&hash.as_bytes()[..8]);
    check
}

struct Reader<'a> {
    /// The body being read, whose buffer inline parts share.
    whole: &'a Bytes,
    /// Where `bytes` starts within `whole`.
    at: usize,
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.bytes.len() < n {
            return None;
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        self.at += n;
        Some(head)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    fn part(&mut self) -> Option<Part> {
        match self.take(1)?[0] {
            0 => {
                let len = u32::from_le_bytes(self.array()?) as usize;
                let start = self.at;
                self.take(len)?;
                Some(Part::Inline(self.whole.slice(start..start + len)))
            }
            1 => Some(Part::Object),
            _ => None,
        }
    }

    /// A count, then each blob's digest, length and bytes (slices of `whole`).
    fn blobs(&mut self) -> Option<Vec<(Digest, Bytes)>> {
        let count = u32::from_le_bytes(self.array()?) as usize;
        // Each blob takes at least its digest and length: a count beyond what the body can hold
        // is damage, not a reason to allocate.
        if count > self.bytes.len() / 36 {
            return None;
        }
        let mut blobs = Vec::with_capacity(count);
        for _ in 0..count {
            let digest = Digest::from_bytes(self.array()?);
            let len = u32::from_le_bytes(self.array()?) as usize;
            let start = self.at;
            self.take(len)?;
            blobs.push((digest, self.whole.slice(start..start + len)));
        }
        Some(blobs)
    }
}

/// What reading the log found besides its entries.
#[derive(Debug, Default)]
pub struct Scan {
    /// Bytes that framed no whole entry (torn by a killed run, or damaged).
    pub skipped_bytes: u64,
    /// Where an entry that runs past the end starts, with nothing after it: it may be a write still
    /// in progress, so it is neither read nor counted as skipped.
    pub unfinished_from: Option<usize>,
}

/// Hands every whole entry of `bytes` to `found`, in file order, skipping what does not frame one.
pub fn scan(bytes: &Bytes, mut found: impl FnMut(IndexEntry)) -> Scan {
    let mut scan = Scan::default();
    let mut at = 0;
    while at < bytes.len() {
        if let Some((body, next)) = frame_at(bytes, at)
            && let Some(entry) = IndexEntry::decode(&bytes.slice(body))
        {
            found(entry);
            at = next;
            continue;
        }
        let next = next_magic(bytes, at + 1);
        if next == bytes.len() && runs_past_the_end(&bytes[at..]) {
            scan.unfinished_from = Some(at);
        } else {
            scan.skipped_bytes += (next - at) as u64;
        }
        at = next;
    }
    scan
}

/// The range of the body of a whole entry framed at `at`, and where the next one starts.
fn frame_at(bytes: &[u8], at: usize) -> Option<(std::ops::Range<usize>, usize)> {
    let frame = bytes.get(at..at + FRAME)?;
    if frame[..4] != MAGIC {
        return None;
    }
    let len = u32::from_le_bytes(frame[4..8].try_into().ok()?) as usize;
    let range = at + FRAME..at + FRAME + len;
    let body = bytes.get(range.clone())?;
    (checksum(body) == frame[8..16]).then_some((range, at + FRAME + len))
}

/// True if `rest` starts like an entry whose frame or body the bytes end inside.
fn runs_past_the_end(rest: &[u8]) -> bool {
    if rest.len() < FRAME {
        return rest.starts_with(&MAGIC[..rest.len().min(MAGIC.len())]);
    }
    let len = u32::from_le_bytes(rest[4..8].try_into().expect("four bytes")) as usize;
    rest[..4] == MAGIC && FRAME + len > rest.len()
}

/// Where the next magic number at or after `from` starts (the end if none does).
fn next_magic(bytes: &[u8], from: usize) -> usize {
    bytes
        .get(from..)
        .and_then(|rest| rest.windows(MAGIC.len()).position(|window| window == MAGIC))
        .map_or(bytes.len(), |offset| from + offset)
}

/// The log in memory: the latest entry of every key, and the file it was read from.
#[derive(Debug)]
pub struct ActionIndex {
    path: PathBuf,
    entries: DigestMap<Arc<IndexEntry>>,
    /// How far into the file this index has read.
    read_to: u64,
    skipped_bytes: u64,
    /// The log as opened for reading, kept so a refresh is one `fstat`.
    reader: Option<File>,
    /// The log opened for appending, once this process has appended.
    appender: Option<File>,
    /// The blobs carried inside entries, by digest: built on the first lookup
    /// ([`ActionIndex::blob`]) and kept up to date after.
    blobs: Option<DigestMap<Bytes>>,
}

impl ActionIndex {
    /// Reads the log at `path` (none yet reads as empty).
    pub fn load(path: &Path) -> io::Result<Self> {
        let mut index = ActionIndex {
            path: path.to_path_buf(),
            entries: DigestMap::default(),
            read_to: 0,
            skipped_bytes: 0,
            reader: None,
            appender: None,
            blobs: None,
        };
        index.refresh()?;
        Ok(index)
    }

    /// Drops everything read, to read the log whole again.
    fn forget(&mut self) {
        self.entries.clear();
        self.read_to = 0;
        self.skipped_bytes = 0;
        self.reader = None;
        self.appender = None;
        self.blobs = None;
    }

    /// Reads what other processes appended since the last read. A torn entry at the very end may
    /// be a write still in progress, so the read stops before it and tries it again next time.
    pub fn refresh(&mut self) -> io::Result<()> {
        let mut meta = match &self.reader {
            Some(file) => Some(file.metadata()?),
            None => None,
        };
        // A log unlinked under this index was replaced (`gc`'s rename): the new one is read whole.
        if meta.as_ref().is_some_and(|meta| meta.nlink() == 0) {
            self.forget();
            meta = None;
        }
        let meta = match meta {
            Some(meta) => meta,
            None => {
                let file = match File::open(&self.path) {
                    Ok(file) => file,
                    Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
                    Err(error) => return Err(error),
                };
                let meta = file.metadata()?;
                self.reader = Some(file);
                meta
            }
        };
        let len = meta.len();
        if len < self.read_to {
            // Shorter than what was read: not the file this index read. Read it whole again.
            let reader = self.reader.take();
            self.forget();
            self.reader = reader;
        }
        if len == self.read_to {
            return Ok(());
        }
        let file = self.reader.as_ref().expect("opened above");
        // A whole log read at open is mapped: its pages are not copied (see `mapped`).
        let bytes = super::mapped::read_from(file, self.read_to, len)?;
        // Room for about one entry per this many bytes: a small record's entry is about this size,
        // so the map is not grown (and copied) a dozen times while a big log is read.
        self.entries.reserve(bytes.len() / 400);
        let (entries, blobs) = (&mut self.entries, &mut self.blobs);
        // The last entry of a key wins.
        let scanned = scan(&bytes, |entry| {
            remember_blobs(blobs, &entry);
            entries.insert(entry.key, Arc::new(entry));
        });
        self.skipped_bytes += scanned.skipped_bytes;
        self.read_to += scanned.unfinished_from.unwrap_or(bytes.len()) as u64;
        Ok(())
    }

    /// The entry of a content key.
    pub fn get(&self, key: &Digest) -> Option<Arc<IndexEntry>> {
        self.entries.get(key).cloned()
    }

    /// The bytes of a blob some entry carries, if one does (as read: the caller checks them
    /// against the digest before serving them).
    pub fn blob(&mut self, digest: &Digest) -> Option<Bytes> {
        let entries = &self.entries;
        self.blobs
            .get_or_insert_with(|| {
                let mut blobs = DigestMap::default();
                for entry in entries.values() {
                    for (digest, bytes) in &entry.blobs {
                        blobs.insert(*digest, bytes.clone());
                    }
                }
                blobs
            })
            .get(digest)
            .cloned()
    }

    /// Every entry, in no particular order.
    pub fn entries(&self) -> impl Iterator<Item = &Arc<IndexEntry>> {
        self.entries.values()
    }

    /// How many keys have an entry.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Bytes of the log that framed no whole entry.
    pub fn skipped_bytes(&self) -> u64 {
        self.skipped_bytes
    }

    /// Appends an entry to the log file, under the log's file lock, and to this index.
    pub fn append(&mut self, entry: IndexEntry) -> io::Result<()> {
        let bytes = entry.encode();
        if self.appender.is_none() {
            self.appender = Some(File::options().create(true).append(true).open(&self.path)?);
        }
        let file = self.appender.as_mut().expect("opened above");
        // One write under the lock: an entry of another run never lands inside this one.
        file.lock()?;
        let written = file.write_all(&bytes).and_then(|()| file.stream_position());
        file.unlock()?;
        let end = written?;
        // When the entry follows what this index read, nothing is left to read back; otherwise
        // others appended before it, and the next refresh reads theirs and this one again (a
        // duplicate of a key replaces itself).
        if end.checked_sub(bytes.len() as u64) == Some(self.read_to) && self.reader.is_some() {
            self.read_to = end;
        }
        remember_blobs(&mut self.blobs, &entry);
        self.entries.insert(entry.key, Arc::new(entry));
        Ok(())
    }

    /// Replaces the log with `entries` alone, through a temp file in `tmp_dir` and a rename. The
    /// caller holds the store's exclusive lock, so no run appends meanwhile.
    pub fn rewrite(&mut self, tmp_dir: &Path, entries: Vec<IndexEntry>) -> io::Result<()> {
        let mut bytes = Vec::new();
        for entry in &entries {
            bytes.extend_from_slice(&entry.encode());
        }
        fs::create_dir_all(tmp_dir)?;
        let mut temp = tempfile::NamedTempFile::new_in(tmp_dir)?;
        temp.write_all(&bytes)?;
        let file = temp.persist(&self.path).map_err(|error| error.error)?;
        self.forget();
        self.entries = entries
            .into_iter()
            .map(|entry| (entry.key, Arc::new(entry)))
            .collect();
        self.read_to = bytes.len() as u64;
        self.reader = Some(file);
        Ok(())
    }
}

/// Adds an entry's blobs to the blob map, once it is built.
fn remember_blobs(blobs: &mut Option<DigestMap<Bytes>>, entry: &IndexEntry) {
    if let Some(blobs) = blobs {
        for (digest, bytes) in &entry.blobs {
            blobs.insert(*digest, bytes.clone());
        }
    }
}

/// The byte range of an entry's body within `bytes`, for tests that damage entries.
#[cfg(test)]
fn body_range(bytes: &[u8], at: usize) -> Option<std::ops::Range<usize>> {
    frame_at(bytes, at).map(|(body, _)| body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// What a scan of `bytes` finds: the last entry of every key in the order of first appearance,
    /// and the rest of the scan.
    fn scanned(bytes: &[u8]) -> (Vec<IndexEntry>, Scan) {
        let mut entries: Vec<IndexEntry> = Vec::new();
        let mut position: HashMap<Digest, usize> = HashMap::new();
        let scan = scan(&Bytes::copy_from_slice(bytes), |entry| {
            match position.get(&entry.key) {
                Some(&index) => entries[index] = entry,
                None => {
                    position.insert(entry.key, entries.len());
                    entries.push(entry);
                }
            }
        });
        (entries, scan)
    }

    fn entry(name: &str) -> IndexEntry {
        IndexEntry {
            key: Digest::of(name.as_bytes()),
            output: Digest::of(b"output"),
            step: "gen".into(),
            seconds: 0.25,
            output_bytes: Part::Inline(Bytes::from_static(b"{\"records\":[]}")),
            record_bytes: Part::Object,
            blobs: Vec::new(),
        }
    }

    fn with_blobs(name: &str, blobs: &[&'static [u8]]) -> IndexEntry {
        IndexEntry {
            blobs: blobs
                .iter()
                .map(|bytes| (Digest::of(bytes), Bytes::from_static(bytes)))
                .collect(),
            ..entry(name)
        }
    }

    #[test]
    fn entries_round_trip_and_the_last_of_a_key_wins() {
        let mut later = entry("a");
        later.seconds = 2.0;
        let bytes = [entry("a").encode(), entry("b").encode(), later.encode()].concat();
        let (entries, scanned) = scanned(&bytes);
        assert_eq!(entries, vec![later, entry("b")]);
        assert_eq!(scanned.skipped_bytes, 0);
    }

    #[test]
    fn a_torn_entry_is_skipped_and_the_entries_after_it_are_read() {
        let first = entry("a").encode();
        let torn = &entry("b").encode()[..30];
        let third = entry("c").encode();
        let bytes = [first.clone(), torn.to_vec(), third].concat();
        let (entries, scanned) = scanned(&bytes);
        assert_eq!(entries, vec![entry("a"), entry("c")]);
        assert_eq!(scanned.skipped_bytes, 30);
        assert_eq!(scanned.unfinished_from, None);
    }

    #[test]
    fn a_torn_entry_at_the_end_is_unfinished_not_skipped() {
        let first = entry("a").encode();
        let bytes = [first.clone(), entry("b").encode()[..30].to_vec()].concat();
        let (entries, scanned) = scanned(&bytes);
        assert_eq!(entries, vec![entry("a")]);
        assert_eq!(scanned.skipped_bytes, 0);
        assert_eq!(scanned.unfinished_from, Some(first.len()));
    }

    #[test]
    fn a_damaged_body_fails_its_checksum() {
        let mut bytes = entry("a").encode();
        let body = body_range(&bytes, 0).unwrap();
        bytes[body.start + 40] ^= 1;
        let (entries, scanned) = scanned(&bytes);
        assert!(entries.is_empty());
        assert_eq!(scanned.skipped_bytes, bytes.len() as u64);
    }

    #[test]
    fn a_refresh_leaves_an_entry_still_being_written_for_later() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("actions.log");
        let whole = entry("a").encode();
        let second = entry("b").encode();
        fs::write(&path, [whole.clone(), second[..20].to_vec()].concat()).unwrap();
        let mut index = ActionIndex::load(&path).unwrap();
        assert_eq!(index.len(), 1);
        assert_eq!(index.skipped_bytes(), 0);
        fs::write(&path, [whole, second].concat()).unwrap();
        index.refresh().unwrap();
        assert_eq!(index.len(), 2);
        assert!(index.get(&entry("b").key).is_some());
    }

    #[test]
    fn appends_from_two_indexes_meet_in_one_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("actions.log");
        let mut first = ActionIndex::load(&path).unwrap();
        let mut second = ActionIndex::load(&path).unwrap();
        first.append(entry("a")).unwrap();
        second.append(entry("b")).unwrap();
        assert!(first.get(&entry("b").key).is_none());
        first.refresh().unwrap();
        assert!(first.get(&entry("b").key).is_some());
        assert_eq!(ActionIndex::load(&path).unwrap().len(), 2);
    }

    #[test]
    fn blobs_round_trip_and_an_entry_without_them_encodes_as_before() {
        let carrying = with_blobs("a", &[b"one", b"", b"three"]);
        let (entries, scanned) = scanned(&carrying.encode());
        assert_eq!(entries, vec![carrying]);
        assert_eq!(scanned.skipped_bytes, 0);
        // Blob-less: the body ends right after the two parts, as entries written before blobs do.
        let plain = entry("b").encode();
        let body = body_range(&plain, 0).unwrap();
        let parts = 32 + 32 + 8 + 2 + 3 + (1 + 4 + 14) + 1;
        assert_eq!(body.len(), parts);
    }

    #[test]
    fn a_blob_count_past_the_body_is_damage_not_an_allocation() {
        let mut carrying = with_blobs("a", &[b"one"]);
        carrying.blobs.clear();
        let mut body = carrying.encode()[FRAME..].to_vec();
        body.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(IndexEntry::decode(&Bytes::from(body)).is_none());
        // A length running past the body is damage too.
        let mut body = with_blobs("a", &[b"one"]).encode()[FRAME..].to_vec();
        let at = body.len() - 3 - 4;
        body[at..at + 4].copy_from_slice(&100u32.to_le_bytes());
        assert!(IndexEntry::decode(&Bytes::from(body)).is_none());
    }

    #[test]
    fn a_blob_is_found_by_its_digest_whether_read_appended_or_refreshed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("actions.log");
        fs::write(&path, with_blobs("a", &[b"read"]).encode()).unwrap();
        let mut index = ActionIndex::load(&path).unwrap();
        assert_eq!(index.blob(&Digest::of(b"read")).unwrap(), &b"read"[..]);
        index.append(with_blobs("b", &[b"appended"])).unwrap();
        assert_eq!(
            index.blob(&Digest::of(b"appended")).unwrap(),
            &b"appended"[..]
        );
        let mut other = ActionIndex::load(&path).unwrap();
        other.append(with_blobs("c", &[b"by another"])).unwrap();
        assert!(index.blob(&Digest::of(b"by another")).is_none());
        index.refresh().unwrap();
        assert_eq!(
            index.blob(&Digest::of(b"by another")).unwrap(),
            &b"by another"[..]
        );
        assert!(index.blob(&Digest::of(b"never")).is_none());
    }

    #[test]
    fn an_append_following_what_was_read_is_not_read_back_and_others_are() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("actions.log");
        fs::write(&path, entry("a").encode()).unwrap();
        let mut index = ActionIndex::load(&path).unwrap();
        index.append(entry("b")).unwrap();
        assert_eq!(index.read_to, fs::metadata(&path).unwrap().len());
        let mut other = ActionIndex::load(&path).unwrap();
        other.append(entry("c")).unwrap();
        index.append(entry("d")).unwrap();
        // `c` came between: `read_to` stays before it, and a refresh reads `c` and `d`.
        assert!(index.read_to < fs::metadata(&path).unwrap().len());
        index.refresh().unwrap();
        assert_eq!(index.len(), 4);
        assert_eq!(index.read_to, fs::metadata(&path).unwrap().len());
        assert_eq!(index.skipped_bytes(), 0);
    }

    #[test]
    fn a_log_replaced_by_a_rename_is_read_whole_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("actions.log");
        fs::write(&path, [entry("a").encode(), entry("b").encode()].concat()).unwrap();
        let mut index = ActionIndex::load(&path).unwrap();
        assert_eq!(index.len(), 2);
        // Another process's `gc` keeps `a` and adds nothing; then a run appends `c` and `d`, so
        // the new file is longer than what this index read of the old one.
        let mut other = ActionIndex::load(&path).unwrap();
        other
            .rewrite(&dir.path().join("tmp"), vec![entry("a")])
            .unwrap();
        other.append(with_blobs("c", &[b"c"])).unwrap();
        other.append(entry("d")).unwrap();
        index.refresh().unwrap();
        let mut keys: Vec<Digest> = index.entries().map(|entry| entry.key).collect();
        keys.sort();
        let mut expected = vec![entry("a").key, entry("c").key, entry("d").key];
        expected.sort();
        assert_eq!(keys, expected);
        assert!(index.blob(&Digest::of(b"c")).is_some());
    }
}
