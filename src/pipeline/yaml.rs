//! A YAML tree that remembers where every node came from.
//!
//! Validation must point at `file:line:col`, and must see duplicate keys that a YAML loader would
//! silently collapse. So the pipeline file is read with `yaml-rust2`'s event parser, which reports a
//! position for each event, into this small tree: maps keep every entry in file order, duplicates
//! included, and plain scalars are resolved the way YAML 1.2's core schema reads them.

use std::collections::BTreeMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// A 1-based position in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mark {
    pub line: usize,
    pub column: usize,
}

impl Mark {
    /// The top of the file.
    pub const START: Mark = Mark { line: 1, column: 1 };

    fn from_marker(marker: Marker) -> Mark {
        // yaml-rust2 counts lines from 1 and columns from 0.
        Mark {
            line: marker.line().max(1),
            column: marker.col() + 1,
        }
    }
}

/// A value with the place it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub mark: Mark,
    pub value: Value,
}

/// One `key: value` of a map. Keys are scalars, kept as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: String,
    pub key_mark: Mark,
    pub value: Node,
}

/// A YAML value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Integer(i64),
    Float(f64),
    String(String),
    List(Vec<Node>),
    /// Every entry in file order, duplicate keys included.
    Map(Vec<Entry>),
}

impl Value {
    /// What the value is, as a phrase for messages ("a list").
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "nothing (null)",
            Value::Bool(_) => "a boolean",
            Value::Integer(_) => "an integer",
            Value::Float(_) => "a number",
            Value::String(_) => "a string",
            Value::List(_) => "a list",
            Value::Map(_) => "a map",
        }
    }
}

/// A parsed file: its single document (if any) and the structural problems found while reading it.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// `None` for a file with no content (only comments or blank lines).
    pub root: Option<Node>,
    /// Problems the tree cannot represent: a second document, a map key that is not a scalar.
    pub problems: Vec<Problem>,
}

/// A structural problem found while reading the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub mark: Mark,
    pub message: String,
    pub hint: String,
}

/// The file is not YAML.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid YAML at {}:{}: {message}", mark.line, mark.column)]
pub struct SyntaxError {
    pub mark: Mark,
    pub message: String,
}

/// Reads `text` into a positioned tree.
pub fn parse(text: &str) -> Result<Document, SyntaxError> {
    let mut builder = Builder::default();
    Parser::new_from_str(text)
        .load(&mut builder, true)
        .map_err(|error| SyntaxError {
            mark: Mark::from_marker(*error.marker()),
            message: error.info().to_string(),
        })?;
    Ok(Document {
        root: builder.root,
        problems: builder.problems,
    })
}

/// A collection being built, with the anchor it will be recorded under.
enum Frame {
    List {
        mark: Mark,
        anchor: usize,
        items: Vec<Node>,
    },
    Map {
        mark: Mark,
        anchor: usize,
        entries: Vec<Entry>,
        /// The key read and waiting for its value; `None` inside for a key that is not a
        /// scalar (already reported; its entry is dropped so it causes no further problems).
        key: Option<(Option<String>, Mark)>,
    },
}

/// Turns parser events into nodes.
#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    anchors: BTreeMap<usize, Node>,
    documents: usize,
    root: Option<Node>,
    problems: Vec<Problem>,
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, event: Event, marker: Marker) {
        let mark = Mark::from_marker(marker);
        match event {
            Event::DocumentStart => self.start_document(mark),
            Event::Scalar(text, style, anchor, tag) => {
                let explicit_string = tag.is_some_and(|tag| tag.suffix == "str");
                self.scalar(text, style, explicit_string, anchor, mark);
            }
            Event::Alias(anchor) => {
                // The parser rejects aliases to unknown anchors, so the lookup only misses for an
                // alias inside its own anchored collection, which YAML forbids anyway.
                let value = self
                    .anchors
                    .get(&anchor)
                    .map_or(Value::Null, |node| node.value.clone());
                self.finish(Node { mark, value }, 0);
            }
            Event::SequenceStart(anchor, _) => self.stack.push(Frame::List {
                mark,
                anchor,
                items: Vec::new(),
            }),
            Event::MappingStart(anchor, _) => self.stack.push(Frame::Map {
                mark,
                anchor,
                entries: Vec::new(),
                key: None,
            }),
            Event::SequenceEnd | Event::MappingEnd => self.end_collection(),
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
        }
    }
}

impl Builder {
    /// Counts a document; a second one is a problem.
    fn start_document(&mut self, mark: Mark) {
        self.documents += 1;
        if self.documents == 2 {
            self.problems.push(Problem {
                mark,
                message: "a pipeline file holds one YAML document, found a second one".into(),
                hint: "remove the `---` line and merge the documents, or split them into two \
                       pipeline files"
                    .into(),
            });
        }
    }

