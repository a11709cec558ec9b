//! Digests of files by their stat: a shortcut that spares re-reading a file that has not changed.
//!
//! A run reads files to know their content: the declared inputs of `command` items (their digests
//! enter keys) and the outputs it restores (a file that already holds the cached bytes is left
//! alone). Re-reading thousands of unchanged files is most of what a re-run that computes nothing
//! would do, so a file's digest is remembered with its stat — size, modification and change times,
//! inode and device — and reused while the stat is the same. Content stays the truth: a file whose
//! stat differs in any way is read and hashed again.
//!
//! The usual guard against a file changed twice within one tick of the filesystem's clock (same
//! size, same timestamps, different bytes): a digest is remembered only for a file whose
//! timestamps are older than [`RACY`] at the time it was stat'ed, so any later write gives it a
//! newer timestamp. A file written moments ago is hashed again until it is old enough.
//!
//! The table is keyed by the file's device and inode, not its path: the stamp holds both, so a
//! remembered digest is only ever served for the very file it was read from, whichever path reaches
//! it, and a lookup hashes two numbers instead of a path of a hundred bytes (a re-run looks up every
//! output it restores and every object it serves). An inode number that the filesystem gives to a
//! new file after the old one was deleted does not fool it: the new file's change time is its
//! creation, later than the old one's remembered (and by then old) change time.
//!
//! The table lives in `<cache>/file-digests`, replaced atomically when a run learned something, with
//! a checksum: a file that is damaged or of another version reads as empty. Its entries are sorted
//! by device and inode, so a run looks them up in the file's bytes as read (mapped, when large)
//! instead of decoding them all first.
//!
//! A file under a directory the caller holds open ([`Dir`]: the store's objects, the project root)
//! is stat'ed by its name relative to that directory: the kernel then walks two or three path
//! components instead of the ten of an absolute path, which is most of what a stat costs.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;

/// Digests learned by this process, by the file's (device, inode); None: forgotten.
type Table = HashMap<FileId, Option<Remembered>, foldhash::fast::RandomState>;

/// A file's device and inode numbers.
type FileId = (u64, u64);

use super::Digest;

/// How old a file's timestamps must be for its digest to be remembered. Covers filesystems with
/// coarse timestamps (two seconds on FAT) and the kernel's coarse clock.
pub const RACY: Duration = Duration::from_secs(2);

/// Version 3: entries sorted by device and inode (earlier versions read as empty).
const MAGIC: &[u8; 8] = b"CFSTAT3\n";
/// The bytes of one entry: device, inode, size, the two times, and the digest.
const ENTRY_LEN: usize = 8 + 16 + 16 + 8 + 8 + 32;
/// Entries kept beyond those used by the current process, so the table does not grow forever.
const KEEP_UNUSED: usize = 100_000;

/// The stat of a file that decides whether a remembered digest still holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    size: u64,
    modified: i128,
    changed: i128,
    inode: u64,
    device: u64,
}

impl Stamp {
    /// The stamp of a file's metadata.
    pub fn of(meta: &fs::Metadata) -> Self {
        Stamp {
            size: meta.size(),
            modified: nanos(meta.mtime(), meta.mtime_nsec()),
            changed: nanos(meta.ctime(), meta.ctime_nsec()),
            inode: meta.ino(),
            device: meta.dev(),
        }
    }

    fn id(&self) -> FileId {
        (self.device, self.inode)
    }

    /// True if a write after `now` could leave the file with this same stamp.
    fn racy(&self, now: SystemTime) -> bool {
        let now = now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos() as i128);
        self.modified.max(self.changed) + RACY.as_nanos() as i128 >= now
    }
}

/// The stat of the file `relative` names under `dir` (None if there is none, or it is not a
/// file), following symbolic links as [`fs::metadata`] does.
fn stat_at(dir: &Dir, relative: &Path) -> io::Result<Option<Stamp>> {
    let name = std::ffi::CString::new(relative.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))?;
    // SAFETY: `stat` is plain data that fstatat fills; the directory descriptor is open for as
    // long as `dir` lives, and `name` is a NUL-terminated string.
    let stat = unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        if libc::fstatat(dir.fd.as_raw_fd(), name.as_ptr(), &mut stat, 0) != 0 {
            let error = io::Error::last_os_error();
            return match error.kind() {
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => Ok(None),
                _ => Err(error),
            };
        }
        stat
    };
    if stat.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Ok(None);
    }
    Ok(Some(Stamp {
        size: stat.st_size as u64,
        modified: nanos(stat.st_mtime, stat.st_mtime_nsec),
        changed: nanos(stat.st_ctime, stat.st_ctime_nsec),
        inode: stat.st_ino,
        device: stat.st_dev,
    }))
}

