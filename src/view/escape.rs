//! Escaping for the two places text from the data enters the page: HTML text and attributes,
//! and JSON embedded in a `<script>` element. A test's source, a commit message or a model's
//! answer is hostile text here: `</script>` or markup in it must stay text.

/// `text` safe inside HTML text and inside a double- or single-quoted attribute.
pub fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

/// JSON text safe inside `<script type="application/json">`: `<`, `>` and `&` become `\u` escapes
/// (so no `</script>` or `<!--` can end or bend the element), and so do U+2028 and U+2029 (line
/// terminators to older JavaScript parsers). The result is still the same JSON value.
pub fn json_in_script(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for character in json.chars() {
        match character {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_text_stays_text() {
        assert_eq!(
            html(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
    }

    #[test]
    fn embedded_json_cannot_close_its_script_and_reads_back_as_the_same_value() {
        let value = serde_json::json!({"source": "</script><!-- \u{2028}\u{2029} & <b>"});
        let escaped = json_in_script(&value.to_string());
        for forbidden in ["<", ">", "&", "\u{2028}", "\u{2029}"] {
            assert!(!escaped.contains(forbidden), "{forbidden:?} in {escaped}");
        }
        let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back, value);
    }
}
