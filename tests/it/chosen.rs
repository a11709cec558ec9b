//! Chosen commits in place of a ranking, and bad repository input found at planning: the binary
//! run on pipelines over git2-written fixture repositories.

use crate::common::git::FixtureRepo;
use crate::common::project::Project;
use claimflow::records::CommitRecord;

const CACHE_V1: &str = "def get(key):\n    return key\n";
const TEST_V1: &str = "\
from pkg import cache


def test_get():
    assert cache.get(1) == 1
    assert cache.get(2) == 2
    assert cache.get(3) == 3
";

/// `main`: add, a fix deleting one assertion, a change deleting two, a source-only commit, and
/// the merge of `feature`, whose own commit is not on main's first-parent history.
fn history() -> FixtureRepo {
    let mut repo = FixtureRepo::new();
    repo.commit(
        "Add cache",
        &[
            ("pkg/cache.py", Some(CACHE_V1)),
            ("tests/test_cache.py", Some(TEST_V1)),
        ],
    )
    .commit(
        "Fix get",
        &[
            ("pkg/cache.py", Some("def get(key):\n    return key or 0\n")),
            (
                "tests/test_cache.py",
                Some(&TEST_V1.replace("    assert cache.get(3) == 3\n", "")),
            ),
        ],
    )
    .commit(
        "Change get",
        &[
            (
                "pkg/cache.py",
                Some("def get(key, default=None):\n    return default\n"),
            ),
            (
                "tests/test_cache.py",
                Some(
                    "from pkg import cache\n\n\ndef test_get():\n    assert cache.get(1, 1) == 1\n",
                ),
            ),
        ],
    )
    .commit("Docs", &[("pkg/README.md", Some("cache\n"))])
    .branch("feature")
    .commit(
        "Feature work",
        &[
            ("pkg/extra.py", Some("x = 1\n")),
            (
                "tests/test_extra.py",
                Some("def test_x():\n    assert True\n"),
            ),
        ],
    )
    .switch("main")
    .merge(
        "Merge feature",
        "feature",
        &[
            ("pkg/extra.py", Some("x = 1\n")),
            (
                "tests/test_extra.py",
                Some("def test_x():\n    assert True\n"),
            ),
        ],
    );
    repo
}

/// A pipeline over `repo` (as a `path:` entry, branch `main`) whose `rank` step takes `with`,
/// beside a `command` step that writes `marker.txt` when it runs.
fn pipeline(project: &Project, repo: &FixtureRepo, with: &str) {
    project.file(
        "pipeline.yaml",
        &format!(
            "version: 1\nname: chosen\nrepos:\n  - {{name: r, path: {}, branch: main}}\nsteps:\n  \
             rank: {{uses: rank-commits, with: {with}}}\n  \
             marker: {{uses: command, with: {{run: 'echo ran > marker.txt', outputs: [marker.txt]}}}}\n",
            repo.path().display()
        ),
    );
}

