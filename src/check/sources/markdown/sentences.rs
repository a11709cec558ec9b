//! Paragraphs cut into sentences: a sentence ends at `.`, `!` or `?` outside a code span, followed
//! by a space and a capital, a digit, a quote, a parenthesis or a code span, unless the word before
//! the stop is an abbreviation (`e.g.`, `i.e.`, `etc.`, `vs.`).

const ABBREVIATIONS: &[&str] = &[
    "e.g", "i.e", "etc", "vs", "cf", "approx", "incl", "mr", "dr", "no", "fig",
];

/// The byte ranges of `text`'s sentences, each without surrounding whitespace.
pub fn split(text: &str) -> Vec<(usize, usize)> {
    let mut sentences = Vec::new();
    let mut start = 0;
    let mut in_code = false;
    let mut characters = text.char_indices().peekable();
    while let Some((at, character)) = characters.next() {
        if character == '`' {
            in_code = !in_code;
            continue;
        }
        if in_code || !matches!(character, '.' | '!' | '?') {
            continue;
        }
        let end = at + character.len_utf8();
        let rest = &text[end..];
        let after = rest.trim_start();
        let spaced = after.len() < rest.len();
        let opens = after.chars().next().is_some_and(|next| {
            next.is_uppercase() || next.is_ascii_digit() || "`\"'(*[".contains(next)
        });
        if spaced && opens && !(character == '.' && ends_with_abbreviation(&text[start..at])) {
            sentences.push(trimmed(text, start, end));
            start = end;
        }
        while characters
            .peek()
            .is_some_and(|(_, next)| matches!(next, '.' | '!' | '?'))
        {
            characters.next();
        }
    }
    sentences.push(trimmed(text, start, text.len()));
    sentences.retain(|(from, to)| from < to);
    sentences
}

fn ends_with_abbreviation(before: &str) -> bool {
    let word = before
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or_default()
        .to_lowercase();
    ABBREVIATIONS.contains(&word.as_str())
}

fn trimmed(text: &str, from: usize, to: usize) -> (usize, usize) {
    let slice = &text[from..to];
    let from = from + (slice.len() - slice.trim_start().len());
    (from, from.max(to - (slice.len() - slice.trim_end().len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sentences(text: &str) -> Vec<&str> {
        split(text)
            .into_iter()
            .map(|(from, to)| &text[from..to])
            .collect()
    }

    #[test]
    fn stops_split_but_not_in_code_abbreviations_or_before_lowercase() {
        assert_eq!(
            sentences(
                "Use `a. B` here. It works, e.g. Often. Version 1.2 is out! 3 left? yes. Done"
            ),
            [
                "Use `a. B` here.",
                "It works, e.g. Often.",
                "Version 1.2 is out!",
                "3 left? yes.",
                "Done"
            ]
        );
        assert_eq!(sentences("  One.  "), ["One."]);
        assert!(sentences("   ").is_empty());
    }
}
