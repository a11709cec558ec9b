//! Write-back against a real repository: every format marked, twice without change, reversibly; a
//! file changed since it was read marked where its claims now are, or refused when one is gone;
//! concurrent writers keeping each other's marks; owner, mode and line endings kept.

use std::path::Path;

use super::*;
use crate::arms::test_repository::{TwoCommits, two_commits};
use crate::check::claim::{CheckResult, Verdict};
use crate::check::sources::read_sources;

const FILES: &[(&str, &str)] = &[
    (
        "src/url.py",
        "def parse_url(text):\n    return tuple(text.split(':'))\n",
    ),
    (
        "CLAUDE.md",
        "# Notes\n\n- `parse_url` returns a tuple.\n  - Nested `parse_url` detail.\n- `src/url.py` has one function.\n\nThe `parse_url` helper splits on colons. It is fast.\n",
    ),
    (
        ".cursor/rules/python.mdc",
        "---\nglobs: src/**/*.py\n---\n\n- `parse_url` never raises.\n",
    ),
    (
        "claims.jsonl",
        "{\"id\": \"c1\", \"text\": \"parse_url returns a tuple\", \"anchors\": [\"src/url.py::parse_url\"]}\n{\"id\": \"c2\", \"text\": \"other\"}\n",
    ),
    (
        "memory.json",
        "[\n  {\n    \"subject\": \"urls\",\n    \"fact\": \"parse_url returns a tuple\",\n    \"citations\": [\"src/url.py:1\"]\n  }\n]\n",
    ),
    (
        "edges.json",
        "{\"edges\": [{\"uuid\": \"e1\", \"fact\": \"`parse_url` splits\", \"invalid_at\": null}]}\n",
    ),
    (
        "mem0.jsonl",
        "{\"id\": \"m1\", \"memory\": \"parse_url returns a tuple\"}\n",
    ),
];

const SOURCES: &[&str] = &[
    "CLAUDE.md",
    ".cursor/rules/python.mdc",
    "claims.jsonl",
    "memory.json",
    "edges.json",
    "mem0.jsonl",
];

fn repository() -> TwoCommits {
    two_commits(FILES, &[])
}

fn claims_of(root: &Path) -> Vec<MemoryClaim> {
    let paths: Vec<PathBuf> = SOURCES.iter().map(|path| root.join(path)).collect();
    read_sources(root, &paths, false).unwrap()
}

/// Flips every claim except those whose text contains "fast" or "other".
fn results(claims: &[MemoryClaim]) -> Vec<CheckResult> {
    claims
        .iter()
        .map(|claim| CheckResult {
            id: claim.id.clone(),
            source: claim.source.to_string(),
            text: claim.text.clone(),
            verdict: match claim.text.contains("fast") || claim.text.contains("other") {
                true => Verdict::Held,
                false => Verdict::Flipped,
            },
            decided_by: None,
            evidence: "parse_url now returns a list".into(),
            tokens_in: 0,
            tokens_out: 0,
            cost: 0.0,
        })
        .collect()
}

/// The size limit of these tests: far above their files.
const LIMIT: u64 = crate::check::memory_file::DEFAULT_MAX_SIZE;

fn evidence(result: &CheckResult) -> String {
    result.evidence.clone()
}

fn commit() -> Invalidation {
    Invalidation {
        commit: "89abcdef0123456789abcdef0123456789abcdef".into(),
        time: "2023-11-14T22:13:20Z".into(),
    }
}

fn write(root: &Path) -> WriteReport {
    let claims = claims_of(root);
    write_back(&claims, &results(&claims), &commit(), evidence, LIMIT).unwrap()
}

fn read(root: &Path, path: &str) -> String {
    std::fs::read_to_string(root.join(path)).unwrap()
}

#[test]
fn every_format_is_marked_once_and_a_second_write_changes_nothing() {
    let fixture = repository();
    let root = fixture.repository.workdir().unwrap();
    let first = write(root);
    assert_eq!(first.files.len(), 6, "{first:?}");
    assert_eq!(first.marked.len(), 9, "{first:?}");
    let after_first: Vec<String> = SOURCES.iter().map(|path| read(root, path)).collect();
    let second = write(root);
    assert!(second.files.is_empty(), "{second:?}");
    assert_eq!(second.marked, Vec::<String>::new());
    assert_eq!(
        second.already_marked.len(),
        8,
        "the Graphiti edge is no longer read: {second:?}"
    );
    assert_eq!(
        SOURCES
            .iter()
            .map(|path| read(root, path))
            .collect::<Vec<_>>(),
        after_first
    );
    let note = format!(
        "- `parse_url` returns a tuple.\n  <!-- claimflow: false since 89abcde: parse_url now returns a list (claim {}) -->\n  - Nested `parse_url` detail.\n",
        claims_of(root)[0].id
    );
    assert!(
        read(root, "CLAUDE.md").contains(&note),
        "{}",
        read(root, "CLAUDE.md")
    );
    assert!(
        read(root, "edges.json")
            .contains("\"invalid_at\": \"2023-11-14T22:13:20Z\", \"invalidated_by\": \"89abcdef")
    );
    assert!(read(root, "claims.jsonl").ends_with("{\"id\": \"c2\", \"text\": \"other\"}\n"));
}

