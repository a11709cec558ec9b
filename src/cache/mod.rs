//! The content-addressed cache: objects stored by the blake3 digest of their bytes, an index of
//! action records (one per computed item, keyed by the digest of a canonical key record), and the
//! remembered digests of unchanged files.

mod action_index;
mod digest;
mod file_digests;
mod json_text;
mod key;
mod key_lock;
mod mapped;
mod store;

pub use digest::{Digest, DigestParseError};
pub use json_text::{Deferred, JsonText};
pub use key::{KEY_SCHEMA, KeyParts, KeyRecord};
pub use store::upkeep::{StoreStats, VerifyReport};
pub use store::{ActionRecord, OutputBytes, Store, StoreError, write_atomic_in};
