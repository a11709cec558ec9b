//! `check`'s claim sources on a fixture repository holding every kind of memory file a user keeps
//! (a CLAUDE.md, a Cursor rule, Copilot-style memory JSON, claimflow JSON Lines): what is read as a
//! claim, on which line, anchored to what; bad input named by line; write-back marking flipped
//! claims once, as additions only.

use std::path::{Path, PathBuf};

use claimflow::check::claim::{Anchor, CheckResult, MemoryClaim, Verdict};
use claimflow::check::sources::{SourceError, read_sources, read_sources_at};
use claimflow::check::write_back::{Invalidation, write_back};

use crate::common::git::FixtureRepo;

/// The fixture files, repository-relative, as committed.
fn fixture_files() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/check/fixtures");
    let mut files = Vec::new();
    let mut pending = vec![root.clone()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                files.push((relative, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

pub(crate) fn fixture_repository() -> FixtureRepo {
    let files = fixture_files();
    let changes: Vec<(&str, Option<&str>)> = files
        .iter()
        .map(|(path, text)| (path.as_str(), Some(text.as_str())))
        .collect();
    let mut repository = FixtureRepo::new();
    repository.commit("urlkit with its memory files", &changes);
    repository.checkout();
    repository
}

fn explicit(root: &Path) -> Vec<PathBuf> {
    vec![root.join("memory.json"), root.join("claims.jsonl")]
}

fn anchor_text(anchor: &Anchor) -> String {
    match anchor {
        Anchor::File { path } => path.clone(),
        Anchor::Symbol { path, name } => format!("{path}::{name}"),
    }
}

fn table(claims: &[MemoryClaim]) -> String {
    claims
        .iter()
        .map(|claim| {
            let anchors: Vec<String> = claim.anchors.iter().map(anchor_text).collect();
            format!(
                "{} {} {:?} [{}] {}\n  {}",
                claim.source,
                claim.id,
                claim.format,
                anchors.join(", "),
                [
                    claim.test.as_deref().map(|test| format!("test={test}")),
                    claim.check.as_ref().map(|_| "check".to_string())
                ]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" "),
                claim.text
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_memory_file_kind_yields_claims_with_lines_and_anchors() {
    let repository = fixture_repository();
    let root = repository.path();
    let claims = read_sources(root, &explicit(root), true).unwrap();
    insta::assert_snapshot!("check_sources_claims", table(&claims));
    let again = read_sources(root, &explicit(root), true).unwrap();
    assert_eq!(
        claims.iter().map(|claim| &claim.id).collect::<Vec<_>>(),
        again.iter().map(|claim| &claim.id).collect::<Vec<_>>(),
        "ids are stable across runs"
    );
}

#[test]
fn names_a_range_removed_still_anchor_when_both_revisions_are_read() {
    let mut repository = fixture_repository();
    let before = repository.head();
    repository.commit("drop the cache", &[("src/urlkit/cache.py", None)]);
    repository.checkout();
    let after = repository.head();
    let root = repository.path().to_path_buf();
    let rule = root.join(".cursor/rules/python.mdc");
    let lookup = |claims: &[MemoryClaim]| {
        claims
            .iter()
            .find(|claim| claim.text.contains("cache.lookup"))
            .map(|claim| claim.anchors.iter().map(anchor_text).collect::<Vec<_>>())
    };
    let now = read_sources(&root, std::slice::from_ref(&rule), false).unwrap();
    assert_eq!(
        lookup(&now),
        Some(vec!["*.py".to_string(), "src/urlkit/**".to_string()])
    );
    let range = read_sources_at(&root, &[rule], None, false, &[before, after]).unwrap();
    assert_eq!(
        lookup(&range),
        Some(vec![
            "src/urlkit/cache.py::lookup".to_string(),
            "*.py".to_string(),
            "src/urlkit/**".to_string()
        ])
    );
}

#[test]
fn a_malformed_record_is_rejected_naming_its_line() {
    let repository = fixture_repository();
    let root = repository.path();
    std::fs::write(
        root.join("claims.jsonl"),
        "{\"id\": \"a\", \"text\": \"x\"}\n{\"id\": \"b\", \"text\": }\n",
    )
    .unwrap();
    let error = read_sources(root, &explicit(root), false).unwrap_err();
    assert!(
        matches!(error, SourceError::BadJson { line: 2, .. }),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .starts_with("parse claims.jsonl:2: bad JSON"),
        "{error}"
    );
}

#[test]
fn write_back_marks_flipped_claims_once_as_additions_only() {
    let repository = fixture_repository();
    let root = repository.path();
    let commit = Invalidation::of_commit(repository.repository(), repository.head()).unwrap();
    let write = || {
        let claims = read_sources(root, &explicit(root), true).unwrap();
        let results: Vec<CheckResult> = claims
            .iter()
            .map(|claim| CheckResult {
                id: claim.id.clone(),
                source: claim.source.to_string(),
                text: claim.text.clone(),
                verdict: match claim.text.contains("parse_url") {
                    true => Verdict::Flipped,
                    false => Verdict::Held,
                },
                decided_by: None,
                evidence: "parse_url changed".to_string(),
                tokens_in: 0,
                tokens_out: 0,
                cost: 0.0,
            })
            .collect();
        write_back(
            &claims,
            &results,
            &commit,
            |result| result.evidence.clone(),
            claimflow::check::memory_file::DEFAULT_MAX_SIZE,
        )
        .unwrap()
    };
    let first = write();
    assert_eq!(first.files.len(), 4, "{first:?}");
    let second = write();
    assert!(
        second.files.is_empty() && second.marked.is_empty(),
        "{second:?}"
    );
    assert_eq!(second.already_marked.len(), first.marked.len());
    let mut options = git2::DiffOptions::new();
    let diff = repository
        .repository()
        .diff_index_to_workdir(None, Some(&mut options))
        .unwrap();
    let stats = diff.stats().unwrap();
    assert_eq!(stats.files_changed(), 4);
    let markdown = std::fs::read_to_string(root.join("CLAUDE.md")).unwrap();
    let without_notes: Vec<&str> = markdown
        .lines()
        .filter(|line| !line.contains("<!-- claimflow: false since"))
        .collect();
    let original = fixture_files()
        .into_iter()
        .find(|(path, _)| path == "CLAUDE.md")
        .unwrap()
        .1;
    assert_eq!(without_notes, original.lines().collect::<Vec<_>>());
    assert_eq!(markdown.lines().count() - original.lines().count(), 2);
    assert!(markdown.contains(&format!(
        "- `parse_url()` returns a `Url` tuple of scheme, host and path.\n  <!-- claimflow: false since {}: parse_url changed",
        &commit.commit[..7]
    )));
}
