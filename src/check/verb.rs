//! The `check` verb at the command line's edge: its flags (doc comments are the help text), and
//! where its output goes: results on stdout in the format asked, the table, notices and the
//! calibration on stderr, the Markdown summary into `$GITHUB_STEP_SUMMARY` when a workflow sets
//! it. The exit code says how the check concluded ([`Conclusion`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

use super::cascade::{DEFAULT_CASCADE, parse_stages};
use super::claim::SourceFormat;
use super::command::{CheckOptions, CheckOutcome, check};
use super::error::CheckError;
use super::model_stage::ModelSettings;
use super::report::{Counts, Format, jsonl, table};
use super::write_back::WriteError;
use crate::steps::PythonEnvironments;

/// Which claims a commit made false: each claim of the sources goes through a cascade of stages,
/// cheapest first (its own test or check command, then symbol anchoring, then a model arm), and
/// is reported flipped, held, or without a verdict. Exit 0 when nothing flipped, 1 when a claim
/// flipped, 2 on bad input (a memory file that is a symlink out of the repository, not a regular
/// file, or over the size limit, included), 4 when --write was refused (the verdicts are still
/// printed); the highest of these wins, 2 first, then 4, then 1.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The repository (any directory inside it; default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// The revision the claims held at (default HEAD^).
    #[arg(long, value_name = "REV")]
    pub from: Option<String>,
    /// The revision to check them at (default HEAD). A range of several commits is judged as one
    /// change.
    #[arg(long, value_name = "REV")]
    pub to: Option<String>,
    /// The stages, in order: exec (the claim's test or check command), a4 (untouched anchors
    /// clear a claim), and one model question (a6_risk, a6_base, a5c, a5).
    #[arg(long, value_name = "STAGES", default_value = DEFAULT_CASCADE)]
    pub cascade: String,
    /// One stage alone, in place of the cascade.
    #[arg(long, value_name = "STAGE", conflicts_with = "cascade")]
    pub arm: Option<String>,
    /// What stdout gets.
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: Format,
    /// Find the repository's memory files (CLAUDE.md, AGENTS.md, .cursor/rules, …).
    #[arg(long)]
    pub discover: bool,
    /// Mark each flipped claim where it lives (a note after a Markdown item; `invalidated_at` and
    /// `invalidated_by` on a JSON record; Graphiti's `invalid_at`); nothing is deleted, and a
    /// second write of the same range changes nothing. Each file's directory is locked while it
    /// is re-read and replaced, so concurrent writes keep each other's marks. A write refused
    /// (a claim no longer in its file, a file that cannot be replaced) writes no file and exits 4.
    #[arg(long)]
    pub write: bool,
    /// The largest memory file read (or written back), in bytes, or with a K, M or G suffix
    /// (binary: 8M is 8 MiB); a larger file is refused with exit 2.
    #[arg(long, value_name = "SIZE", default_value = "8M", value_parser = parse_size)]
    pub max_memory_file_size: u64,
    /// Ask the model stage through this pipeline's `models:` (and its workdir's cache).
    #[arg(long, value_name = "PIPELINE")]
    pub pipeline: Option<PathBuf>,
    /// The `models:` entry of --pipeline to ask (default: the one its llm-arm step for the
    /// question asks), or the model id of the hosted default.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Ask no model: cached answers only; an uncached claim gets no verdict.
    #[arg(long)]
    pub offline: bool,
    /// A stats.json whose cascade arm's measured precision, recall, coverage and cost to print.
    #[arg(long, value_name = "STATS")]
    pub calibration: Option<PathBuf>,
    /// Seconds one check command or test run may take (1 to 86400). Zero would time out every
    /// command before it starts.
    #[arg(long, value_name = "SECONDS", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(1..=MAX_TIMEOUT_SECONDS))]
    pub timeout: u64,
    /// Where the check keeps its cache and checkouts (default: ~/.cache/claimflow/check/<repo>).
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// The format of the claim files named (default: told by each file's extension, else by its
    /// first record's fields).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub source_format: Option<SourceFormat>,
    /// Claim files: claimflow's JSON Lines (id, text, anchors, test, check), memory files.
    #[arg(value_name = "CLAIM SOURCES")]
    pub sources: Vec<PathBuf>,
}

/// The longest `--timeout`: a day. Beyond it a check is hung, not slow.
const MAX_TIMEOUT_SECONDS: u64 = 86_400;

/// How a check that ran to its end concluded, when not with exit 0; `main` maps each to its exit
/// code. Only the one that wins is returned: a refused write over a flipped claim.
#[derive(Debug, thiserror::Error)]
pub enum Conclusion {
    /// A claim flipped: exit code 1, said by the results themselves (nothing more to print).
    #[error("{0} claims flipped")]
    Flipped(usize),
    /// `--write` was refused and wrote nothing: exit code 4, after every verdict was printed.
    #[error("--write refused, no file written (the verdicts above stand)")]
    WriteRefused(#[source] WriteError),
}

/// A size in bytes: a number, or one with a K, M or G suffix (powers of 1024).
fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let (digits, unit) = match trimmed.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => trimmed.split_at(at),
        None => (trimmed, ""),
    };
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => {
            return Err(format!(
                "`{text}` is not a size: use bytes, or a K, M or G suffix"
            ));
        }
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|number| number.checked_mul(1 << shift))
        .ok_or_else(|| format!("`{text}` is not a size: use bytes, or a K, M or G suffix"))
}

