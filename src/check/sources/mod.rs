//! Reading claims from where they live. This reader knows claimflow's own JSON Lines only
//! (`id`, `text`, `anchors`, `test`, `check`, one claim per line); the readers of the memory
//! files coding agents keep (Markdown, `.mdc` rules, Copilot, mem0 and Graphiti records) and
//! `--discover` live beside it in the full set of readers.
//!
//! An anchor is written `path` (a file or glob), `path::Name.attr` (a symbol of that file) or
//! `::Name` (a symbol wherever it is defined).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::claim::{Anchor, MemoryClaim, SourceFormat, SourceSpan};

/// Why claims could not be read; the message names the file and line.
#[derive(Debug, thiserror::Error)]
pub enum SourcesError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: {problem}")]
    Record {
        path: String,
        line: usize,
        problem: String,
    },
    #[error("no claim sources: name a claims file (JSON Lines: id, text, anchors, test, check)")]
    Nothing,
    #[error(
        "--discover finds Markdown memory files, which this build does not read; name JSON Lines claim files instead"
    )]
    Discover,
}

/// One line of a JSON Lines claim file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    #[serde(default)]
    id: Option<String>,
    text: String,
    #[serde(default)]
    anchors: Vec<String>,
    #[serde(default)]
    test: Option<String>,
    #[serde(default)]
    check: Option<String>,
    // Written back on a flipped claim; read so a marked file still reads.
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "read so that a marked file is accepted; not used to decide"
    )]
    invalidated_at: Option<serde_json::Value>,
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "read so that a marked file is accepted; not used to decide"
    )]
    invalidated_by: Option<serde_json::Value>,
}

/// Every claim of `paths` (JSON Lines files), each keeping its file (relative to `repo_root`
/// when inside it) and line.
pub fn read_sources(
    repo_root: &Path,
    paths: &[PathBuf],
    discover: bool,
) -> Result<Vec<MemoryClaim>, SourcesError> {
    if discover {
        return Err(SourcesError::Discover);
    }
    if paths.is_empty() {
        return Err(SourcesError::Nothing);
    }
    let mut claims = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(path).map_err(|source| SourcesError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.clone());
        let shown = absolute
            .strip_prefix(repo_root)
            .map(Path::to_path_buf)
            .unwrap_or(absolute);
        for (number, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let problem = |problem: String| SourcesError::Record {
                path: path.display().to_string(),
                line: number + 1,
                problem,
            };
            let record: Record = serde_json::from_str(line)
                .map_err(|error| problem(format!("not a claim record: {error}")))?;
            if record.text.trim().is_empty() {
                return Err(problem("`text` is empty".to_string()));
            }
            let id = record.id.clone().unwrap_or_else(|| {
                let normalized = record.text.split_whitespace().collect::<Vec<_>>().join(" ");
                let digest = blake3::hash(format!("{}\n{normalized}", shown.display()).as_bytes());
                digest.to_hex()[..16].to_string()
            });
            claims.push(MemoryClaim {
                id,
                text: record.text,
                source: SourceSpan {
                    file: shown.clone(),
                    line: (number + 1) as u32,
                },
                format: SourceFormat::Jsonl,
                anchors: record
                    .anchors
                    .iter()
                    .map(|anchor| parse_anchor(anchor))
                    .collect(),
                test: record.test,
                check: record.check,
                record_key: record.id,
            });
        }
    }
    Ok(claims)
}

/// `path`, `path::Name` or `::Name`.
fn parse_anchor(text: &str) -> Anchor {
    match text.split_once("::") {
        Some((path, name)) => Anchor::Symbol {
            path: path.to_string(),
            name: name.to_string(),
        },
        None => Anchor::File {
            path: text.to_string(),
        },
    }
}
