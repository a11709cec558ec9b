//! The deleted and added lines of one file between two versions, as `git diff` finds them.
//!
//! Ranking reads every change to a test file, and on a long history the same large test module is
//! diffed hundreds of times for a handful of changed lines each. xdiff hashes and classifies every
//! line of both sides before it trims the lines they share at either end, so the lines a commit left
//! alone cost more than the ones it changed. Here the common leading and trailing lines are cut off
//! first with a plain byte comparison, and when that cuts at least half of the bytes, xdiff (through
//! libgit2, the same algorithm and settings) runs on the middle only; otherwise on the whole blobs,
//! since libgit2 SHA-1-hashes a buffer it is handed. xdiff cuts the shared ends itself before its
//! search, so the middle is diffed the same way; only its heuristic for very frequent lines counts
//! them over the whole files, so in rare cases a trimmed diff could place a change differently. The
//! per-commit counts on the benchmark's histories are identical either way (`benches/rank.py` checks
//! them against PyDriller's).

use git2::{Blob, DiffOptions, Patch};

/// The lines one side changed, each without its line break.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LineChanges {
    pub deleted: Vec<String>,
    pub added: Vec<String>,
}

/// The lines deleted from `old` and added in `new` (an absent side is empty), both read as text (the
/// caller leaves binary files out, as `git diff` shows no lines for them).
pub fn line_changes(
    old: Option<&Blob<'_>>,
    new: Option<&Blob<'_>>,
) -> Result<LineChanges, git2::Error> {
    let whole = (content(old), content(new));
    let middle = trim_common_lines(whole.0, whole.1);
    if middle.0.is_empty() && middle.1.is_empty() {
        return Ok(LineChanges::default());
    }
    let mut options = DiffOptions::new();
    // The caller judged the whole files to be text; the middle alone might look otherwise.
    options.context_lines(0).force_text(true);
    // libgit2 hashes a buffer it is given (the blobs are already named by their ids), so when the
    // ends shared are a small part of the files, diffing the blobs whole costs less.
    let trimmed = whole.0.len() + whole.1.len() - middle.0.len() - middle.1.len();
    let trimming_pays = trimmed >= (whole.0.len() + whole.1.len()) / 2;
    let patch = match (old, new) {
        (Some(old), Some(new)) if !trimming_pays => {
            Patch::from_blobs(old, None, new, None, Some(&mut options))?
        }
        (Some(old), None) => Patch::from_blob_and_buffer(old, None, &[], None, Some(&mut options))?,
        _ => Patch::from_buffers(middle.0, None, middle.1, None, Some(&mut options))?,
    };
    lines_of(&patch)
}

fn content<'a>(blob: Option<&'a Blob<'_>>) -> &'a [u8] {
    blob.map_or(&[], Blob::content)
}

/// The lines of two buffers (for tests, and the same path as [`line_changes`] takes when trimming
/// pays off).
#[cfg(test)]
fn buffer_changes(old: &[u8], new: &[u8]) -> Result<LineChanges, git2::Error> {
    let (old, new) = trim_common_lines(old, new);
    let mut options = DiffOptions::new();
    options.context_lines(0).force_text(true);
    lines_of(&Patch::from_buffers(
        old,
        None,
        new,
        None,
        Some(&mut options),
    )?)
}

fn lines_of(patch: &Patch<'_>) -> Result<LineChanges, git2::Error> {
    let mut changes = LineChanges::default();
    for hunk in 0..patch.num_hunks() {
        for index in 0..patch.num_lines_in_hunk(hunk)? {
            let line = patch.line_in_hunk(hunk, index)?;
            let side = match line.origin() {
                '-' => &mut changes.deleted,
                '+' => &mut changes.added,
                _ => continue,
            };
            let text = String::from_utf8_lossy(line.content());
            side.push(text.trim_end_matches(['\n', '\r']).to_string());
        }
    }
    Ok(changes)
}

