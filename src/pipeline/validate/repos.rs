//! The `repos:` section: which repositories a pipeline mines, where they come from, which branch.

use std::collections::BTreeMap;

use super::checker::{Checker, Fields};
use crate::pipeline::suggest;
use crate::pipeline::yaml::{Node, Value};
use crate::pipeline::{DiagnosticKind, Merges, RepoSource, RepoSpec};

/// The keys a repository entry may have.
const KEYS: &[&str] = &[
    "name",
    "url",
    "path",
    "corpus",
    "branch",
    "split",
    "python",
    "test_patterns",
    "dependencies",
    "merges",
];

/// Mining settings kept raw in [`RepoSpec::extra`] for the step kinds that read them.
/// What `merges:` may say (rank-commits reads it: score merges against their first parent, or
/// skip them).
const MERGES: &[&str] = &["include", "skip"];

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
        let name = repository_name(checker, &fields, index);
        let owner = match &name {
            Some(name) => format!("repository `{name}`"),
            None => format!("repository #{}", index + 1),
        };
        if let Some(name) = &name {
            let line = fields
                .get("name")
                .map_or(item.mark.line, |node| node.mark.line);
            if let Some(first) = first_lines.get(name) {
                checker.error(
                    fields
                        .entry("name")
                        .map_or(item.mark, |entry| entry.value.mark),
                    format!("repository `{name}` is declared twice (first at line {first})"),
                    Some("repository names must be unique; rename or remove one of them".into()),
                );
            } else {
                first_lines.insert(name.clone(), line);
                checked.names.push(name.clone());
            }
        }
        checker.unknown_keys(&fields, KEYS, &owner);
        let source = source(checker, &fields, &owner);
        let branch = branch(checker, &fields, &owner);
        let split = fields
            .get("split")
            .map(|node| checker.string(node, &format!("`split` of {owner}")));
        let python = fields
            .get("python")
            .map(|node| python(checker, node, &owner));
        let test_patterns = fields
            .get("test_patterns")
            .map(|node| test_patterns(checker, node, &owner));
        let dependencies = fields
            .get("dependencies")
            .map(|node| checker.string_list(node, &format!("`dependencies` of {owner}")));
        let merges = fields
            .get("merges")
            .map(|node| merges(checker, node, &owner));
        let settings_clean = test_patterns.as_ref().is_none_or(Option::is_some)
            && dependencies.as_ref().is_none_or(Option::is_some)
            && merges.as_ref().is_none_or(Option::is_some);
        if let (Some(name), Some(source), Some(branch), Some(split), Some(python), true) = (
            name,
            source,
            branch,
            split.map_or(Some(None), |split| split.map(Some)),
            python.unwrap_or(Some(Vec::new())),
            settings_clean,
        ) {
            checked.specs.push(RepoSpec {
                name,
                source,
                branch,
                split,
                python,
                test_patterns: test_patterns.flatten(),
                dependencies: dependencies.flatten().unwrap_or_default(),
                merges: merges.flatten(),
            });
        }
    }
    checked
}

fn repository_name(checker: &mut Checker, fields: &Fields, index: usize) -> Option<String> {
    let node = checker.required(
        fields,
        "name",
        &format!("repository #{}", index + 1),
        fields.mark,
        "add `name: <short name>`; it names the repository in results and cache entries",
    )?;
    let name = checker.string(node, "`name` of a repository")?;
    checker
        .file_name(&name, node.mark, "repository")
        .then_some(name)
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
    let text = checker.string(&entry.value, &format!("`{}` of {owner}", entry.key))?;
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

/// `branch:`, required: walking whatever `HEAD` points at would make results depend on checkouts.
fn branch(checker: &mut Checker, fields: &Fields, owner: &str) -> Option<String> {
    let node = checker.required(
        fields,
        "branch",
        owner,
        fields.mark,
        "name the branch to walk, e.g. `branch: main`; HEAD is never walked",
    )?;
    let branch = checker.string(node, &format!("`branch` of {owner}"))?;
    if branch.is_empty() || branch == "HEAD" {
        checker.error(
            node.mark,
            format!("`branch` of {owner} must name a branch, found `{branch}`"),
            Some("HEAD is never walked; name the branch, e.g. `branch: main`".to_string()),
        );
        return None;
    }
    Some(branch)
}

/// `python:`, a list of version strings; numbers get a hint, since YAML reads `3.10` as `3.1`.
fn python(checker: &mut Checker, node: &Node, owner: &str) -> Option<Vec<String>> {
    let label = format!("`python` of {owner}");
    let items = checker.list(node, &label)?;
    let mut versions = Vec::new();
    let mut clean = true;
    for item in items {
        match &item.value {
            Value::String(version) => versions.push(version.clone()),
            Value::Float(_) | Value::Integer(_) => {
                clean = false;
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
            _ => {
                clean = false;
                checker.wrong_type(item, &format!("each version in {label}"), "a string");
            }
        }
    }
    clean.then_some(versions)
}

/// Checks the shape of a mining setting, so a mistake is reported here with its position rather
/// `merges:`, `include` or `skip`.
fn merges(checker: &mut Checker, node: &Node, owner: &str) -> Option<Merges> {
    let label = format!("`merges` of {owner}");
    let merges = checker.string(node, &label)?;
    match merges.as_str() {
        "include" => Some(Merges::Include),
        "skip" => Some(Merges::Skip),
        _ => {
            checker.error(
                node.mark,
                format!("`{merges}` is not an allowed value for {label}"),
                suggest::hint(&merges, MERGES, "allowed"),
            );
            None
        }
    }
}

/// `test_patterns:`, a list of globs, each one valid.
fn test_patterns(checker: &mut Checker, node: &Node, owner: &str) -> Option<Vec<String>> {
    let label = format!("`test_patterns` of {owner}");
    let patterns = checker.string_list(node, &label)?;
    let Value::List(items) = &node.value else {
        return None;
    };
    let mut clean = true;
    for (pattern, item) in patterns.iter().zip(items) {
        if let Err(error) = glob::Pattern::new(pattern) {
            clean = false;
            checker.error(
                item.mark,
                format!("`{pattern}` in {label} is not a valid glob: {error}"),
                Some("write globs such as `tests/**/*.py` or `test_*.py`".to_string()),
            );
        }
    }
    clean.then_some(patterns)
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
