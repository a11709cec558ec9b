//! Gettext catalogues a project compiles when it is built. A translated project keeps its messages
//! as `.po` sources under `<lang>/LC_MESSAGES/` and compiles them into the `.mo` files `gettext`
//! reads, with `msgfmt` (humanize with a script of its own, others from their build backend). The
//! compiled files are not tracked, so a test that loads a translation
//! (`gettext.translation("humanize", localedir, ["fr"])`) fails in a checkout that was never built;
//! claimflow writes each missing `.mo` beside its `.po` as `msgfmt` writes it.
//!
//! What `msgfmt` does, done here: fuzzy and untranslated messages are left out (the header is kept
//! even when fuzzy), obsolete (`#~`) messages are ignored, a context is stored as
//! `msgctxt\x04msgid`, plural forms as `msgid\0msgid_plural` and `msgstr[0]\0msgstr[1]…`, and the
//! original strings are sorted so a reader can search them by bisection. The strings keep the
//! bytes of the file's own charset, which its header declares and the reader decodes. No hash table
//! is written: the format makes it optional (`msgfmt --no-hash`) and readers fall back to bisection.
//!
//! A `.mo` beside the `.po` (tracked, or written by an earlier preparation) is never replaced. A
//! `.po` that `msgfmt` cannot read (a syntax error, a duplicate message) is left uncompiled, and
//! [`compile_catalogues`] names it with the line and the reason; the tests that need it then show
//! what they show. What `msgfmt` complains of but compiles all the same (strings that disagree on
//! a leading or trailing newline) is compiled as it compiles it, and named too.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};

/// How many directories below the checkout's root the search for catalogues descends
/// (Django's `django/contrib/admin/locale/fr/LC_MESSAGES` is six).
const MAX_DEPTH: usize = 10;

/// Directories never searched besides hidden ones and virtual environments: caches and installed
/// packages, which hold no catalogue of the project's own.
const SKIPPED_DIRECTORIES: &[&str] = &["__pycache__", "node_modules", "site-packages"];

/// What compiling the catalogues of a checkout did.
#[derive(Debug, Default)]
pub struct Compilation {
    /// The `.mo` files written.
    pub written: Vec<PathBuf>,
    /// What `msgfmt` reports of the sources written (exiting with an error) and writes all the same.
    pub complaints: Vec<CatalogueError>,
    /// Sources with no header and no translated message, for which `msgfmt` writes no file.
    pub empty: Vec<PathBuf>,
    /// Sources `msgfmt` cannot read, left uncompiled.
    pub refused: Vec<CatalogueError>,
}

/// What `msgfmt` makes of a `.po` text it can read.
#[derive(Debug, PartialEq, Eq)]
struct Compiled {
    /// The `.mo` file; None when nothing is left to write, where `msgfmt` writes none.
    mo: Option<Vec<u8>>,
    /// The lines and problems it reports, still writing the file.
    complaints: Vec<(usize, Problem)>,
}

/// What `msgfmt` reports of a `.po` file: a reason to write nothing, or a complaint.
#[derive(Debug, thiserror::Error)]
#[error("compile {path}: line {line}: {problem}")]
pub struct CatalogueError {
    pub path: PathBuf,
    pub line: usize,
    pub problem: Problem,
}

