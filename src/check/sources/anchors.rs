//! Turning the words of a claim into anchors: a code span or a code-like word that names a file, a
//! directory or a Python definition of the repository, and a `path:line` citation.
//!
//! A name defined in a few places anchors each of them; one defined in more than
//! [`MAX_SITES`] places (`get`, `__init__`) anchors the bare name, which is all the claim says. An
//! attribute no definition names on its own (`Url.host`, a NamedTuple field) anchors its owner.

use crate::check::claim::Anchor;

use super::repository::RepositoryIndex;

/// More definitions than this and a name is too common to pin to files.
const MAX_SITES: usize = 3;

/// The anchors a code span names: `path`, `path::name`, `dir/`, `name`, `module.name`, `name()`.
/// Empty for a span that names nothing in the repository (a command, a value).
pub fn of_code_span(index: &RepositoryIndex, span: &str) -> Vec<Anchor> {
    let span = span.trim().trim_start_matches("./");
    let span = strip_call(span);
    if span.is_empty() || span.contains(char::is_whitespace) {
        return Vec::new();
    }
    if let Some((path, name)) = span.split_once("::") {
        return of_path_and_name(index, path, name);
    }
    let path = strip_line_suffix(span);
    if index.has_file(path) {
        return vec![Anchor::File {
            path: path.to_string(),
        }];
    }
    if path.contains('/') {
        return match index.has_directory(path) {
            true => vec![Anchor::File {
                path: format!("{}/**", path.trim_end_matches('/')),
            }],
            false => Vec::new(),
        };
    }
    of_dotted_name(index, span)
}

/// The anchors of code-like words outside code spans (`parse_url`, `pkg/url.py`, `Client.get()`):
/// a word counts only when it looks like code and names something in the repository, so prose words
/// never do.
pub fn of_bare_words(index: &RepositoryIndex, text: &str) -> Vec<Anchor> {
    let mut anchors = Vec::new();
    for word in text.split_whitespace() {
        let word = trim_punctuation(word);
        if looks_like_code(word) {
            for anchor in of_code_span(index, word) {
                if !anchors.contains(&anchor) {
                    anchors.push(anchor);
                }
            }
        }
    }
    anchors
}

/// The anchors of free text (a mem0 memory, a Graphiti or Copilot fact): its `` `code spans` ``,
/// then its code-like words.
pub fn of_prose(index: &RepositoryIndex, text: &str) -> Vec<Anchor> {
    let mut anchors: Vec<Anchor> = Vec::new();
    let mut outside = String::new();
    for (position, part) in text.split('`').enumerate() {
        if position % 2 == 1 {
            anchors.extend(of_code_span(index, part));
        } else {
            outside.push_str(part);
            outside.push(' ');
        }
    }
    for anchor in of_bare_words(index, &outside) {
        if !anchors.contains(&anchor) {
            anchors.push(anchor);
        }
    }
    anchors.dedup();
    anchors
}

/// A `path:line`, `path:first-last`, `path#L12` or bare `path` citation: the file, kept as cited
/// (the record says so), and the innermost Python definition holding the cited line.
pub fn of_citation(index: &RepositoryIndex, citation: &str) -> Vec<Anchor> {
    let citation = citation.trim().trim_start_matches("./");
    let (path, line) = match citation.rsplit_once([':', '#']) {
        Some((path, rest)) => {
            let first = rest
                .trim_start_matches('L')
                .split('-')
                .next()
                .unwrap_or_default();
            match first.parse::<u32>() {
                Ok(line) => (path, Some(line)),
                Err(_) => (citation, None),
            }
        }
        None => (citation, None),
    };
    if path.is_empty() {
        return Vec::new();
    }
    let mut anchors = vec![Anchor::File {
        path: path.to_string(),
    }];
    if let Some(name) = line.and_then(|line| index.definition_at(path, line)) {
        anchors.push(Anchor::Symbol {
            path: path.to_string(),
            name: name.to_string(),
        });
    }
    anchors
}

/// An explicit anchor as a JSON Lines record writes it: `path` or `path::name`.
pub fn of_declared(anchor: &str) -> Anchor {
    match anchor.split_once("::") {
        Some((path, name)) => Anchor::Symbol {
            path: path.to_string(),
            name: name.to_string(),
        },
        None => Anchor::File {
            path: anchor.to_string(),
        },
    }
}

fn of_path_and_name(index: &RepositoryIndex, path: &str, name: &str) -> Vec<Anchor> {
    let name = name.trim_start_matches(':');
    if index.defines(path, name) {
        vec![Anchor::Symbol {
            path: path.to_string(),
            name: name.to_string(),
        }]
    } else if index.has_file(path) {
        vec![Anchor::File {
            path: path.to_string(),
        }]
    } else {
        Vec::new()
    }
}

fn of_dotted_name(index: &RepositoryIndex, name: &str) -> Vec<Anchor> {
    let dotted: Vec<&str> = name.split('.').collect();
    if !dotted.iter().all(|part| is_identifier(part)) {
        return Vec::new();
    }
    let mut sites = index.sites(&dotted);
    if sites.is_empty() && dotted.len() > 1 {
        // `Url.host`, a field or attribute no definition names on its own, is about its owner.
        sites = index.sites(&dotted[..dotted.len() - 1]);
    }
    if sites.len() > MAX_SITES {
        return vec![Anchor::Symbol {
            path: String::new(),
            name: name.to_string(),
        }];
    }
    sites
        .into_iter()
        .map(|site| Anchor::Symbol {
            path: site.path.clone(),
            name: site.name.clone(),
        })
        .collect()
}

