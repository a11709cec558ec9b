//! Scores every commit of a branch's first-parent history, as `rank-commits` does, and prints one JSON
//! line per commit (newest first) plus a timing line on stderr. The benchmark (`benches/rank.py`)
//! compares these counts with PyDriller's.
//!
//! Usage: `cargo run --release --example rank -- REPOSITORY BRANCH [include|skip]`

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use claimflow::mining::repository::branch_tip;
use claimflow::mining::{Merges, TestFileRules, score_history};

fn main() -> anyhow::Result<()> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let (path, branch, merges) = match arguments.as_slice() {
        [path, branch] => (path, branch, Merges::Include),
        [path, branch, merges] => (
            path,
            branch,
            match merges.as_str() {
                "include" => Merges::Include,
                "skip" => Merges::Skip,
                other => bail!("merges must be include or skip, not `{other}`"),
            },
        ),
        _ => bail!("usage: rank REPOSITORY BRANCH [include|skip]"),
    };
    let path = PathBuf::from(path);
    let started = Instant::now();
    let repository = git2::Repository::open(&path)
        .with_context(|| format!("open repository {}", path.display()))?;
    let tip = branch_tip(&repository, "bench", branch)?;
    let history = score_history(&path, "bench", tip, &TestFileRules::default(), merges)?;
    let elapsed = started.elapsed();
    let mut out = String::new();
    for commit in &history {
        let line = serde_json::json!({
            "commit": commit.commit.to_string(),
            "merge": commit.merge,
            "assertions_deleted": commit.assertions_deleted,
            "deleted_assertion_lines": commit.deleted_assertion_lines,
            "candidate": commit.is_candidate(),
            "test_files": commit.test_files,
            "source_files": commit.source_files,
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    print!("{out}");
    eprintln!(
        "scored {} commits in {:.3}s",
        history.len(),
        elapsed.as_secs_f64()
    );
    Ok(())
}
