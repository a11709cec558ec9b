//! Chosen commits: an explicit list of commits in place of a ranking, so a published selection can
//! be reproduced, or one commit labelled again.
//!
//! A list is given per repository, inline (`commits: {repo: [id, …]}`) or as a file of
//! `repo commit` lines (`#` starts a comment). Every listed commit must be a commit of its
//! repository on the branch's first-parent history (the chain ranking walks), have a parent, and
//! be listed once; it keeps the listed order as its rank. Ids may be abbreviated (at least seven
//! hex digits); the full id is what enters keys and records.

use std::collections::{BTreeMap, HashSet};

use git2::{Oid, Repository};

use super::MiningError;
use super::history::{Merges, first_parent_chain};

/// One listed commit, as written, and where it was written (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub id: String,
    /// `commits_file.txt:3` or `` `commits` of step `rank` ``.
    pub place: String,
}

/// The fewest hex digits an abbreviated id may have.
pub const MIN_ABBREVIATION: usize = 7;

/// Why a list of commits cannot be read (before any repository is opened).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{place}: {message}")]
pub struct ListError {
    pub place: String,
    pub message: String,
}

/// Checks the shape of one written id: 7 to 40 hex digits.
pub fn check_id(id: &str) -> Result<(), String> {
    if id.len() < MIN_ABBREVIATION || id.len() > 40 || !id.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "`{id}` is not a commit id (give {MIN_ABBREVIATION} to 40 hex digits; branch and tag \
             names are not accepted, so the list means the same commits tomorrow)"
        ));
    }
    Ok(())
}

/// Reads a commits file: `repo commit` per line, blank lines and `#` comments ignored. `file` is
/// the name used in messages. Returns the commits per repository, in file order.
pub fn parse_file(file: &str, text: &str) -> Result<BTreeMap<String, Vec<Listed>>, ListError> {
    let mut listed: BTreeMap<String, Vec<Listed>> = BTreeMap::new();
    for (index, raw) in text.lines().enumerate() {
        let place = format!("{file}:{}", index + 1);
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [repo, id] = fields[..] else {
            return Err(ListError {
                place,
                message: format!(
                    "expected `<repository> <commit>`, found {} field{}: `{line}`",
                    fields.len(),
                    if fields.len() == 1 { "" } else { "s" }
                ),
            });
        };
        check_id(id).map_err(|message| ListError {
            place: place.clone(),
            message,
        })?;
        listed.entry(repo.to_string()).or_default().push(Listed {
            id: id.to_string(),
            place,
        });
    }
    Ok(listed)
}

/// Resolves the listed commits of repository `repo` against the first-parent history of `branch`
/// from `tip`, in the listed order. Every problem names the repository, the commit and where it
/// was listed.
pub fn resolve(
    repository: &Repository,
    repo: &str,
    branch: &str,
    tip: Oid,
    listed: &[Listed],
    merges: Merges,
) -> Result<Vec<Oid>, MiningError> {
    let chain: HashSet<Oid> = first_parent_chain(repository, repo, tip)?
        .into_iter()
        .collect();
    let problem = |entry: &Listed, message: String| MiningError::Chosen {
        repo: repo.to_string(),
        message: format!("{}: commit `{}` {message}", entry.place, entry.id),
    };
    let mut seen: BTreeMap<Oid, &Listed> = BTreeMap::new();
    let mut resolved = Vec::with_capacity(listed.len());
    for entry in listed {
        check_id(&entry.id).map_err(|message| MiningError::Chosen {
            repo: repo.to_string(),
            message: format!("{}: {message}", entry.place),
        })?;
        let commit = repository
            .find_commit_by_prefix(&entry.id)
            .map_err(|error| {
                let why = if error.code() == git2::ErrorCode::Ambiguous {
                    "is ambiguous: give more hex digits".to_string()
                } else {
                    format!("is not a commit of this repository ({})", error.message())
                };
                problem(entry, why)
            })?;
        let oid = commit.id();
        if !chain.contains(&oid) {
            return Err(problem(
                entry,
                format!(
                    "is not on the first-parent history of branch `{branch}` (tip {tip}): list \
                     commits that `git log --first-parent {branch}` shows; a commit of a merged \
                     side branch is reached through its merge"
                ),
            ));
        }
        if commit.parent_count() == 0 {
            return Err(problem(
                entry,
                "is the root commit: it has no parent to mine claims at".to_string(),
            ));
        }
        if commit.parent_count() > 1 && merges == Merges::Skip {
            return Err(problem(
                entry,
                "is a merge, and `merges: skip` leaves merges out: set `merges: include` or list \
                 another commit"
                    .to_string(),
            ));
        }
        if let Some(first) = seen.insert(oid, entry) {
            return Err(problem(
                entry,
                format!("is listed twice (first at {})", first.place),
            ));
        }
        resolved.push(oid);
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commits_file_keeps_file_order_and_skips_comments() {
        let text = "# chosen\nb 1234567abc\n\na 89abcdef0  # the fix\nb abcdef01\n";
        let listed = parse_file("c.txt", text).unwrap();
        let ids = |repo: &str| -> Vec<(String, String)> {
            listed[repo]
                .iter()
                .map(|entry| (entry.id.clone(), entry.place.clone()))
                .collect()
        };
        assert_eq!(
            ids("b"),
            [
                ("1234567abc".to_string(), "c.txt:2".to_string()),
                ("abcdef01".to_string(), "c.txt:5".to_string())
            ]
        );
        assert_eq!(ids("a"), [("89abcdef0".to_string(), "c.txt:4".to_string())]);
    }

    #[test]
    fn a_bad_line_names_its_place() {
        let error = parse_file("c.txt", "a 1234567\nb\n").unwrap_err();
        assert_eq!(error.place, "c.txt:2");
        let error = parse_file("c.txt", "a main\n").unwrap_err();
        assert_eq!(error.place, "c.txt:1");
        assert!(error.message.contains("not a commit id"), "{error}");
    }

    #[test]
    fn ids_are_seven_to_forty_hex_digits() {
        assert!(check_id("abc1234").is_ok());
        assert!(check_id(&"a".repeat(40)).is_ok());
        assert!(check_id("abc123").is_err());
        assert!(check_id(&"a".repeat(41)).is_err());
        assert!(check_id("HEAD~1x").is_err());
    }
}
