//! The content-addressed cache: objects stored by the blake3 digest of their bytes, and one action record
//! per computed item, keyed by the digest of a canonical key record.

mod digest;
mod key;
mod store;

pub use digest::{Digest, DigestParseError};
pub use key::{KEY_SCHEMA, KeyRecord};
pub use store::{ActionRecord, Store, StoreError, StoreStats, VerifyReport, write_atomic_in};
