//! The named blobs of an item's output, in a small sorted list.
//!
//! An output names few blobs (a `command` item one per declared output, most kinds none), and a
//! re-run holds one output per cached item: a `BTreeMap` would take a node of eleven slots (over
//! 600 bytes) for a single name, which for tens of thousands of items is megabytes of fresh memory
//! the kernel must zero. A vector kept sorted by name holds the same map in the same order, and
//! serializes to the same JSON object.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::cache::Digest;

/// Blobs stored in the cache by digest, by name, sorted by name.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Blobs(Vec<(String, Digest)>);

impl Blobs {
    /// Names `digest` `name`, returning the digest the name had before, if any.
    pub fn insert(&mut self, name: String, digest: Digest) -> Option<Digest> {
        match self
            .0
            .binary_search_by(|(held, _)| held.as_str().cmp(&name))
        {
            Ok(at) => Some(std::mem::replace(&mut self.0[at].1, digest)),
            Err(at) => {
                // Grown one at a time: most outputs name one blob or none.
                self.0.reserve_exact(1);
                self.0.insert(at, (name, digest));
                None
            }
        }
    }

    /// The digest named `name`.
    pub fn get(&self, name: &str) -> Option<&Digest> {
        self.0
            .binary_search_by(|(held, _)| held.as_str().cmp(name))
            .ok()
            .map(|at| &self.0[at].1)
    }

    /// Every (name, digest), by name.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Digest)> {
        self.into_iter()
    }

    /// Every name, sorted.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(name, _)| name)
    }

    /// Every digest, by name.
    pub fn values(&self) -> impl Iterator<Item = &Digest> {
        self.0.iter().map(|(_, digest)| digest)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'a> IntoIterator for &'a Blobs {
    type Item = (&'a String, &'a Digest);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, Digest)>,
        fn(&'a (String, Digest)) -> (&'a String, &'a Digest),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(name, digest)| (name, digest))
    }
}

impl fmt::Debug for Blobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for Blobs {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, digest) in &self.0 {
            map.serialize_entry(name, digest)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Blobs {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = Blobs;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of blob names to digests")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Blobs, M::Error> {
                let mut blobs = Blobs::default();
                // As a map reads them: a name given twice keeps its last digest.
                while let Some((name, digest)) = map.next_entry::<String, Digest>()? {
                    blobs.insert(name, digest);
                }
                Ok(blobs)
            }
        }
        deserializer.deserialize_map(Entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn blobs_keep_the_order_and_json_of_a_sorted_map() {
        let names = ["summary", "out/b.txt", "exclusion", "out/a.txt"];
        let mut blobs = Blobs::default();
        let mut map = BTreeMap::new();
        for name in names {
            let digest = Digest::of(name.as_bytes());
            assert_eq!(blobs.insert(name.to_string(), digest), None);
            map.insert(name.to_string(), digest);
        }
        let replaced = Digest::of(b"again");
        assert_eq!(
            blobs.insert("summary".into(), replaced),
            Some(Digest::of(b"summary"))
        );
        map.insert("summary".into(), replaced);
        assert_eq!(
            serde_json::to_string(&blobs).unwrap(),
            serde_json::to_string(&map).unwrap()
        );
        assert!(blobs.keys().eq(map.keys()));
        assert_eq!(blobs.get("exclusion"), map.get("exclusion"));
        assert_eq!(blobs.get("missing"), None);
        let read: Blobs = serde_json::from_str(&serde_json::to_string(&map).unwrap()).unwrap();
        assert_eq!(read, blobs);
        assert_eq!(read.len(), 4);
    }

    #[test]
    fn a_name_given_twice_keeps_its_last_digest_and_a_bad_digest_fails() {
        let (first, last) = (Digest::of(b"1"), Digest::of(b"2"));
        let text = format!(r#"{{"a": "{first}", "a": "{last}"}}"#);
        let read: Blobs = serde_json::from_str(&text).unwrap();
        assert_eq!(read.get("a"), Some(&last));
        assert_eq!(read.len(), 1);
        assert!(serde_json::from_str::<Blobs>(r#"{"a": "sha1:00"}"#).is_err());
    }
}
