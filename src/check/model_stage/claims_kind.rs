//! The step kind that hands the generated pipeline its claims, held in memory (their content is
//! the item's key); registered only in the model stage's own registry.

use crate::engine::{
    ItemOutput, ItemPlan, ItemResult, NoParams, ParamsDecl, Role, StepContext, StepError, StepKind,
    Upstream,
};
use crate::pipeline::StepSpec;
use crate::records::ClaimRecord;

/// The step kind that hands the generated pipeline its claims (held in memory; their content is
/// the item's key).
pub(super) struct CheckClaims {
    pub(super) records: Vec<ClaimRecord>,
}

impl StepKind for CheckClaims {
    fn name(&self) -> &'static str {
        "check-claims"
    }

    fn version(&self) -> u32 {
        1
    }

    fn about(&self) -> &'static str {
        "the claims `claimflow check` asks a model about"
    }

    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<NoParams>()
    }

    fn role(&self, _step: &StepSpec) -> Role {
        Role::Claims
    }

    fn items(&self, _ctx: &StepContext, _upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        Ok(vec![ItemPlan::new("claims").params(
            serde_json::to_value(&self.records).expect("claims serialize"),
        )])
    }

    fn run(
        &self,
        _ctx: &StepContext,
        _item: &ItemPlan,
        _upstream: &Upstream,
    ) -> Result<ItemOutput, StepError> {
        Ok(ItemOutput::records(&self.records))
    }

    fn publish(&self, _ctx: &StepContext, _items: &[ItemResult]) -> Result<(), StepError> {
        Ok(())
    }
}