/// What is wrong at a line of a `.po` file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// A quoted string without its closing quote.
    #[error("a string is not closed")]
    UnterminatedString,
    /// A backslash sequence gettext does not know.
    #[error("invalid escape sequence `\\{0}`")]
    Escape(char),
    /// A keyword with no string after it, or text between or after the strings.
    #[error("expected a quoted string")]
    ExpectedString,
    /// A line that is none of a comment, a keyword or a continued string.
    #[error("unknown keyword")]
    UnknownKeyword,
    /// A continued string with no keyword before it.
    #[error("a string that continues no keyword")]
    StrayString,
    /// A keyword out of its place in a message (`msgstr` before `msgid`, `msgctxt` twice…).
    #[error("`{0}` out of place")]
    OutOfPlace(&'static str),
    /// A plural message's `msgstr[n]` given out of order.
    #[error("expected `msgstr[{expected}]`")]
    PluralIndex { expected: usize },
    /// A message that ends without a translation (`msgid` with no `msgstr`).
    #[error("a message without `msgstr`")]
    MissingTranslation,
    /// A comment between a message's keywords.
    #[error("a comment inside a message")]
    CommentInsideMessage,
    /// A second message with the same context and `msgid`.
    #[error("a duplicate of the message at line {first}")]
    Duplicate { first: usize },
    /// A translated message whose strings do not all begin (or all end) with a newline, which
    /// `msgfmt` reports whatever its options, and compiles.
    #[error("`msgid` and `{field}` do not both {edge} with a newline")]
    Newlines { field: String, edge: &'static str },
}

/// One message of a `.po` file, its strings as the file's bytes.
#[derive(Debug, Default)]
struct Message {
    /// The line of its first keyword.
    line: usize,
    /// The line of its first `msgstr`, where `msgfmt` reports what is wrong with the translation.
    translation_line: usize,
    context: Option<Vec<u8>>,
    id: Option<Vec<u8>>,
    id_plural: Option<Vec<u8>>,
    translations: Vec<Vec<u8>>,
    fuzzy: bool,
}

impl Message {
    fn started(&self) -> bool {
        self.context.is_some() || self.id.is_some()
    }

    fn is_header(&self) -> bool {
        self.context.is_none() && self.id.as_deref() == Some(b"")
    }
}

/// A keyword of a message, which the lines of quoted strings after it continue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keyword {
    Context,
    Id,
    IdPlural,
    Translation,
    PluralTranslation(usize),
}

/// Compiles every `.po` file in a directory named `LC_MESSAGES` under `worktree` that has no `.mo`
/// of the same stem beside it. Errors reading the checkout or writing a `.mo` are returned; a `.po`
/// that cannot be read as a catalogue is in [`Compilation::refused`] and has no `.mo`, not even a
/// partial one.
pub fn compile_catalogues(worktree: &Path) -> std::io::Result<Compilation> {
    let mut compilation = Compilation::default();
    for source in catalogue_sources(worktree)? {
        let target = source.with_extension("mo");
        if target.symlink_metadata().is_ok() {
            continue;
        }
        let text = std::fs::read(&source).map_err(|error| context(error, "read", &source))?;
        let error = |(line, problem)| CatalogueError {
            path: source.clone(),
            line,
            problem,
        };
        match compile(&text) {
            Ok(Compiled {
                mo: Some(bytes),
                complaints,
            }) => {
                write_new(&target, &bytes).map_err(|error| context(error, "write", &target))?;
                compilation.written.push(target);
                compilation
                    .complaints
                    .extend(complaints.into_iter().map(error));
            }
            Ok(Compiled { mo: None, .. }) => compilation.empty.push(source),
            Err(refusal) => compilation.refused.push(error(refusal)),
        }
    }
    Ok(compilation)
}

/// What `msgfmt` writes for the `.po` text, or the line and problem for which it writes nothing.
fn compile(text: &[u8]) -> Result<Compiled, (usize, Problem)> {
    let messages = parse(text)?;
    let mut complaints = Vec::new();
    let mut seen: BTreeMap<(Option<&[u8]>, &[u8]), usize> = BTreeMap::new();
    let mut table: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for message in &messages {
        let id = message.id.as_deref().unwrap_or_default();
        if let Some(first) = seen.insert((message.context.as_deref(), id), message.line) {
            return Err((message.line, Problem::Duplicate { first }));
        }
        let untranslated = message.translations.first().is_none_or(Vec::is_empty);
        if untranslated || (message.fuzzy && !message.is_header()) {
            continue;
        }
        if !id.is_empty() {
            let line = message.translation_line;
            let mismatches = newline_mismatches(message).into_iter();
            complaints.extend(mismatches.map(|problem| (line, problem)));
        }
        let mut key = Vec::new();
        if let Some(context) = &message.context {
            key.extend_from_slice(context);
            key.push(0x04);
        }
        key.extend_from_slice(id);
        if let Some(plural) = &message.id_plural {
            key.push(0);
            key.extend_from_slice(plural);
        }
        let translation = match message.is_header() {
            true => header_for_mo(&message.translations[0]),
            false => message.translations.join(&0u8),
        };
        table.insert(key, translation);
    }
    Ok(Compiled {
        mo: (!table.is_empty()).then(|| mo_bytes(&table)),
        complaints,
    })
}

