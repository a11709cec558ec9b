//! A0 and A1, the constant arms: always invalidate and never invalidate. A0 has recall 1 and a
//! precision equal to the base rate; A1 is the store that never forgets. They bound every other arm.

use serde_json::json;

use crate::records::{PredictionRecord, Verdict};

/// A constant arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConstantArm {
    /// A0: every claim is predicted flipped.
    Always,
    /// A1: every claim is predicted held.
    Never,
}

impl ConstantArm {
    /// The prediction for the claim with id `claim`.
    pub fn predict(self, claim: &str) -> PredictionRecord {
        let (verdict, rule) = match self {
            ConstantArm::Always => (Verdict::Flipped, "always invalidate"),
            ConstantArm::Never => (Verdict::Held, "never invalidate"),
        };
        PredictionRecord {
            claim: claim.to_string(),
            verdict,
            evidence: json!({ "rule": rule }),
            tokens_in: None,
            tokens_out: None,
            cost: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_arms_ignore_the_claim() {
        assert_eq!(ConstantArm::Always.predict("c").verdict, Verdict::Flipped);
        assert_eq!(ConstantArm::Never.predict("c").verdict, Verdict::Held);
        assert_eq!(ConstantArm::Never.predict("c").claim, "c");
    }
}
