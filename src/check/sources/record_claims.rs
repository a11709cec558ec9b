//! What the JSON memory formats share: one claim per record, its statement in one field, its id the
//! record's own where the format has one (else the digest of its text and file), and an error that
//! names the record's line when the statement is missing or two records share an id.

use std::collections::BTreeMap;

use crate::check::claim::MemoryClaim;

use super::error::SourceError;
use super::identity::ClaimIds;
use super::input::Input;
use super::json_records::{Record, records};

/// How one format reads its records.
pub struct RecordFormat {
    /// The field holding the statement (`text`, `memory`, `fact`).
    pub text: &'static str,
    /// The field holding the record's own id, if the format has one.
    pub id: Option<&'static str>,
}

/// The claims of `input`; `complete` fills in a record's anchors, test and check, or returns
/// `Ok(false)` to skip a record (a Graphiti edge already invalidated).
pub fn read(
    input: &Input,
    format: &RecordFormat,
    mut complete: impl FnMut(&Record, &mut MemoryClaim) -> Result<bool, SourceError>,
) -> Result<Vec<MemoryClaim>, SourceError> {
    let mut ids = ClaimIds::new(&input.label_text());
    let mut first_lines: BTreeMap<String, u32> = BTreeMap::new();
    let mut claims = Vec::new();
    for record in records(&input.label, input.text)? {
        let text = record
            .string(format.text)
            .map_err(|wrong| input.bad_field(record.line, format.text, "a string", wrong))?
            .filter(|text| !text.trim().is_empty())
            .ok_or_else(|| input.missing(record.line, format.text))?;
        let own = match format.id {
            Some(field) => record
                .string(field)
                .map_err(|wrong| input.bad_field(record.line, field, "a string", wrong))?,
            None => None,
        };
        let id = match &own {
            Some(own) => {
                if let Some(first) = first_lines.insert(own.clone(), record.line) {
                    return Err(SourceError::DuplicateId {
                        path: input.label.clone(),
                        line: record.line,
                        id: own.clone(),
                        first,
                    });
                }
                own.clone()
            }
            None => ids.next(&text),
        };
        let mut claim = input.claim(id, text, record.line, Vec::new());
        claim.record_key = Some(own.unwrap_or_else(|| format!("#{}", record.index)));
        if complete(&record, &mut claim)? {
            claims.push(claim);
        }
    }
    Ok(claims)
}