/// The other strings of a message that do not begin with a newline as its `msgid` does (or do
/// where it does not), and the same for their ends: the first of each that `msgfmt` reports.
fn newline_mismatches(message: &Message) -> Vec<Problem> {
    let id = message.id.as_deref().unwrap_or_default();
    let mut others: Vec<(String, &[u8])> = Vec::new();
    if let Some(plural) = &message.id_plural {
        others.push(("msgid_plural".to_string(), plural));
        for (index, translation) in message.translations.iter().enumerate() {
            others.push((format!("msgstr[{index}]"), translation));
        }
    } else if let Some(translation) = message.translations.first() {
        others.push(("msgstr".to_string(), translation));
    }
    let first_mismatch = |edge: &'static str, has_newline: &dyn Fn(&[u8]) -> bool| {
        let (field, _) = others
            .iter()
            .find(|(_, text)| has_newline(text) != has_newline(id))?;
        Some(Problem::Newlines {
            field: field.clone(),
            edge,
        })
    };
    let begin = first_mismatch("begin", &|text| text.starts_with(b"\n"));
    let end = first_mismatch("end", &|text| text.ends_with(b"\n"));
    begin.into_iter().chain(end).collect()
}

/// The header without its `POT-Creation-Date` field, which `msgfmt` leaves out so that the `.mo`
/// does not change when only the template was regenerated.
fn header_for_mo(header: &[u8]) -> Vec<u8> {
    header
        .split_inclusive(|byte| *byte == b'\n')
        .filter(|field| !field.starts_with(b"POT-Creation-Date:"))
        .flatten()
        .copied()
        .collect()
}

/// The binary file of the GNU gettext manual ("The Format of GNU MO Files"), little-endian:
/// magic, revision 0, the count, the offsets of the two tables of (length, offset) pairs and of
/// the (empty) hash table, then the strings, each followed by a NUL that its length leaves out.
fn mo_bytes(table: &BTreeMap<Vec<u8>, Vec<u8>>) -> Vec<u8> {
    const HEADER: usize = 28;
    let count = table.len();
    let originals_table = HEADER;
    let translations_table = originals_table + 8 * count;
    let strings_start = translations_table + 8 * count;
    let number = |value: usize| {
        u32::try_from(value)
            .expect("a catalogue under 4 GiB")
            .to_le_bytes()
    };
    let mut bytes = Vec::new();
    for value in [
        0x9504_12de,
        0,
        count,
        originals_table,
        translations_table,
        0,
        strings_start,
    ] {
        bytes.extend_from_slice(&number(value));
    }
    let mut offset = strings_start;
    let mut strings = Vec::new();
    let mut entries = Vec::new();
    for string in table.keys().chain(table.values()) {
        entries.extend_from_slice(&number(string.len()));
        entries.extend_from_slice(&number(offset));
        strings.extend_from_slice(string);
        strings.push(0);
        offset += string.len() + 1;
    }
    bytes.extend_from_slice(&entries);
    bytes.extend_from_slice(&strings);
    bytes
}

