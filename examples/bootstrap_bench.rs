//! The Rust side of `benches/bootstrap/`: bootstrap percentile intervals for every arm of a data
//! file, printed as JSON, so a driver can time the whole process against scipy and numpy.
//!
//! Usage: `bootstrap_bench DATA.json RESAMPLES SEED`, where the data file holds `labels` (0/1)
//! and `arms` (`{name: [0/1 verdicts]}`), one entry per claim.

use std::collections::BTreeMap;

use claimflow::records::Verdict;
use claimflow::stats::bootstrap::{ClusterCounts, intervals};
use claimflow::stats::confusion::Cell;
use claimflow::stats::{Claim, Resample};

#[derive(serde::Deserialize)]
struct Data {
    labels: Vec<u8>,
    arms: BTreeMap<String, Vec<u8>>,
}

fn main() -> anyhow::Result<()> {
    let arguments: Vec<String> = std::env::args().collect();
    let [_, path, resamples, seed] = arguments.as_slice() else {
        anyhow::bail!("usage: bootstrap_bench DATA.json RESAMPLES SEED");
    };
    let data: Data = serde_json::from_slice(&std::fs::read(path)?)?;
    let resamples: usize = resamples.parse()?;
    let seed: u64 = seed.parse()?;

    let claims: Vec<Claim> = data
        .labels
        .iter()
        .enumerate()
        .map(|(index, &label)| Claim {
            // Zero-padded so id order is file order, which the numpy side assumes.
            id: format!("{index:08}"),
            repository: String::new(),
            commit: String::new(),
            flipped: label == 1,
        })
        .collect();
    let cells: Vec<Vec<Cell>> = data
        .arms
        .values()
        .map(|verdicts| {
            claims
                .iter()
                .zip(verdicts)
                .map(|(claim, &verdict)| {
                    let verdict = if verdict == 1 {
                        Verdict::Flipped
                    } else {
                        Verdict::Held
                    };
                    Cell::of(claim.flipped, verdict)
                })
                .collect()
        })
        .collect();
    let counts = ClusterCounts::new(&claims, &cells, Resample::Claim);
    let totals = counts.resample(resamples, seed);
    let bounds = intervals(&totals, cells.len(), 0.95);
    let out: BTreeMap<&str, serde_json::Value> = data
        .arms
        .keys()
        .zip(&bounds)
        .map(|(name, bounds)| {
            let value = serde_json::json!({"precision": bounds.precision, "recall": bounds.recall});
            (name.as_str(), value)
        })
        .collect();
    println!("{}", serde_json::to_string(&out)?);
    Ok(())
}