#[test]
fn marks_are_additions_only_so_git_diff_reverses_them() {
    let fixture = repository();
    let root = fixture.repository.workdir().unwrap();
    write(root);
    let repository = &fixture.repository;
    let mut options = git2::DiffOptions::new();
    options.pathspec("*.md").pathspec("*.mdc");
    let stats = repository
        .diff_index_to_workdir(None, Some(&mut options))
        .unwrap()
        .stats()
        .unwrap();
    assert_eq!((stats.files_changed(), stats.deletions()), (2, 0));
    assert_eq!(stats.insertions(), 5, "one note per flipped Markdown claim");
    let inserted = ", \"invalidated_at\": \"2023-11-14T22:13:20Z\", \"invalidated_by\": \"89abcdef0123456789abcdef0123456789abcdef\"";
    for (path, original) in FILES.iter().filter(|(path, _)| path.ends_with("jsonl")) {
        assert_eq!(read(root, path).replace(inserted, ""), *original, "{path}");
    }
    let pretty = read(root, "memory.json");
    let restored = pretty.replace(
        ",\n    \"invalidated_at\": \"2023-11-14T22:13:20Z\",\n    \"invalidated_by\": \"89abcdef0123456789abcdef0123456789abcdef\"",
        "",
    );
    assert_eq!(restored, FILES[4].1);
}

#[test]
fn a_file_changed_since_it_was_read_keeps_the_change_and_gets_its_marks() {
    let fixture = repository();
    let root = fixture.repository.workdir().unwrap();
    let claims = claims_of(root);
    let edited = format!(
        "- `new` item added by someone else.\n{}",
        read(root, "CLAUDE.md")
    );
    std::fs::write(root.join("CLAUDE.md"), &edited).unwrap();
    let written = write_back(&claims, &results(&claims), &commit(), evidence, LIMIT).unwrap();
    assert_eq!(written.files.len(), 6, "{written:?}");
    let memory = read(root, "CLAUDE.md");
    assert!(memory.starts_with("- `new` item added by someone else.\n# Notes\n"));
    assert_eq!(
        memory.matches("<!-- claimflow: false since").count(),
        4,
        "{memory}"
    );
    assert!(
        memory.contains("- `parse_url` returns a tuple.\n  <!-- claimflow: false since 89abcde"),
        "the note follows its item although the item moved a line down: {memory}"
    );
}

#[test]
fn a_claim_gone_from_its_changed_file_refuses_the_write_and_writes_no_file() {
    let fixture = repository();
    let root = fixture.repository.workdir().unwrap();
    let claims = claims_of(root);
    let edited = read(root, "CLAUDE.md").replace("- `src/url.py` has one function.\n", "");
    std::fs::write(root.join("CLAUDE.md"), &edited).unwrap();
    let error = write_back(&claims, &results(&claims), &commit(), evidence, LIMIT).unwrap_err();
    assert!(matches!(error, WriteError::NotFound { .. }), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("write back CLAUDE.md:5: claim m-"),
        "{error}"
    );
    assert_eq!(read(root, "CLAUDE.md"), edited);
    assert_eq!(
        read(root, "claims.jsonl"),
        FILES[3].1,
        "no file is written when one is refused"
    );
    assert_eq!(temporary_files(root), Vec::<String>::new());
}

/// The write-back temporary files anywhere under `root`, outside `.git`.
fn temporary_files(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut directories = vec![root.to_path_buf()];
    while let Some(directory) = directories.pop() {
        for entry in std::fs::read_dir(&directory).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().unwrap().is_dir() && name != ".git" {
                directories.push(entry.path());
            } else if name.contains(".claimflow-write-") {
                found.push(name);
            }
        }
    }
    found
}

#[test]
fn held_claims_and_claims_not_from_files_are_handled() {
    let fixture = repository();
    let root = fixture.repository.workdir().unwrap();
    let claims = claims_of(root);
    let held: Vec<CheckResult> = results(&claims)
        .into_iter()
        .map(|result| CheckResult {
            verdict: Verdict::Held,
            ..result
        })
        .collect();
    assert_eq!(
        write_back(&claims, &held, &commit(), |_| String::new(), LIMIT).unwrap(),
        WriteReport::default()
    );
    let mut detached = claims.clone();
    detached[0].origin = None;
    let error = write_back(
        &detached,
        &results(&claims),
        &commit(),
        |_| String::new(),
        LIMIT,
    )
    .unwrap_err();
    assert!(matches!(error, WriteError::NoFile { .. }), "{error}");
}

