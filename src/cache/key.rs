//! The key record: everything that can change an item's result, in a canonical form.
//!
//! Two keys are equal exactly when their canonical JSON bytes are equal, so the record holds only
//! sorted maps, lists and plain values. It never holds workdir paths, times, concurrency settings,
//! retry or timeout settings, or secrets: none of them changes what an item computes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Digest, JsonText};

/// Bumped when the layout of [`KeyRecord`] changes, so old action records are never misread.
pub const KEY_SCHEMA: u32 = 1;

/// The canonical record an item's content key is the digest of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyRecord {
    /// [`KEY_SCHEMA`] at the time of writing.
    pub schema: u32,
    /// The step kind (`uses:`), e.g. `command`.
    pub kind: String,
    /// The step kind's implementation version.
    pub version: u32,
    /// The step's `with:` parameters that can change results, canonicalized.
    pub params: serde_json::Value,
    /// The item's identity within its step.
    pub item: String,
    /// Per-item parameters (a commit id, a claim id, a foreach element).
    pub item_params: serde_json::Value,
    /// Output digests of the upstream items this item reads, by a name the step kind chooses.
    pub reads: BTreeMap<String, Digest>,
    /// Content digests of the files this item reads (prompts, declared inputs), by their
    /// project-relative path.
    pub files: BTreeMap<String, Digest>,
    /// Tool fingerprints (interpreter and pytest versions, repository commit ids).
    pub tools: BTreeMap<String, String>,
    /// The replicate index for repeated samples of the same computation.
    pub replicate: u32,
}

impl KeyRecord {
    /// The canonical bytes: compact JSON with every map sorted.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        // Every map in the record is a BTreeMap or a serde_json map (sorted without the
        // `preserve_order` feature), so serialization is canonical.
        serde_json::to_vec(self).expect("a key record always serializes")
    }

    /// The content key.
    pub fn digest(&self) -> Digest {
        Digest::of_json(self).expect("a key record always serializes")
    }

    /// The names of the parts that differ between `self` and an earlier record of the same item,
    /// for `plan` reasons and `explain`.
    pub fn changed_parts(&self, earlier: &KeyRecord) -> Vec<String> {
        let mut parts = Vec::new();
        if self.schema != earlier.schema {
            parts.push("key schema".to_string());
        }
        if self.kind != earlier.kind || self.version != earlier.version {
            parts.push(format!(
                "step kind {}@{} (was {}@{})",
                self.kind, self.version, earlier.kind, earlier.version
            ));
        }
        if self.params != earlier.params {
            parts.push(format!(
                "params: {}",
                describe_value_change(&earlier.params, &self.params)
            ));
        }
        if self.item_params != earlier.item_params {
            parts.push("item params".to_string());
        }
        parts.extend(map_changes("upstream output", &earlier.reads, &self.reads));
        parts.extend(map_changes("file", &earlier.files, &self.files));
        parts.extend(map_changes("tool", &earlier.tools, &self.tools));
        if self.replicate != earlier.replicate {
            parts.push("replicate".to_string());
        }
        parts
    }
}

/// The parts of a key record, borrowed from an item's plan: hashing them gives the key of the
/// record they make ([`KeyParts::digest`] equals [`KeyRecord::digest`]) without copying the plan,
/// which is most of what keying a cached item would cost. The fields and their order are
/// [`KeyRecord`]'s.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct KeyParts<'a> {
    pub schema: u32,
    pub kind: &'a str,
    pub version: u32,
    pub params: &'a serde_json::Value,
    pub item: &'a str,
    /// Written as its canonical text: these parts are only ever serialized to JSON, to be hashed.
    #[serde(serialize_with = "JsonText::serialize_canonical")]
    pub item_params: &'a JsonText,
    pub reads: &'a BTreeMap<String, Digest>,
    pub files: &'a BTreeMap<String, Digest>,
    pub tools: &'a BTreeMap<String, String>,
    pub replicate: u32,
}

impl KeyParts<'_> {
    /// The content key of the record these parts make.
    pub fn digest(&self) -> Digest {
        Digest::of_json(self).expect("key parts always serialize")
    }

    /// The owned record.
    pub fn to_record(&self) -> KeyRecord {
        KeyRecord {
            schema: self.schema,
            kind: self.kind.to_string(),
            version: self.version,
            params: self.params.clone(),
            item: self.item.to_string(),
            item_params: self.item_params.value().clone(),
            reads: self.reads.clone(),
            files: self.files.clone(),
            tools: self.tools.clone(),
            replicate: self.replicate,
        }
    }
}

fn map_changes<V: PartialEq>(
    what: &str,
    earlier: &BTreeMap<String, V>,
    now: &BTreeMap<String, V>,
) -> Vec<String> {
    let mut changes = Vec::new();
    for (name, value) in now {
        match earlier.get(name) {
            None => changes.push(format!("{what} {name} added")),
            Some(old) if old != value => changes.push(format!("{what} {name} changed")),
            Some(_) => {}
        }
    }
    for name in earlier.keys() {
        if !now.contains_key(name) {
            changes.push(format!("{what} {name} removed"));
        }
    }
    changes
}

/// Names the top-level keys whose values differ, or says the whole value changed.
fn describe_value_change(earlier: &serde_json::Value, now: &serde_json::Value) -> String {
    match (earlier.as_object(), now.as_object()) {
        (Some(old), Some(new)) => {
            let mut keys: Vec<&str> = old
                .keys()
                .chain(new.keys())
                .filter(|key| old.get(*key) != new.get(*key))
                .map(String::as_str)
                .collect();
            keys.dedup();
            keys.join(", ")
        }
        _ => "value changed".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record() -> KeyRecord {
        KeyRecord {
            schema: KEY_SCHEMA,
            kind: "command".into(),
            version: 1,
            params: json!({"run": "echo hi", "outputs": ["a.txt"]}),
            item: "main".into(),
            item_params: json!(null),
            reads: BTreeMap::new(),
            files: BTreeMap::from([("in.txt".to_string(), Digest::of(b"x"))]),
            tools: BTreeMap::new(),
            replicate: 0,
        }
    }

    #[test]
    fn key_ignores_the_order_params_were_written_in() {
        let mut reordered = record();
        reordered.params =
            serde_json::from_str(r#"{"outputs":["a.txt"],"run":"echo hi"}"#).unwrap();
        assert_eq!(record().digest(), reordered.digest());
    }

    #[test]
    fn borrowed_parts_hash_to_the_key_of_the_record_they_make() {
        let record = record();
        let item_params = JsonText::from(record.item_params.clone());
        let parts = KeyParts {
            schema: record.schema,
            kind: &record.kind,
            version: record.version,
            params: &record.params,
            item: &record.item,
            item_params: &item_params,
            reads: &record.reads,
            files: &record.files,
            tools: &record.tools,
            replicate: record.replicate,
        };
        assert_eq!(parts.digest(), record.digest());
        assert_eq!(parts.to_record(), record);
    }

    #[test]
    fn changed_parts_names_the_param_and_the_file() {
        let mut changed = record();
        changed.params = json!({"run": "echo bye", "outputs": ["a.txt"]});
        changed.files.insert("in.txt".into(), Digest::of(b"y"));
        assert_eq!(
            changed.changed_parts(&record()),
            vec!["params: run".to_string(), "file in.txt changed".to_string()]
        );
        assert_ne!(changed.digest(), record().digest());
    }
}
