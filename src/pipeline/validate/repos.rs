//! The `repos:` section: which repositories a pipeline mines, where they come from, which branch.
//! Each entry is checked against [`RepoEntry`] (keys, types, allowed values), then here for what a
//! schema cannot say: a unique name that can be a file name, exactly one source, a URL git clones
//! or a directory that exists, a branch that is not `HEAD`, versions written as strings, globs.

use std::collections::BTreeMap;

use super::checker::{Checker, Fields};
use super::section;
use crate::pipeline::sections::RepoEntry;
use crate::pipeline::suggest;
use crate::pipeline::yaml::{Node, Value};
use crate::pipeline::{DiagnosticKind, RepoSource, RepoSpec};

/// Versions are checked here alone: a number there gets a hint of its own (YAML reads `3.10` as
/// `3.1`).
const OWN: &[&str] = &["python"];

/// The ways a repository can be given; exactly one is required.
const SOURCES: &[&str] = &["url", "path", "corpus"];

const SOURCE_HINT: &str = "give exactly one of `url:` (cloned), `path:` (a local repository) or \
                           `corpus:` (a scripted history shipped as text)";

/// What the section yielded.
#[derive(Debug, Default)]
pub struct Checked {
    /// The entries that are complete and valid.
    pub specs: Vec<RepoSpec>,
    /// Every name declared, valid entry or not, so steps can refer to them without cascading errors.
    pub names: Vec<String>,
}

/// Checks the `repos:` list.
pub fn check(checker: &mut Checker, node: &Node) -> Checked {
    let mut checked = Checked::default();
    let Some(items) = checker.list(node, "`repos`") else {
        return checked;
    };
    let mut first_lines: BTreeMap<String, usize> = BTreeMap::new();
    for (index, item) in items.iter().enumerate() {
        let Some(fields) = checker.map(item, &format!("repository #{}", index + 1)) else {
            continue;
        };
        let name = fields
            .entry("name")
            .and_then(|entry| match &entry.value.value {
                Value::String(name) => Some((name.clone(), entry.value.mark)),
                _ => None,
            });
        let owner = match &name {
            Some((name, _)) => format!("repository `{name}`"),
            None => format!("repository #{}", index + 1),
        };
        let before = checker.count();
        section::check::<RepoEntry>(
            checker,
            &fields,
            fields.mark,
            &owner,
            &section::context(&[]),
            OWN,
        );
        if let Some((name, mark)) = &name
            && checker.file_name(name, *mark, "repository")
        {
            if let Some(first) = first_lines.get(name) {
                checker.error(
                    *mark,
                    format!("repository `{name}` is declared twice (first at line {first})"),
                    Some("repository names must be unique; rename or remove one of them".into()),
                );
            } else {
                first_lines.insert(name.clone(), mark.line);
                checked.names.push(name.clone());
            }
        }
        let source = source(checker, &fields, &owner);
        branch(checker, &fields, &owner);
        if let Some(node) = fields.get("python") {
            python(checker, node, &owner);
        }
        if let Some(node) = fields.get("test_patterns") {
            test_patterns(checker, node, &owner);
        }
        if checker.count() != before {
            continue;
        }
        let (Some(source), Some(entry)) = (
            source,
            section::parse::<RepoEntry>(checker, &fields, fields.mark, &owner),
        ) else {
            continue;
        };
        checked.specs.push(RepoSpec {
            name: entry.name,
            source,
            branch: entry.branch,
            split: entry.split,
            python: entry.python.unwrap_or_default(),
            test_patterns: entry.test_patterns,
            dependencies: entry.dependencies.unwrap_or_default(),
            merges: entry.merges,
            releases: entry.releases.unwrap_or_default(),
        });
    }
    checked
}

