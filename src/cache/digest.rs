//! Digests name every object in the cache and every item's content key.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

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

    /// The first 12 hex digits, for display.
    pub fn short(&self) -> String {
        self.hex()[..12].to_string()
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The hex digits are formatted on the stack: keys serialize many digests.
        write!(f, "blake3:{}", blake3::Hash::from_bytes(self.0).to_hex())
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
        serializer.collect_str(self)
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
    }

    #[test]
    fn rejects_other_prefixes() {
        assert!("sha256:00".parse::<Digest>().is_err());
        assert!("blake3:zz".parse::<Digest>().is_err());
    }
}