fn records(project: &Project) -> Vec<CommitRecord> {
    project
        .read("results/chosen/commits.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn short(oid: git2::Oid) -> String {
    oid.to_string()[..10].to_string()
}

/// The commit of `repo` whose subject is `subject`.
fn commit(repo: &FixtureRepo, subject: &str) -> git2::Oid {
    *repo
        .commits()
        .iter()
        .find(|oid| repo.repository().find_commit(**oid).unwrap().summary() == Some(subject))
        .unwrap()
}

/// Replaces every commit id of `repo` (full or abbreviated) in `text` with its subject.
fn redact(repo: &FixtureRepo, text: &str) -> String {
    let mut text = text.replace(&repo.path().display().to_string(), "[REPO]");
    for oid in repo.commits() {
        let subject = repo
            .repository()
            .find_commit(*oid)
            .unwrap()
            .summary()
            .unwrap()
            .to_string();
        text = text
            .replace(&oid.to_string(), &format!("[{subject}]"))
            .replace(&short(*oid), &format!("[{subject}]"));
    }
    text
}

#[test]
fn listed_commits_replace_the_ranking_and_keep_the_listed_order() {
    let repo = history();
    let project = Project::new();
    let (fix, change, docs) = (
        commit(&repo, "Fix get"),
        commit(&repo, "Change get"),
        commit(&repo, "Docs"),
    );
    // Ranked, "Change get" (2 assertions deleted) comes before "Fix get" (1); listed, the list wins,
    // and a commit ranking would never pick ("Docs": no test file) can be labelled again too.
    pipeline(
        &project,
        &repo,
        &format!(
            "{{commits: {{r: [{}, {}, {}]}}}}",
            fix,
            short(change),
            short(docs)
        ),
    );
    project.ok(&["run", "pipeline.yaml"]);
    let listed: Vec<(u32, String, String, f64)> = records(&project)
        .into_iter()
        .map(|record| (record.rank, record.commit, record.subject, record.score))
        .collect();
    assert_eq!(
        listed,
        [
            (1, fix.to_string(), "Fix get".to_string(), 1.0),
            (2, change.to_string(), "Change get".to_string(), 2.0),
            (3, docs.to_string(), "Docs".to_string(), 0.0),
        ]
    );

    // The same list from a file of `repo commit` lines gives the same records.
    let from_inline = project.read("results/chosen/commits.jsonl");
    project.file(
        "chosen.txt",
        &format!(
            "# chosen\nr {fix}\nr {}  # two deleted\n\nr {}\n",
            short(change),
            short(docs)
        ),
    );
    pipeline(&project, &repo, "{commits_file: chosen.txt}");
    project.ok(&["run", "pipeline.yaml"]);
    assert_eq!(project.read("results/chosen/commits.jsonl"), from_inline);
}

#[test]
fn a_listed_merge_is_ranked_against_its_first_parent() {
    let repo = history();
    let project = Project::new();
    let merge = commit(&repo, "Merge feature");
    pipeline(&project, &repo, &format!("{{commits: {{r: [{merge}]}}}}"));
    project.ok(&["run", "pipeline.yaml"]);
    let records = records(&project);
    assert_eq!(records.len(), 1);
    assert!(records[0].merge);
    assert_eq!(records[0].parent, commit(&repo, "Docs").to_string());
    assert_eq!(records[0].test_files, ["tests/test_extra.py"]);
}

/// Runs the pipeline expecting exit code 2 before any step ran, and returns stderr redacted.
fn refused(project: &Project, repo: &FixtureRepo) -> String {
    let ran = project.run(&["run", "pipeline.yaml"]);
    assert_eq!(ran.code, 2, "{}\n{}", ran.stdout, ran.stderr);
    assert!(
        !project.path("marker.txt").exists(),
        "a step ran before the input was checked"
    );
    assert!(
        !project.path("results").exists(),
        "a result was written before the input was checked"
    );
    // The run's header (which protections test processes get) comes first; the error is the rest.
    let errors: Vec<&str> = ran
        .stderr
        .lines()
        .skip_while(|line| !line.starts_with("error:"))
        .collect();
    redact(repo, errors.join("\n").trim())
}

#[test]
fn a_listed_commit_off_the_first_parent_history_stops_the_run_before_any_step() {
    let repo = history();
    let project = Project::new();
    let side = commit(&repo, "Feature work");
    pipeline(
        &project,
        &repo,
        &format!("{{commits: {{r: [{}, {side}]}}}}", commit(&repo, "Fix get")),
    );
    insta::assert_snapshot!(refused(&project, &repo), @r#"error: step `rank`: repository `r`: item 2 of `commits.r` in step `rank`: commit `[Feature work]` is not on the first-parent history of branch `main` (tip [Merge feature]): list commits that `git log --first-parent main` shows; a commit of a merged side branch is reached through its merge"#);
}

#[test]
fn a_listed_commit_the_repository_lacks_stops_the_run_before_any_step() {
    let repo = history();
    let project = Project::new();
    project.file("chosen.txt", "r 0123456789abcdef\n");
    pipeline(&project, &repo, "{commits_file: chosen.txt}");
    insta::assert_snapshot!(refused(&project, &repo), @r#"error: step `rank`: repository `r`: chosen.txt:1: commit `0123456789abcdef` is not a commit of this repository (object not found - no match for prefix (0123456789abcdef))"#);
}

#[test]
fn a_commit_listed_twice_or_the_root_commit_stops_the_run() {
    let repo = history();
    let project = Project::new();
    let fix = commit(&repo, "Fix get");
    pipeline(
        &project,
        &repo,
        &format!("{{commits: {{r: [{fix}, {}]}}}}", short(fix)),
    );
    insta::assert_snapshot!(refused(&project, &repo), @r#"error: step `rank`: repository `r`: item 2 of `commits.r` in step `rank`: commit `[Fix get]` is listed twice (first at item 1 of `commits.r` in step `rank`)"#);
    pipeline(
        &project,
        &repo,
        &format!("{{commits: {{r: [{}]}}}}", commit(&repo, "Add cache")),
    );
    insta::assert_snapshot!(refused(&project, &repo), @r#"error: step `rank`: repository `r`: item 1 of `commits.r` in step `rank`: commit `[Add cache]` is the root commit: it has no parent to mine claims at"#);
}

#[test]
fn a_listed_merge_with_merges_skipped_stops_the_run() {
    let repo = history();
    let project = Project::new();
    pipeline(
        &project,
        &repo,
        &format!(
            "{{merges: skip, commits: {{r: [{}]}}}}",
            commit(&repo, "Merge feature")
        ),
    );
    insta::assert_snapshot!(refused(&project, &repo), @r#"error: step `rank`: repository `r`: item 1 of `commits.r` in step `rank`: commit `[Merge feature]` is a merge, and `merges: skip` leaves merges out: set `merges: include` or list another commit"#);
}

#[test]
fn an_unknown_branch_fails_at_planning_with_the_branches_there_are() {
    let repo = history();
    let project = Project::new();
    project.file(
        "pipeline.yaml",
        &format!(
            "version: 1\nname: chosen\nrepos:\n  - {{name: r, path: {}, branch: mian}}\nsteps:\n  \
             rank: {{uses: rank-commits}}\n  \
             marker: {{uses: command, with: {{run: 'echo ran > marker.txt', outputs: [marker.txt]}}}}\n",
            repo.path().display()
        ),
    );
    insta::assert_snapshot!(refused(&project, &repo), @r#"error: step `rank`: branch `mian` not found in repository `r` (looked for refs/heads/mian and refs/remotes/origin/mian; HEAD is never used); set `branch:` to one it has: `feature`, `main` (did you mean `main`?)"#);
    // `plan` checks the same before it plans anything.
    let ran = project.run(&["plan", "pipeline.yaml"]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("did you mean `main`?"),
        "{}",
        ran.stderr
    );
}

/// A pipeline whose one repository is `url:` `url` on branch `branch`.
fn url_pipeline(project: &Project, url: &str, branch: &str) {
    project.file(
        "pipeline.yaml",
        &format!(
            "version: 1\nname: chosen\nrepos:\n  - {{name: r, url: \"{url}\", branch: {branch}}}\n\
             steps:\n  rank: {{uses: rank-commits}}\n  \
             marker: {{uses: command, with: {{run: 'echo ran > marker.txt', outputs: [marker.txt]}}}}\n"
        ),
    );
}

/// Nothing of a failed first clone is left in the workdir.
fn no_clone_left(project: &Project) {
    let repos = project.path(".claimflow/repos");
    let left: Vec<_> = std::fs::read_dir(&repos)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.file_name())
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "left in {}: {left:?}", repos.display());
}

#[test]
fn an_unreachable_url_fails_at_planning_and_leaves_no_clone() {
    let project = Project::new();
    // Port 9 (discard) on the loopback: nothing listens there, the connection is refused.
    url_pipeline(&project, "http://127.0.0.1:9/nothing.git", "main");
    let repo = FixtureRepo::new();
    let stderr = refused(&project, &repo);
    assert!(
        stderr.starts_with(
            "error: step `rank`: repository `r`: cannot fetch branch `main` from \
             http://127.0.0.1:9/nothing.git: "
        ),
        "{stderr}"
    );
    assert!(
        stderr.ends_with(
            "(check the URL and the network; a `path:` entry reads a local clone instead)"
        ),
        "{stderr}"
    );
    no_clone_left(&project);

    let missing = tempfile::tempdir().unwrap();
    let url = format!("file://{}/absent.git", missing.path().display());
    url_pipeline(&project, &url, "main");
    let stderr = refused(&project, &repo);
    assert!(
        stderr.contains(&format!("cannot fetch branch `main` from {url}")),
        "{stderr}"
    );
    no_clone_left(&project);
}

#[test]
fn a_url_without_the_branch_fails_at_planning_and_leaves_no_clone() {
    let repo = history();
    let project = Project::new();
    let url = format!("file://{}", repo.path().display());
    url_pipeline(&project, &url, "mian");
    let stderr = refused(&project, &repo);
    assert_eq!(
        stderr,
        "error: step `rank`: branch `mian` not found in repository `r` (looked for \
         refs/heads/mian and refs/remotes/origin/mian; HEAD is never used); set `branch:` to one it has: `feature`, `main` (did you mean `main`?)"
    );
    no_clone_left(&project);
    // The right branch then clones and ranks.
    url_pipeline(&project, &url, "main");
    project.ok(&["run", "pipeline.yaml"]);
    assert!(project.path(".claimflow/repos/r/HEAD").exists());
}

#[test]
fn bad_commit_lists_are_found_when_the_pipeline_loads() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pipelines");
    let registry = claimflow::steps::Registry::builtin();
    insta::glob!("../pipelines/bad-commits", "*.yaml", |path| {
        let relative = path.strip_prefix(&root).unwrap();
        let problems = claimflow::pipeline::load(relative, &root, &registry)
            .expect_err("a bad commit list must not load");
        for problem in &problems.0 {
            assert!(problem.hint.is_some(), "no hint for: {problem}");
        }
        insta::assert_snapshot!(problems.to_string());
    });
}