/// Exactly one of `url`, `path`, `corpus`; local ones must exist.
fn source(checker: &mut Checker, fields: &Fields, owner: &str) -> Option<RepoSource> {
    let given: Vec<_> = fields
        .entries()
        .filter(|entry| SOURCES.contains(&entry.key.as_str()))
        .collect();
    let [entry] = given.as_slice() else {
        if given.is_empty() {
            checker.error(
                fields.mark,
                format!("{owner} does not say where it comes from"),
                Some(SOURCE_HINT.to_string()),
            );
        } else {
            let keys: Vec<&str> = given.iter().map(|entry| entry.key.as_str()).collect();
            checker.error(
                given[1].key_mark,
                format!(
                    "{owner} gives more than one source: {}",
                    suggest::quoted_list(&keys)
                ),
                Some(SOURCE_HINT.to_string()),
            );
        }
        return None;
    };
    // Its type was checked against the schema.
    let Value::String(text) = &entry.value.value else {
        return None;
    };
    let text = text.clone();
    if text.is_empty() {
        checker.error(
            entry.value.mark,
            format!("`{}` of {owner} is empty", entry.key),
            Some(SOURCE_HINT.to_string()),
        );
        return None;
    }
    match entry.key.as_str() {
        "url" if !is_url(&text) => {
            checker.error(
                entry.value.mark,
                format!("`url` of {owner} is `{text}`, which is not a repository URL"),
                Some(
                    "write a URL git can clone, e.g. `https://github.com/owner/name.git` or \
                     `git@github.com:owner/name.git`; for a local repository use `path:`"
                        .to_string(),
                ),
            );
            None
        }
        "url" => Some(RepoSource::Url(text)),
        key => {
            let path = checker.root.join(&text);
            if !path.is_dir() {
                let kind = if path.exists() {
                    DiagnosticKind::Invalid
                } else {
                    DiagnosticKind::MissingDirectory(text.clone().into())
                };
                checker.error_of_kind(
                    kind,
                    entry.value.mark,
                    format!("`{key}` of {owner} names `{text}`, which is not a directory"),
                    Some(
                        "relative paths resolve against the project root (where claimflow runs, \
                         or -C DIR)"
                            .to_string(),
                    ),
                );
                return None;
            }
            Some(if key == "path" {
                RepoSource::Path(path)
            } else {
                RepoSource::Corpus(path)
            })
        }
    }
}

/// `branch:` (required by the schema) must name a branch: walking whatever `HEAD` points at
/// would make results depend on checkouts.
fn branch(checker: &mut Checker, fields: &Fields, owner: &str) {
    let Some(node) = fields.get("branch") else {
        return;
    };
    let Value::String(branch) = &node.value else {
        return;
    };
    if branch.is_empty() || branch == "HEAD" {
        checker.error(
            node.mark,
            format!("`branch` of {owner} must name a branch, found `{branch}`"),
            Some("HEAD is never walked; name the branch, e.g. `branch: main`".to_string()),
        );
    }
}

/// `python:`, a list of version strings; numbers get a hint, since YAML reads `3.10` as `3.1`.
fn python(checker: &mut Checker, node: &Node, owner: &str) {
    let label = format!("`python` of {owner}");
    let Some(items) = checker.list(node, &label) else {
        return;
    };
    for item in items {
        match &item.value {
            Value::String(_) => {}
            Value::Float(_) | Value::Integer(_) => {
                checker.error(
                    item.mark,
                    format!("each version in {label} must be a string, found a number"),
                    Some(
                        "quote versions, e.g. `python: [\"3.11\", \"3.10\"]`: YAML reads 3.10 as \
                         the number 3.1"
                            .to_string(),
                    ),
                );
            }
            _ => checker.wrong_type(item, &format!("each version in {label}"), "a string"),
        }
    }
}

/// `test_patterns:` (a list of strings, by the schema): each one a valid glob.
fn test_patterns(checker: &mut Checker, node: &Node, owner: &str) {
    let Value::List(items) = &node.value else {
        return;
    };
    for item in items {
        let Value::String(pattern) = &item.value else {
            continue;
        };
        if let Err(error) = glob::Pattern::new(pattern) {
            checker.error(
                item.mark,
                format!("`{pattern}` in `test_patterns` of {owner} is not a valid glob: {error}"),
                Some("write globs such as `tests/**/*.py` or `test_*.py`".to_string()),
            );
        }
    }
}

/// Whether `text` is a URL git clones: `scheme://host/path` (http, https, git, ssh, file) or the
/// scp-like `user@host:path`.
fn is_url(text: &str) -> bool {
    if text.chars().any(char::is_whitespace) {
        return false;
    }
    if let Some((scheme, rest)) = text.split_once("://") {
        let known = ["http", "https", "git", "ssh", "file", "git+ssh", "ssh+git"];
        return known.contains(&scheme)
            && (scheme == "file" || rest.split('/').next().is_some_and(|host| !host.is_empty()));
    }
    match text.split_once(':') {
        Some((user_host, path)) => {
            user_host.contains('@')
                && !path.is_empty()
                && user_host.split('@').all(|part| !part.is_empty())
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::is_url;

    #[test]
    fn urls_git_clones_are_urls_and_prose_is_not() {
        for url in [
            "https://github.com/tkem/cachetools.git",
            "git@github.com:owner/name.git",
            "ssh://git@host/owner/name",
            "file:///srv/repos/name",
        ] {
            assert!(is_url(url), "{url}");
        }
        for text in [
            "not a url",
            "github.com/owner/name",
            "https://",
            "owner/name",
            "ftp://x/y",
        ] {
            assert!(!is_url(text), "{text}");
        }
    }
}
