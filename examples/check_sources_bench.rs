//! What reading claim sources costs: 1,000 claims in claimflow JSON Lines (declared anchors, no
//! repository parsing) and 1,000 CLAUDE.md items whose code spans are resolved against a generated
//! repository of 200 Python files (4,200 definitions), which the readers index once per run.
//!
//! Usage: `cargo run --release --example check_sources_bench [claims] [files]`. Prints one JSON
//! line per format: the median of 5 reads, each by a fresh reader (so the index is rebuilt).

use std::path::Path;
use std::time::{Duration, Instant};

fn main() {
    let mut arguments = std::env::args()
        .skip(1)
        .map(|argument| argument.parse::<usize>().expect("a count"));
    let claims = arguments.next().unwrap_or(1000);
    let files = arguments.next().unwrap_or(200);
    let directory = tempfile::tempdir().expect("a temporary directory");
    let root = directory.path();
    generate(root, claims, files);
    for (format, path) in [("jsonl", "claims.jsonl"), ("markdown", "CLAUDE.md")] {
        let mut times: Vec<Duration> = Vec::new();
        let mut anchors = 0;
        for _ in 0..5 {
            let start = Instant::now();
            let read = claimflow::check::sources::read_sources(root, &[root.join(path)], false)
                .expect("readable claims");
            times.push(start.elapsed());
            assert_eq!(read.len(), claims);
            anchors = read.iter().map(|claim| claim.anchors.len()).sum::<usize>();
        }
        times.sort();
        println!(
            "{{\"format\": \"{format}\", \"claims\": {claims}, \"python_files\": {files}, \"anchors\": {anchors}, \"median_ms\": {:.1}}}",
            times[2].as_secs_f64() * 1000.0
        );
    }
}

/// A repository of `files` Python modules and two memory files of `claims` claims each.
fn generate(root: &Path, claims: usize, files: usize) {
    let repository = git2::Repository::init(root).expect("a repository");
    std::fs::create_dir_all(root.join("pkg")).expect("a package directory");
    for file in 0..files {
        let mut text = String::new();
        for function in 0..20 {
            text.push_str(&format!(
                "def f{file}_{function}(x):\n    return x + {function}\n\n\n"
            ));
        }
        text.push_str(&format!(
            "class C{file}:\n    def get(self):\n        return 1\n"
        ));
        std::fs::write(root.join(format!("pkg/m{file}.py")), text).expect("a module");
    }
    let mut markdown = String::from("# Notes\n\n");
    let mut jsonl = String::new();
    for claim in 0..claims {
        let (file, function) = (claim % files, claim % 20);
        markdown.push_str(&format!(
            "- `f{file}_{function}` returns its argument plus {function} (see `pkg/m{file}.py`).\n"
        ));
        jsonl.push_str(&format!(
            "{{\"id\": \"c{claim}\", \"text\": \"f{file}_{function} adds {function}\", \"anchors\": [\"pkg/m{file}.py::f{file}_{function}\"]}}\n"
        ));
    }
    std::fs::write(root.join("CLAUDE.md"), markdown).expect("CLAUDE.md");
    std::fs::write(root.join("claims.jsonl"), jsonl).expect("claims.jsonl");
    let mut index = repository.index().expect("the index");
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .expect("add the files");
    index.write().expect("write the index");
}
