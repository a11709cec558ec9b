//! Just enough of INI (`setup.cfg`, `tox.ini`) and TOML (`pyproject.toml`) to read packaging
//! metadata: sections of string and string-list values. Anything richer (inline tables, dotted keys,
//! numbers) is skipped, never guessed at: metadata we cannot read is metadata we do not have.

use std::collections::BTreeMap;

/// Sections of key -> raw value (continuation lines joined with `\n`), as configparser reads them.
pub type IniSections = BTreeMap<String, BTreeMap<String, String>>;

/// Reads an INI file the way Python's configparser does for the cases packaging uses.
pub fn parse_ini(text: &str) -> IniSections {
    let mut sections = IniSections::new();
    let mut section: Option<String> = None;
    let mut key: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        let indented = line.starts_with([' ', '\t']);
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if indented && let (Some(section), Some(key)) = (&section, &key) {
            let value = sections
                .entry(section.clone())
                .or_default()
                .entry(key.clone())
                .or_default();
            value.push('\n');
            value.push_str(trimmed);
            continue;
        }
        if let Some(name) = trimmed
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
        {
            section = Some(name.trim().to_string());
            key = None;
            continue;
        }
        let Some(section) = &section else { continue };
        let split = trimmed
            .find(['=', ':'])
            .map(|index| (&trimmed[..index], &trimmed[index + 1..]));
        if let Some((name, value)) = split {
            let name = name.trim().to_string();
            sections
                .entry(section.clone())
                .or_default()
                .insert(name.clone(), value.trim().to_string());
            key = Some(name);
        }
    }
    sections
}

/// The non-empty lines of a multi-line INI value, without trailing comments.
pub fn ini_lines(value: &str) -> Vec<String> {
    value
        .lines()
        .map(|line| match line.find(" #") {
            Some(index) => &line[..index],
            None => line,
        })
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect()
}

/// A TOML value as far as packaging metadata needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TomlValue {
    String(String),
    Strings(Vec<String>),
}

/// Table name (`project`, `project.optional-dependencies`) -> key -> value.
pub type TomlTables = BTreeMap<String, BTreeMap<String, TomlValue>>;

/// Reads the string and string-array values of a TOML document, by table.
pub fn parse_toml(text: &str) -> TomlTables {
    let mut tables = TomlTables::new();
    let mut table = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if trimmed.starts_with("[[") {
            // Arrays of tables hold nothing we read; keep their keys out of the previous table.
            table = trimmed.to_string();
            continue;
        }
        if let Some(name) = trimmed
            .strip_prefix('[')
            .and_then(|rest| rest.split(']').next())
        {
            table = name.trim().replace(['"', '\''], "");
            continue;
        }
        let Some(index) = trimmed.find('=') else {
            continue;
        };
        // A dotted key (`optional-dependencies.tests = [...]` in `[project]`) names a value of
        // the sub-table, as TOML reads it.
        let mut path = dotted_key(&trimmed[..index]);
        let key = path.pop().unwrap_or_default();
        let table = std::iter::once(table.clone())
            .filter(|name| !name.is_empty())
            .chain(path)
            .collect::<Vec<_>>()
            .join(".");
        let mut value = trimmed[index + 1..].trim().to_string();
        if value.starts_with('[') {
            // Arrays may span lines: read until the brackets balance outside strings.
            while !brackets_balance(&value) {
                match lines.next() {
                    Some(next) => {
                        value.push('\n');
                        value.push_str(next);
                    }
                    None => break,
                }
            }
            let strings = toml_strings(&value);
            tables
                .entry(table.clone())
                .or_default()
                .insert(key, TomlValue::Strings(strings));
        } else if let Some(string) = toml_strings(&value).into_iter().next()
            && (value.starts_with('"') || value.starts_with('\''))
        {
            tables
                .entry(table.clone())
                .or_default()
                .insert(key, TomlValue::String(string));
        }
    }
    tables
}

/// The parts of a TOML key, split on dots outside quotes, quotes removed (`urls."Issue tracker"`).
fn dotted_key(key: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut quote: Option<char> = None;
    for character in key.trim().chars() {
        match (quote, character) {
            (Some(open), _) if character == open => quote = None,
            (Some(_), _) => parts.last_mut().expect("never empty").push(character),
            (None, '"' | '\'') => quote = Some(character),
            (None, '.') => parts.push(String::new()),
            (None, _) if character.is_whitespace() => {}
            (None, _) => parts.last_mut().expect("never empty").push(character),
        }
    }
    parts
}

