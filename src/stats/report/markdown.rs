//! `report.md`: every table with its split, n and base rate, and one line for each table left out.

use super::tables::{Section, Table};

/// Renders one table as a Markdown section.
pub fn table(table: &Table) -> String {
    let mut out = format!("## {}\n\n*{}*\n\n", table.title, table.context);
    let cells = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    out.push_str(&cells(table.columns.clone()));
    out.push_str(&cells(
        table.columns.iter().map(|_| "---".to_string()).collect(),
    ));
    for row in &table.rows {
        out.push_str(&cells(
            row.iter()
                .map(|value| value.display().replace('|', "\\|"))
                .collect(),
        ));
    }
    for note in &table.notes {
        out.push('\n');
        out.push_str(note);
        out.push('\n');
    }
    out
}

/// The whole report.
pub fn render(title: &str, preamble: &[String], sections: &[Section]) -> String {
    let mut out = format!("# {title}\n\n");
    for line in preamble {
        out.push_str(line);
        out.push('\n');
    }
    for section in sections {
        out.push('\n');
        match section {
            Section::Table(one) => out.push_str(&table(one)),
            Section::Omitted { title, needs } => {
                out.push_str(&format!("*{title} is left out: {needs}*\n"));
            }
        }
    }
    out
}
