//! One CSV file per table: a header row, then the rows, numbers at full precision.

use super::tables::Table;

/// Quotes a field when it holds a comma, a quote or a line break (RFC 4180).
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// The CSV text of `table`. A column of rates with intervals becomes three: `x`, `x_low`, `x_high`.
pub fn render(table: &Table) -> String {
    let mut header = Vec::new();
    for (index, column) in table.columns.iter().enumerate() {
        let width = table
            .rows
            .first()
            .and_then(|row| row.get(index))
            .map_or(1, |value| value.csv_width());
        header.push(column.clone());
        if width == 3 {
            header.push(format!("{column}_low"));
            header.push(format!("{column}_high"));
        }
    }
    let mut out = String::new();
    let line = |fields: Vec<String>| {
        fields
            .iter()
            .map(|text| field(text))
            .collect::<Vec<_>>()
            .join(",")
            + "\n"
    };
    out.push_str(&line(header));
    for row in &table.rows {
        out.push_str(&line(
            row.iter().flat_map(|value| value.csv_fields()).collect(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::report::Value;

    #[test]
    fn quotes_fields_and_expands_intervals() {
        let table = Table {
            slug: "t".into(),
            title: "T".into(),
            context: String::new(),
            columns: vec!["arm".into(), "precision".into()],
            rows: vec![vec![
                Value::text("a,b"),
                Value::RateInterval(Some(0.5), Some([0.4, 0.6])),
            ]],
            notes: vec![],
        };
        assert_eq!(
            render(&table),
            "arm,precision,precision_low,precision_high\n\"a,b\",0.5,0.4,0.6\n"
        );
    }
}
