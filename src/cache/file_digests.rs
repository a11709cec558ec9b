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
//! a checksum: a file that is damaged or of another version reads as empty.
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

/// Remembered digests by the file's (device, inode).
type Table = HashMap<FileId, Remembered, foldhash::fast::RandomState>;

/// A file's device and inode numbers.
type FileId = (u64, u64);
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::Digest;

/// How old a file's timestamps must be for its digest to be remembered. Covers filesystems with
/// coarse timestamps (two seconds on FAT) and the kernel's coarse clock.
pub const RACY: Duration = Duration::from_secs(2);

/// Version 2: keyed by device and inode (version 1, keyed by path, reads as empty).
const MAGIC: &[u8; 8] = b"CFSTAT2\n";
/// The bytes of one entry: the stamp (size, two times, inode, device) and the digest.
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
    used: bool,
}

/// The table of remembered digests.
#[derive(Debug)]
pub struct FileDigests {
    path: PathBuf,
    entries: Table,
    dirty: bool,
}

impl FileDigests {
    /// Reads the table at `path`; a missing, damaged or foreign file reads as empty.
    pub fn load(path: &Path) -> Self {
        let entries = fs::read(path)
            .ok()
            .and_then(|bytes| decode(&bytes))
            .unwrap_or_default();
        FileDigests {
            path: path.to_path_buf(),
            entries,
            dirty: false,
        }
    }

    /// The remembered digest of the file stat'ed as `stamp`, if its stamp has not changed.
    pub fn get(&mut self, stamp: &Stamp) -> Option<Digest> {
        let entry = self.entries.get_mut(&stamp.id())?;
        if entry.stamp != *stamp {
            return None;
        }
        entry.used = true;
        Some(entry.digest)
    }

    /// Remembers the digest of the file read after it was stat'ed as `stamp` at `stat_time`,
    /// unless the file is too fresh to trust its stamp.
    pub fn remember(&mut self, stamp: Stamp, stat_time: SystemTime, digest: Digest) {
        if stamp.racy(stat_time) {
            self.entries.remove(&stamp.id());
            return;
        }
        self.entries.insert(
            stamp.id(),
            Remembered {
                stamp,
                digest,
                used: true,
            },
        );
        self.dirty = true;
    }

    /// Writes the table if this process learned something, through a temp file in `tmp_dir`.
    pub fn save(&mut self, tmp_dir: &Path) -> io::Result<()> {
        if !self.dirty {
            return Ok(());
        }
        let used = self.entries.values().filter(|entry| entry.used).count();
        if self.entries.len() > used + KEEP_UNUSED {
            self.entries.retain(|_, entry| entry.used);
        }
        let bytes = encode(&self.entries);
        fs::create_dir_all(tmp_dir)?;
        let mut temp = tempfile::NamedTempFile::new_in(tmp_dir)?;
        temp.write_all(&bytes)?;
        temp.persist(&self.path).map_err(|error| error.error)?;
        self.dirty = false;
        Ok(())
    }
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

fn encode(entries: &Table) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(MAGIC.len() + entries.len() * ENTRY_LEN + 32);
    bytes.extend_from_slice(MAGIC);
    for entry in entries.values() {
        let stamp = &entry.stamp;
        bytes.extend_from_slice(&stamp.size.to_le_bytes());
        bytes.extend_from_slice(&stamp.modified.to_le_bytes());
        bytes.extend_from_slice(&stamp.changed.to_le_bytes());
        bytes.extend_from_slice(&stamp.inode.to_le_bytes());
        bytes.extend_from_slice(&stamp.device.to_le_bytes());
        bytes.extend_from_slice(entry.digest.as_bytes());
    }
    let check = *blake3::hash(&bytes).as_bytes();
    bytes.extend_from_slice(&check);
    bytes
}

fn decode(bytes: &[u8]) -> Option<Table> {
    let (content, check) = bytes.split_at_checked(bytes.len().checked_sub(32)?)?;
    if blake3::hash(content).as_bytes() != check {
        return None;
    }
    let mut rest = content.strip_prefix(MAGIC.as_slice())?;
    // Sized once, not grown while read.
    let mut entries = Table::with_capacity_and_hasher(rest.len() / ENTRY_LEN, Default::default());
    fn take<'a>(rest: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, tail) = rest.split_at_checked(n)?;
        *rest = tail;
        Some(head)
    }
    fn u64_of(rest: &mut &[u8]) -> Option<u64> {
        Some(u64::from_le_bytes(take(rest, 8)?.try_into().ok()?))
    }
    fn i128_of(rest: &mut &[u8]) -> Option<i128> {
        Some(i128::from_le_bytes(take(rest, 16)?.try_into().ok()?))
    }
    while !rest.is_empty() {
        let stamp = Stamp {
            size: u64_of(&mut rest)?,
            modified: i128_of(&mut rest)?,
            changed: i128_of(&mut rest)?,
            inode: u64_of(&mut rest)?,
            device: u64_of(&mut rest)?,
        };
        let digest = Digest::from_bytes(take(&mut rest, 32)?.try_into().ok()?);
        entries.insert(
            stamp.id(),
            Remembered {
                stamp,
                digest,
                used: false,
            },
        );
    }
    Some(entries)
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
        assert!(table.lock().unwrap().entries.is_empty());
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
        assert!(FileDigests::load(&table_path).entries.is_empty());
    }
}
