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

    /// The digest of `value` serialized as compact JSON, streamed into the hasher through a buffer
    /// on the stack: the same digest as `Digest::of(&serde_json::to_vec(value)?)`, without the
    /// bytes ever being held whole (a gathering item's key record is hundreds of kilobytes, and a
    /// fresh buffer for it costs the kernel zeroing its pages).
    pub fn of_json<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Self> {
        let mut writer = HashWriter {
            hasher: blake3::Hasher::new(),
            buffer: [0; HASH_BUFFER],
            len: 0,
        };
        serde_json::to_writer(&mut writer, value)?;
        writer.flush_buffer();
        Ok(Digest::from_hasher(&writer.hasher))
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

/// Bytes gathered before they are handed to the hasher: serialization writes a token at a time,
/// and blake3 hashes large slices many times faster than a few bytes at a time.
const HASH_BUFFER: usize = 8 * 1024;

/// Feeds what is written to a blake3 hasher, in slices of up to [`HASH_BUFFER`] bytes.
struct HashWriter {
    hasher: blake3::Hasher,
    buffer: [u8; HASH_BUFFER],
    len: usize,
}

impl HashWriter {
    fn flush_buffer(&mut self) {
        self.hasher.update(&self.buffer[..self.len]);
        self.len = 0;
    }
}

impl std::io::Write for HashWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.len + bytes.len() > HASH_BUFFER {
            self.flush_buffer();
        }
        if bytes.len() >= HASH_BUFFER {
            self.hasher.update(bytes);
        } else {
            self.buffer[self.len..self.len + bytes.len()].copy_from_slice(bytes);
            self.len += bytes.len();
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A string that is not `blake3:` followed by 64 hex digits.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not a digest of the form blake3:<64 hex digits>")]
pub struct DigestParseError(String);

impl FromStr for Digest {
    type Err = DigestParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        // By a table, not a match per digit: a re-run parses the digests of every cached output.
        const INVALID: u8 = 0xff;
        const VALUES: [u8; 256] = {
            let mut values = [INVALID; 256];
            let mut digit = 0;
            while digit < 10 {
                values[b'0' as usize + digit] = digit as u8;
                digit += 1;
            }
            let mut letter = 0;
            while letter < 6 {
                values[b'a' as usize + letter] = 10 + letter as u8;
                values[b'A' as usize + letter] = 10 + letter as u8;
                letter += 1;
            }
            values
        };
        let invalid = || DigestParseError(text.to_string());
        let hex = text.strip_prefix("blake3:").ok_or_else(invalid)?.as_bytes();
        if hex.len() != 64 {
            return Err(invalid());
        }
        let mut bytes = [0u8; 32];
        for (byte, pair) in bytes.iter_mut().zip(hex.chunks_exact(2)) {
            let (high, low) = (VALUES[usize::from(pair[0])], VALUES[usize::from(pair[1])]);
            if high == INVALID || low == INVALID {
                return Err(invalid());
            }
            *byte = high << 4 | low;
        }
        Ok(Digest(bytes))
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
    fn a_value_streamed_into_the_hasher_has_the_digest_of_its_json_bytes() {
        // Small, just over one buffer, and many buffers with a single write longer than one.
        let long = "x".repeat(3 * HASH_BUFFER);
        let values = [
            serde_json::json!({"run": "echo hi", "outputs": ["a.txt"]}),
            serde_json::json!((0..1_000).map(|n| format!("item {n}")).collect::<Vec<_>>()),
            serde_json::json!({"a": long, "b": [1, 2, 3]}),
        ];
        for value in values {
            let bytes = serde_json::to_vec(&value).unwrap();
            assert_eq!(Digest::of_json(&value).unwrap(), Digest::of(&bytes));
        }
    }

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

    #[test]
    fn parses_upper_case_digits_and_rejects_a_bad_digit_or_length() {
        let text = Digest::of(b"claim").to_string();
        let upper = format!("blake3:{}", text[7..].to_uppercase());
        assert_eq!(upper.parse::<Digest>().unwrap(), Digest::of(b"claim"));
        let mut bad = text.clone().into_bytes();
        bad[70] = b'g';
        assert!(String::from_utf8(bad).unwrap().parse::<Digest>().is_err());
        assert!(text[..70].parse::<Digest>().is_err());
        assert!(format!("{text}0").parse::<Digest>().is_err());
    }
}
