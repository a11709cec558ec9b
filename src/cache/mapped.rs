//! Files the store reads whole at open, mapped into memory instead of copied.
//!
//! A re-run reads the action log (megabytes for a big fan-out) once, when the store opens, and
//! keeps slices of it for as long as it runs. Read into a buffer, every page of it is fresh
//! memory the kernel must zero before the copy overwrites it; mapped, the pages are the page
//! cache's own, shared and not copied.
//!
//! A mapping stays valid because the store never shortens these files in place: the action log is
//! only appended to, and replaced whole by a rename (`gc`), which leaves the mapped file intact
//! until it is unmapped. Someone else truncating the file under a running process would make its
//! reads fault (SIGBUS), as it would for any program that maps files.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

use bytes::Bytes;

/// Below this many bytes a file is read: a mapping costs more than copying a few pages.
pub const MAP_AT_LEAST: u64 = 256 * 1024;

/// A read-only private mapping of a whole file.
struct Mapping {
    address: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only and never changed through this type; it is plain memory that
// any thread may read, and it is unmapped once, when the last owner drops it.
unsafe impl Send for Mapping {}
// SAFETY: as above: shared reads of immutable memory.
unsafe impl Sync for Mapping {}

impl AsRef<[u8]> for Mapping {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `address` is a live mapping of `len` readable bytes until `drop`.
        unsafe { std::slice::from_raw_parts(self.address as *const u8, self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the range `map` mapped, once.
        unsafe {
            libc::munmap(self.address, self.len);
        }
    }
}

/// The bytes of `file` from offset `from` up to `len`, its length when it was stat'ed: mapped when
/// they are [`MAP_AT_LEAST`] or more, else read into a buffer by positioned reads (no seek, and
/// usually one call). Bytes appended after the stat are left for a later read; a file found shorter
/// than `len` reads as far as it goes.
pub fn read_from(file: &File, from: u64, len: u64) -> io::Result<Bytes> {
    let wanted = len.saturating_sub(from);
    if wanted >= MAP_AT_LEAST {
        return Ok(map(file, len)?.slice(from as usize..));
    }
    let mut bytes = vec![0; wanted as usize];
    let mut filled = 0;
    while filled < bytes.len() {
        match file.read_at(&mut bytes[filled..], from + filled as u64) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    bytes.truncate(filled);
    Ok(Bytes::from(bytes))
}

/// The first `len` bytes of `file` (its length when it was stat'ed), mapped; `len` must be above
/// zero.
pub fn map(file: &File, len: u64) -> io::Result<Bytes> {
    let len = usize::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file too large to map"))?;
    if len == 0 {
        return Ok(Bytes::new());
    }
    // SAFETY: a fresh read-only private mapping of an open file; the kernel picks the address.
    let address = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            file.as_raw_fd(),
            0,
        )
    };
    if address == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(Bytes::from_owner(Mapping { address, len }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_mapped_file_reads_as_its_bytes_and_outlives_a_rename_over_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let content: Vec<u8> = (0..300_000u32).map(|n| (n % 251) as u8).collect();
        std::fs::write(&path, &content).unwrap();
        let file = File::open(&path).unwrap();
        let mapped = map(&file, content.len() as u64).unwrap();
        // Appending and replacing the file leave the mapped bytes as they were.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"more")
            .unwrap();
        std::fs::write(dir.path().join("new"), b"other").unwrap();
        std::fs::rename(dir.path().join("new"), &path).unwrap();
        assert_eq!(&mapped[..], &content[..]);
        let slice = mapped.slice(10..20);
        drop(mapped);
        assert_eq!(&slice[..], &content[10..20]);
        assert!(map(&file, 0).unwrap().is_empty());
    }

    #[test]
    fn bytes_from_an_offset_read_alike_mapped_or_copied() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let content: Vec<u8> = (0..300_000u32).map(|n| (n % 251) as u8).collect();
        std::fs::write(&path, &content).unwrap();
        let file = File::open(&path).unwrap();
        let len = content.len() as u64;
        // Mapped (most of the file), then copied (its last bytes), then nothing.
        assert_eq!(&read_from(&file, 10, len).unwrap()[..], &content[10..]);
        let tail = len - 100;
        assert_eq!(
            &read_from(&file, tail, len).unwrap()[..],
            &content[tail as usize..]
        );
        assert!(read_from(&file, len, len).unwrap().is_empty());
        // Bytes appended after the stat wait for the next read; a short file reads what it has.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"appended")
            .unwrap();
        assert_eq!(
            &read_from(&file, tail, len).unwrap()[..],
            &content[tail as usize..]
        );
        assert_eq!(&read_from(&file, len, len + 100).unwrap()[..], b"appended");
    }
}
