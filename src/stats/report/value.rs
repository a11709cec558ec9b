//! One table cell: typed, so Markdown can format it for people and CSV can keep the numbers.

/// A table cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Text(String),
    Count(u64),
    /// A rate in 0..=1; unknown when it cannot be computed (an arm that never fires).
    Rate(Option<f64>),
    /// A rate with its bootstrap interval (three CSV columns: value, low, high).
    RateInterval(Option<f64>, Option<[f64; 2]>),
    /// A signed difference of rates.
    Gap(Option<f64>),
    /// A signed difference with its bootstrap interval (three CSV columns: value, low, high).
    GapInterval(Option<f64>, Option<[f64; 2]>),
    /// A p-value.
    P(f64),
    /// Dollars.
    Dollars(Option<f64>),
}

impl Value {
    pub fn text(text: impl Into<String>) -> Self {
        Value::Text(text.into())
    }

    /// How many CSV columns the cell takes.
    pub fn csv_width(&self) -> usize {
        match self {
            Value::RateInterval(..) | Value::GapInterval(..) => 3,
            _ => 1,
        }
    }

    /// The Markdown rendering.
    pub fn display(&self) -> String {
        match self {
            Value::Text(text) => text.clone(),
            Value::Count(count) => count.to_string(),
            Value::Rate(rate) => rate.map_or_else(undefined, |rate| format!("{rate:.3}")),
            Value::RateInterval(rate, interval) => match (rate, interval) {
                (Some(rate), Some([low, high])) => format!("{rate:.3} [{low:.3}, {high:.3}]"),
                (Some(rate), None) => format!("{rate:.3}"),
                (None, _) => undefined(),
            },
            Value::Gap(gap) => gap.map_or_else(undefined, |gap| format!("{gap:+.3}")),
            Value::GapInterval(gap, interval) => match (gap, interval) {
                (Some(gap), Some([low, high])) => format!("{gap:+.3} [{low:+.3}, {high:+.3}]"),
                (Some(gap), None) => format!("{gap:+.3}"),
                (None, _) => undefined(),
            },
            Value::P(p) => format_p(*p),
            Value::Dollars(dollars) => {
                dollars.map_or_else(|| "not recorded".to_string(), format_dollars)
            }
        }
    }

    /// The CSV fields: full precision numbers, empty when unknown.
    pub fn csv_fields(&self) -> Vec<String> {
        let number = |value: Option<f64>| value.map_or_else(String::new, |value| value.to_string());
        match self {
            Value::Text(text) => vec![text.clone()],
            Value::Count(count) => vec![count.to_string()],
            Value::Rate(rate) | Value::Gap(rate) | Value::Dollars(rate) => vec![number(*rate)],
            Value::RateInterval(rate, interval) | Value::GapInterval(rate, interval) => vec![
                number(*rate),
                number(interval.map(|[low, _]| low)),
                number(interval.map(|[_, high]| high)),
            ],
            Value::P(p) => vec![p.to_string()],
        }
    }
}

fn undefined() -> String {
    "undefined".to_string()
}

/// p-values below 0.001 in scientific notation, as papers print them.
pub fn format_p(p: f64) -> String {
    if p == 0.0 {
        "<1e-300".to_string()
    } else if p < 0.001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

fn format_dollars(dollars: f64) -> String {
    if dollars != 0.0 && dollars.abs() < 0.01 {
        format!("${dollars:.6}")
    } else {
        format!("${dollars:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_rates_say_so() {
        assert_eq!(Value::Rate(None).display(), "undefined");
        assert_eq!(Value::Rate(None).csv_fields(), vec![String::new()]);
    }

    #[test]
    fn intervals_take_three_csv_columns() {
        let value = Value::RateInterval(Some(0.5), Some([0.25, 0.75]));
        assert_eq!(value.display(), "0.500 [0.250, 0.750]");
        assert_eq!(value.csv_fields(), vec!["0.5", "0.25", "0.75"]);
        assert_eq!(value.csv_width(), 3);
    }

    #[test]
    fn small_p_values_are_scientific() {
        assert_eq!(format_p(3.04e-20), "3.0e-20");
        assert_eq!(format_p(0.0213), "0.021");
        assert_eq!(Value::Gap(Some(0.407)).display(), "+0.407");
        let gap = Value::GapInterval(Some(0.25), Some([-0.1, 0.6]));
        assert_eq!(gap.display(), "+0.250 [-0.100, +0.600]");
        assert_eq!(gap.csv_fields(), vec!["0.25", "-0.1", "0.6"]);
    }
}
