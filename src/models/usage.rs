//! What one call used: tokens each way, time, and the money they cost at a model's price.

use serde::{Deserialize, Serialize};

use crate::pipeline::Price;

/// Tokens and time of one call, as the API reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens (0 when the API reported none).
    pub tokens_in: u64,
    /// Answer tokens (0 when the API reported none).
    pub tokens_out: u64,
    /// Wall time of the successful attempt, in milliseconds.
    pub latency_ms: u64,
}

impl Usage {
    /// Dollars at `price` per million tokens; 0 without a price.
    pub fn cost(&self, price: Option<Price>) -> f64 {
        price.map_or(0.0, |price| {
            // Token counts stay far below 2^53, where the conversion would round.
            (self.tokens_in as f64 * price.input + self.tokens_out as f64 * price.output) / 1e6
        })
    }
}

/// Running totals over many calls (an arm, a run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub calls: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost: f64,
}

impl Totals {
    /// Adds one call's usage at `price`.
    pub fn add(&mut self, usage: &Usage, price: Option<Price>) {
        self.calls += 1;
        self.tokens_in += usage.tokens_in;
        self.tokens_out += usage.tokens_out;
        self.cost += usage.cost(price);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_per_million_tokens() {
        let usage = Usage {
            tokens_in: 2_000_000,
            tokens_out: 500_000,
            latency_ms: 10,
        };
        let price = Price {
            input: 0.25,
            output: 1.0,
        };
        assert!((usage.cost(Some(price)) - 1.0).abs() < 1e-12);
        assert_eq!(usage.cost(None), 0.0);
        let mut totals = Totals::default();
        totals.add(&usage, Some(price));
        totals.add(&usage, Some(price));
        assert_eq!(totals.calls, 2);
        assert!((totals.cost - 2.0).abs() < 1e-12);
    }
}
