//! Slot worktrees: a checkout holds exactly a commit's tree, whatever the last run left behind, and
//! restoring the parent's test files brings back modified and deleted files and removes added ones.

use std::path::Path;

use claimflow::mining::TestFileRules;
use claimflow::oracle::Worktree;
use claimflow::oracle::worktree::touched_test_files;

use super::library::Library;

fn files_under(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    files.sort();
    files
}

#[test]
fn checkout_removes_what_runs_left_behind_and_restores_tracked_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut library = Library::create(&dir.path().join("repo"));
    let case = library.import_error();
    let repository = &library.repo.repository;
    let mut worktree = Worktree::new(dir.path().join("worktrees/oracle-0"));
    worktree.checkout(repository, case.parent).unwrap();
    let root = worktree.dir().to_path_buf();
    std::fs::create_dir_all(root.join("tests/__pycache__")).unwrap();
    std::fs::write(
        root.join("tests/__pycache__/test_core.cpython-311.pyc"),
        b"stale",
    )
    .unwrap();
    std::fs::write(root.join("pkg/core.pyc"), b"stale").unwrap();
    std::fs::write(root.join("output.txt"), b"left by a test").unwrap();
    // Unchanged between parent and child, so only the manifest's size and time can tell.
    std::fs::write(root.join("tests/test_store.py"), b"# edited by a test\n").unwrap();

    worktree.checkout(repository, case.commit).unwrap();
    insta::assert_snapshot!("checkout_of_the_child", files_under(&root).join("\n"));
    assert!(
        std::fs::read_to_string(root.join("tests/test_store.py"))
            .unwrap()
            .starts_with("from pkg.core import Store")
    );

    let touched = touched_test_files(
        repository,
        case.parent,
        case.commit,
        &TestFileRules::default(),
    )
    .unwrap();
    assert_eq!(touched, ["tests/test_core.py", "tests/test_legacy.py"]);
    worktree.restore(repository, case.parent, &touched).unwrap();
    assert!(root.join("tests/test_legacy.py").is_file());
    assert!(
        !std::fs::read_to_string(root.join("tests/test_core.py"))
            .unwrap()
            .starts_with("# Core tests.")
    );
}

#[test]
fn restoring_the_parent_removes_test_files_the_commit_added() {
    let dir = tempfile::tempdir().unwrap();
    let library = Library::create(&dir.path().join("repo"));
    let repository = &library.repo.repository;
    let mut worktree = Worktree::new(dir.path().join("worktrees/oracle-1"));
    worktree
        .checkout(repository, library.base_with_conftest)
        .unwrap();
    assert!(worktree.dir().join("tests/conftest.py").is_file());
    worktree
        .restore(repository, library.base, &["tests/conftest.py".to_string()])
        .unwrap();
    assert!(!worktree.dir().join("tests/conftest.py").exists());
}
