//! A step's items reduced into its one cached, keyed output ([`StepKind::reduce`]): looked up under
//! the key of the items' output digests and the plan's digest, else reduced and stored.

use super::*;

impl Engine<'_> {
    /// The step's items reduced into its one output, for a kind with a
    /// [reduction](StepKind::reduction): taken from the cache when its key (the items' output
    /// digests, the plan's digest, the reduction's version) is there, else reduced and stored. A
    /// forced step reduces again.
    pub(super) fn reduce(
        &self,
        kind: &dyn StepKind,
        ctx: &StepContext,
        plan: Digest,
        items: &[ItemResult],
        force: bool,
    ) -> Result<Option<Reduced>, StepError> {
        let Some(record) = reduction_record(kind, ctx.step, plan, items) else {
            return Ok(None);
        };
        let key = record.digest();
        let cached = if force {
            None
        } else {
            self.cached_reduction(&key)?
        };
        let reduced = match cached {
            Some(reduced) => reduced,
            None => {
                let started = Instant::now();
                let output = kind.reduce(ctx, items)?;
                let plan = ItemPlan::new(REDUCTION);
                let digest = store_result(
                    &self.store,
                    &ctx.step.name,
                    &plan,
                    (&record, &key),
                    &output,
                    started.elapsed(),
                )?;
                Reduced {
                    digest,
                    output: Arc::new(output),
                }
            }
        };
        self.state
            .save_reduction(&ctx.step.name, &ctx.step.uses, key, reduced.digest)?;
        Ok(Some(reduced))
    }

    /// The cached reduction under `key`, if any.
    pub(super) fn cached_reduction(&self, key: &Digest) -> Result<Option<Reduced>, StoreError> {
        Ok(
            decode_output(&self.store, self.store.cached_output(key)?, &|_| None)?.map(
                |(digest, output, _)| Reduced {
                    digest,
                    output: Arc::new(output),
                },
            ),
        )
    }

    /// The reduction of a step whose items are all cached, for `plan` and `explain`: the cache's,
    /// else made here and not stored (a dry run stores nothing). The flag is true when cached.
    pub(crate) fn reduction(
        &self,
        kind: &dyn StepKind,
        ctx: &StepContext,
        plan: Digest,
        items: &[ItemResult],
    ) -> Result<Option<(Reduced, bool)>, StepError> {
        let Some(record) = reduction_record(kind, ctx.step, plan, items) else {
            return Ok(None);
        };
        if let Some(reduced) = self.cached_reduction(&record.digest())? {
            return Ok(Some((reduced, true)));
        }
        let output = kind.reduce(ctx, items)?;
        let bytes = serde_json::to_vec(&output).expect("item outputs serialize");
        let reduced = Reduced {
            digest: Digest::of(&bytes),
            output: Arc::new(output),
        };
        Ok(Some((reduced, false)))
    }
}
