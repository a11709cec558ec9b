//! The demo corpus: its commit ids are the same wherever it is materialized, every commit's
//! tree is what the script says, and its tests, actually run, behave as `EXPECTED.md`
//! documents.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use claimflow::corpus::expected::{Expected, ExpectedRuns, load_expected};
use claimflow::corpus::{self, BRANCH, MaterializedRepo};
use git2::{Oid, Repository};

use crate::common::pytest_jobs::{PytestJob, PytestRun, run_pytest_jobs};
use crate::common::python_env::pytest_python;

/// Runs of a test documented as flaky: it passes each run with probability 0.53, so in 20 runs
/// both outcomes show up except with probability about 3e-6.
const FLAKY_RUNS: usize = 20;

fn demo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/demo")
}

fn materialize_demo(into: &Path) -> MaterializedRepo {
    corpus::materialize(&demo_dir(), &into.join("demo")).expect("materialize the demo corpus")
}

fn expected() -> Expected {
    load_expected(&demo_dir().join("EXPECTED.md")).expect("read EXPECTED.md")
}

#[test]
fn materializing_twice_gives_the_same_commit_ids() {
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    let one = materialize_demo(first.path());
    let other = materialize_demo(second.path());
    assert_eq!(one.commits, other.commits);
    assert_eq!(one.tip, other.tip);
    assert_eq!(one.branch, BRANCH);

    let listing: String = one
        .commits
        .iter()
        .map(|commit| format!("{} {} -> {}\n", commit.name, commit.subject, commit.id))
        .collect();
    insta::assert_snapshot!(listing);
}

#[test]
fn every_commit_tree_matches_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let materialized = materialize_demo(dir.path());
    let script = corpus::load(&demo_dir()).unwrap();
    let repository = Repository::open(&materialized.path).unwrap();

    // Walk first parents from the tip: the history is linear.
    let mut history = Vec::new();
    let mut next = Some(
        repository
            .find_commit(materialized.tip.parse().unwrap())
            .unwrap(),
    );
    while let Some(commit) = next {
        assert!(commit.parent_count() <= 1, "the history is linear");
        next = commit.parents().next();
        history.push(commit);
    }
    history.reverse();
    assert_eq!(history.len(), script.commits.len());

    for ((commit, scripted), files) in history.iter().zip(&script.commits).zip(script.trees()) {
        assert_eq!(commit.message(), Some(scripted.message().as_str()));
        assert_eq!(commit.author().name(), Some(scripted.author.name.as_str()));
        assert_eq!(
            commit.committer().email(),
            Some(scripted.author.email.as_str())
        );
        assert_eq!(commit.time().seconds(), scripted.time.seconds);
        assert_eq!(commit.time().offset_minutes(), scripted.time.offset_minutes);
        assert_eq!(
            tree_files(&repository, commit.id()),
            files,
            "the tree of {}",
            scripted.name
        );
    }
    // The working tree is the tip, byte for byte.
    for (path, contents) in script.trees().last().unwrap() {
        assert_eq!(
            &fs::read(materialized.path.join(path)).unwrap(),
            contents,
            "{path}"
        );
    }
}

#[test]
fn candidates_are_the_commits_expected_md_names() {
    let dir = tempfile::tempdir().unwrap();
    let materialized = materialize_demo(dir.path());
    let repository = Repository::open(&materialized.path).unwrap();
    let expected = expected();

    let documented: Vec<(&str, bool)> = expected
        .commits
        .iter()
        .map(|commit| (commit.name.as_str(), commit.candidate))
        .collect();
    let found: Vec<(&str, bool)> = materialized
        .commits
        .iter()
        .enumerate()
        .map(|(index, commit)| {
            let candidate = index > 0
                && is_candidate(
                    &repository,
                    materialized.commits[index - 1].id.parse().unwrap(),
                    commit.id.parse().unwrap(),
                );
            (commit.name.as_str(), candidate)
        })
        .collect();
    assert_eq!(found, documented);
}

