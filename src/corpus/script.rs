//! Reading a corpus script: a history written as text, one directory per commit.
//!
//! A script directory holds `commits/`, and in it one directory per commit, applied in the
//! order of their names (so they start with a number: `01-initial`, `02-…`). Each commit
//! directory holds
//! - `commit.yaml`: `subject`, an optional `body`, `author` (`Name <email>`), `date`
//!   (RFC 3339, e.g. `2024-03-04T09:12:00+01:00`) and `delete`, a list of paths the commit
//!   removes;
//! - `files/`: the full new contents of every file the commit adds or changes, at its path in
//!   the repository.
//!
//! A reviewer reads a commit as a message plus whole files; `diff -r` between two commit
//! directories shows what changed. Reading is pure: nothing here touches git.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use serde::Deserialize;

use super::CorpusError;
use super::date::{Timestamp, parse_timestamp};

/// The author and committer used when a commit names none.
pub const DEFAULT_AUTHOR: &str = "claimflow demo <demo@claimflow.invalid>";

/// The time of a first commit that names no date: 2024-01-01T00:00:00Z. Later undated commits
/// follow one hour after their parent, so a script without dates still yields stable ids.
const DEFAULT_FIRST_TIME: i64 = 1_704_067_200;

/// A whole scripted history, oldest commit first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    pub commits: Vec<ScriptCommit>,
}

/// One commit of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptCommit {
    /// The commit directory's name, e.g. `02-count-words-ignoring-case`; a stable handle for
    /// the commit that does not depend on its id.
    pub name: String,
    pub subject: String,
    /// The message body, without the subject; may be empty.
    pub body: String,
    /// Author and committer.
    pub author: Person,
    pub time: Timestamp,
    /// Repository path (`/`-separated) to the full new contents of each added or changed file.
    pub files: BTreeMap<String, Vec<u8>>,
    /// Repository paths the commit removes.
    pub deleted: BTreeSet<String>,
}

/// A name and an email address, as in `Name <email>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    pub name: String,
    pub email: String,
}

impl ScriptCommit {
    /// The commit message as git stores it: the subject, a blank line and the body.
    pub fn message(&self) -> String {
        let body = self.body.trim();
        if body.is_empty() {
            format!("{}\n", self.subject)
        } else {
            format!("{}\n\n{}\n", self.subject, body)
        }
    }
}

impl Script {
    /// The complete file tree after each commit, in commit order.
    pub fn trees(&self) -> Vec<BTreeMap<String, Vec<u8>>> {
        let mut tree = BTreeMap::new();
        self.commits
            .iter()
            .map(|commit| {
                for path in &commit.deleted {
                    tree.remove(path);
                }
                for (path, contents) in &commit.files {
                    tree.insert(path.clone(), contents.clone());
                }
                tree.clone()
            })
            .collect()
    }
}

/// `commit.yaml` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CommitFile {
    subject: String,
    #[serde(default)]
    body: String,
    author: Option<String>,
    date: Option<String>,
    #[serde(default)]
    delete: Vec<String>,
}

