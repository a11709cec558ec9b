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

use std::ops::Deref;
use std::sync::OnceLock;

use serde::de::{DeserializeOwned, Deserializer, Error as _};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// An item's records: JSON values, one result-file line each.
#[derive(Clone, Default)]
pub struct Records {
    /// The compact JSON text of the list, for records read from the cache and not parsed yet.
    text: Option<Box<RawValue>>,
    values: OnceLock<Vec<Value>>,
}

impl Records {
    /// The records as JSON values, parsed from the text on first use.
    pub fn values(&self) -> &Vec<Value> {
        self.values.get_or_init(|| match &self.text {
            Some(text) => {
                serde_json::from_str(text.get()).expect("the text was checked to be a list")
            }
            None => Vec::new(),
        })
    }

    /// The records decoded as `T`: from the text when the values were never built.
    pub fn decode<T: DeserializeOwned>(&self) -> serde_json::Result<Vec<T>> {
        match (&self.text, self.values.get()) {
            (Some(text), None) => serde_json::from_str(text.get()),
            _ => self.values().iter().map(T::deserialize).collect(),
        }
    }
}

impl From<Vec<Value>> for Records {
    fn from(values: Vec<Value>) -> Self {
        Records {
            text: None,
            values: OnceLock::from(values),
        }
    }
}

impl FromIterator<Value> for Records {
    fn from_iter<I: IntoIterator<Item = Value>>(values: I) -> Self {
        Records::from(values.into_iter().collect::<Vec<_>>())
    }
}

impl Deref for Records {
    type Target = Vec<Value>;

    fn deref(&self) -> &Vec<Value> {
        self.values()
    }
}

impl std::ops::DerefMut for Records {
    fn deref_mut(&mut self) -> &mut Vec<Value> {
        self.values();
        // The values are the records from now on.
        self.text = None;
        self.values.get_mut().expect("parsed above")
    }
}

impl<'a> IntoIterator for &'a Records {
    type Item = &'a Value;
    type IntoIter = std::slice::Iter<'a, Value>;

    fn into_iter(self) -> Self::IntoIter {
        self.values().iter()
    }
}

impl PartialEq for Records {
    fn eq(&self, other: &Self) -> bool {
        match (
            &self.text,
            &other.text,
            self.values.get(),
            other.values.get(),
        ) {
            // Both unparsed: compact JSON of the same values is the same text.
            (Some(mine), Some(theirs), None, None) if mine.get() == theirs.get() => true,
            _ => self.values() == other.values(),
        }
    }
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.values().fmt(f)
    }
}

impl Serialize for Records {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // As values, whatever the serializer: the text is only a way of deferring the parse.
        self.values().serialize(serializer)
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
        Ok(Records {
            text: Some(text),
            values: OnceLock::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
