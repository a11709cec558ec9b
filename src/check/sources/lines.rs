//! Byte offsets to 1-based line numbers, for readers that parse a whole file and must report each
//! claim (and each error) on its line.

/// The start offset of every line of one text.
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(at, _)| at + 1))
            .collect();
        LineIndex { starts }
    }

    /// The 1-based line holding byte `offset`.
    pub fn line(&self, offset: usize) -> u32 {
        self.starts.partition_point(|start| *start <= offset) as u32
    }

    /// The offset where the line holding `offset` starts.
    pub fn line_start(&self, offset: usize) -> usize {
        self.starts[self.line(offset) as usize - 1]
    }

    /// The offset just past the end of the line holding `offset` (after its newline, or the text's
    /// length on the last line).
    pub fn next_line_start(&self, offset: usize, text_length: usize) -> usize {
        self.starts
            .get(self.line(offset) as usize)
            .copied()
            .unwrap_or(text_length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_map_to_their_lines() {
        let text = "ab\ncd\n\nef";
        let lines = LineIndex::new(text);
        assert_eq!(
            [0, 2, 3, 6, 7, 8].map(|offset| lines.line(offset)),
            [1, 1, 2, 3, 4, 4]
        );
        assert_eq!(lines.line_start(4), 3);
        assert_eq!(lines.next_line_start(4, text.len()), 6);
        assert_eq!(lines.next_line_start(8, text.len()), text.len());
    }
}