/// `old` and `new` without the whole lines they share at the start and at the end.
fn trim_common_lines<'a>(old: &'a [u8], new: &'a [u8]) -> (&'a [u8], &'a [u8]) {
    let common = common_prefix(old, new);
    // Keep whole lines: back off to just after the last line break in the shared bytes.
    let prefix = old[..common]
        .iter()
        .rposition(|&byte| byte == b'\n')
        .map_or(0, |position| position + 1);
    let (old, new) = (&old[prefix..], &new[prefix..]);
    let common = common_suffix(old, new);
    // The shared tail is whole lines from a point right after a line break on both sides, or from
    // the start of a side (which, after the prefix, is the start of a line).
    let starts_line = |side: &[u8]| common == side.len() || side[side.len() - common - 1] == b'\n';
    let suffix = if starts_line(old) && starts_line(new) {
        common
    } else {
        let shared = &old[old.len() - common..];
        shared
            .iter()
            .position(|&byte| byte == b'\n')
            .map_or(0, |position| common - position - 1)
    };
    (&old[..old.len() - suffix], &new[..new.len() - suffix])
}

/// Bytes compared a block at a time (a slice comparison is a `memcmp`), then one at a time.
const BLOCK: usize = 64;

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let shortest = a.len().min(b.len());
    let mut length = 0;
    while length + BLOCK <= shortest && a[length..length + BLOCK] == b[length..length + BLOCK] {
        length += BLOCK;
    }
    while length < shortest && a[length] == b[length] {
        length += 1;
    }
    length
}

fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let shortest = a.len().min(b.len());
    let (a_end, b_end) = (a.len(), b.len());
    let mut length = 0;
    while length + BLOCK <= shortest
        && a[a_end - length - BLOCK..a_end - length] == b[b_end - length - BLOCK..b_end - length]
    {
        length += BLOCK;
    }
    while length < shortest && a[a_end - length - 1] == b[b_end - length - 1] {
        length += 1;
    }
    length
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changes(old: &str, new: &str) -> (Vec<String>, Vec<String>) {
        let changes = buffer_changes(old.as_bytes(), new.as_bytes()).unwrap();
        (changes.deleted, changes.added)
    }

    #[test]
    fn only_the_changed_lines_are_reported() {
        let (deleted, added) = changes("a\nb\nc\nd\n", "a\nB\nc\nd\n");
        assert_eq!(deleted, ["b"]);
        assert_eq!(added, ["B"]);
    }

    #[test]
    fn trimming_keeps_whole_lines() {
        assert_eq!(
            trim_common_lines(b"a\nxb\nc\n", b"a\nxB\nc\n"),
            (&b"xb\n"[..], &b"xB\n"[..])
        );
        // The shared tail `b\nc\n` starts inside a line of `new` (`ab`), so only `c\n` is cut.
        assert_eq!(
            trim_common_lines(b"x\nb\nc\n", b"x\nab\nc\n"),
            (&b"b\n"[..], &b"ab\n"[..])
        );
        assert_eq!(
            trim_common_lines(b"a\nb\n", b"a\nb\n"),
            (&b""[..], &b""[..])
        );
        assert_eq!(
            trim_common_lines(b"a\nb\n", b"a\nb\nb\n"),
            (&b""[..], &b"b\n"[..])
        );
    }

    #[test]
    fn common_ends_are_counted_across_blocks() {
        let long: Vec<u8> = (0..200u8).collect();
        let mut other = long.clone();
        other[150] = 0;
        assert_eq!(common_prefix(&long, &other), 150);
        assert_eq!(common_suffix(&long, &other), 49);
        assert_eq!(common_prefix(&long, &long[..70]), 70);
        assert_eq!(common_suffix(&long, &long[130..]), 70);
    }

    #[test]
    fn a_missing_final_line_break_is_a_change() {
        let (deleted, added) = changes("a\nb", "a\nb\n");
        assert_eq!(deleted, ["b"]);
        assert_eq!(added, ["b"]);
    }

    #[test]
    fn whole_files_added_and_deleted() {
        assert_eq!(
            changes("", "a\nb\n"),
            (vec![], vec!["a".into(), "b".into()])
        );
        assert_eq!(changes("a\n", ""), (vec!["a".into()], vec![]));
        assert_eq!(changes("same\n", "same\n"), (vec![], vec![]));
    }

    #[test]
    fn repeated_lines_at_the_edges_are_diffed_like_git() {
        // Deleting one of several equal lines deletes one line, wherever it is reported.
        let (deleted, added) = changes("x\nassert a\nassert a\ny\n", "x\nassert a\ny\n");
        assert_eq!(deleted, ["assert a"]);
        assert!(added.is_empty());
    }
}
