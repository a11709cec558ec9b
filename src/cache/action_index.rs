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

use std::fs::{self, File};
use std::io::{self, Write};
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
}

impl IndexEntry {
    /// The framed bytes of the entry, ready to append.
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(128 + part_len(&self.output_bytes));
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
        reader.bytes.is_empty().then_some(IndexEntry {
            key,
            output,
            step,
            seconds,
            output_bytes,
            record_bytes,
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
    /// The log opened for appending, once this process has appended.
    appender: Option<File>,
}

impl ActionIndex {
    /// Reads the log at `path` (none yet reads as empty).
    pub fn load(path: &Path) -> io::Result<Self> {
        let mut index = ActionIndex {
            path: path.to_path_buf(),
            entries: DigestMap::default(),
            read_to: 0,
            skipped_bytes: 0,
            appender: None,
        };
        index.refresh()?;
        Ok(index)
    }

    /// Reads what other processes appended since the last read. A torn entry at the very end may
    /// be a write still in progress, so the read stops before it and tries it again next time.
    pub fn refresh(&mut self) -> io::Result<()> {
        let mut file = match File::open(&self.path) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(error) => return Err(error),
        };
        let len = file.metadata()?.len();
        if len < self.read_to {
            // The log was rewritten (`gc`): read it whole again.
            self.entries.clear();
            self.read_to = 0;
            self.skipped_bytes = 0;
        }
        if len == self.read_to {
            return Ok(());
        }
        // A whole log read at open is mapped: its pages are not copied (see `mapped`).
        let bytes = super::mapped::read_from(&mut file, self.read_to, len)?;
        // Room for about one entry per this many bytes: a small record's entry is about this size,
        // so the map is not grown (and copied) a dozen times while a big log is read.
        self.entries.reserve(bytes.len() / 400);
        let entries = &mut self.entries;
        // The last entry of a key wins.
        let scanned = scan(&bytes, |entry| {
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
        let written = file.write_all(&bytes);
        file.unlock()?;
        written?;
        // This index has not read what others appended before this entry; it reads that on the
        // next refresh, so `read_to` is left alone and this entry is read again then (a duplicate
        // of a key replaces itself).
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
        temp.persist(&self.path).map_err(|error| error.error)?;
        self.entries = entries
            .into_iter()
            .map(|entry| (entry.key, Arc::new(entry)))
            .collect();
        self.read_to = bytes.len() as u64;
        self.skipped_bytes = 0;
        self.appender = None;
        Ok(())
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
}