/// Runs `check` from `root` (the directory claimflow runs in).
pub fn run(args: CheckArgs, root: &Path, quiet: bool) -> Result<()> {
    let stages = parse_stages(args.arm.as_deref().unwrap_or(&args.cascade))?;
    let options = CheckOptions {
        repo: root.join(args.repo.as_deref().unwrap_or(Path::new("."))),
        from: args.from,
        to: args.to,
        stages: stages.clone(),
        sources: args.sources.iter().map(|path| root.join(path)).collect(),
        source_format: args.source_format,
        discover: args.discover,
        write: args.write,
        max_memory_file_size: args.max_memory_file_size,
        model: ModelSettings {
            pipeline: args.pipeline,
            model: args.model,
            offline: args.offline,
            project_root: root.to_path_buf(),
        },
        workdir: args.workdir.map(|dir| root.join(dir)),
        timeout: Duration::from_secs(args.timeout),
    };
    let calibration = args
        .calibration
        .map(|file| calibration(&root.join(file)))
        .transpose()?;
    let outcome = check(&options, Arc::new(PythonEnvironments))?;
    print(&outcome, &stages, args.format, quiet)?;
    if !quiet && let Some(Ok(written)) = &outcome.written {
        eprintln!(
            "marked {} flipped claims in {} files ({} already marked)",
            written.marked.len(),
            written.files.len(),
            written.already_marked.len()
        );
    }
    if !quiet && let Some(lines) = calibration {
        eprint!("{lines}");
    }
    if let Some(Err(refused)) = outcome.written {
        return Err(Conclusion::WriteRefused(refused).into());
    }
    let flipped = Counts::of(&outcome.results).flipped;
    if flipped > 0 {
        return Err(Conclusion::Flipped(flipped).into());
    }
    Ok(())
}

fn print(
    outcome: &CheckOutcome,
    stages: &[super::claim::Stage],
    format: Format,
    quiet: bool,
) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match format {
        Format::Jsonl => out.write_all(jsonl(&outcome.results).as_bytes())?,
        Format::Github => {
            out.write_all(super::github::annotations(&outcome.results, &outcome.range).as_bytes())?;
            let summary = super::github::summary(&outcome.results, &outcome.range);
            match std::env::var_os("GITHUB_STEP_SUMMARY").filter(|path| !path.is_empty()) {
                Some(path) => {
                    let mut file = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&path)
                        .with_context(|| {
                            format!(
                                "open $GITHUB_STEP_SUMMARY {}",
                                PathBuf::from(&path).display()
                            )
                        })?;
                    file.write_all(summary.as_bytes())?;
                }
                None => out.write_all(summary.as_bytes())?,
            }
        }
        Format::Sarif => {
            serde_json::to_writer_pretty(
                &mut out,
                &super::sarif::log(&outcome.results, stages, &outcome.range),
            )?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    if !quiet {
        for notice in &outcome.notices {
            eprintln!("{notice}");
        }
        eprint!("{}", table(&outcome.results, &outcome.range));
    }
    Ok(())
}

/// The measured figures of the cascade arms of a `stats.json`, as lines for stderr.
fn calibration(file: &Path) -> Result<String, CheckError> {
    let text = std::fs::read_to_string(file).map_err(|error| {
        CheckError::Input(format!(
            "--calibration: cannot read {}: {error}",
            file.display()
        ))
    })?;
    let stats: serde_json::Value = serde_json::from_str(&text).map_err(|error| {
        CheckError::Input(format!(
            "--calibration: {} is not a stats.json: {error}",
            file.display()
        ))
    })?;
    let arms = stats["arms"].as_object().ok_or_else(|| {
        CheckError::Input(format!("--calibration: {} has no `arms`", file.display()))
    })?;
    let number = |value: &serde_json::Value| {
        value
            .as_f64()
            .map_or("n/a".to_string(), |x| format!("{x:.3}"))
    };
    let mut lines = String::new();
    for (step, arm) in arms {
        if arm["step"]["strategy"].as_str() != Some("cascade") {
            continue;
        }
        lines.push_str(&format!(
            "measured ({}, arm `{step}`, {} claims): precision {} (95% CI {}–{}), recall {}, coverage {}, cost per claim {}\n",
            file.display(),
            arm["claims"],
            number(&arm["precision"]),
            number(&arm["precision_ci"][0]),
            number(&arm["precision_ci"][1]),
            number(&arm["recall"]),
            number(&arm["coverage"]),
            arm["cost"]["per_claim"].as_f64().map_or("n/a".to_string(), |x| format!("${x:.6}")),
        ));
    }
    if lines.is_empty() {
        return Err(CheckError::Input(format!(
            "--calibration: {} has no arm of strategy `cascade`; score one with a `uses: cascade` step",
            file.display()
        )));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_bytes_or_binary_suffixes_and_refuse_the_rest() {
        assert_eq!(parse_size("8M"), Ok(8 * 1024 * 1024));
        assert_eq!(parse_size("512k"), Ok(512 * 1024));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("100"), Ok(100));
        for bad in ["", "M", "8T", "-1", "1.5M", "99999999999999999999G"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }
}
