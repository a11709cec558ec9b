//! Scheduling a step's missing items in their pools: on threads for blocking kinds, as futures on
//! the runtime for async ones, each finished item reported as it ends.

use super::*;

impl Engine<'_> {
    /// Computes the items `misses` (indices into `plans`) in their pools: on threads, or as
    /// futures on the runtime. Returns their results in item order, or the step's failure when
    /// any failed (each reported as it failed).
    pub(super) fn schedule(
        &self,
        job: &Job,
        plans: &[ItemPlan],
        keys: &[Digest],
        misses: &[usize],
    ) -> Result<Vec<ItemResult>, Failure> {
        let computed: Mutex<Vec<(usize, ItemResult)>> = Mutex::new(Vec::new());
        let failures: Mutex<Vec<ErrorClass>> = Mutex::new(Vec::new());
        let finish = |index: usize, outcome: Result<ItemResult, StepError>, started: Instant| {
            let plan = &plans[index];
            match outcome {
                Ok(result) => {
                    self.reporter.event(&Event::ItemFinished {
                        step: job.step.name.clone(),
                        item: plan.id.clone(),
                        cached: result.cached,
                        elapsed: started.elapsed(),
                    });
                    computed.lock().expect("results lock").push((index, result));
                }
                Err(error) => {
                    failures.lock().expect("results lock").push(error.class());
                    self.reporter.event(&Event::ItemFailed {
                        step: job.step.name.clone(),
                        item: plan.id.clone(),
                        error: error.chain(),
                        class: error.class(),
                    });
                }
            }
        };
        let items = Items {
            plans,
            keys,
            misses,
        };
        match job.kind.execution() {
            Execution::Blocking => self.schedule_blocking(job, &items, &finish),
            Execution::Async => self.schedule_async(job, &items, &finish),
        }
        let failures = failures.into_inner().expect("results lock");
        if !failures.is_empty() {
            let class = if failures.contains(&ErrorClass::Input) {
                ErrorClass::Input
            } else if failures.contains(&ErrorClass::Cancelled) {
                ErrorClass::Cancelled
            } else {
                ErrorClass::Failure
            };
            return Err(Failure {
                message: format!("{} of {} items failed", failures.len(), keys.len()),
                class,
            });
        }
        let mut computed = computed.into_inner().expect("results lock");
        computed.sort_unstable_by_key(|(index, _)| *index);
        Ok(computed.into_iter().map(|(_, result)| result).collect())
    }

    /// Computes the items to compute on as many threads as their pools allow.
    pub(super) fn schedule_blocking(&self, job: &Job, items: &Items, finish: &Finish) {
        let next = AtomicUsize::new(0);
        let workers = items
            .misses
            .iter()
            .map(|&index| job.pools.capacity(&items.plans[index].pool))
            .max()
            .unwrap_or(0)
            .min(items.misses.len());
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    loop {
                        let position = next.fetch_add(1, Ordering::SeqCst);
                        let Some(&index) = items.misses.get(position) else {
                            break;
                        };
                        let (plan, key) = (&items.plans[index], &items.keys[index]);
                        let record = key_parts(job.kind, job.step.params.key(), plan).to_record();
                        let item_started = Instant::now();
                        let outcome = self.compute(job, plan, (&record, key));
                        finish(index, outcome, item_started);
                    }
                });
            }
        });
    }

    /// Computes the items to compute as futures on the engine's runtime.
    pub(super) fn schedule_async(&self, job: &Job, items: &Items, finish: &Finish) {
        // An item holds its key's lock (an open file) while it waits for its pool's slot, so the
        // items started at once are bounded, not all of them: twenty thousand model calls started
        // together ran out of file descriptors. Twice the slots of the pools they use keeps every
        // slot busy.
        let pools_used: BTreeSet<&Pool> = items
            .misses
            .iter()
            .map(|&index| &items.plans[index].pool)
            .collect();
        let in_flight = 2 * pools_used
            .iter()
            .map(|pool| job.pools.capacity(pool))
            .sum::<usize>()
            .max(1);
        let start = |index: usize| {
            let (plan, key) = (&items.plans[index], &items.keys[index]);
            let record = key_parts(job.kind, job.step.params.key(), plan).to_record();
            async move {
                let item_started = Instant::now();
                let outcome = self.compute_async(job, plan, (&record, key)).await;
                (index, outcome, item_started)
            }
        };
        crate::engine::runtime::runtime().block_on(async {
            let mut waiting = items.misses.iter().copied();
            let mut running: FuturesUnordered<_> =
                waiting.by_ref().take(in_flight).map(start).collect();
            while let Some((index, outcome, item_started)) = running.next().await {
                finish(index, outcome, item_started);
                if let Some(next) = waiting.next() {
                    running.push(start(next));
                }
            }
        });
    }
}