/// A word without the punctuation prose puts around it, keeping a call's own parentheses
/// (`(see parse_url()).` → `parse_url()`).
fn trim_punctuation(word: &str) -> &str {
    let mut word = word.trim_start_matches(['(', '"', '\'', '[']);
    loop {
        let trimmed = word.trim_end_matches([',', ';', ':', '.', '!', '?', '"', '\'', ']']);
        let trimmed = match trimmed.strip_suffix(')') {
            Some(inner) if !inner.contains('(') || inner.ends_with(')') => inner,
            _ => trimmed,
        };
        if trimmed.len() == word.len() {
            return word;
        }
        word = trimmed;
    }
}

/// `name()` and `name(arguments)` name `name`.
fn strip_call(span: &str) -> &str {
    match (span.find('('), span.ends_with(')')) {
        (Some(open), true) => &span[..open],
        _ => span,
    }
}

/// `path:12` and `path:12-20` name `path`.
fn strip_line_suffix(span: &str) -> &str {
    match span.rsplit_once(':') {
        Some((path, line))
            if !line.is_empty() && line.chars().all(|c| c.is_ascii_digit() || c == '-') =>
        {
            path
        }
        _ => span,
    }
}

/// A word a person writes only when naming code: a path, a call, a dotted or snake_case name, or a
/// camelCase one.
fn looks_like_code(word: &str) -> bool {
    let bare = strip_call(word);
    if bare.is_empty()
        || !bare
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
    {
        return false;
    }
    let camel = bare
        .as_bytes()
        .windows(2)
        .any(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase());
    bare.len() != word.len() || bare.contains(['/', '_']) || bare.contains("::") || camel || {
        let parts: Vec<&str> = bare.split('.').collect();
        parts.len() > 1 && parts.iter().all(|part| is_identifier(part))
    }
}

fn is_identifier(part: &str) -> bool {
    let mut characters = part.chars();
    characters
        .next()
        .is_some_and(|first| first.is_alphabetic() || first == '_')
        && characters.all(|rest| rest.is_alphanumeric() || rest == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index() -> RepositoryIndex {
        RepositoryIndex::of_sources(&[
            (
                "src/url.py",
                "def parse_url(text):\n    return text\n\n\nclass Client:\n    def get(self):\n        return 1\n",
            ),
            ("docs/guide.md", ""),
            ("a.py", "def get():\n    pass\n"),
            ("b.py", "def get():\n    pass\n"),
        ])
    }

    fn file(path: &str) -> Anchor {
        Anchor::File {
            path: path.to_string(),
        }
    }

    fn symbol(path: &str, name: &str) -> Anchor {
        Anchor::Symbol {
            path: path.to_string(),
            name: name.to_string(),
        }
    }

    #[test]
    fn code_spans_name_files_directories_and_definitions() {
        let index = index();
        assert_eq!(of_code_span(&index, "src/url.py"), [file("src/url.py")]);
        assert_eq!(
            of_code_span(&index, "./src/url.py:12"),
            [file("src/url.py")]
        );
        assert_eq!(of_code_span(&index, "docs/"), [file("docs/**")]);
        assert_eq!(
            of_code_span(&index, "parse_url()"),
            [symbol("src/url.py", "parse_url")]
        );
        assert_eq!(
            of_code_span(&index, "url.parse_url"),
            [symbol("src/url.py", "parse_url")]
        );
        assert_eq!(
            of_code_span(&index, "src/url.py::Client.get"),
            [symbol("src/url.py", "Client.get")]
        );
        assert_eq!(
            of_code_span(&index, "get"),
            [
                symbol("a.py", "get"),
                symbol("b.py", "get"),
                symbol("src/url.py", "Client.get")
            ],
            "a name defined in few places anchors each"
        );
        assert!(of_code_span(&index, "pytest -x").is_empty());
        assert!(of_code_span(&index, "missing/file.py").is_empty());
        assert!(of_code_span(&index, "unknown_name").is_empty());
        assert_eq!(
            of_code_span(&index, "Client.timeout"),
            [symbol("src/url.py", "Client")],
            "an attribute anchors its owner"
        );
    }

    #[test]
    fn a_name_defined_in_many_places_anchors_the_bare_name() {
        let mut files = vec![];
        let sources: Vec<(String, &str)> = (0..5)
            .map(|n| (format!("m{n}.py"), "def run():\n    pass\n"))
            .collect();
        for (path, text) in &sources {
            files.push((path.as_str(), *text));
        }
        let index = RepositoryIndex::of_sources(&files);
        assert_eq!(of_code_span(&index, "run"), [symbol("", "run")]);
    }

    #[test]
    fn bare_words_count_only_when_code_like_and_known() {
        let index = index();
        let anchors = of_bare_words(
            &index,
            "The parse_url() helper (see src/url.py) and Client are used; get is not.",
        );
        assert_eq!(
            anchors,
            [symbol("src/url.py", "parse_url"), file("src/url.py")]
        );
        assert!(of_bare_words(&index, "Run the tests, e.g. with care.").is_empty());
    }

    #[test]
    fn citations_anchor_the_file_and_the_definition_on_the_cited_line() {
        let index = index();
        assert_eq!(
            of_citation(&index, "src/url.py:6"),
            [file("src/url.py"), symbol("src/url.py", "Client.get")]
        );
        assert_eq!(of_citation(&index, "src/url.py:3-4"), [file("src/url.py")]);
        assert_eq!(of_citation(&index, "gone.py#L2"), [file("gone.py")]);
        assert_eq!(
            of_citation(&index, "docs/guide.md"),
            [file("docs/guide.md")]
        );
    }
}