/// The messages of a `.po` file, in order; obsolete messages and comments left out.
fn parse(text: &[u8]) -> Result<Vec<Message>, (usize, Problem)> {
    let text = text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(text);
    let mut messages = Vec::new();
    let mut current = Message::default();
    let mut last: Option<Keyword> = None;
    for (index, line) in text.split(|byte| *byte == b'\n').enumerate() {
        let number = index + 1;
        let at = |problem| (number, problem);
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        if line.starts_with(b"#") {
            if !current.translations.is_empty() {
                messages.push(std::mem::take(&mut current));
            } else if current.started() {
                return Err(at(Problem::CommentInsideMessage));
            }
            last = None;
            if let Some(flags) = line.strip_prefix(b"#,") {
                let mut flags = flags.split(|byte| *byte == b',');
                current.fuzzy |= flags.any(|flag| flag.trim_ascii() == b"fuzzy");
            } else if line.starts_with(b"#~") {
                // The comments so far were the obsolete message's.
                current.fuzzy = false;
            }
            continue;
        }
        if line.starts_with(b"\"") {
            let value = strings(line).map_err(at)?;
            let continued = last.ok_or(at(Problem::StrayString))?;
            continued_string(&mut current, continued).extend_from_slice(&value);
            continue;
        }
        let (keyword, rest) = keyword(line).ok_or(at(Problem::UnknownKeyword))?;
        let value = strings(rest).map_err(at)?;
        let starts_message = matches!(keyword, Keyword::Context | Keyword::Id);
        if starts_message && !current.translations.is_empty() {
            messages.push(std::mem::take(&mut current));
        }
        if !current.started() {
            current.line = number;
        }
        place(&mut current, keyword, value, number).map_err(at)?;
        last = Some(keyword);
    }
    if !current.translations.is_empty() {
        messages.push(current);
    } else if current.started() {
        return Err((current.line, Problem::MissingTranslation));
    }
    Ok(messages)
}

/// Puts a keyword's string into the message, if the keyword may come there.
fn place(
    message: &mut Message,
    keyword: Keyword,
    value: Vec<u8>,
    line: usize,
) -> Result<(), Problem> {
    let translated = message.translations.len();
    match keyword {
        Keyword::Context if message.started() => return Err(Problem::OutOfPlace("msgctxt")),
        Keyword::Context => message.context = Some(value),
        Keyword::Id if message.id.is_some() => return Err(Problem::MissingTranslation),
        Keyword::Id => message.id = Some(value),
        Keyword::IdPlural if message.id.is_none() || message.id_plural.is_some() => {
            return Err(Problem::OutOfPlace("msgid_plural"));
        }
        Keyword::IdPlural if translated > 0 => return Err(Problem::OutOfPlace("msgid_plural")),
        Keyword::IdPlural => message.id_plural = Some(value),
        Keyword::Translation | Keyword::PluralTranslation(_) if message.id.is_none() => {
            return Err(Problem::OutOfPlace("msgstr"));
        }
        Keyword::Translation if message.id_plural.is_some() => {
            return Err(Problem::PluralIndex {
                expected: translated,
            });
        }
        Keyword::Translation if translated > 0 => return Err(Problem::OutOfPlace("msgstr")),
        Keyword::PluralTranslation(_) if message.id_plural.is_none() => {
            return Err(Problem::OutOfPlace("msgstr[n]"));
        }
        Keyword::PluralTranslation(index) if index != translated => {
            return Err(Problem::PluralIndex {
                expected: translated,
            });
        }
        Keyword::Translation | Keyword::PluralTranslation(_) => {
            if translated == 0 {
                message.translation_line = line;
            }
            message.translations.push(value);
        }
    }
    Ok(())
}

/// The string a line of quoted strings after `keyword` continues.
fn continued_string(message: &mut Message, keyword: Keyword) -> &mut Vec<u8> {
    match keyword {
        Keyword::Context => message.context.get_or_insert_default(),
        Keyword::Id => message.id.get_or_insert_default(),
        Keyword::IdPlural => message.id_plural.get_or_insert_default(),
        Keyword::Translation | Keyword::PluralTranslation(_) => {
            if message.translations.is_empty() {
                message.translations.push(Vec::new());
            }
            let last = message.translations.len() - 1;
            &mut message.translations[last]
        }
    }
}

/// The keyword a line starts with and the rest of the line, or None when it starts with none.
fn keyword(line: &[u8]) -> Option<(Keyword, &[u8])> {
    let word_end = line
        .iter()
        .position(|byte| byte.is_ascii_whitespace() || *byte == b'"')
        .unwrap_or(line.len());
    let (word, rest) = line.split_at(word_end);
    let keyword = match word {
        b"msgctxt" => Keyword::Context,
        b"msgid" => Keyword::Id,
        b"msgid_plural" => Keyword::IdPlural,
        b"msgstr" => Keyword::Translation,
        _ => {
            let index = word.strip_prefix(b"msgstr[")?.strip_suffix(b"]")?;
            let index = std::str::from_utf8(index).ok()?;
            if index.is_empty() || !index.bytes().all(|byte| byte.is_ascii_digit()) {
                return None;
            }
            Keyword::PluralTranslation(index.parse().ok()?)
        }
    };
    Some((keyword, rest))
}

