//! A Markdown file cut into the pieces that can be claims: each list item's own text, and each
//! sentence of a paragraph outside lists. Headings, code blocks, HTML (comments included), tables,
//! images and front matter are never claims; the front matter is handed back for its `globs`.
//!
//! Parsed with pulldown-cmark and its source offsets, so every unit knows its line and where a note
//! about it goes: on the line after the item's own text (or the paragraph), indented to the item.

use std::ops::Range;

use pulldown_cmark::{Event, MetadataBlockKind, Options, Parser, Tag, TagEnd};

use super::super::lines::LineIndex;
use super::sentences;

/// One candidate claim of a Markdown file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// The rendered text: emphasis and link targets dropped, code spans kept in backticks,
    /// whitespace folded.
    pub text: String,
    /// The contents of its code spans.
    pub code_spans: Vec<String>,
    /// 1-based line its text starts on.
    pub line: u32,
    /// Every word of it is inside a link (a line of links is navigation, not a claim).
    pub link_only: bool,
    /// Where a note about it is inserted.
    pub note: NotePlace,
}

/// A line to insert a note at: byte `at` (the start of a line) and the prefix that keeps the note
/// inside the unit's list item or block quote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotePlace {
    pub at: usize,
    pub indent: String,
}

/// A file's units and its front matter (the YAML between the leading `---` lines), if any, with the
/// line the front matter starts on.
pub struct Document {
    pub units: Vec<Unit>,
    pub front_matter: Option<(String, u32)>,
}

/// One run of rendered text and where it came from.
#[derive(Debug, Clone, Copy)]
pub struct Piece {
    /// Offset in the rendered text.
    pub rendered: usize,
    /// Offset in the source of the run's first character.
    pub source: usize,
    pub code: bool,
    pub in_link: bool,
}

/// Text gathered for one item or paragraph.
#[derive(Default)]
pub struct Gathered {
    pub rendered: String,
    pub pieces: Vec<Piece>,
    pub code_spans: Vec<String>,
}

impl Gathered {
    fn push(&mut self, text: &str, source: usize, code: bool, in_link: bool) {
        self.pieces.push(Piece {
            rendered: self.rendered.len(),
            source,
            code,
            in_link,
        });
        if code {
            self.rendered.push('`');
            self.rendered.push_str(text);
            self.rendered.push('`');
            self.code_spans.push(text.to_string());
        } else {
            self.rendered.push_str(text);
        }
    }

    /// The source offset of rendered byte `at`.
    pub fn source_of(&self, at: usize) -> usize {
        let index = self.pieces.partition_point(|piece| piece.rendered <= at);
        let piece = self.pieces[index.saturating_sub(1)];
        match piece.code {
            true => piece.source,
            false => piece.source + (at - piece.rendered),
        }
    }

    /// Whether the rendered range holds a word outside every link.
    pub fn has_words_outside_links(&self, start: usize, end: usize) -> bool {
        self.pieces.iter().enumerate().any(|(index, piece)| {
            let piece_end = self
                .pieces
                .get(index + 1)
                .map_or(self.rendered.len(), |next| next.rendered);
            !piece.in_link
                && piece.rendered < end
                && piece_end > start
                && self.rendered[piece.rendered.max(start)..piece_end.min(end)]
                    .chars()
                    .any(char::is_alphanumeric)
        })
    }
}

struct OpenItem {
    start: usize,
    gathered: Gathered,
    /// End of the item's own text so far.
    end: usize,
    /// A nested list began: later text belongs to it, not to this item.
    closed: bool,
}

/// Cuts `text` into units.
pub fn parse(text: &str) -> Document {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS;
    let mut walk = Walk {
        text,
        lines: LineIndex::new(text),
        units: Vec::new(),
        front_matter: None,
        items: Vec::new(),
        paragraph: None,
        skipped: 0,
        links: 0,
        in_metadata: false,
    };
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        walk.event(event, range);
    }
    walk.units.sort_by_key(|unit| unit.line);
    Document {
        units: walk.units,
        front_matter: walk.front_matter,
    }
}

/// The state of one pass over a file's events.
struct Walk<'t> {
    text: &'t str,
    lines: LineIndex,
    units: Vec<Unit>,
    front_matter: Option<(String, u32)>,
    /// The list items open around the current event, innermost last.
    items: Vec<OpenItem>,
    /// A paragraph outside lists being gathered, with its start.
    paragraph: Option<(usize, Gathered)>,
    /// Depth inside blocks that are never claims (headings, code, HTML, tables, images).
    skipped: usize,
    /// Depth inside links.
    links: usize,
    in_metadata: bool,
}

