//! Reading claim sources: open a file, tell its format (or take the caller's), hand it to its
//! reader, and name its claims' file relative to the repository. One [`Reader`] per run shares the
//! repository's name index across every file it reads.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::check::claim::{MemoryClaim, SourceFormat};
use crate::check::discover::discover;
use crate::check::memory_file::{self, DEFAULT_MAX_SIZE, MemoryFileError};

use super::error::SourceError;
use super::input::Input;
use super::repository::LazyIndex;
use super::{copilot, format, graphiti, jsonl, markdown, mem0};

/// Reads claim sources against one repository.
pub struct Reader {
    root: Option<PathBuf>,
    names: LazyIndex,
    /// The largest file read, in bytes.
    max_file_size: u64,
}

impl Reader {
    /// Resolves names against the working tree of the repository at `root` (none when `None`) and
    /// the trees of `revisions` (a range's ends, so a name the range added or removed resolves).
    pub fn new(root: Option<&Path>, revisions: &[git2::Oid]) -> Self {
        let root = root.map(|root| root.canonicalize().unwrap_or_else(|_| root.to_path_buf()));
        Reader {
            names: LazyIndex::new(root.as_deref(), revisions),
            root,
            max_file_size: DEFAULT_MAX_SIZE,
        }
    }

    /// Refuses files larger than `bytes` (by default [`DEFAULT_MAX_SIZE`]).
    pub fn with_max_file_size(self, bytes: u64) -> Self {
        Reader {
            max_file_size: bytes,
            ..self
        }
    }

    /// The claims of one file, in file order; `hint` overrides format detection.
    pub fn read(
        &self,
        path: &Path,
        hint: Option<SourceFormat>,
    ) -> Result<Vec<MemoryClaim>, SourceError> {
        let path = self.locate(path);
        let label = self.label(&path);
        // Resolved, confined to the repository and checked before a byte is read.
        let (opened, bytes) =
            memory_file::read(&path, self.root.as_deref(), self.max_file_size, &label).map_err(
                |error| match error {
                    MemoryFileError::Unreadable { path, source } => {
                        SourceError::Unreadable { path, source }
                    }
                    refused => SourceError::Refused(refused),
                },
            )?;
        let text = decode(&bytes).map_err(|offset| {
            let (line, column) = position(&bytes, offset);
            SourceError::NotText {
                path: label.clone(),
                line,
                column,
            }
        })?;
        let format = match hint {
            Some(format) => format,
            None => format::detect(&path, &label, text)?,
        };
        let input = Input {
            path: &opened,
            label,
            text,
            digest: blake3::hash(&bytes).to_hex().to_string(),
            format,
        };
        match format {
            SourceFormat::Markdown | SourceFormat::Mdc => markdown::read(&input, &self.names),
            SourceFormat::Jsonl => jsonl::read(&input),
            SourceFormat::CopilotJson => copilot::read(&input, &self.names),
            SourceFormat::Mem0 => mem0::read(&input, &self.names),
            SourceFormat::Graphiti => graphiti::read(&input, &self.names),
        }
    }

    /// A relative path is taken from the current directory, or else from the repository's root.
    fn locate(&self, path: &Path) -> PathBuf {
        match &self.root {
            Some(root) if path.is_relative() && !path.exists() => root.join(path),
            _ => path.to_path_buf(),
        }
    }

    /// Repository-relative inside the repository, else the absolute path.
    fn label(&self, path: &Path) -> PathBuf {
        let absolute = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        match &self.root {
            Some(root) => absolute
                .strip_prefix(root)
                .map(Path::to_path_buf)
                .unwrap_or(absolute),
            None => absolute,
        }
    }
}

/// A file's text: UTF-8 without a leading byte-order mark. `Err` is the offset of the first byte
/// that is not UTF-8.
pub fn decode(bytes: &[u8]) -> Result<&str, usize> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    std::str::from_utf8(bytes).map_err(|error| error.valid_up_to())
}

/// The line and column (from 1, the column in characters) of byte `offset` of what [`decode`]
/// read, for a message a person can go to in an editor.
fn position(bytes: &[u8], offset: usize) -> (u32, u32) {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let before = std::str::from_utf8(&bytes[..offset]).unwrap_or_default();
    let line_start = before.rfind('\n').map_or(0, |at| at + 1);
    let line = before.matches('\n').count() + 1;
    let column = before[line_start..].chars().count() + 1;
    (line as u32, column as u32)
}

/// The claims of one file, its names resolved against the git repository around it (if any).
pub fn read_source(
    path: &Path,
    hint: Option<SourceFormat>,
) -> Result<Vec<MemoryClaim>, SourceError> {
    let around = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let root = git2::Repository::discover(around)
        .ok()
        .and_then(|repository| repository.workdir().map(Path::to_path_buf));
    Reader::new(root.as_deref(), &[]).read(path, hint)
}

/// The claims of `paths` (and, with `discover`, of the memory files found for the repository), in
/// the order given then discovered, each file read once.
pub fn read_sources(
    repo_root: &Path,
    paths: &[PathBuf],
    discover: bool,
) -> Result<Vec<MemoryClaim>, SourceError> {
    read_sources_at(repo_root, paths, None, discover, &[])
}