/// The checkouts one candidate commit is run in.
struct CommitRuns<'a> {
    name: &'a str,
    /// Jobs (indices into the job list) per side; flaky claims get a repeated job of their own.
    parent: usize,
    child: usize,
    own: usize,
    repeated: BTreeMap<(&'a str, &'static str), usize>,
    /// Untouched test modules run for the tests they inherit from a touched helper.
    inheriting: Vec<String>,
    /// The test functions the touched helpers define.
    inherited_names: BTreeSet<String>,
}

#[test]
fn the_demo_corpus_behaves_as_documented() {
    let python = pytest_python();
    let dir = tempfile::tempdir().unwrap();
    let materialized = materialize_demo(dir.path());
    let repository = Repository::open(&materialized.path).unwrap();
    let expected = expected();
    let mut problems = Vec::new();

    // Lay out every checkout first, then run all of pytest in one process.
    let mut jobs = Vec::new();
    let mut add_job = |dir: PathBuf, args: Vec<String>, repeat: usize| {
        jobs.push(PytestJob { dir, args, repeat });
        jobs.len() - 1
    };
    let mut planned = Vec::new();
    for (index, commit) in materialized.commits.iter().enumerate().skip(1) {
        let parent: Oid = materialized.commits[index - 1].id.parse().unwrap();
        let child: Oid = commit.id.parse().unwrap();
        let touched = touched_test_files(&repository, parent, child);
        if touched.is_empty() {
            continue;
        }
        let parent_files = tree_files(&repository, parent);
        let child_files = tree_files(&repository, child);
        let modules_at = |files: &BTreeMap<String, Vec<u8>>| -> Vec<String> {
            touched
                .iter()
                .filter(|path| is_test_module(path) && files.contains_key(*path))
                .cloned()
                .collect()
        };
        let (inheriting, inherited_names) = inheriting_modules(&touched, &parent_files);
        let mut parent_modules = modules_at(&parent_files);
        parent_modules.extend(inheriting.iter().cloned());
        let mut own_modules = modules_at(&child_files);
        own_modules.extend(inheriting_modules(&touched, &child_files).0);

        let parent_dir = dir.path().join(format!("{}-parent", commit.name));
        write_tree(&parent_dir, &parent_files);
        // The child with the parent's touched test files restored: deleted ones come back,
        // added ones go.
        let mut restored = child_files.clone();
        for path in &touched {
            match parent_files.get(path) {
                Some(contents) => restored.insert(path.clone(), contents.clone()),
                None => restored.remove(path),
            };
        }
        let child_dir = dir.path().join(format!("{}-child", commit.name));
        write_tree(&child_dir, &restored);
        let own_dir = dir.path().join(format!("{}-own", commit.name));
        write_tree(&own_dir, &child_files);

        let mut repeated = BTreeMap::new();
        for claim in expected
            .claims
            .iter()
            .filter(|claim| claim.commit == commit.name)
        {
            for (side, runs, place) in [
                ("parent", &claim.parent, &parent_dir),
                ("child", &claim.child, &child_dir),
            ] {
                if runs == &ExpectedRuns::Flaky {
                    let job = add_job(place.clone(), vec![claim.node.clone()], FLAKY_RUNS);
                    repeated.insert((claim.node.as_str(), side), job);
                }
            }
        }
        planned.push(CommitRuns {
            name: &commit.name,
            parent: add_job(parent_dir, parent_modules.clone(), 1),
            child: add_job(child_dir, parent_modules, 1),
            own: add_job(own_dir, own_modules, 1),
            repeated,
            inheriting,
            inherited_names,
        });
    }
    let started = std::time::Instant::now();
    let results = run_pytest_jobs(&python, dir.path(), &jobs);
    eprintln!("{} pytest jobs ran in {:?}", jobs.len(), started.elapsed());

    let documented_commits: BTreeSet<&str> = expected
        .claims
        .iter()
        .map(|claim| claim.commit.as_str())
        .collect();
    let run_commits: BTreeSet<&str> = planned.iter().map(|commit| commit.name).collect();
    if !documented_commits.is_subset(&run_commits) {
        problems.push(format!(
            "claims are listed for commits that touch no test file: {:?}",
            documented_commits
                .difference(&run_commits)
                .collect::<Vec<_>>()
        ));
    }

    for commit in &planned {
        let claims: BTreeMap<&str, _> = expected
            .claims
            .iter()
            .filter(|claim| claim.commit == commit.name)
            .map(|claim| (claim.node.as_str(), claim))
            .collect();
        let once = |job: usize| &results[job][0];

        // At the parent, exactly the listed claims are collected: every test of the touched
        // modules, and the tests an untouched module inherits from a touched helper.
        let collected: BTreeSet<&str> = once(commit.parent)
            .outcomes
            .keys()
            .map(String::as_str)
            .filter(|node| {
                let file = node.split("::").next().unwrap_or(node);
                let function = node.rsplit("::").next().unwrap_or(node);
                !commit.inheriting.iter().any(|module| module == file)
                    || commit.inherited_names.contains(function)
            })
            .collect();
        let listed: BTreeSet<&str> = claims.keys().copied().collect();
        if collected != listed {
            problems.push(format!(
                "{}: the parent collects {collected:?}, EXPECTED.md lists {listed:?}",
                commit.name
            ));
        }

        for (node, claim) in &claims {
            for (side, documented, job) in [
                ("parent", &claim.parent, commit.parent),
                ("child", &claim.child, commit.child),
            ] {
                let observed = match commit.repeated.get(&(*node, side)) {
                    Some(repeated) => summarize(node, &results[*repeated]),
                    None => outcome(once(job), node),
                };
                if &observed != documented {
                    problems.push(format!(
                        "{} {node} at the {side}: EXPECTED.md says {documented:?}, observed {observed:?}",
                        commit.name
                    ));
                }
            }
        }

        // The child against its own tests: all pass, except where documented as broken.
        let own = once(commit.own);
        if !own.uncollectable.is_empty() {
            problems.push(format!(
                "{}: the child's own tests fail to collect: {:?}",
                commit.name, own.uncollectable
            ));
        }
        for node in own.outcomes.keys() {
            let documented = expected
                .own_failures
                .iter()
                .find(|failure| failure.commit == commit.name && &failure.node == node)
                .map_or(ExpectedRuns::Passed, |failure| failure.child.clone());
            let observed = outcome(own, node);
            if observed != documented {
                problems.push(format!(
                    "{} {node} in the child's own tests: EXPECTED.md says {documented:?}, observed {observed:?}",
                    commit.name
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the demo corpus differs from EXPECTED.md:\n{}",
        problems.join("\n")
    );
}

/// One run's outcome for `node`, in EXPECTED.md's terms.
fn outcome(run: &PytestRun, node: &str) -> ExpectedRuns {
    match run.outcomes.get(node).map(String::as_str) {
        Some("passed") => ExpectedRuns::Passed,
        Some("failed:AssertionError") => ExpectedRuns::Failed("assertion".into()),
        Some("error") => ExpectedRuns::Unknown("setup error".into()),
        Some(other) => match other.strip_prefix("failed:") {
            Some(exception) => ExpectedRuns::Failed(exception.into()),
            None => ExpectedRuns::Unknown(other.into()),
        },
        None => {
            let module = node.split("::").next().unwrap_or(node);
            if run.uncollectable.iter().any(|failed| failed == module) {
                ExpectedRuns::Unknown("collection error".into())
            } else {
                ExpectedRuns::Unknown("no result for the test".into())
            }
        }
    }
}

/// Repeated runs of one test: the common outcome, or `Flaky` when some pass and some fail.
fn summarize(node: &str, runs: &[PytestRun]) -> ExpectedRuns {
    let outcomes: Vec<ExpectedRuns> = runs.iter().map(|run| outcome(run, node)).collect();
    let passed = outcomes
        .iter()
        .filter(|o| **o == ExpectedRuns::Passed)
        .count();
    let failed = outcomes
        .iter()
        .filter(|o| matches!(o, ExpectedRuns::Failed(_)))
        .count();
    if passed > 0 && failed > 0 && passed + failed == outcomes.len() {
        ExpectedRuns::Flaky
    } else if outcomes.windows(2).all(|pair| pair[0] == pair[1]) {
        outcomes[0].clone()
    } else {
        ExpectedRuns::Unknown(format!("mixed outcomes: {outcomes:?}"))
    }
}

/// Every file of a commit's tree: path to contents.
fn tree_files(repository: &Repository, commit: Oid) -> BTreeMap<String, Vec<u8>> {
    let tree = repository.find_commit(commit).unwrap().tree().unwrap();
    let mut files = BTreeMap::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |parent, entry| {
        if entry.kind() == Some(git2::ObjectType::Blob) {
            let blob = repository.find_blob(entry.id()).unwrap();
            files.insert(
                format!("{parent}{}", entry.name().unwrap()),
                blob.content().to_vec(),
            );
        }
        git2::TreeWalkResult::Ok
    })
    .unwrap();
    files
}

fn write_tree(dir: &Path, files: &BTreeMap<String, Vec<u8>>) {
    for (path, contents) in files {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, contents).unwrap();
    }
}

fn is_test_file(path: &str) -> bool {
    path.starts_with("tests/")
}

fn is_test_module(path: &str) -> bool {
    is_test_file(path)
        && path
            .rsplit('/')
            .next()
            .is_some_and(|name| name.starts_with("test_") && name.ends_with(".py"))
}

/// The untouched test modules in `files` that import a touched helper (a test file that is not
/// a test module: `tests/mixins.py`), and the test functions those helpers define in `files`.
fn inheriting_modules(
    touched: &BTreeSet<String>,
    files: &BTreeMap<String, Vec<u8>>,
) -> (Vec<String>, BTreeSet<String>) {
    let helpers: Vec<&String> = touched
        .iter()
        .filter(|path| path.ends_with(".py") && !is_test_module(path) && files.contains_key(*path))
        .collect();
    let mut names = BTreeSet::new();
    let mut modules = Vec::new();
    for helper in helpers {
        let text = String::from_utf8_lossy(&files[helper]);
        names.extend(text.lines().filter_map(|line| {
            let name = line
                .trim_start()
                .strip_prefix("def test_")?
                .split('(')
                .next()?;
            Some(format!("test_{name}"))
        }));
        let stem = helper
            .rsplit('/')
            .next()
            .and_then(|name| name.strip_suffix(".py"))
            .unwrap_or(helper);
        for (path, contents) in files {
            let text = String::from_utf8_lossy(contents);
            let imports = text.contains(&format!(".{stem} import"))
                || text.contains(&format!("import {stem}"));
            if is_test_module(path) && !touched.contains(path) && imports {
                modules.push(path.clone());
            }
        }
    }
    modules.sort();
    modules.dedup();
    (modules, names)
}

/// The test files (modules, helpers, conftest) a commit adds, changes or deletes.
fn touched_test_files(repository: &Repository, parent: Oid, child: Oid) -> BTreeSet<String> {
    changed_files(repository, parent, child)
        .into_iter()
        .filter(|path| is_test_file(path))
        .collect()
}

fn changed_files(repository: &Repository, parent: Oid, child: Oid) -> BTreeSet<String> {
    let before = tree_files(repository, parent);
    let after = tree_files(repository, child);
    before
        .keys()
        .chain(after.keys())
        .filter(|path| before.get(*path) != after.get(*path))
        .cloned()
        .collect()
}

/// Mining's rule: a test file and a non-test Python file touched, and an assertion line
/// deleted from a test file.
fn is_candidate(repository: &Repository, parent: Oid, child: Oid) -> bool {
    let changed = changed_files(repository, parent, child);
    let touches_tests = changed.iter().any(|path| is_test_file(path));
    let touches_source = changed
        .iter()
        .any(|path| !is_test_file(path) && path.ends_with(".py"));
    let old_tree = repository.find_commit(parent).unwrap().tree().unwrap();
    let new_tree = repository.find_commit(child).unwrap().tree().unwrap();
    let diff = repository
        .diff_tree_to_tree(Some(&old_tree), Some(&new_tree), None)
        .unwrap();
    let mut deleted_assertions = 0;
    diff.print(git2::DiffFormat::Patch, |delta, _hunk, line| {
        let in_test = delta
            .old_file()
            .path()
            .is_some_and(|path| is_test_file(&path.to_string_lossy()));
        let text = String::from_utf8_lossy(line.content());
        if in_test && line.origin() == '-' && text.trim_start().starts_with("assert") {
            deleted_assertions += 1;
        }
        true
    })
    .unwrap();
    touches_tests && touches_source && deleted_assertions > 0
}