impl Walk<'_> {
    fn event(&mut self, event: Event, range: Range<usize>) {
        match event {
            Event::Start(Tag::MetadataBlock(MetadataBlockKind::YamlStyle)) => {
                self.in_metadata = true
            }
            Event::End(TagEnd::MetadataBlock(_)) => self.in_metadata = false,
            Event::Text(content) if self.in_metadata => match &mut self.front_matter {
                Some((gathered, _)) => gathered.push_str(&content),
                None => {
                    self.front_matter = Some((content.to_string(), self.lines.line(range.start)))
                }
            },
            Event::Start(
                Tag::Heading { .. }
                | Tag::CodeBlock(_)
                | Tag::HtmlBlock
                | Tag::Table(_)
                | Tag::Image { .. },
            ) => self.skipped += 1,
            Event::End(
                TagEnd::Heading(_)
                | TagEnd::CodeBlock
                | TagEnd::HtmlBlock
                | TagEnd::Table
                | TagEnd::Image,
            ) => self.skipped -= 1,
            _ if self.skipped > 0 => {}
            Event::Start(Tag::Item) => self.items.push(OpenItem {
                start: range.start,
                gathered: Gathered::default(),
                end: range.start,
                closed: false,
            }),
            Event::End(TagEnd::Item) => {
                if let Some(item) = self.items.pop() {
                    self.units.extend(item_unit(self.text, &self.lines, item));
                }
            }
            Event::Start(Tag::List(_)) => {
                if let Some(item) = self.items.last_mut() {
                    item.closed = true;
                }
            }
            Event::Start(Tag::Paragraph) => self.paragraph_starts(range.start),
            Event::End(TagEnd::Paragraph) => self.paragraph_ends(range.end),
            Event::Start(Tag::Link { .. }) => self.links += 1,
            Event::End(TagEnd::Link) => self.links = self.links.saturating_sub(1),
            Event::Text(content) => self.inline(&content, range, false),
            Event::Code(content) => self.inline(&content, range, true),
            Event::SoftBreak | Event::HardBreak => self.inline(" ", range, false),
            _ => {}
        }
    }

    fn paragraph_starts(&mut self, start: usize) {
        match self.items.last_mut() {
            // A second paragraph of an item continues its text.
            Some(item) if !item.closed && !item.gathered.rendered.is_empty() => {
                item.gathered.push(" ", start, false, false);
            }
            Some(_) => {}
            None => self.paragraph = Some((start, Gathered::default())),
        }
    }

    fn paragraph_ends(&mut self, end: usize) {
        match self.items.last_mut() {
            Some(item) if !item.closed => item.end = end,
            Some(_) => {}
            None => {
                if let Some((start, gathered)) = self.paragraph.take() {
                    let units = paragraph_units(self.text, &self.lines, start, end, &gathered);
                    self.units.extend(units);
                }
            }
        }
    }

    /// Text, a code span or a line break, for the open item or paragraph.
    fn inline(&mut self, content: &str, range: Range<usize>, code: bool) {
        let in_link = self.links > 0;
        let target = match self.items.last_mut() {
            Some(item) if !item.closed => {
                item.end = item.end.max(range.end);
                Some(&mut item.gathered)
            }
            Some(_) => None,
            None => self.paragraph.as_mut().map(|(_, gathered)| gathered),
        };
        if let Some(gathered) = target {
            gathered.push(content, range.start, code, in_link);
        }
    }
}

fn item_unit(text: &str, lines: &LineIndex, item: OpenItem) -> Option<Unit> {
    let gathered = item.gathered;
    let rendered = fold(&gathered.rendered);
    if rendered.is_empty() {
        return None;
    }
    let first = gathered.rendered.len() - gathered.rendered.trim_start().len();
    Some(Unit {
        text: rendered,
        line: lines.line(gathered.source_of(first)),
        link_only: !gathered.has_words_outside_links(0, gathered.rendered.len()),
        code_spans: gathered.code_spans,
        note: NotePlace {
            at: lines.next_line_start(item.end.saturating_sub(1), text.len()),
            indent: item_indent(text, lines, item.start),
        },
    })
}