    /// A scalar: the key a map waits for, or else a value, resolved by the core schema when
    /// plain and not tagged `!!str`.
    fn scalar(
        &mut self,
        text: String,
        style: TScalarStyle,
        explicit_string: bool,
        anchor: usize,
        mark: Mark,
    ) {
        // Keys are names as written: `1.10:` is the key "1.10", not a number.
        if let Some(Frame::Map {
            key: key @ None, ..
        }) = self.stack.last_mut()
        {
            if text == "<<" && style == TScalarStyle::Plain {
                // A merge key would make an entry's position ambiguous (where is a merged key
                // written?), and YAML 1.2 dropped merge keys anyway.
                *key = Some((None, mark));
                self.problems.push(Problem {
                    mark,
                    message: "YAML merge keys (`<<`) are not supported".into(),
                    hint: "write the keys out; an anchor can still stand for a whole value, e.g. \
                           `inputs: *files`"
                        .into(),
                });
            } else {
                *key = Some((Some(text), mark));
            }
            return;
        }
        let value = if style == TScalarStyle::Plain && !explicit_string {
            resolve_plain(&text)
        } else {
            Value::String(text)
        };
        self.finish(Node { mark, value }, anchor);
    }

    /// Closes the list or map being built and places it.
    fn end_collection(&mut self) {
        let (node, anchor) = match self.stack.pop() {
            Some(Frame::List {
                mark,
                anchor,
                items,
            }) => (
                Node {
                    mark,
                    value: Value::List(items),
                },
                anchor,
            ),
            Some(Frame::Map {
                mark,
                anchor,
                entries,
                ..
            }) => (
                Node {
                    // A block map's start event is marked where its first key's `:` is seen; the
                    // map starts at that key.
                    mark: entries
                        .first()
                        .map_or(mark, |first| mark.min(first.key_mark)),
                    value: Value::Map(entries),
                },
                anchor,
            ),
            None => return,
        };
        self.finish(node, anchor);
    }

    /// Places a finished node into the collection being built, or makes it the root.
    fn finish(&mut self, node: Node, anchor: usize) {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => {
                // Only the first document counts; a second one is already a problem.
                if self.documents <= 1 {
                    self.root = Some(node);
                }
            }
            Some(Frame::List { items, .. }) => items.push(node),
            Some(Frame::Map { entries, key, .. }) => match key.take() {
                Some((Some(key), key_mark)) => entries.push(Entry {
                    key,
                    key_mark,
                    value: node,
                }),
                Some((None, _)) => {}
                None => {
                    // Scalar keys are taken as written before they get here (in `on_event`);
                    // what arrives is a collection or an alias used as a key.
                    self.problems.push(Problem {
                        mark: node.mark,
                        message: format!("a map key must be a name, found {}", node.value.kind()),
                        hint: "write a plain name before the `:`".into(),
                    });
                    *key = Some((None, node.mark));
                }
            },
        }
    }
}

