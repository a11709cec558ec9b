//! Named resource pools: a counting semaphore per pool, shared by every step of a run, so that
//! independent steps running at once still respect `-j`, the pytest slots and each model's
//! request concurrency.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex};

use super::Pool;

/// The capacity of each pool.
#[derive(Debug, Clone)]
pub struct PoolSizes {
    pub cpu: usize,
    pub pytest: usize,
    pub models: BTreeMap<String, usize>,
}

impl PoolSizes {
    /// The capacity of `pool` (at least 1).
    pub fn capacity(&self, pool: &Pool) -> usize {
        let size = match pool {
            Pool::Cpu => self.cpu,
            Pool::Pytest => self.pytest,
            Pool::Model(name) => self.models.get(name).copied().unwrap_or(1),
        };
        size.max(1)
    }
}

/// The semaphores of one run.
pub struct Pools {
    sizes: PoolSizes,
    in_use: Mutex<BTreeMap<Pool, usize>>,
    freed: Condvar,
}

/// A held slot; released on drop.
pub struct Slot<'a> {
    pools: &'a Pools,
    pool: Pool,
}

impl Pools {
    pub fn new(sizes: PoolSizes) -> Self {
        Pools {
            sizes,
            in_use: Mutex::new(BTreeMap::new()),
            freed: Condvar::new(),
        }
    }

    /// The capacity of `pool`.
    pub fn capacity(&self, pool: &Pool) -> usize {
        self.sizes.capacity(pool)
    }

    /// Blocks until a slot of `pool` is free, and takes it.
    pub fn acquire(&self, pool: &Pool) -> Slot<'_> {
        let capacity = self.capacity(pool);
        let mut in_use = self.in_use.lock().expect("pool lock");
        while in_use.get(pool).copied().unwrap_or(0) >= capacity {
            in_use = self.freed.wait(in_use).expect("pool lock");
        }
        *in_use.entry(pool.clone()).or_insert(0) += 1;
        Slot {
            pools: self,
            pool: pool.clone(),
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut in_use = self.pools.in_use.lock().expect("pool lock");
        if let Some(count) = in_use.get_mut(&self.pool) {
            *count -= 1;
        }
        self.pools.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn never_runs_more_than_the_capacity_at_once() {
        let pools = Pools::new(PoolSizes {
            cpu: 2,
            pytest: 1,
            models: BTreeMap::new(),
        });
        let running = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    let _slot = pools.acquire(&Pool::Cpu);
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    running.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        assert_eq!(peak.load(Ordering::SeqCst), 2);
    }
}