fn brackets_balance(text: &str) -> bool {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut comment = false;
    for character in text.chars() {
        if comment {
            comment = character != '\n';
            continue;
        }
        match quote {
            Some(open) => {
                if escaped {
                    escaped = false;
                } else if character == '\\' && open == '"' {
                    escaped = true;
                } else if character == open {
                    quote = None;
                }
            }
            None => match character {
                '"' | '\'' => quote = Some(character),
                '[' => depth += 1,
                ']' => depth -= 1,
                '#' => comment = true,
                _ => {}
            },
        }
    }
    depth <= 0
}

/// Every quoted string in `text`, in order (comments skipped, basic escapes resolved), outside
/// inline tables (a dependency group's `{include-group = "test"}` is not a requirement).
fn toml_strings(text: &str) -> Vec<String> {
    let mut strings = Vec::new();
    let mut characters = text.chars();
    let mut inline_table = 0usize;
    while let Some(character) = characters.next() {
        match character {
            '{' => inline_table += 1,
            '}' => inline_table = inline_table.saturating_sub(1),
            '#' => {
                for skipped in characters.by_ref() {
                    if skipped == '\n' {
                        break;
                    }
                }
            }
            '"' | '\'' => {
                let mut string = String::new();
                while let Some(inner) = characters.next() {
                    if inner == character {
                        break;
                    }
                    if inner == '\\' && character == '"' {
                        if let Some(escaped) = characters.next() {
                            string.push(escaped);
                        }
                        continue;
                    }
                    string.push(inner);
                }
                if inline_table == 0 {
                    strings.push(string);
                }
            }
            _ => {}
        }
    }
    strings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ini_values_continue_on_indented_lines() {
        let sections = parse_ini(
            "[metadata]\nname = demo\nclassifiers =\n    Programming Language :: Python :: 3.8\n  \
             Programming Language :: Python :: 3.9\n\n[options]\npython_requires = >=3.8\n\
             ; a comment\ninstall_requires =\n    attrs>=19  # pinned\n",
        );
        assert_eq!(sections["metadata"]["name"], "demo");
        assert_eq!(
            ini_lines(&sections["metadata"]["classifiers"]),
            [
                "Programming Language :: Python :: 3.8",
                "Programming Language :: Python :: 3.9"
            ]
        );
        assert_eq!(sections["options"]["python_requires"], ">=3.8");
        assert_eq!(
            ini_lines(&sections["options"]["install_requires"]),
            ["attrs>=19"]
        );
    }

    #[test]
    fn toml_strings_and_multiline_arrays() {
        let tables = parse_toml(
            "[project]\nname = \"demo\"\nrequires-python = '>=3.9'\ndependencies = [\n  \"attrs\", # why\n  \
             \"six>=1.0\",\n]\nversion = 3\n\n[project.optional-dependencies]\ntest = [\"pytest\", \"hypothesis[cli]\"]\n\
             [[tool.mypy.overrides]]\nmodule = \"x\"\n",
        );
        let project = &tables["project"];
        assert_eq!(project["name"], TomlValue::String("demo".into()));
        assert_eq!(
            project["requires-python"],
            TomlValue::String(">=3.9".into())
        );
        assert_eq!(
            project["dependencies"],
            TomlValue::Strings(vec!["attrs".into(), "six>=1.0".into()])
        );
        assert!(!project.contains_key("version"));
        assert!(!tables["project.optional-dependencies"].contains_key("module"));
        assert_eq!(
            tables["project.optional-dependencies"]["test"],
            TomlValue::Strings(vec!["pytest".into(), "hypothesis[cli]".into()])
        );
    }

    #[test]
    fn toml_dotted_keys_name_values_of_sub_tables() {
        // humanize's pyproject.toml: without dotted keys its `tests` extra (freezegun) was unread.
        let tables = parse_toml(
            "[project]\nname = \"humanize\"\noptional-dependencies.tests = [\n  \"freezegun\",\n  \"pytest\",\n]\n\
             urls.\"Issue tracker\" = \"https://example.org\"\n\n[dependency-groups]\n\
             dev = [{include-group = \"test\"}, \"ruff\"]\n",
        );
        assert_eq!(
            tables["project.optional-dependencies"]["tests"],
            TomlValue::Strings(vec!["freezegun".into(), "pytest".into()])
        );
        assert_eq!(
            tables["project.urls"]["Issue tracker"],
            TomlValue::String("https://example.org".into())
        );
        assert_eq!(
            tables["dependency-groups"]["dev"],
            TomlValue::Strings(vec!["ruff".into()])
        );
    }
}