/// A directory held open, so that the files under it are stat'ed relative to it.
#[derive(Debug)]
pub struct Dir {
    path: PathBuf,
    fd: OwnedFd,
}

impl Dir {
    /// Opens the directory at `path`.
    pub fn open(path: &Path) -> io::Result<Self> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = fs::File::options()
            .read(true)
            .custom_flags(libc::O_DIRECTORY)
            .open(path)?;
        Ok(Dir {
            path: path.to_path_buf(),
            fd: file.into(),
        })
    }

    /// The path it was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn nanos(seconds: i64, nanoseconds: i64) -> i128 {
    seconds as i128 * 1_000_000_000 + nanoseconds as i128
}

#[derive(Debug, Clone, Copy)]
struct Remembered {
    stamp: Stamp,
    digest: Digest,
}

/// The table of remembered digests.
///
/// The table as saved stays the file's bytes (mapped when large), its entries sorted by device and
/// inode and found by binary search: a re-run that computes nothing looks up each file it stats
/// once, and decoding tens of thousands of entries into a hash map (megabytes of fresh memory) cost
/// more than all those lookups. What this process learns sits beside it, and both are merged into a
/// new file when it is saved.
#[derive(Debug)]
pub struct FileDigests {
    path: PathBuf,
    /// The saved entries, sorted by (device, inode), [`ENTRY_LEN`] bytes each.
    saved: Bytes,
    /// One bit per saved entry: looked up by this process (kept when the table is pruned).
    used: Vec<u64>,
    /// Learned by this process, overriding a saved entry; None: forgotten (its file changed too
    /// recently to be trusted).
    learned: Table,
    dirty: bool,
}

impl FileDigests {
    /// Reads the table at `path`; a missing, damaged or foreign file reads as empty.
    pub fn load(path: &Path) -> Self {
        let saved = read(path).and_then(checked_entries).unwrap_or_default();
        FileDigests {
            path: path.to_path_buf(),
            used: vec![0; (saved.len() / ENTRY_LEN).div_ceil(64)],
            saved,
            learned: Table::default(),
            dirty: false,
        }
    }

    /// The remembered digest of the file stat'ed as `stamp`, if its stamp has not changed.
    pub fn get(&mut self, stamp: &Stamp) -> Option<Digest> {
        if let Some(learned) = self.learned.get(&stamp.id()) {
            return learned
                .filter(|entry| entry.stamp == *stamp)
                .map(|entry| entry.digest);
        }
        let index = self.find(stamp.id())?;
        let entry = saved_entry(&self.saved, index);
        if entry.stamp != *stamp {
            return None;
        }
        self.used[index / 64] |= 1 << (index % 64);
        Some(entry.digest)
    }

