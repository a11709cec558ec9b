//! The records of an item's output, parsed only when they are read.
//!
//! A re-run that computes nothing reads every cached output from the store, and most of those
//! records are never looked at as JSON values: a step decodes them into its own types
//! ([`ItemOutput::decode`](super::ItemOutput::decode)), or does not read them at all (a `command`
//! item has none; a model call's record is read once, when the predictions are written). So a
//! cached output keeps the JSON text of its record list, checked to be a list when it is read, and
//! decodes it straight into the type asked for; the [`serde_json::Value`]s are built only when
//! code reads them as values ([`Records`] dereferences to them). An output computed in this run
//! holds its values from the start. Either way it serializes to the same bytes, so the digest of an
//! output does not depend on whether it came from the cache.

use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer, Error as _};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::cache::Deferred;

/// An item's records: JSON values, one result-file line each.
pub type Records = Deferred<Vec<Value>>;

impl Records {
    /// The records decoded as `T`: from the text when the values were never built.
    pub fn decode<T: DeserializeOwned>(&self) -> serde_json::Result<Vec<T>> {
        match self.unparsed_text() {
            Some(text) => serde_json::from_str(text),
            None => self.value().iter().map(T::deserialize).collect(),
        }
    }
}

impl FromIterator<Value> for Records {
    fn from_iter<I: IntoIterator<Item = Value>>(values: I) -> Self {
        Records::from(values.into_iter().collect::<Vec<_>>())
    }
}

impl<'a> IntoIterator for &'a Records {
    type Item = &'a Value;
    type IntoIter = std::slice::Iter<'a, Value>;

    fn into_iter(self) -> Self::IntoIter {
        self.value().iter()
    }
}

impl<'de> Deserialize<'de> for Records {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Box::<RawValue>::deserialize(deserializer)?;
        if !text.get().trim_start().starts_with('[') {
            return Err(D::Error::custom("records must be a list"));
        }
        // No records: nothing to keep (a `command` item's output has none).
        if text.get() == "[]" {
            return Ok(Records::default());
        }
        Ok(Records::from_text(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use serde_json::json;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Call {
        verdict: String,
        tokens: u32,
    }

    fn read(text: &str) -> Records {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn records_read_as_text_decode_and_serialize_as_the_values_they_hold() {
        let values = vec![
            json!({"verdict": "held", "tokens": 3}),
            json!({"verdict": "flipped", "tokens": 4}),
        ];
        let text = serde_json::to_string(&values).unwrap();
        let read = read(&text);
        assert_eq!(
            read.decode::<Call>().unwrap(),
            vec![
                Call {
                    verdict: "held".into(),
                    tokens: 3
                },
                Call {
                    verdict: "flipped".into(),
                    tokens: 4
                }
            ]
        );
        assert_eq!(serde_json::to_string(&read).unwrap(), text);
        assert_eq!(read, Records::from(values.clone()));
        assert_eq!(read.len(), 2);
        let mut changed = read.clone();
        changed.push(json!({"verdict": "held", "tokens": 5}));
        assert_eq!(changed.decode::<Call>().unwrap().len(), 3);
        assert_eq!(read[1]["verdict"], "flipped");
        // Once parsed, it decodes from the values, to the same records.
        assert_eq!(
            read.decode::<Call>().unwrap(),
            Records::from(values).decode::<Call>().unwrap()
        );
    }

    #[test]
    fn a_record_of_the_wrong_shape_fails_to_decode_and_a_non_list_fails_to_read() {
        let wrong = read(r#"[{"verdict": "held"}]"#);
        assert!(wrong.decode::<Call>().is_err());
        assert!(serde_json::from_str::<Records>(r#"{"verdict": "held"}"#).is_err());
        assert!(serde_json::from_str::<Records>("3").is_err());
        assert!(read("[]").is_empty());
    }
}