#[test]
fn permissions_survive_the_rename() {
    use std::os::unix::fs::PermissionsExt;
    let fixture = repository();
    let root = fixture.repository.workdir().unwrap();
    std::fs::set_permissions(
        root.join("CLAUDE.md"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    write(root);
    let mode = std::fs::metadata(root.join("CLAUDE.md"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644);
}

/// The results flipping only the claims `flip` picks (by index), holding the rest.
fn flipping(claims: &[MemoryClaim], flip: impl Fn(usize) -> bool) -> Vec<CheckResult> {
    results(claims)
        .into_iter()
        .enumerate()
        .map(|(index, result)| CheckResult {
            verdict: match result.verdict == Verdict::Flipped && flip(index) {
                true => Verdict::Flipped,
                false => Verdict::Held,
            },
            ..result
        })
        .collect()
}

#[test]
fn concurrent_writers_of_one_file_lost_marks_now_both_sets_land() {
    for _ in 0..20 {
        let fixture = repository();
        let root = fixture.repository.workdir().unwrap().to_path_buf();
        let claims = claims_of(&root);
        let (first, second) = std::thread::scope(|scope| {
            let writer = |odd: bool| {
                let claims = &claims;
                scope.spawn(move || {
                    let results = flipping(claims, |index| index % 2 == usize::from(odd));
                    write_back(claims, &results, &commit(), evidence, LIMIT)
                })
            };
            let (even, odd) = (writer(false), writer(true));
            (even.join().unwrap(), odd.join().unwrap())
        });
        let (first, second) = (first.unwrap(), second.unwrap());
        assert_eq!(first.marked.len() + second.marked.len(), 9);
        let again = claims_of(&root);
        let rewrite = write_back(&again, &results(&again), &commit(), evidence, LIMIT).unwrap();
        assert_eq!(rewrite.marked, Vec::<String>::new(), "a mark was lost");
        assert_eq!(
            read(&root, "CLAUDE.md").matches("<!-- claimflow:").count(),
            4
        );
        assert_eq!(
            read(&root, "claims.jsonl")
                .matches("invalidated_by")
                .count(),
            1
        );
        assert_eq!(temporary_files(&root), Vec::<String>::new());
    }
}

#[test]
fn an_orphaned_temporary_file_of_a_killed_writer_is_removed_by_the_next_write() {
    let fixture = repository();
    let root = fixture.repository.workdir().unwrap();
    let orphan = root.join(".CLAUDE.md.claimflow-write-AbC123");
    std::fs::write(&orphan, "half a file").unwrap();
    std::fs::write(root.join(".CLAUDE.md.swp"), "an editor's").unwrap();
    write(root);
    assert!(!orphan.exists());
    assert!(
        root.join(".CLAUDE.md.swp").exists(),
        "only claimflow's own are removed"
    );
}

#[test]
fn writing_as_root_changed_the_owner_now_owner_group_and_mode_are_kept() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let fixture = repository();
    let root = fixture.repository.workdir().unwrap();
    let path = root.join("CLAUDE.md");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    // Only root may give a file away; another user keeps its own, which must survive too.
    let _ = std::os::unix::fs::chown(&path, Some(4321), Some(4321));
    let before = std::fs::metadata(&path).unwrap();
    write(root);
    let after = std::fs::metadata(&path).unwrap();
    assert_ne!(before.ino(), after.ino(), "the file was replaced");
    assert_eq!(
        (after.uid(), after.gid(), after.mode() & 0o7777),
        (before.uid(), before.gid(), 0o640)
    );
}

#[test]
fn a_file_that_became_a_symlink_or_grew_past_the_limit_is_refused_at_write() {
    let fixture = repository();
    let root = fixture.repository.workdir().unwrap();
    let claims = claims_of(root);
    let error = write_back(&claims, &results(&claims), &commit(), evidence, 10).unwrap_err();
    assert!(
        error.to_string().contains("--max-memory-file-size"),
        "{error}"
    );
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("elsewhere.md");
    std::fs::rename(root.join("CLAUDE.md"), &target).unwrap();
    std::os::unix::fs::symlink(&target, root.join("CLAUDE.md")).unwrap();
    let before = std::fs::read_to_string(&target).unwrap();
    let error = write_back(&claims, &results(&claims), &commit(), evidence, LIMIT).unwrap_err();
    assert!(matches!(error, WriteError::Unreadable(_)), "{error}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), before);
}
