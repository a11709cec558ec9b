//! A JSON value held as its canonical text: compact, with every object's keys sorted, which is how
//! a key record writes it. An item's parameters enter its key and are read back by its computation
//! only when it runs; a re-run that computes nothing hashes them and never reads them. Held as
//! text they take a few dozen bytes per item instead of a tree of maps (a `serde_json` map of two
//! entries is a node of over 600 bytes), and hashing writes the text as it is. The value is parsed
//! on first read.

use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON value, as canonical text or as a value.
#[derive(Clone, Default)]
pub struct JsonText {
    /// The canonical text, until the value is changed through [`DerefMut`].
    text: Option<Box<RawValue>>,
    value: OnceLock<Value>,
}

impl JsonText {
    /// `value` serialized as canonical text, without building a [`Value`]. Its serialization must
    /// be canonical: a struct's fields declared in sorted order, maps sorted (`BTreeMap`), no
    /// field skipped that a value would hold. Debug builds check it against the value.
    pub fn of<T: Serialize>(value: &T) -> Self {
        let text = serde_json::value::to_raw_value(value).expect("item parameters serialize");
        debug_assert_eq!(
            text.get(),
            serde_json::to_string(&serde_json::to_value(value).expect("serializes"))
                .expect("serializes"),
            "the serialization of item parameters must be canonical"
        );
        JsonText {
            text: Some(text),
            value: OnceLock::new(),
        }
    }

    /// The value, parsed from the text on first use.
    pub fn value(&self) -> &Value {
        self.value.get_or_init(|| match &self.text {
            Some(text) => serde_json::from_str(text.get()).expect("the text is JSON"),
            None => Value::Null,
        })
    }

    /// Serializes as the canonical text when there is one (JSON serializers only: what a key is
    /// hashed from), else as the value, which serializes canonically.
    pub fn serialize_canonical<S: Serializer>(
        this: &&JsonText,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match &this.text {
            Some(text) => text.serialize(serializer),
            None => this.value().serialize(serializer),
        }
    }
}

impl From<Value> for JsonText {
    fn from(value: Value) -> Self {
        JsonText {
            text: None,
            value: OnceLock::from(value),
        }
    }
}

impl Deref for JsonText {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.value()
    }
}

impl DerefMut for JsonText {
    fn deref_mut(&mut self) -> &mut Value {
        self.value();
        // The value may change: the text no longer says what it is.
        self.text = None;
        self.value.get_mut().expect("parsed above")
    }
}

impl PartialEq for JsonText {
    fn eq(&self, other: &Self) -> bool {
        match (&self.text, &other.text) {
            // Canonical texts are equal exactly when their values are.
            (Some(mine), Some(theirs)) => mine.get() == theirs.get(),
            _ => self.value() == other.value(),
        }
    }
}

impl std::fmt::Debug for JsonText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value().fmt(f)
    }
}

impl Serialize for JsonText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(JsonText::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Serialize)]
    struct Sorted<'a> {
        outputs: &'a [&'a str],
        run: &'a str,
    }

    #[derive(Serialize)]
    struct Wrapper<'a> {
        #[serde(serialize_with = "JsonText::serialize_canonical")]
        params: &'a JsonText,
    }

    #[test]
    fn text_and_value_of_the_same_parameters_hash_alike_and_read_alike() {
        let value = json!({"run": "echo a > a.txt", "outputs": ["a.txt"]});
        let text = JsonText::of(&Sorted {
            outputs: &["a.txt"],
            run: "echo a > a.txt",
        });
        let from_value = JsonText::from(value.clone());
        assert_eq!(
            serde_json::to_string(&Wrapper { params: &text }).unwrap(),
            serde_json::to_string(&Wrapper {
                params: &from_value
            })
            .unwrap()
        );
        assert_eq!(text, from_value);
        assert_eq!(text["run"], "echo a > a.txt");
        assert_eq!(*text, value);
        assert_eq!(serde_json::to_value(&text).unwrap(), value);
    }

    #[test]
    fn a_changed_value_drops_its_text() {
        let mut text = JsonText::of(&json!({"sample": 0}));
        text["sample"] = json!(2);
        assert_eq!(
            serde_json::to_string(&Wrapper { params: &text }).unwrap(),
            r#"{"params":{"sample":2}}"#
        );
        assert_eq!(JsonText::default().value(), &Value::Null);
    }
}
