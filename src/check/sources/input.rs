//! One claim source as read: its bytes' digest, the name its claims report, and the helpers every
//! reader uses to build claims and errors that name the file.

use std::path::{Path, PathBuf};

use crate::check::claim::{Anchor, ClaimOrigin, MemoryClaim, SourceFormat, SourceSpan};

use super::error::SourceError;
use super::json_records::WrongType;

/// A file's text and names.
pub struct Input<'a> {
    /// The path it was opened at.
    pub path: &'a Path,
    /// The name its claims report: repository-relative inside the repository, else as opened.
    pub label: PathBuf,
    pub text: &'a str,
    /// blake3 of the bytes read, in hex.
    pub digest: String,
    pub format: SourceFormat,
}

impl<'a> Input<'a> {
    /// A file known only by its name and text (the readers' unit tests).
    #[cfg(test)]
    pub fn of_text(label: &'a str, text: &'a str, format: SourceFormat) -> Self {
        Input {
            path: Path::new(label),
            label: label.into(),
            text,
            digest: String::new(),
            format,
        }
    }

    /// The label as the `/`-separated string ids are computed from.
    pub fn label_text(&self) -> String {
        self.label.to_string_lossy().replace('\\', "/")
    }

    /// A claim of this file with no test, check or record key yet.
    pub fn claim(&self, id: String, text: String, line: u32, anchors: Vec<Anchor>) -> MemoryClaim {
        MemoryClaim {
            id,
            text,
            source: SourceSpan {
                file: self.label.clone(),
                line,
            },
            format: self.format,
            anchors,
            test: None,
            check: None,
            record_key: None,
            origin: Some(ClaimOrigin {
                path: self.path.to_path_buf(),
                digest: self.digest.clone(),
            }),
        }
    }

    pub fn missing(&self, line: u32, field: &'static str) -> SourceError {
        SourceError::MissingField {
            path: self.label.clone(),
            line,
            field,
        }
    }

    /// `field` on `line` holds `wrong.found` where the format wants `expected`.
    pub fn bad_field(
        &self,
        line: u32,
        field: &'static str,
        expected: &'static str,
        wrong: WrongType,
    ) -> SourceError {
        SourceError::BadField {
            path: self.label.clone(),
            line,
            field,
            expected,
            found: wrong.found,
        }
    }
}

/// Adds `anchor` unless already there, keeping first-seen order.
pub fn push_unique(anchors: &mut Vec<Anchor>, anchor: Anchor) {
    if !anchors.contains(&anchor) {
        anchors.push(anchor);
    }
}
