//! Key locks: while one run computes an item, another run that needs the same content key waits
//! for it, then finds its result in the cache.
//!
//! On Linux every key's lock is one byte of a single file, `<cache>/locks/keys`, at an offset
//! taken from the key, held with an open-file-description lock (`F_OFD_SETLKW`): a lock costs
//! opening a file that exists and one `fcntl`, where a lock file per key cost creating a file for
//! every computed item. Open-file-description locks belong to the open file, not the process, so
//! two workers of one run exclude each other as two runs do, and closing the file releases the
//! lock (a killed run holds nothing). Two keys share a byte only if their first 63 bits agree.
//! Elsewhere, each key has a lock file of its own under `locks/`, held with `flock`.

use std::fs::{self, File};
use std::io;
use std::path::Path;

use super::Digest;

/// Opens `path` for locking, creating it (and its directory) if needed.
fn open(path: &Path) -> io::Result<File> {
    let open = || {
        File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
    };
    match open() {
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                fs::create_dir_all(dir)?;
            }
            open()
        }
        other => other,
    }
}

/// Waits for the lock of `key` among the key locks under `dir`; held until the file is dropped.
#[cfg(target_os = "linux")]
pub fn lock(dir: &Path, key: &Digest) -> io::Result<File> {
    use std::os::fd::AsRawFd;

    let file = open(&dir.join("keys"))?;
    let mut first = [0; 8];
    first.copy_from_slice(&key.as_bytes()[..8]);
    // SAFETY: a zeroed `flock` is a valid value of a plain C struct.
    let mut range: libc::flock = unsafe { std::mem::zeroed() };
    range.l_type = libc::F_WRLCK as libc::c_short;
    range.l_whence = libc::SEEK_SET as libc::c_short;
    range.l_start = (u64::from_le_bytes(first) >> 1) as libc::off_t;
    range.l_len = 1;
    loop {
        // SAFETY: `fcntl` with F_OFD_SETLKW reads the `flock` we pass and nothing else; the file
        // descriptor is open for as long as `file` lives.
        let result = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLKW, &range) };
        if result == 0 {
            return Ok(file);
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Waits for the lock of `key` among the key locks under `dir`; held until the file is dropped.
#[cfg(not(target_os = "linux"))]
pub fn lock(dir: &Path, key: &Digest) -> io::Result<File> {
    let file = open(&dir.join(key.hex()))?;
    file.lock()?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    #[test]
    fn a_held_key_makes_a_second_holder_wait_and_another_key_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let locks = dir.path().join("locks");
        let key = Digest::of(b"item");
        let held = lock(&locks, &key).unwrap();
        // Another key is free while `key` is held, in the same process.
        drop(lock(&locks, &Digest::of(b"other item")).unwrap());
        let released = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| {
                let _second = lock(&locks, &key).unwrap();
                released.load(Ordering::SeqCst)
            });
            std::thread::sleep(Duration::from_millis(100));
            released.store(true, Ordering::SeqCst);
            drop(held);
            assert!(
                waiter.join().unwrap(),
                "the second holder got the lock only after the first let go"
            );
        });
    }
}
