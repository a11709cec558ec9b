//! `--discover`: the memory files coding agents keep for a repository, found without being named —
//! those inside it and the user's Claude Code project memory for it.
//!
//! Inside the repository, the files git sees (tracked, and untracked ones no ignore rule excludes)
//! whose path is a known memory file: `CLAUDE.md` and `AGENTS.md` at any depth, `CLAUDE.local.md`
//! (read even when ignored, as it usually is), `.claude/rules/**/*.md`,
//! `.github/copilot-instructions.md`, `memory-bank/*.md`, `.windsurf/rules/*.md` and
//! `.cursor/rules/**/*.mdc`.
//!
//! Outside it, Claude Code keeps per-project memory in `~/.claude/projects/<name>/` (or under
//! `$CLAUDE_CONFIG_DIR`), where `<name>` is the project's absolute path with every character other
//! than an ASCII letter or digit replaced by `-` (`/home/me/my_app` → `-home-me-my-app`): its
//! `memory/*.md` and a `CLAUDE.md` there are read.

use std::path::{Path, PathBuf};

use crate::check::sources::error::SourceError;
use crate::check::sources::repository::worktree_files;

/// The memory files for the repository at `repo_root`, as absolute paths, sorted.
pub fn discover(repo_root: &Path) -> Result<Vec<PathBuf>, SourceError> {
    let claude_home = std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".claude")));
    discover_with(repo_root, claude_home.as_deref())
}

/// [`discover`] with Claude Code's home directory given (`None`: no project memory).
pub fn discover_with(
    repo_root: &Path,
    claude_home: Option<&Path>,
) -> Result<Vec<PathBuf>, SourceError> {
    let root = repo_root
        .canonicalize()
        .map_err(|source| SourceError::Unreadable {
            path: repo_root.to_path_buf(),
            source,
        })?;
    let repository = git2::Repository::open(&root).map_err(|source| SourceError::Repository {
        path: root.clone(),
        source,
    })?;
    let files = worktree_files(&repository).map_err(|source| SourceError::Repository {
        path: root.clone(),
        source,
    })?;
    let mut found: Vec<PathBuf> = files
        .iter()
        .filter(|path| is_memory_file(path))
        .map(|path| root.join(path))
        .collect();
    let local = root.join("CLAUDE.local.md");
    if local.is_file() && !found.contains(&local) {
        found.push(local);
    }
    if let Some(home) = claude_home {
        found.extend(project_memory(
            &home.join("projects").join(project_directory_name(&root)),
        ));
    }
    found.sort();
    Ok(found)
}

/// Whether a repository-relative path is one of the memory files agents keep.
pub fn is_memory_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let directory = path.strip_suffix(name).unwrap_or_default();
    matches!(name, "CLAUDE.md" | "CLAUDE.local.md" | "AGENTS.md")
        || path == ".github/copilot-instructions.md"
        || (name.ends_with(".md")
            && (path.starts_with(".claude/rules/")
                || directory == "memory-bank/"
                || directory == ".windsurf/rules/"))
        || (name.ends_with(".mdc") && path.starts_with(".cursor/rules/"))
}

/// The directory name Claude Code gives a project: its absolute path with every character other
/// than an ASCII letter or digit made `-`.
pub fn project_directory_name(root: &Path) -> String {
    root.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

fn project_memory(directory: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(directory.join("memory"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.is_file() && path.extension().is_some_and(|extension| extension == "md")
        })
        .collect();
    let claude = directory.join("CLAUDE.md");
    if claude.is_file() {
        found.push(claude);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_file_paths_are_recognized() {
        for path in [
            "CLAUDE.md",
            "pkg/CLAUDE.md",
            "AGENTS.md",
            ".claude/rules/style.md",
            ".claude/rules/python/testing.md",
            ".github/copilot-instructions.md",
            "memory-bank/activeContext.md",
            ".windsurf/rules/a.md",
            ".cursor/rules/python.mdc",
        ] {
            assert!(is_memory_file(path), "{path}");
        }
        for path in [
            "README.md",
            "docs/memory-bank/x.md",
            ".cursor/rules/a.md",
            "memory-bank/sub/x.md",
            "CLAUDE.txt",
        ] {
            assert!(!is_memory_file(path), "{path}");
        }
    }

    #[test]
    fn project_directory_names_replace_every_non_alphanumeric() {
        assert_eq!(
            project_directory_name(Path::new("/home/me/my_app.v2")),
            "-home-me-my-app-v2"
        );
    }

    #[test]
    fn discovery_finds_repository_files_respecting_ignores_and_project_memory() {
        let repository = tempfile::tempdir().unwrap();
        let root = repository.path();
        git2::Repository::init(root).unwrap();
        for (path, text) in [
            ("CLAUDE.md", "- `a` b"),
            ("CLAUDE.local.md", "- `c` d"),
            (".gitignore", "CLAUDE.local.md\nignored/\n"),
            ("ignored/AGENTS.md", "- `x` y"),
            (".cursor/rules/py.mdc", "- `e` f"),
            ("README.md", "- `g` h"),
        ] {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), text).unwrap();
        }
        let home = tempfile::tempdir().unwrap();
        let project = home
            .path()
            .join("projects")
            .join(project_directory_name(&root.canonicalize().unwrap()));
        std::fs::create_dir_all(project.join("memory")).unwrap();
        std::fs::write(project.join("memory/MEMORY.md"), "- `m` n").unwrap();
        std::fs::write(project.join("memory/notes.txt"), "not markdown").unwrap();
        let found = discover_with(root, Some(home.path())).unwrap();
        let root = root.canonicalize().unwrap();
        let names: Vec<String> = found
            .iter()
            .map(|path| match path.strip_prefix(&root) {
                Ok(relative) => relative.display().to_string(),
                Err(_) => path
                    .strip_prefix(home.path())
                    .unwrap()
                    .display()
                    .to_string(),
            })
            .collect();
        let project_memory = format!(
            "projects/{}/memory/MEMORY.md",
            project_directory_name(&root)
        );
        let mut expected = vec![
            ".cursor/rules/py.mdc".to_string(),
            "CLAUDE.local.md".to_string(),
            "CLAUDE.md".to_string(),
            project_memory,
        ];
        expected.sort_by_key(|name| match name.starts_with("projects/") {
            true => home.path().join(name),
            false => root.join(name),
        });
        assert_eq!(names, expected);
    }
}