    /// The index of the saved entry for `id`.
    fn find(&self, id: FileId) -> Option<usize> {
        let count = self.saved.len() / ENTRY_LEN;
        let (mut low, mut high) = (0, count);
        while low < high {
            let middle = low + (high - low) / 2;
            match saved_id(&self.saved, middle).cmp(&id) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => return Some(middle),
            }
        }
        None
    }

    /// Remembers the digest of the file read after it was stat'ed as `stamp` at `stat_time`,
    /// unless the file is too fresh to trust its stamp.
    pub fn remember(&mut self, stamp: Stamp, stat_time: SystemTime, digest: Digest) {
        if stamp.racy(stat_time) {
            self.learned.insert(stamp.id(), None);
            return;
        }
        self.learned
            .insert(stamp.id(), Some(Remembered { stamp, digest }));
        self.dirty = true;
    }

    /// Writes the table if this process learned something, through a temp file in `tmp_dir`.
    pub fn save(&mut self, tmp_dir: &Path) -> io::Result<()> {
        if !self.dirty {
            return Ok(());
        }
        let bytes = encode(&self.merged());
        fs::create_dir_all(tmp_dir)?;
        let mut temp = tempfile::NamedTempFile::new_in(tmp_dir)?;
        temp.write_all(&bytes)?;
        temp.persist(&self.path).map_err(|error| error.error)?;
        self.dirty = false;
        Ok(())
    }

    /// The saved entries this process did not override, and the ones it learned, sorted; the
    /// saved entries it did not use are dropped once there are more than [`KEEP_UNUSED`] of them.
    fn merged(&self) -> Vec<Remembered> {
        let used = |index: usize| self.used[index / 64] & (1 << (index % 64)) != 0;
        let kept: Vec<usize> = (0..self.saved.len() / ENTRY_LEN)
            .filter(|&index| !self.learned.contains_key(&saved_id(&self.saved, index)))
            .collect();
        let keep_unused = kept.iter().filter(|&&index| !used(index)).count() <= KEEP_UNUSED;
        let mut entries: Vec<Remembered> = kept
            .into_iter()
            .filter(|&index| keep_unused || used(index))
            .map(|index| saved_entry(&self.saved, index))
            .chain(self.learned.values().flatten().copied())
            .collect();
        entries.sort_unstable_by_key(|entry| entry.stamp.id());
        entries
    }
}

/// The bytes of the file at `path` (mapped when large), if it can be read.
fn read(path: &Path) -> Option<Bytes> {
    let file = fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    super::mapped::read_from(&file, 0, len).ok()
}

