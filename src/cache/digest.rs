//! Digests name every object in the cache and every item's content key.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A map keyed by digests, hashed with a fast hasher: the store probes one per cached item, and
/// its keys are not chosen by anyone who could aim collisions at it (they are blake3 digests).
pub type DigestMap<V> = HashMap<Digest, V, foldhash::fast::RandomState>;

/// How long `blake3:` and 64 hex digits are.
const TEXT_LEN: usize = 7 + 64;

/// A blake3 digest, printed and serialized as `blake3:<64 hex digits>`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest([u8; 32]);

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Digest(*blake3::hash(bytes).as_bytes())
    }

    /// The digest held by a finished hasher.
    pub fn from_hasher(hasher: &blake3::Hasher) -> Self {
        Digest(*hasher.finalize().as_bytes())
    }

    /// The digest whose 32 bytes are `bytes`.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Digest(bytes)
    }

    /// The 32 bytes of the digest.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The 64 lowercase hex digits, without the `blake3:` prefix.
    pub fn hex(&self) -> String {
        blake3::Hash::from_bytes(self.0).to_hex().to_string()
    }

    /// `blake3:<64 hex digits>`, written on the stack: keys serialize many digests, and the
    /// formatting machinery costs more than the digits.
    fn text(&self) -> [u8; TEXT_LEN] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut text = [0; TEXT_LEN];
        text[..7].copy_from_slice(b"blake3:");
        for (index, byte) in self.0.iter().enumerate() {
            text[7 + 2 * index] = HEX[usize::from(byte >> 4)];
            text[8 + 2 * index] = HEX[usize::from(byte & 0xf)];
        }
        text
    }

    /// The first 12 hex digits, for display.
    pub fn short(&self) -> String {
        self.hex()[..12].to_string()
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(std::str::from_utf8(&self.text()).expect("ASCII"))
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "blake3:{}", self.short())
    }
}

/// A string that is not `blake3:` followed by 64 hex digits.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not a digest of the form blake3:<64 hex digits>")]
pub struct DigestParseError(String);

impl FromStr for Digest {
    type Err = DigestParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let hex = text
            .strip_prefix("blake3:")
            .ok_or_else(|| DigestParseError(text.to_string()))?;
        blake3::Hash::from_hex(hex)
            .map(|hash| Digest(*hash.as_bytes()))
            .map_err(|_| DigestParseError(text.to_string()))
    }
}

impl Serialize for Digest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(std::str::from_utf8(&self.text()).expect("ASCII"))
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Parsed from the borrowed text where the format allows it: no string per digest.
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = Digest;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a digest of the form blake3:<64 hex digits>")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Digest, E> {
                text.parse().map_err(E::custom)
            }
        }
        deserializer.deserialize_str(Text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_text() {
        let digest = Digest::of(b"claim");
        let text = digest.to_string();
        assert!(text.starts_with("blake3:"));
        assert_eq!(text.len(), 7 + 64);
        assert_eq!(text.parse::<Digest>().unwrap(), digest);
        assert_eq!(
            text,
            format!(
                "blake3:{}",
                blake3::Hash::from_bytes(*digest.as_bytes()).to_hex()
            )
        );
        assert_eq!(
            serde_json::to_string(&digest).unwrap(),
            format!("\"{text}\"")
        );
    }

    #[test]
    fn rejects_other_prefixes() {
        assert!("sha256:00".parse::<Digest>().is_err());
        assert!("blake3:zz".parse::<Digest>().is_err());
    }
}