fn paragraph_units(
    text: &str,
    lines: &LineIndex,
    start: usize,
    end: usize,
    gathered: &Gathered,
) -> Vec<Unit> {
    let note = NotePlace {
        at: lines.next_line_start(end.saturating_sub(1), text.len()),
        indent: container_prefix(&text[lines.line_start(start)..start]),
    };
    if !gathered.has_words_outside_links(0, gathered.rendered.len()) {
        return Vec::new();
    }
    sentences::split(&gathered.rendered)
        .into_iter()
        .map(|(from, to)| {
            let code_spans = gathered
                .pieces
                .iter()
                .filter(|piece| piece.code && (from..to).contains(&piece.rendered))
                .map(|piece| {
                    let span = &gathered.rendered[piece.rendered..];
                    span[1..span[1..].find('`').map_or(span.len(), |end| end + 1)].to_string()
                })
                .collect();
            Unit {
                text: fold(&gathered.rendered[from..to]),
                code_spans,
                line: lines.line(gathered.source_of(from)),
                link_only: !gathered.has_words_outside_links(from, to),
                note: note.clone(),
            }
        })
        .collect()
}

/// The prefix of a note inside the item starting at `start`: the container's prefix, then spaces
/// up to the item's content column (past its marker and the spaces after it), so the note is part
/// of the item and never an indented code block.
fn item_indent(text: &str, lines: &LineIndex, start: usize) -> String {
    let mut indent = container_prefix(&text[lines.line_start(start)..start]);
    let rest = &text[start..];
    let marker = match rest.chars().next() {
        Some('-' | '+' | '*') => 1,
        _ => rest.find(['.', ')']).map_or(1, |at| at + 1),
    };
    let spaces = rest[marker..].chars().take_while(|c| *c == ' ').count();
    let spaces = match spaces {
        1..=4 if !rest[marker + spaces..].starts_with('\n') => spaces,
        _ => 1,
    };
    indent.push_str(&" ".repeat(marker + spaces));
    indent
}

/// A line's text before a block: block-quote markers kept, everything else made a space.
fn container_prefix(before: &str) -> String {
    before
        .chars()
        .map(|c| if c == '>' || c == '\t' { c } else { ' ' })
        .collect()
}

fn fold(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "---
globs: src/**/*.py
---
# Project notes

- `parse_url` returns a tuple.
- Nested parent with **bold** text
  - child item with [a link](http://x) inside
- [Docs](docs/index.md)

```python
def not_a_claim(): pass
```
<!-- a comment that is not a claim -->

First sentence names `Client`. Second one,
wrapped over lines, e.g. here. Third!

> Quoted `thing` is here.
";

    #[test]
    fn units_are_items_and_sentences_with_their_lines() {
        let document = parse(TEXT);
        let summary: Vec<(u32, &str, bool)> = document
            .units
            .iter()
            .map(|unit| (unit.line, unit.text.as_str(), unit.link_only))
            .collect();
        assert_eq!(
            summary,
            [
                (6, "`parse_url` returns a tuple.", false),
                (7, "Nested parent with bold text", false),
                (8, "child item with a link inside", false),
                (9, "Docs", true),
                (16, "First sentence names `Client`.", false),
                (16, "Second one, wrapped over lines, e.g. here.", false),
                (17, "Third!", false),
                (19, "Quoted `thing` is here.", false),
            ]
        );
        assert_eq!(
            document.front_matter,
            Some(("globs: src/**/*.py\n".to_string(), 2))
        );
        assert_eq!(document.units[0].code_spans, ["parse_url"]);
        assert_eq!(document.units[4].code_spans, ["Client"]);
    }

    #[test]
    fn notes_go_after_the_items_own_text_indented_to_it() {
        let document = parse(TEXT);
        let place = |index: usize| {
            let note = &document.units[index].note;
            (TEXT[..note.at].lines().count() + 1, note.indent.clone())
        };
        assert_eq!(place(0), (7, "  ".to_string()));
        assert_eq!(place(1), (8, "  ".to_string()), "before the nested list");
        assert_eq!(place(2), (9, "    ".to_string()));
        assert_eq!(place(5), (18, String::new()), "after the paragraph");
        assert_eq!(place(7), (20, "> ".to_string()));
    }

    #[test]
    fn ordered_and_task_items_indent_to_their_content() {
        let text = "1. `a` is b\n10)  `c` is d\n- [ ] `e` is f\n";
        let indents: Vec<String> = parse(text)
            .units
            .iter()
            .map(|unit| unit.note.indent.clone())
            .collect();
        assert_eq!(indents, ["   ", "     ", "  "]);
    }
}