/// The digest of the file at `path`, from `table` when its stamp is unchanged, else read and
/// hashed (and remembered when old enough). None if there is no file there. The table's lock is
/// not held while the file is read.
pub fn digest_of(table: &std::sync::Mutex<FileDigests>, path: &Path) -> io::Result<Option<Digest>> {
    let stat_time = SystemTime::now();
    let meta = match fs::metadata(path) {
        Ok(meta) if meta.is_file() => meta,
        Ok(_) => return Ok(None),
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    digest_after_stat(table, Stamp::of(&meta), stat_time, || fs::File::open(path))
}

/// [`digest_of`] for the file `relative` names under the open directory `dir`.
pub fn digest_at(
    table: &std::sync::Mutex<FileDigests>,
    dir: &Dir,
    relative: &Path,
) -> io::Result<Option<Digest>> {
    let stat_time = SystemTime::now();
    let Some(stamp) = stat_at(dir, relative)? else {
        return Ok(None);
    };
    digest_after_stat(table, stamp, stat_time, || open_at(dir, relative))
}

/// The digest of the file stat'ed as `stamp` at `stat_time`: remembered, or read from the file
/// `open` opens.
fn digest_after_stat(
    table: &std::sync::Mutex<FileDigests>,
    stamp: Stamp,
    stat_time: SystemTime,
    open: impl FnOnce() -> io::Result<fs::File>,
) -> io::Result<Option<Digest>> {
    if let Some(digest) = lock(table).get(&stamp) {
        return Ok(Some(digest));
    }
    let mut bytes = Vec::new();
    match open().and_then(|mut file| file.read_to_end(&mut bytes)) {
        Ok(_) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    }
    let digest = Digest::of(&bytes);
    lock(table).remember(stamp, stat_time, digest);
    Ok(Some(digest))
}

/// Opens the file `relative` names under `dir` for reading.
fn open_at(dir: &Dir, relative: &Path) -> io::Result<fs::File> {
    let name = std::ffi::CString::new(relative.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))?;
    // SAFETY: `name` is NUL-terminated and the directory descriptor is open while `dir` lives;
    // the descriptor returned is new and owned by the `File` made from it.
    unsafe {
        let fd = libc::openat(
            dir.fd.as_raw_fd(),
            name.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(fs::File::from_raw_fd(fd))
    }
}

fn lock(table: &std::sync::Mutex<FileDigests>) -> std::sync::MutexGuard<'_, FileDigests> {
    // The table is only a shortcut; a panic elsewhere leaves it usable.
    table
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The table's bytes: the magic, the entries (sorted), the checksum of both.
fn encode(entries: &[Remembered]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(MAGIC.len() + entries.len() * ENTRY_LEN + 32);
    bytes.extend_from_slice(MAGIC);
    for entry in entries {
        let stamp = &entry.stamp;
        bytes.extend_from_slice(&stamp.device.to_le_bytes());
        bytes.extend_from_slice(&stamp.inode.to_le_bytes());
        bytes.extend_from_slice(&stamp.size.to_le_bytes());
        bytes.extend_from_slice(&stamp.modified.to_le_bytes());
        bytes.extend_from_slice(&stamp.changed.to_le_bytes());
        bytes.extend_from_slice(entry.digest.as_bytes());
    }
    let check = *blake3::hash(&bytes).as_bytes();
    bytes.extend_from_slice(&check);
    bytes
}

/// The entries of a table's bytes, if its checksum, magic and length hold.
fn checked_entries(bytes: Bytes) -> Option<Bytes> {
    let content_len = bytes.len().checked_sub(32)?;
    let (content, check) = bytes.split_at(content_len);
    if blake3::hash(content).as_bytes() != check
        || !content.starts_with(MAGIC)
        || !(content_len - MAGIC.len()).is_multiple_of(ENTRY_LEN)
    {
        return None;
    }
    Some(bytes.slice(MAGIC.len()..content_len))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"))
}

fn i128_at(bytes: &[u8], at: usize) -> i128 {
    i128::from_le_bytes(bytes[at..at + 16].try_into().expect("sixteen bytes"))
}

/// The (device, inode) of saved entry `index`.
fn saved_id(saved: &[u8], index: usize) -> FileId {
    let at = index * ENTRY_LEN;
    (u64_at(saved, at), u64_at(saved, at + 8))
}

/// Saved entry `index`.
fn saved_entry(saved: &[u8], index: usize) -> Remembered {
    let at = index * ENTRY_LEN;
    Remembered {
        stamp: Stamp {
            device: u64_at(saved, at),
            inode: u64_at(saved, at + 8),
            size: u64_at(saved, at + 16),
            modified: i128_at(saved, at + 24),
            changed: i128_at(saved, at + 40),
        },
        digest: Digest::from_bytes(
            saved[at + 56..at + ENTRY_LEN]
                .try_into()
                .expect("thirty-two bytes"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Sets a file's modification time `age` into the past (its change time stays now).
    fn age(path: &Path, age: Duration) {
        let file = fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - age).unwrap();
    }

    #[test]
    fn a_fresh_file_is_hashed_every_time_and_not_remembered() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("input.txt");
        fs::write(&file, "one").unwrap();
        let table = Mutex::new(FileDigests::load(&dir.path().join("table")));
        assert_eq!(digest_of(&table, &file).unwrap(), Some(Digest::of(b"one")));
        // Same size, written within the same instant: the stamp could match, so it is not trusted.
        fs::write(&file, "two").unwrap();
        assert_eq!(digest_of(&table, &file).unwrap(), Some(Digest::of(b"two")));
        let table = table.lock().unwrap();
        assert!(table.merged().is_empty());
        assert!(!table.dirty, "nothing learned, nothing to save");
    }

    #[test]
    fn an_old_file_is_remembered_across_saves_and_a_changed_stat_reads_it_again() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("input.txt");
        let table_path = dir.path().join("table");
        fs::write(&file, "one").unwrap();
        // The change time cannot be set back, so the remembered stamp is checked directly.
        let meta = fs::metadata(&file).unwrap();
        let stamp = Stamp::of(&meta);
        let mut table = FileDigests::load(&table_path);
        table.remember(
            stamp,
            SystemTime::now() + RACY * 2,
            Digest::of(b"remembered"),
        );
        table.save(dir.path()).unwrap();

        let mut reloaded = FileDigests::load(&table_path);
        assert_eq!(reloaded.get(&stamp), Some(Digest::of(b"remembered")));
        fs::write(&file, "two").unwrap();
        age(&file, Duration::from_secs(60));
        let now = Stamp::of(&fs::metadata(&file).unwrap());
        assert_eq!(reloaded.get(&now), None);
    }

    #[test]
    fn a_stat_under_an_open_directory_is_the_stat_of_the_whole_path() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("out")).unwrap();
        let file = dir.path().join("out/a.txt");
        fs::write(&file, "one").unwrap();
        let open = Dir::open(dir.path()).unwrap();
        let relative = Path::new("out/a.txt");
        // The stamps must agree: the table remembers a file under either way of reaching it.
        assert_eq!(
            stat_at(&open, relative).unwrap(),
            Some(Stamp::of(&fs::metadata(&file).unwrap()))
        );
        assert_eq!(stat_at(&open, Path::new("out/missing.txt")).unwrap(), None);
        assert_eq!(
            stat_at(&open, Path::new("out")).unwrap(),
            None,
            "a directory"
        );
        let table = Mutex::new(FileDigests::load(&dir.path().join("table")));
        assert_eq!(
            digest_at(&table, &open, relative).unwrap(),
            Some(Digest::of(b"one"))
        );
    }

    #[test]
    fn a_damaged_table_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let table_path = dir.path().join("table");
        let mut table = FileDigests::load(&table_path);
        let stamp = Stamp::of(&fs::metadata(dir.path()).unwrap());
        table.remember(stamp, SystemTime::now() + RACY * 2, Digest::of(b"x"));
        table.save(dir.path()).unwrap();
        let mut bytes = fs::read(&table_path).unwrap();
        bytes[12] ^= 1;
        fs::write(&table_path, bytes).unwrap();
        assert!(FileDigests::load(&table_path).saved.is_empty());
    }

    /// A stamp of a file that does not exist, old enough to be remembered.
    fn stamp(device: u64, inode: u64, size: u64) -> Stamp {
        Stamp {
            size,
            modified: 1_000_000_000,
            changed: 1_000_000_000,
            inode,
            device,
        }
    }

    #[test]
    fn every_saved_entry_is_found_again_and_what_a_run_learns_or_forgets_overrides_it() {
        let dir = tempfile::tempdir().unwrap();
        let table_path = dir.path().join("table");
        let now = SystemTime::now();
        let mut table = FileDigests::load(&table_path);
        // Inodes in no particular order, on two devices, enough to map the saved file.
        let ids: Vec<(u64, u64)> = (0..4000u64)
            .map(|n| (n % 2, (n * 7919) % 100_003))
            .collect();
        for &(device, inode) in &ids {
            let digest = Digest::of(&inode.to_le_bytes());
            table.remember(stamp(device, inode, 1), now, digest);
        }
        table.save(dir.path()).unwrap();
        assert!(fs::metadata(&table_path).unwrap().len() >= super::super::mapped::MAP_AT_LEAST);

        let mut reloaded = FileDigests::load(&table_path);
        for &(device, inode) in &ids {
            assert_eq!(
                reloaded.get(&stamp(device, inode, 1)),
                Some(Digest::of(&inode.to_le_bytes()))
            );
            assert_eq!(reloaded.get(&stamp(device, inode, 2)), None, "another size");
        }
        assert_eq!(reloaded.get(&stamp(3, 1, 1)), None, "never seen");

        // Relearned with another digest, forgotten (too fresh to trust), and new.
        let (relearned, forgotten) = (ids[10], ids[20]);
        reloaded.remember(stamp(relearned.0, relearned.1, 1), now, Digest::of(b"new"));
        let fresh = Stamp {
            modified: now.duration_since(UNIX_EPOCH).unwrap().as_nanos() as i128,
            ..stamp(forgotten.0, forgotten.1, 1)
        };
        reloaded.remember(fresh, now, Digest::of(b"fresh"));
        reloaded.remember(stamp(5, 5, 5), now, Digest::of(b"five"));
        assert_eq!(
            reloaded.get(&stamp(relearned.0, relearned.1, 1)),
            Some(Digest::of(b"new"))
        );
        assert_eq!(reloaded.get(&stamp(forgotten.0, forgotten.1, 1)), None);
        reloaded.save(dir.path()).unwrap();

        let mut again = FileDigests::load(&table_path);
        assert_eq!(
            again.get(&stamp(relearned.0, relearned.1, 1)),
            Some(Digest::of(b"new"))
        );
        assert_eq!(again.get(&stamp(forgotten.0, forgotten.1, 1)), None);
        assert_eq!(again.get(&stamp(5, 5, 5)), Some(Digest::of(b"five")));
        assert_eq!(
            again.saved.len() / ENTRY_LEN,
            ids.len(),
            "one forgotten, one new"
        );
        let saved = &again.saved;
        assert!(
            (1..saved.len() / ENTRY_LEN)
                .all(|index| saved_id(saved, index - 1) < saved_id(saved, index)),
            "sorted by device and inode"
        );
    }
}