/// Read the script under `script_dir` and check that it describes a history git can hold.
pub fn load(script_dir: &Path) -> Result<Script, CorpusError> {
    let commits_dir = script_dir.join("commits");
    let mut names = Vec::new();
    for entry in read_dir(&commits_dir)? {
        let entry = entry.map_err(|source| CorpusError::Read {
            path: commits_dir.clone(),
            source,
        })?;
        if entry.path().is_dir() {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    if names.is_empty() {
        return Err(CorpusError::NoCommits { dir: commits_dir });
    }

    let mut commits = Vec::with_capacity(names.len());
    let mut tree: BTreeSet<String> = BTreeSet::new();
    let mut previous_time: Option<Timestamp> = None;
    for name in names {
        let commit = load_commit(&commits_dir.join(&name), name, &tree, previous_time)?;
        for path in &commit.deleted {
            tree.remove(path);
        }
        tree.extend(commit.files.keys().cloned());
        previous_time = Some(commit.time);
        commits.push(commit);
    }
    Ok(Script { commits })
}

fn load_commit(
    dir: &Path,
    name: String,
    parent_tree: &BTreeSet<String>,
    previous_time: Option<Timestamp>,
) -> Result<ScriptCommit, CorpusError> {
    if !name.starts_with(|character: char| character.is_ascii_digit()) {
        return Err(CorpusError::Invalid {
            path: dir.to_path_buf(),
            line: None,
            message: "a commit directory's name starts with its number, e.g. `01-initial`"
                .to_string(),
        });
    }
    let yaml_path = dir.join("commit.yaml");
    let text = fs::read_to_string(&yaml_path).map_err(|source| CorpusError::Read {
        path: yaml_path.clone(),
        source,
    })?;
    let parsed: CommitFile = serde_yaml::from_str(&text).map_err(|error| {
        let location = error.location();
        CorpusError::Parse {
            path: yaml_path.clone(),
            line: location.as_ref().map_or(1, |place| place.line()),
            column: location.as_ref().map_or(1, |place| place.column()),
            message: error.to_string(),
        }
    })?;
    let invalid = |key: &str, message: String| CorpusError::Invalid {
        path: yaml_path.clone(),
        line: line_of(&text, key),
        message,
    };

    let subject = parsed.subject.trim().to_string();
    if subject.is_empty() || subject.contains('\n') {
        return Err(invalid(
            "subject:",
            "the subject is one non-empty line".into(),
        ));
    }
    let author = parse_person(parsed.author.as_deref().unwrap_or(DEFAULT_AUTHOR))
        .map_err(|message| invalid("author:", message))?;
    let time = match &parsed.date {
        Some(date) => parse_timestamp(date).map_err(|message| invalid("date:", message))?,
        None => previous_time.map_or(
            Timestamp {
                seconds: DEFAULT_FIRST_TIME,
                offset_minutes: 0,
            },
            |previous| Timestamp {
                seconds: previous.seconds + 3600,
                offset_minutes: previous.offset_minutes,
            },
        ),
    };

    let mut files = BTreeMap::new();
    let files_dir = dir.join("files");
    if files_dir.exists() {
        collect_files(&files_dir, &files_dir, &mut files)?;
    }
    let mut deleted = BTreeSet::new();
    for path in parsed.delete {
        let line = line_of(&text, &path);
        let fail = |message: String| CorpusError::Invalid {
            path: yaml_path.clone(),
            line,
            message: format!("delete `{path}`: {message}"),
        };
        check_repository_path(&path).map_err(fail)?;
        if !parent_tree.contains(&path) {
            return Err(fail("no such file in the parent commit".into()));
        }
        if files.contains_key(&path) {
            return Err(fail(
                "the commit also writes it under files/; a file is either written or deleted"
                    .into(),
            ));
        }
        deleted.insert(path);
    }
    if files.is_empty() && deleted.is_empty() {
        return Err(invalid(
            "subject:",
            "the commit changes nothing: it has no files/ and deletes nothing".into(),
        ));
    }

    Ok(ScriptCommit {
        name,
        subject,
        body: parsed.body,
        author,
        time,
        files,
        deleted,
    })
}

/// Gather every file under `dir` into `files`, keyed by its path relative to `root`.
fn collect_files(
    root: &Path,
    dir: &Path,
    files: &mut BTreeMap<String, Vec<u8>>,
) -> Result<(), CorpusError> {
    for entry in read_dir(dir)? {
        let entry = entry.map_err(|source| CorpusError::Read {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = entry.path();
        let file_name = entry.file_name();
        // Running the scripted tests in place (to try an edit) leaves bytecode behind; it is
        // never part of the history.
        if file_name == "__pycache__" || path.extension().is_some_and(|ext| ext == "pyc") {
            continue;
        }
        if path.is_dir() {
            collect_files(root, &path, files)?;
            continue;
        }
        let relative = path
            .strip_prefix(root)
            .expect("a file found under the root lies under the root");
        let key = relative
            .components()
            .map(|component| component.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        let contents = fs::read(&path).map_err(|source| CorpusError::Read {
            path: path.clone(),
            source,
        })?;
        files.insert(key, contents);
    }
    Ok(())
}

fn read_dir(dir: &Path) -> Result<fs::ReadDir, CorpusError> {
    fs::read_dir(dir).map_err(|source| CorpusError::Read {
        path: dir.to_path_buf(),
        source,
    })
}

/// Parse `Name <email>`.
fn parse_person(text: &str) -> Result<Person, String> {
    let malformed = || format!("`{text}` is not of the form `Name <email>`");
    let (name, rest) = text.split_once('<').ok_or_else(malformed)?;
    let email = rest.strip_suffix('>').ok_or_else(malformed)?;
    let name = name.trim();
    if name.is_empty() || email.is_empty() || email.contains(['<', '>']) {
        return Err(malformed());
    }
    Ok(Person {
        name: name.to_string(),
        email: email.to_string(),
    })
}

/// A path inside the repository: relative, `/`-separated, without `.` or `..` parts.
fn check_repository_path(path: &str) -> Result<(), String> {
    let well_formed = !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..");
    if well_formed {
        Ok(())
    } else {
        Err("not a relative `/`-separated path inside the repository".into())
    }
}

/// The 1-based number of the first line containing `needle`, to point a reader at a value
/// that parsed but does not make sense.
fn line_of(text: &str, needle: &str) -> Option<usize> {
    text.lines()
        .position(|line| line.contains(needle))
        .map(|index| index + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn commit_dir(script_dir: &Path, name: &str) -> PathBuf {
        script_dir.join("commits").join(name)
    }

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    /// A scripted commit for a test: directory name, `commit.yaml`, files (path, contents).
    type TestCommit<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

    fn script_with(commits: &[TestCommit]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, yaml, files) in commits {
            let commit = commit_dir(dir.path(), name);
            write(&commit.join("commit.yaml"), yaml);
            for (path, contents) in *files {
                write(&commit.join("files").join(path), contents);
            }
        }
        dir
    }

    #[test]
    fn commits_apply_in_name_order_and_trees_accumulate() {
        let dir = script_with(&[
            (
                "02-second",
                "subject: Second\ndelete: [a.txt]\n",
                &[("b/c.txt", "c\n")],
            ),
            (
                "01-first",
                "subject: First\nbody: Why.\n",
                &[("a.txt", "a\n")],
            ),
        ]);
        let script = load(dir.path()).unwrap();
        let names: Vec<_> = script.commits.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["01-first", "02-second"]);
        assert_eq!(script.commits[0].message(), "First\n\nWhy.\n");
        assert_eq!(script.commits[1].message(), "Second\n");
        let trees = script.trees();
        assert_eq!(trees[0].keys().collect::<Vec<_>>(), ["a.txt"]);
        assert_eq!(trees[1].keys().collect::<Vec<_>>(), ["b/c.txt"]);
    }

    #[test]
    fn undated_commits_get_the_default_author_and_follow_hourly() {
        let dir = script_with(&[
            ("01-a", "subject: A\n", &[("a", "1")]),
            ("02-b", "subject: B\n", &[("a", "2")]),
        ]);
        let script = load(dir.path()).unwrap();
        assert_eq!(script.commits[0].author.name, "claimflow demo");
        assert_eq!(script.commits[0].author.email, "demo@claimflow.invalid");
        assert_eq!(script.commits[0].time.seconds, DEFAULT_FIRST_TIME);
        assert_eq!(script.commits[1].time.seconds, DEFAULT_FIRST_TIME + 3600);
    }

    #[test]
    fn a_syntax_error_names_the_file_and_line() {
        let dir = script_with(&[("01-a", "subject: A\nbody: [unclosed\n", &[("a", "1")])]);
        let error = load(dir.path()).unwrap_err().to_string();
        assert!(error.contains("01-a/commit.yaml:"), "{error}");
        assert!(matches!(
            load(dir.path()).unwrap_err(),
            CorpusError::Parse { line: 2.., .. }
        ));
    }

    #[test]
    fn an_unknown_key_is_an_error() {
        let dir = script_with(&[("01-a", "subject: A\nauthr: X <x@y>\n", &[("a", "1")])]);
        let error = load(dir.path()).unwrap_err();
        assert!(
            matches!(&error, CorpusError::Parse { line: 2, .. }),
            "{error}"
        );
    }

    #[test]
    fn deleting_a_missing_file_names_the_line() {
        let dir = script_with(&[(
            "01-a",
            "subject: A\ndelete:\n  - nowhere.py\n",
            &[("a", "1")],
        )]);
        let error = load(dir.path()).unwrap_err();
        assert!(
            matches!(&error, CorpusError::Invalid { line: Some(3), .. }),
            "{error}"
        );
        assert!(error.to_string().contains("nowhere.py"), "{error}");
    }

    #[test]
    fn a_malformed_author_or_date_is_refused() {
        let dir = script_with(&[("01-a", "subject: A\nauthor: nobody\n", &[("a", "1")])]);
        assert!(matches!(
            load(dir.path()).unwrap_err(),
            CorpusError::Invalid { line: Some(2), .. }
        ));
        let dir = script_with(&[("01-a", "subject: A\ndate: yesterday\n", &[("a", "1")])]);
        assert!(matches!(
            load(dir.path()).unwrap_err(),
            CorpusError::Invalid { line: Some(2), .. }
        ));
    }

    #[test]
    fn a_commit_that_changes_nothing_is_refused() {
        let dir = script_with(&[("01-a", "subject: A\n", &[])]);
        assert!(matches!(
            load(dir.path()).unwrap_err(),
            CorpusError::Invalid { .. }
        ));
    }

    #[test]
    fn bytecode_left_by_a_trial_run_is_ignored() {
        let dir = script_with(&[(
            "01-a",
            "subject: A\n",
            &[
                ("pkg/m.py", "x = 1\n"),
                ("pkg/__pycache__/m.cpython-311.pyc", "junk"),
            ],
        )]);
        let script = load(dir.path()).unwrap();
        assert_eq!(
            script.commits[0].files.keys().collect::<Vec<_>>(),
            ["pkg/m.py"]
        );
    }

    #[test]
    fn people_parse_from_name_and_email() {
        assert_eq!(
            parse_person("Ada Whitlock <ada@tally.invalid>").unwrap(),
            Person {
                name: "Ada Whitlock".into(),
                email: "ada@tally.invalid".into()
            }
        );
        assert!(parse_person("ada@tally.invalid").is_err());
        assert!(parse_person("<ada@tally.invalid>").is_err());
    }

    #[test]
    fn repository_paths_stay_inside() {
        assert!(check_repository_path("tests/test_x.py").is_ok());
        for bad in ["", "/etc/passwd", "../x", "a//b", "a/./b", "a\\b"] {
            assert!(check_repository_path(bad).is_err(), "{bad}");
        }
    }
}