/// [`read_sources`], with names also resolved in the trees of `revisions`; `hint`, when given,
/// is the format of every file of `paths` (discovered files are told by their names).
pub fn read_sources_at(
    repo_root: &Path,
    paths: &[PathBuf],
    hint: Option<SourceFormat>,
    discover_files: bool,
    revisions: &[git2::Oid],
) -> Result<Vec<MemoryClaim>, SourceError> {
    read_sources_limited(
        repo_root,
        paths,
        hint,
        discover_files,
        revisions,
        DEFAULT_MAX_SIZE,
    )
}

/// [`read_sources_at`], refusing files larger than `max_file_size` bytes.
pub fn read_sources_limited(
    repo_root: &Path,
    paths: &[PathBuf],
    hint: Option<SourceFormat>,
    discover_files: bool,
    revisions: &[git2::Oid],
    max_file_size: u64,
) -> Result<Vec<MemoryClaim>, SourceError> {
    let reader = Reader::new(Some(repo_root), revisions).with_max_file_size(max_file_size);
    let mut files: Vec<(PathBuf, Option<SourceFormat>)> = paths
        .iter()
        .map(|path| (reader.locate(path), hint))
        .collect();
    if discover_files {
        files.extend(discover(repo_root)?.into_iter().map(|file| (file, None)));
    }
    let mut seen = BTreeSet::new();
    let mut claims = Vec::new();
    for (file, format) in files {
        if seen.insert(file.canonicalize().unwrap_or_else(|_| file.clone())) {
            claims.extend(reader.read(&file, format)?);
        }
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arms::test_repository::two_commits;
    use crate::check::claim::Anchor;

    #[test]
    fn claims_name_their_file_relative_to_the_repository_and_resolve_names_of_either_revision() {
        let fixture = two_commits(
            &[("src/old.py", "def legacy():\n    pass\n")],
            &[
                ("src/old.py", None),
                ("CLAUDE.md", Some("- `legacy()` is kept for old callers.\n")),
            ],
        );
        let root = fixture.repository.workdir().unwrap();
        let before = git2::Oid::from_str(&fixture.parent).unwrap();
        let after = git2::Oid::from_str(&fixture.child).unwrap();
        let worktree_only = read_sources(root, &[root.join("CLAUDE.md")], false).unwrap();
        assert_eq!(worktree_only[0].source.to_string(), "CLAUDE.md:1");
        assert!(
            worktree_only[0].anchors.is_empty(),
            "deleted from the working tree"
        );
        let range = read_sources_at(
            root,
            &[root.join("CLAUDE.md")],
            None,
            false,
            &[before, after],
        )
        .unwrap();
        assert_eq!(
            range[0].anchors,
            [Anchor::Symbol {
                path: "src/old.py".into(),
                name: "legacy".into()
            }]
        );
        assert_eq!(range[0].id, worktree_only[0].id);
        let alone = read_source(&root.join("CLAUDE.md"), None).unwrap();
        assert_eq!(alone[0].source.file, PathBuf::from("CLAUDE.md"));
        assert_eq!(
            alone[0].origin.as_ref().map(|origin| origin.digest.clone()),
            Some(
                blake3::hash(&std::fs::read(root.join("CLAUDE.md")).unwrap())
                    .to_hex()
                    .to_string()
            )
        );
    }

    #[test]
    fn unreadable_and_non_text_files_are_errors_naming_them() {
        let directory = tempfile::tempdir().unwrap();
        let reader = Reader::new(None, &[]);
        let missing = reader
            .read(&directory.path().join("nope.md"), None)
            .unwrap_err();
        assert!(
            matches!(missing, SourceError::Unreadable { .. }),
            "{missing}"
        );
        assert!(missing.to_string().contains("nope.md"), "{missing}");
        assert!(
            !missing.to_string().contains("os error"),
            "the OS's reason is the source, not part of the message too: {missing}"
        );
    }

    #[test]
    fn a_non_utf8_file_gave_a_byte_offset_not_a_line() {
        let directory = tempfile::tempdir().unwrap();
        std::fs::write(
            directory.path().join("bin.md"),
            "\u{feff}- ok\n- é\u{fe} x\n",
        )
        .unwrap();
        let mut bytes = std::fs::read(directory.path().join("bin.md")).unwrap();
        let bad = bytes.len() - 4;
        bytes[bad] = 0xff;
        std::fs::write(directory.path().join("bin.md"), &bytes).unwrap();
        let binary = Reader::new(None, &[])
            .read(&directory.path().join("bin.md"), None)
            .unwrap_err();
        assert!(
            binary
                .to_string()
                .ends_with("bin.md:2:4: not UTF-8 text from there on (save the file as UTF-8)"),
            "{binary}"
        );
    }

    #[test]
    fn a_format_hint_overrides_detection_and_a_byte_order_mark_is_skipped() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("export.txt");
        std::fs::write(
            &path,
            "\u{feff}{\"id\": \"1\", \"memory\": \"`x` is y\", \"text\": \"other\"}\n",
        )
        .unwrap();
        let reader = Reader::new(None, &[]);
        assert_eq!(
            reader.read(&path, None).unwrap()[0].format,
            SourceFormat::Mem0
        );
        let hinted = reader.read(&path, Some(SourceFormat::Jsonl)).unwrap();
        assert_eq!(
            (hinted[0].format, hinted[0].text.as_str()),
            (SourceFormat::Jsonl, "other")
        );
    }
}
