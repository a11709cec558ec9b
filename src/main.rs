//! The `claimflow` binary: parses the command line, runs it, and is the one place that turns errors
//! into exit codes: 0 success, 1 a step failed, 2 the user's input is wrong (and 128 + the signal
//! when SIGINT or SIGTERM stops a run: see `claimflow::process_groups`). `check` adds 1 for a
//! claim flipped and 4 for a `--write` refused.

use clap::Parser;

use claimflow::cli::{self, Cli, InputError};
use claimflow::engine::EngineError;
use claimflow::pipeline::Diagnostics;

/// mimalloc, not the system allocator: a run over tens of thousands of items allocates and frees
/// millions of small values (keys, records, plans), and glibc's malloc spent a quarter of a cached
/// re-run's time on them (see `benches/README.md`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let code = run();
    exit_now(code)
}

/// Ends the process with `code` once what it printed is out, skipping the C-level cleanup at exit:
/// the allocator handing every page back to the kernel one call at a time and the shared
/// libraries' destructors, which took a twentieth of a re-run that computes nothing. Everything of
/// claimflow's own (files, temp files, child processes) is finished or dropped by then.
fn exit_now(code: u8) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: _exit(2) ends the process; nothing runs after it.
    unsafe { libc::_exit(i32::from(code)) }
}

/// Runs the command line; the exit code.
fn run() -> u8 {
    let cli = Cli::parse();
    // Ctrl-C or `kill` must not leave pip or pytest running, nor half-built environments behind.
    if let Err(error) = claimflow::process_groups::stop_on_signals() {
        eprintln!("error: cannot handle signals: {error}");
        return 1;
    }
    let outcome = cli::run(cli);
    if claimflow::process_groups::stopping() {
        claimflow::process_groups::await_stop();
    }
    match outcome {
        Ok(()) => 0,
        Err(error) => {
            // A closed pipe (`claimflow plan … | head`) is not a failure.
            if let Some(io) = error.downcast_ref::<std::io::Error>()
                && io.kind() == std::io::ErrorKind::BrokenPipe
            {
                return 0;
            }
            // `check` ran to its end: the results are printed, and say a claim flipped (1), or
            // `--write` was refused (4).
            if let Some(conclusion) = error.downcast_ref::<claimflow::check::verb::Conclusion>() {
                return match conclusion {
                    claimflow::check::verb::Conclusion::Flipped(_) => 1,
                    claimflow::check::verb::Conclusion::WriteRefused(_) => {
                        eprintln!("error: {error:#}");
                        4
                    }
                };
            }
            if let Some(check) = error.downcast_ref::<claimflow::check::CheckError>() {
                eprintln!("error: {error:#}");
                return if check.is_input() { 2 } else { 1 };
            }
            if let Some(diagnostics) = error.downcast_ref::<Diagnostics>() {
                eprintln!("{diagnostics}");
                return 2;
            }
            if error.downcast_ref::<InputError>().is_some() {
                eprintln!("error: {error:#}");
                return 2;
            }
            match error.downcast_ref::<EngineError>() {
                Some(EngineError::Input(_) | EngineError::StepsRejectedInput(_)) => {
                    eprintln!("error: {error}");
                    2
                }
                // Each failure was already reported as it happened; this is the summary line.
                Some(EngineError::StepsFailed(_)) => {
                    eprintln!("error: {error}");
                    1
                }
                _ => {
                    eprintln!("error: {error:#}");
                    1
                }
            }
        }
    }
}
