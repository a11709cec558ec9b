//! An API key, read from the environment variable a `models:` entry names.
//!
//! The key's only way out is [`ApiKey::expose`], called where the auth header is built. It has no
//! `Display`, no `Serialize`, and its `Debug` prints a placeholder, so it cannot reach a key record,
//! a cache object, a log line or a result file by accident. [`ApiKey::redact`] scrubs it from text a
//! server sent back (an error body may echo what it was given).

use std::fmt;

/// A key that is never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key (tests build one directly; pipelines go through [`ApiKey::from_env`]).
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The key in variable `name`, `None` when it is unset or empty.
    pub fn from_env(name: &str) -> Option<ApiKey> {
        std::env::var(name)
            .ok()
            .map(|key| key.trim().to_string())
            .filter(|key| !key.is_empty())
            .map(ApiKey)
    }

    /// The key itself, for the auth header and nothing else.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `[redacted]`.
    pub fn redact(&self, text: &str) -> String {
        if self.0.is_empty() {
            return text.to_string();
        }
        text.replace(&self.0, "[redacted]")
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("ApiKey([redacted])")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_prints_the_key() {
        let key = ApiKey::new("sk-secret-123");
        assert!(!format!("{key:?}").contains("secret"));
        assert_eq!(
            key.redact("invalid key sk-secret-123 given"),
            "invalid key [redacted] given"
        );
    }
}