/// The bytes of the quoted strings that make up `text`, joined, with their escape sequences read
/// as gettext reads them (`\n`, `\t`, `\"`, octal `\NNN`, hexadecimal `\xHH`…).
fn strings(text: &[u8]) -> Result<Vec<u8>, Problem> {
    let mut value = Vec::new();
    let mut rest = text.trim_ascii();
    if rest.is_empty() {
        return Err(Problem::ExpectedString);
    }
    while !rest.is_empty() {
        rest = rest.strip_prefix(b"\"").ok_or(Problem::ExpectedString)?;
        let mut index = 0;
        loop {
            match rest.get(index) {
                None => return Err(Problem::UnterminatedString),
                Some(b'"') => break,
                Some(b'\\') => {
                    let (byte, length) = escape(&rest[index + 1..])?;
                    value.push(byte);
                    index += 1 + length;
                }
                Some(byte) => {
                    value.push(*byte);
                    index += 1;
                }
            }
        }
        rest = rest[index + 1..].trim_ascii_start();
    }
    Ok(value)
}

/// The byte an escape sequence stands for and the length of the sequence after its backslash.
fn escape(sequence: &[u8]) -> Result<(u8, usize), Problem> {
    let Some(&first) = sequence.first() else {
        return Err(Problem::UnterminatedString);
    };
    let simple = match first {
        b'n' => Some(b'\n'),
        b't' => Some(b'\t'),
        b'b' => Some(0x08),
        b'r' => Some(b'\r'),
        b'f' => Some(0x0c),
        b'v' => Some(0x0b),
        b'a' => Some(0x07),
        b'\\' | b'"' => Some(first),
        _ => None,
    };
    if let Some(byte) = simple {
        return Ok((byte, 1));
    }
    let (digits, radix, skip) = match first {
        b'0'..=b'7' => (sequence, 8, 0),
        b'x' => (&sequence[1..], 16, 1),
        _ => return Err(Problem::Escape(char::from(first))),
    };
    let most = if radix == 8 { 3 } else { 2 };
    let length = digits
        .iter()
        .take(most)
        .take_while(|byte| char::from(**byte).is_digit(radix))
        .count();
    let value = digits[..length].iter().fold(0u32, |value, byte| {
        value * radix + char::from(*byte).to_digit(radix).unwrap_or_default()
    });
    match u8::try_from(value) {
        Ok(byte) if length > 0 => Ok((byte, skip + length)),
        _ => Err(Problem::Escape(char::from(first))),
    }
}

/// The `.po` files in directories named `LC_MESSAGES` under `root`, sorted. Hidden directories,
/// caches, installed packages and virtual environments are skipped, symbolic links to directories
/// are not followed, and the search stops [`MAX_DEPTH`] directories down.
fn catalogue_sources(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut sources = Vec::new();
    let mut pending = vec![(root.to_path_buf(), 0)];
    while let Some((directory, depth)) = pending.pop() {
        let messages = depth > 0 && directory.file_name() == Some(OsStr::new("LC_MESSAGES"));
        let entries =
            std::fs::read_dir(&directory).map_err(|error| context(error, "read", &directory))?;
        for entry in entries {
            let entry = entry.map_err(|error| context(error, "read", &directory))?;
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|error| context(error, "read", &path))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if kind.is_dir() {
                let skipped = name.starts_with('.')
                    || SKIPPED_DIRECTORIES.contains(&name.as_ref())
                    || path.join("pyvenv.cfg").is_file();
                if !skipped && depth < MAX_DEPTH {
                    pending.push((path, depth + 1));
                }
            } else if messages && name.ends_with(".po") && path.is_file() {
                sources.push(path);
            }
        }
    }
    sources.sort();
    Ok(sources)
}

/// Writes `bytes` to `path` through a temporary file beside it, so that `path` appears whole or
/// not at all, and never replaces a file that is already there.
fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let directory = path.parent().unwrap_or(Path::new("."));
    let mut file = tempfile::Builder::new()
        .prefix(".claimflow-")
        .suffix(".mo.partial")
        .tempfile_in(directory)?;
    file.write_all(bytes)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    file.persist_noclobber(path).map_err(|error| error.error)?;
    Ok(())
}

