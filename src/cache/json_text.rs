//! JSON held as text and parsed on first read ([`Deferred`]).
//!
//! An item's parameters ([`JsonText`]) are held as their canonical text: compact, with every
//! object's keys sorted, which is how a key record writes them. They enter the item's key and are
//! read back by its computation only when it runs; a re-run that computes nothing hashes them and
//! never reads them. Held as text they take a few dozen bytes per item instead of a tree of maps (a
//! `serde_json` map of two entries is a node of over 600 bytes), and hashing writes the text as it
//! is. A cached output's records are held the same way (`engine::Records`).

use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A value of type `T` held as the JSON text it was read or written as, parsed on first use; or
/// held as the value itself. Changing it through [`DerefMut`] drops the text, which no longer says
/// what the value is. It serializes as the value, so its bytes do not depend on which it holds.
#[derive(Clone, Default)]
pub struct Deferred<T> {
    text: Option<Box<RawValue>>,
    value: OnceLock<T>,
}

/// An item's parameters: a JSON value, as canonical text or as a value.
pub type JsonText = Deferred<Value>;

impl<T: DeserializeOwned + Default> Deferred<T> {
    /// Holds `text`, which the caller has checked reads as a `T`, without parsing it.
    pub(crate) fn from_text(text: Box<RawValue>) -> Self {
        Deferred {
            text: Some(text),
            value: OnceLock::new(),
        }
    }

    /// The value, parsed from the text on first use (`T`'s default when there is neither).
    pub fn value(&self) -> &T {
        self.value.get_or_init(|| match &self.text {
            Some(text) => serde_json::from_str(text.get()).expect("the text was checked to read"),
            None => T::default(),
        })
    }

    /// The text when the value was never parsed.
    pub(crate) fn unparsed_text(&self) -> Option<&str> {
        match (&self.text, self.value.get()) {
            (Some(text), None) => Some(text.get()),
            _ => None,
        }
    }
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
        Deferred::from_text(text)
    }

    /// The parameters decoded as `T`: from the text when the value was never parsed, else from the
    /// value, borrowed.
    pub fn decode<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        match self.unparsed_text() {
            Some(text) => serde_json::from_str(text),
            None => T::deserialize(self.value()),
        }
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

impl<T> From<T> for Deferred<T> {
    fn from(value: T) -> Self {
        Deferred {
            text: None,
            value: OnceLock::from(value),
        }
    }
}

impl<T: DeserializeOwned + Default> Deref for Deferred<T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.value()
    }
}

impl<T: DeserializeOwned + Default> DerefMut for Deferred<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.value();
        // The value may change: the text no longer says what it is.
        self.text = None;
        self.value.get_mut().expect("parsed above")
    }
}

impl<T: DeserializeOwned + Default + PartialEq> PartialEq for Deferred<T> {
    fn eq(&self, other: &Self) -> bool {
        match (&self.text, &other.text) {
            // Both texts say what their values are (a change drops the text), and both were
            // written compact, so equal texts are equal values.
            (Some(mine), Some(theirs)) if mine.get() == theirs.get() => true,
            _ => self.value() == other.value(),
        }
    }
}

impl<T: DeserializeOwned + Default + std::fmt::Debug> std::fmt::Debug for Deferred<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value().fmt(f)
    }
}

impl<T: DeserializeOwned + Default + Serialize> Serialize for Deferred<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // As the value, whatever the serializer: the text is only a way of deferring the parse.
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
        // Decoded alike from the text and from the value.
        #[derive(Debug, PartialEq, Deserialize)]
        struct Run {
            run: String,
        }
        let fresh = JsonText::of(&Sorted {
            outputs: &["a.txt"],
            run: "echo a > a.txt",
        });
        assert!(fresh.unparsed_text().is_some());
        assert_eq!(
            fresh.decode::<Run>().unwrap(),
            from_value.decode::<Run>().unwrap()
        );
        assert_eq!(fresh.decode::<Run>().unwrap().run, "echo a > a.txt");
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
