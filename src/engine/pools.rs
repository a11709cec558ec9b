//! Named resource pools: a semaphore per pool, shared by every step of a run, so that independent
//! steps running at once still respect `-j`, the pytest slots and each model's request
//! concurrency. Threads (blocking items) and futures (async items) take permits of the same
//! semaphores, so a pool is bounded whichever way its items run.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

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
    semaphores: Mutex<BTreeMap<Pool, Arc<Semaphore>>>,
}

/// A held slot; released on drop.
pub struct Slot {
    _permit: OwnedSemaphorePermit,
}

impl Pools {
    pub fn new(sizes: PoolSizes) -> Self {
        Pools {
            sizes,
            semaphores: Mutex::new(BTreeMap::new()),
        }
    }

    /// The capacity of `pool`.
    pub fn capacity(&self, pool: &Pool) -> usize {
        self.sizes.capacity(pool)
    }

    fn semaphore(&self, pool: &Pool) -> Arc<Semaphore> {
        let mut semaphores = self.semaphores.lock().expect("pool lock");
        Arc::clone(
            semaphores
                .entry(pool.clone())
                .or_insert_with(|| Arc::new(Semaphore::new(self.capacity(pool)))),
        )
    }

    /// Waits for a slot of `pool` (in a future), and takes it.
    pub async fn acquire_async(&self, pool: &Pool) -> Slot {
        let permit = self
            .semaphore(pool)
            .acquire_owned()
            .await
            .expect("pool semaphores are never closed");
        Slot { _permit: permit }
    }

    /// Blocks the thread until a slot of `pool` is free, and takes it.
    pub fn acquire(&self, pool: &Pool) -> Slot {
        block_on(self.acquire_async(pool))
    }
}

/// Wakes a parked thread.
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs a future that needs no runtime (a semaphore's wait) to completion on this thread.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::park();
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

    #[test]
    fn futures_and_threads_share_a_model_pool() {
        let pools = Pools::new(PoolSizes {
            cpu: 1,
            pytest: 1,
            models: BTreeMap::from([("m".to_string(), 3)]),
        });
        let model = Pool::Model("m".into());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let running = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        let work = || async {
            let _slot = pools.acquire_async(&model).await;
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            running.fetch_sub(1, Ordering::SeqCst);
        };
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for _ in 0..4 {
                    let _slot = pools.acquire(&model);
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    running.fetch_sub(1, Ordering::SeqCst);
                }
            });
            runtime.block_on(async {
                tokio::join!(work(), work(), work(), work(), work(), work());
            });
        });
        assert!(peak.load(Ordering::SeqCst) <= 3);
    }
}