/// Reads an unquoted scalar as YAML 1.2's core schema does.
fn resolve_plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Value::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Value::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Value::Float(f64::NAN),
        _ => {}
    }
    if let Some(hex) = text.strip_prefix("0x")
        && let Ok(value) = i64::from_str_radix(hex, 16)
    {
        return Value::Integer(value);
    }
    if let Some(octal) = text.strip_prefix("0o")
        && let Ok(value) = i64::from_str_radix(octal, 8)
    {
        return Value::Integer(value);
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty()
        && digits.bytes().all(|byte| byte.is_ascii_digit())
        && let Ok(value) = text.parse::<i64>()
    {
        return Value::Integer(value);
    }
    // Rust's float parser also takes `inf` and `nan`, which YAML reads as strings: accept only the
    // characters of a decimal number.
    let numeric = digits
        .bytes()
        .all(|byte| byte.is_ascii_digit() || matches!(byte, b'.' | b'e' | b'E' | b'-' | b'+'));
    if numeric
        && digits.bytes().any(|byte| byte.is_ascii_digit())
        && let Ok(value) = text.parse::<f64>()
    {
        return Value::Float(value);
    }
    Value::String(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(text: &str) -> Node {
        parse(text).unwrap().root.unwrap()
    }

    fn entries(node: &Node) -> &[Entry] {
        match &node.value {
            Value::Map(entries) => entries,
            other => panic!("expected a map, found {other:?}"),
        }
    }

    #[test]
    fn block_map_entries_carry_key_and_value_positions() {
        let node = root("version: 1\nsteps:\n  rank:\n    uses: rank-commits\n");
        let top = entries(&node);
        assert_eq!(top[0].key, "version");
        assert_eq!(top[0].key_mark, Mark { line: 1, column: 1 });
        assert_eq!(top[0].value.value, Value::Integer(1));
        assert_eq!(
            top[0].value.mark,
            Mark {
                line: 1,
                column: 10
            }
        );
        let steps = entries(&top[1].value);
        assert_eq!(steps[0].key, "rank");
        assert_eq!(steps[0].key_mark, Mark { line: 3, column: 3 });
        let rank = entries(&steps[0].value);
        assert_eq!(rank[0].key_mark, Mark { line: 4, column: 5 });
        assert_eq!(
            rank[0].value.value,
            Value::String("rank-commits".to_string())
        );
    }

    #[test]
    fn flow_collections_carry_positions() {
        let node = root("steps:\n  a: {uses: x, needs: [b, c]}\n");
        let steps = entries(&entries(&node)[0].value);
        let step = entries(&steps[0].value);
        assert_eq!(step[1].key, "needs");
        assert_eq!(
            step[1].key_mark,
            Mark {
                line: 2,
                column: 16
            }
        );
        let Value::List(needs) = &step[1].value.value else {
            panic!("needs is a list");
        };
        assert_eq!(
            needs[1].mark,
            Mark {
                line: 2,
                column: 27
            }
        );
    }

    #[test]
    fn duplicate_keys_are_kept() {
        let node = root("a: 1\na: 2\n");
        let top = entries(&node);
        assert_eq!(top.len(), 2);
        assert_eq!(top[1].key_mark.line, 2);
    }

    #[test]
    fn plain_scalars_resolve_like_the_core_schema() {
        assert_eq!(resolve_plain("12"), Value::Integer(12));
        assert_eq!(resolve_plain("-3"), Value::Integer(-3));
        assert_eq!(resolve_plain("0x10"), Value::Integer(16));
        assert_eq!(resolve_plain("3.10"), Value::Float(3.1));
        assert_eq!(resolve_plain("1e3"), Value::Float(1000.0));
        assert_eq!(resolve_plain("true"), Value::Bool(true));
        assert_eq!(resolve_plain("~"), Value::Null);
        assert_eq!(resolve_plain("inf"), Value::String("inf".into()));
        assert_eq!(resolve_plain("1.2.3"), Value::String("1.2.3".into()));
        assert_eq!(resolve_plain("a6_risk"), Value::String("a6_risk".into()));
    }

    #[test]
    fn keys_are_kept_as_written() {
        let node = root("1.10: a\n0x10: b\n~: c\n");
        let keys: Vec<_> = entries(&node)
            .iter()
            .map(|entry| entry.key.as_str())
            .collect();
        assert_eq!(keys, ["1.10", "0x10", "~"]);
    }

    #[test]
    fn a_collection_as_a_key_is_one_problem_and_no_entry() {
        let document = parse("? [x]\n: 1\nb: 2\n").unwrap();
        assert_eq!(document.problems.len(), 1);
        let node = document.root.unwrap();
        let keys: Vec<_> = entries(&node)
            .iter()
            .map(|entry| entry.key.as_str())
            .collect();
        assert_eq!(keys, ["b"]);
    }

    #[test]
    fn a_merge_key_is_a_problem_and_no_entry() {
        let document = parse("base: &base {a: 1}\nstep:\n  <<: *base\n  b: 2\n").unwrap();
        assert_eq!(document.problems.len(), 1);
        assert_eq!(document.problems[0].mark, Mark { line: 3, column: 3 });
        let node = document.root.unwrap();
        let step = entries(&entries(&node)[1].value);
        assert_eq!(step.len(), 1);
        assert_eq!(step[0].key, "b");
    }

    #[test]
    fn quoted_scalars_stay_strings() {
        let node = root("python: [\"3.10\", '12', !!str 7]\n");
        let Value::List(items) = &entries(&node)[0].value.value else {
            panic!("a list");
        };
        let values: Vec<_> = items.iter().map(|item| item.value.clone()).collect();
        assert_eq!(
            values,
            vec![
                Value::String("3.10".into()),
                Value::String("12".into()),
                Value::String("7".into())
            ]
        );
    }

    #[test]
    fn aliases_copy_the_anchored_value() {
        let node = root("a: &shared [x, y]\nb: *shared\n");
        let top = entries(&node);
        assert_eq!(top[1].value.value, top[0].value.value);
        assert_eq!(top[1].value.mark.line, 2);
    }

    #[test]
    fn a_block_map_starts_at_its_first_key() {
        let node = root("version: 1\nrepos:\n  - name: x\n    url: y\n");
        assert_eq!(node.mark, Mark::START);
        let Value::List(repos) = &entries(&node)[1].value.value else {
            panic!("a list");
        };
        assert_eq!(repos[0].mark, Mark { line: 3, column: 5 });
    }

    #[test]
    fn empty_text_has_no_root() {
        assert_eq!(parse("# only a comment\n").unwrap().root, None);
        assert_eq!(parse("").unwrap().root, None);
    }

    #[test]
    fn a_second_document_is_a_problem() {
        let document = parse("a: 1\n---\nb: 2\n").unwrap();
        assert_eq!(document.problems.len(), 1);
        assert_eq!(document.problems[0].mark.line, 2);
        assert_eq!(entries(document.root.as_ref().unwrap()).len(), 1);
    }

    #[test]
    fn syntax_errors_carry_their_position() {
        let error = parse("steps:\n  a: [b, c\n").unwrap_err();
        assert!(error.mark.line >= 2, "{error:?}");
        let error = parse("a: b: c\n").unwrap_err();
        assert_eq!(error.mark.line, 1);
    }
}
