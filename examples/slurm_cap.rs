//! A simulated thousand-item plan on Slurm: `cap` threads (the engine's pytest pool when jobs
//! run on Slurm) each take the next item, submit its job and wait for it, through the real
//! dispatcher on an in-memory cluster. A sampler records how many jobs are in flight every
//! millisecond. Exits 1 if jobs in flight ever exceed the cap, or never reach it.
//!
//! `cargo run --release --example slurm_cap -- [ITEMS] [CAP] [JOB_MILLISECONDS]`

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use claimflow::slurm::simulated::Simulated;
use claimflow::slurm::watch::Dispatcher;

fn main() {
    let mut arguments = std::env::args().skip(1).map(|argument| {
        argument
            .parse::<u64>()
            .expect("arguments are whole numbers: ITEMS CAP JOB_MILLISECONDS")
    });
    let items = arguments.next().unwrap_or(1000) as usize;
    let cap = arguments.next().unwrap_or(50) as usize;
    let runtime = Duration::from_millis(arguments.next().unwrap_or(100));

    let dispatcher = Dispatcher::new(Arc::new(Simulated::new(runtime)), cap);
    let next = AtomicUsize::new(0);
    let done = AtomicBool::new(false);
    let started = Instant::now();
    let (samples, over) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let mut samples = Vec::new();
            let mut over = 0usize;
            while !done.load(Ordering::SeqCst) {
                let in_flight = dispatcher.in_flight();
                over += usize::from(in_flight > cap);
                samples.push(in_flight);
                std::thread::sleep(Duration::from_millis(1));
            }
            (samples, over)
        });
        let workers: Vec<_> = (0..cap)
            .map(|_| {
                scope.spawn(|| {
                    while next.fetch_add(1, Ordering::SeqCst) < items {
                        let job = dispatcher.submit(Path::new("item.sh")).expect("submits");
                        dispatcher.wait(job);
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().expect("a worker thread");
        }
        done.store(true, Ordering::SeqCst);
        sampler.join().expect("the sampler")
    });
    let wall = started.elapsed();
    let stats = dispatcher.stats();
    let busy: Vec<usize> = samples.iter().copied().filter(|&n| n > 0).collect();
    let mean = busy.iter().sum::<usize>() as f64 / busy.len().max(1) as f64;
    let at_cap = busy.iter().filter(|&&n| n == cap).count() as f64 / busy.len().max(1) as f64;
    println!(
        "items {items}, cap {cap}, simulated job {} ms",
        runtime.as_millis()
    );
    println!(
        "submitted {}, wall {:.1} s",
        stats.submitted,
        wall.as_secs_f64()
    );
    println!(
        "jobs in flight: peak {}, mean {mean:.1} while busy, at the cap in {:.0}% of {} samples, \
         above it in {over}",
        stats.peak_in_flight,
        at_cap * 100.0,
        busy.len()
    );
    if stats.submitted != items || stats.peak_in_flight != cap || over > 0 {
        eprintln!("jobs in flight did not stay at the cap");
        std::process::exit(1);
    }
}