/// The error with what was done to which file in its message.
fn context(error: std::io::Error, action: &str, path: &Path) -> std::io::Error {
    std::io::Error::new(
        error.kind(),
        format!("{action} {}: {error}", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A French catalogue: a fuzzy header with plural forms, a plain message continued over lines
    /// with escapes, a plural message, a message in a context and the same msgid without one, a
    /// fuzzy message (whose newlines `msgfmt` does not check), untranslated ones, a non-ASCII one
    /// and an obsolete one.
    const CATALOGUE: &str = r#"# French translations.
#, fuzzy
msgid ""
msgstr ""
"Project-Id-Version: demo 1.0\n"
"Content-Type: text/plain; charset=UTF-8\n"
"Plural-Forms: nplurals=2; plural=(n > 1);\n"
"X-Custom: kept\n"

#: pkg/core.py:3
msgid "hello\n"
msgstr ""
"bon"
"jour \"à tous\"\n"

msgid "one file"
msgid_plural "%d files"
msgstr[0] "un fichier"
msgstr[1] "%d fichiers"

msgctxt "menu"
msgid "Open"
msgstr "Ouvrir"

msgid "Open"
msgstr "Ouvrir le fichier"

#, fuzzy, python-format
msgid "draft"
msgstr "brouillon\n"

msgid "empty"
msgstr ""

msgid "one error"
msgid_plural "%d errors"
msgstr[0] ""
msgstr[1] ""

msgid "tea"
msgstr "thé\x21"

#, fuzzy
#~ msgid "old"
#~ msgstr "ancien"

msgid "kept after obsolete"
msgstr "gardé"
"#;

    /// What Python's own `gettext` reads from the `.mo` file at `argv[1]`, as a JSON list.
    const READER: &str = r#"
import gettext, json, sys
with open(sys.argv[1], "rb") as file:
    t = gettext.GNUTranslations(file)
answers = [
    t.gettext("hello\n"),
    t.ngettext("one file", "%d files", 0),
    t.ngettext("one file", "%d files", 1),
    t.ngettext("one file", "%d files", 2),
    t.pgettext("menu", "Open"),
    t.gettext("Open"),
    t.gettext("draft"),
    t.gettext("empty"),
    t.ngettext("one error", "%d errors", 2),
    t.gettext("tea"),
    t.gettext("old"),
    t.gettext("kept after obsolete"),
    t.info()["plural-forms"],
    t.info()["x-custom"],
    t.charset(),
]
print(json.dumps(answers))
"#;

    /// The `.mo` of a `.po` text `msgfmt` compiles without a complaint.
    fn mo(text: &[u8]) -> Vec<u8> {
        let compiled = compile(text).unwrap();
        assert_eq!(compiled.complaints, []);
        compiled.mo.expect("a message to write")
    }

    fn read_back(mo: &Path) -> Vec<String> {
        let output = std::process::Command::new("python3")
            .args(["-c", READER])
            .arg(mo)
            .output()
            .expect("run python3");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    }

    /// The original strings of a `.mo` file, in the order of its table.
    fn originals(mo: &[u8]) -> Vec<Vec<u8>> {
        let number = |at: usize| u32::from_le_bytes(mo[at..at + 4].try_into().unwrap()) as usize;
        assert_eq!(number(0), 0x9504_12de);
        (0..number(8))
            .map(|index| {
                let entry = number(12) + 8 * index;
                let (length, offset) = (number(entry), number(entry + 4));
                assert_eq!(mo[offset + length], 0);
                mo[offset..offset + length].to_vec()
            })
            .collect()
    }

    #[test]
    fn python_reads_what_msgfmt_would_keep() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("demo.mo");
        std::fs::write(&path, mo(CATALOGUE.as_bytes())).unwrap();
        let answers = read_back(&path);
        assert_eq!(
            answers,
            [
                "bonjour \"à tous\"\n",
                // French plural forms: 0 is singular.
                "un fichier",
                "un fichier",
                "%d fichiers",
                "Ouvrir",
                "Ouvrir le fichier",
                // Fuzzy and untranslated messages fall back to the msgid.
                "draft",
                "empty",
                "%d errors",
                "thé!",
                "old",
                "gardé",
                "nplurals=2; plural=(n > 1);",
                "kept",
                "UTF-8",
            ]
        );
    }

    #[test]
    fn originals_are_sorted_with_the_header_first() {
        let mo = mo(CATALOGUE.as_bytes());
        let originals = originals(&mo);
        let expected: Vec<&[u8]> = vec![
            b"",
            b"Open",
            b"hello\n",
            b"kept after obsolete",
            b"menu\x04Open",
            b"one file\0%d files",
            b"tea",
        ];
        assert_eq!(originals, expected);
    }

    #[test]
    fn lines_msgfmt_refuses_are_named_with_the_problem() {
        let header = "msgid \"\"\nmsgstr \"Content-Type: text/plain; charset=UTF-8\\n\"\n\n";
        let cases: [(&str, usize, Problem); 11] = [
            ("msgid \"a\nmsgstr \"b\"\n", 4, Problem::UnterminatedString),
            ("msgid \"a\\q\"\nmsgstr \"b\"\n", 4, Problem::Escape('q')),
            ("msgid \"a\" x\nmsgstr \"b\"\n", 4, Problem::ExpectedString),
            ("msgid\nmsgstr \"b\"\n", 4, Problem::ExpectedString),
            ("msgstr \"b\"\n", 4, Problem::OutOfPlace("msgstr")),
            ("# note\n\"b\"\n", 5, Problem::StrayString),
            ("msgid \"a\"\n", 4, Problem::MissingTranslation),
            (
                "msgid \"a\"\nmsgid \"b\"\nmsgstr \"c\"\n",
                5,
                Problem::MissingTranslation,
            ),
            (
                "msgid \"a\"\nmsgid_plural \"as\"\nmsgstr[1] \"b\"\n",
                6,
                Problem::PluralIndex { expected: 0 },
            ),
            (
                "msgid \"a\"\nmsgstr \"b\"\n\n#, fuzzy\nmsgid \"a\"\nmsgstr \"c\"\n",
                8,
                Problem::Duplicate { first: 4 },
            ),
            (
                "msgid \"a\"\n# note\nmsgstr \"b\"\n",
                5,
                Problem::CommentInsideMessage,
            ),
        ];
        for (body, line, problem) in cases {
            assert_eq!(
                compile(format!("{header}{body}").as_bytes()),
                Err((line, problem)),
                "{body}"
            );
        }
        assert_eq!(
            compile(b"domain \"x\"\n"),
            Err((1, Problem::UnknownKeyword))
        );
    }

    #[test]
    fn nothing_is_written_when_no_message_is_left() {
        let fuzzy_and_untranslated =
            b"#, fuzzy\nmsgid \"a\"\nmsgstr \"b\"\n\nmsgid \"c\"\nmsgstr \"\"\n";
        assert_eq!(compile(fuzzy_and_untranslated).unwrap().mo, None);
        assert_eq!(compile(b"# only a comment\n").unwrap().mo, None);
        // A header alone is a catalogue.
        let header = b"msgid \"\"\nmsgstr \"Language: fr\\n\"\n";
        assert_eq!(originals(&mo(header)), [b""]);
    }

    #[test]
    fn newlines_that_disagree_are_reported_and_compiled_all_the_same() {
        let newlines = |field: &str, edge| Problem::Newlines {
            field: field.to_string(),
            edge,
        };
        let cases = [
            // At the line of the first msgstr, as msgfmt reports them.
            (
                "msgid \"a\"\nmsgstr \"b\\n\"\n",
                2,
                vec![newlines("msgstr", "end")],
            ),
            (
                "msgid \"\\na\"\nmsgstr \"b\\n\"\n",
                2,
                vec![newlines("msgstr", "begin"), newlines("msgstr", "end")],
            ),
            (
                "msgid \"a\"\nmsgid_plural \"as\\n\"\nmsgstr[0] \"b\"\nmsgstr[1] \"c\"\n",
                3,
                vec![newlines("msgid_plural", "end")],
            ),
            (
                "msgid \"a\\n\"\nmsgid_plural \"as\\n\"\nmsgstr[0] \"b\\n\"\nmsgstr[1] \"\"\n",
                3,
                vec![newlines("msgstr[1]", "end")],
            ),
        ];
        for (text, line, problems) in cases {
            let compiled = compile(text.as_bytes()).unwrap();
            let expected: Vec<(usize, Problem)> = problems
                .into_iter()
                .map(|problem| (line, problem))
                .collect();
            assert_eq!(compiled.complaints, expected, "{text}");
            assert_eq!(originals(&compiled.mo.unwrap()).len(), 1, "{text}");
        }
        // Fuzzy and untranslated messages are not checked.
        let unchecked = "#, fuzzy\nmsgid \"a\"\nmsgstr \"b\\n\"\n\nmsgid \"c\\n\"\nmsgstr \"\"\n";
        assert_eq!(compile(unchecked.as_bytes()).unwrap().complaints, []);
    }

    fn write(root: &Path, path: &str, content: &[u8]) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    #[test]
    fn compiles_each_catalogue_without_a_mo_and_leaves_the_rest() {
        let directory = tempfile::tempdir().unwrap();
        let root = directory.path();
        let catalogue = CATALOGUE.as_bytes();
        write(root, "src/pkg/locale/fr/LC_MESSAGES/pkg.po", catalogue);
        write(root, "src/pkg/locale/de/LC_MESSAGES/pkg.po", catalogue);
        write(root, "src/pkg/locale/de/LC_MESSAGES/pkg.mo", b"tracked");
        // Not a catalogue's place, or not the project's.
        write(root, "src/pkg/locale/fr/pkg.po", catalogue);
        write(root, ".tox/py/locale/fr/LC_MESSAGES/x.po", catalogue);
        write(root, "node_modules/x/locale/fr/LC_MESSAGES/x.po", catalogue);
        write(root, "env/pyvenv.cfg", b"home = /usr/bin\n");
        write(root, "env/share/locale/fr/LC_MESSAGES/x.po", catalogue);
        let deep = format!("{}locale/fr/LC_MESSAGES/deep.po", "d/".repeat(MAX_DEPTH));
        write(root, &deep, catalogue);

        let compilation = compile_catalogues(root).unwrap();
        let fr = root.join("src/pkg/locale/fr/LC_MESSAGES/pkg.mo");
        assert_eq!(compilation.written, std::slice::from_ref(&fr));
        assert!(compilation.refused.is_empty() && compilation.empty.is_empty());
        assert!(compilation.complaints.is_empty());
        assert_eq!(std::fs::read(&fr).unwrap(), mo(catalogue));
        assert_eq!(
            std::fs::read(root.join("src/pkg/locale/de/LC_MESSAGES/pkg.mo")).unwrap(),
            b"tracked"
        );
        for path in [
            "src/pkg/locale/fr/pkg.mo",
            ".tox/py/locale/fr/LC_MESSAGES/x.mo",
            "node_modules/x/locale/fr/LC_MESSAGES/x.mo",
            "env/share/locale/fr/LC_MESSAGES/x.mo",
        ] {
            assert!(!root.join(path).exists(), "{path}");
        }
        assert!(!root.join(deep.replace(".po", ".mo")).exists());
        // A second preparation finds the file it wrote and leaves it.
        assert!(compile_catalogues(root).unwrap().written.is_empty());
    }

    #[test]
    fn a_catalogue_that_does_not_compile_leaves_no_mo() {
        let directory = tempfile::tempdir().unwrap();
        let root = directory.path();
        let messages = root.join("pkg/locale/fr/LC_MESSAGES");
        write(
            root,
            "pkg/locale/fr/LC_MESSAGES/pkg.po",
            b"msgid \"hello\"\nmsgstr \"bonjour\n",
        );
        let compilation = compile_catalogues(root).unwrap();
        assert!(compilation.written.is_empty());
        let refused: Vec<String> = compilation.refused.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            refused,
            [format!(
                "compile {}: line 2: a string is not closed",
                messages.join("pkg.po").display()
            )]
        );
        let left: Vec<_> = std::fs::read_dir(&messages)
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(left, ["pkg.po"]);
    }
}
