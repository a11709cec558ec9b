//! The one printer: turns engine events into progress on stderr — bars when stderr is a terminal,
//! plain lines otherwise — and nothing but failures with `--quiet`.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::{Event, Reporter, Spend};

/// How much to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verbosity {
    /// Failures only.
    Quiet,
    /// Progress and a summary.
    Normal,
}

/// Progress on stderr.
pub struct Progress {
    verbosity: Verbosity,
    bars: Option<Bars>,
    lock: Mutex<()>,
    /// Without bars: per step, (items done, items in all, when a count was last printed), so a
    /// long step still says how far it is, at most every few seconds.
    counts: Mutex<BTreeMap<String, (usize, usize, Instant)>>,
    /// What model calls have used so far, and when that was last said.
    spent: Mutex<(Spend, Option<Instant>)>,
}

/// How often the running model totals are printed.
const SPENT_EVERY: Duration = Duration::from_secs(10);

/// How often a step's count is printed as a plain line.
const COUNT_EVERY: Duration = Duration::from_secs(10);

struct Bars {
    multi: MultiProgress,
    by_step: Mutex<BTreeMap<String, ProgressBar>>,
    style: ProgressStyle,
}

impl Progress {
    /// Bars if stderr is a terminal (and not quiet), plain lines otherwise. Colour only when stderr
    /// is a terminal and `NO_COLOR` is unset.
    pub fn new(verbosity: Verbosity) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let bars = (terminal && verbosity == Verbosity::Normal).then(|| {
            let colour = std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
            let template = if colour {
                "{prefix:>12.cyan.bold} [{bar:30.cyan/blue}] {pos}/{len} {msg}"
            } else {
                "{prefix:>12} [{bar:30}] {pos}/{len} {msg}"
            };
            Bars {
                multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
                by_step: Mutex::new(BTreeMap::new()),
                style: ProgressStyle::with_template(template)
                    .expect("a valid template")
                    .progress_chars("=> "),
            }
        });
        Progress {
            verbosity,
            bars,
            lock: Mutex::new(()),
            counts: Mutex::new(BTreeMap::new()),
            spent: Mutex::new((Spend::default(), None)),
        }
    }

    fn line(&self, text: &str) {
        let _guard = self.lock.lock().expect("print lock");
        match &self.bars {
            Some(bars) => {
                let _ = bars.multi.println(text);
            }
            None => {
                let _ = writeln!(std::io::stderr(), "{text}");
            }
        }
    }
}

impl Reporter for Progress {
    fn event(&self, event: &Event) {
        match event {
            Event::ItemFailed {
                step, item, error, ..
            } => self.line(&format!("error: step `{step}` item `{item}`: {error}")),
            Event::StepFailed { step, error, .. } => self.step_failed(step, error),
            _ if self.verbosity == Verbosity::Quiet => {}
            Event::StepPlanned {
                step,
                total,
                cached,
            } => self.step_planned(step, *total, *cached),
            Event::ItemFinished { step, .. } => self.item_finished(step),
            Event::StepFinished {
                step,
                computed,
                cached,
                elapsed,
            } => self.step_finished(step, *computed, *cached, *elapsed),
            Event::StepSkipped { step, because } => {
                self.line(&format!("{step}: skipped ({because})"))
            }
            Event::Note { step, message } => self.line(&format!("{step}: {message}")),
            Event::Spent { step, spend } => self.spent(step, spend),
            Event::ItemRetry {
                step,
                item,
                attempt,
                delay,
                error,
            } => self.line(&format!(
                "{step}: item `{item}` failed transiently ({error}); retry {attempt} in {:.1}s",
                delay.as_secs_f64()
            )),
        }
    }
}

impl Progress {
    fn step_failed(&self, step: &str, error: &impl std::fmt::Display) {
        if let Some(bars) = &self.bars
            && let Some(bar) = bars.by_step.lock().expect("bars lock").get(step)
        {
            bar.abandon_with_message("failed");
        }
        self.line(&format!("error: step `{step}` failed: {error}"));
    }

    /// A bar for the step, or a line saying how many of its items are cached.
    fn step_planned(&self, step: &str, total: usize, cached: usize) {
        match &self.bars {
            Some(bars) => {
                let bar = bars.multi.add(ProgressBar::new(total as u64));
                bar.set_style(bars.style.clone());
                bar.set_prefix(step.to_string());
                bar.set_message(format!("{cached} cached"));
                // Cached items send no event of their own: they are done from the start.
                bar.set_position(cached as u64);
                bars.by_step
                    .lock()
                    .expect("bars lock")
                    .insert(step.to_string(), bar);
            }
            None => {
                self.counts
                    .lock()
                    .expect("counts lock")
                    .insert(step.to_string(), (cached, total, Instant::now()));
                self.line(&format!(
                    "{step}: {total} items, {cached} cached, {} to run",
                    total - cached
                ));
            }
        }
    }

    /// The bar moves on; without bars, a count every [`COUNT_EVERY`].
    fn item_finished(&self, step: &str) {
        match &self.bars {
            Some(bars) => {
                if let Some(bar) = bars.by_step.lock().expect("bars lock").get(step) {
                    bar.inc(1);
                }
            }
            None => {
                let mut counts = self.counts.lock().expect("counts lock");
                if let Some((done, total, printed)) = counts.get_mut(step) {
                    *done += 1;
                    if *done < *total && printed.elapsed() >= COUNT_EVERY {
                        *printed = Instant::now();
                        let line = format!("{step}: {done}/{total} items done");
                        drop(counts);
                        self.line(&line);
                    }
                }
            }
        }
    }

    fn step_finished(&self, step: &str, computed: usize, cached: usize, elapsed: Duration) {
        let text = format!(
            "{computed} computed, {cached} cached in {:.1}s",
            elapsed.as_secs_f64()
        );
        match &self.bars {
            Some(bars) => {
                if let Some(bar) = bars.by_step.lock().expect("bars lock").get(step) {
                    bar.finish_with_message(text);
                }
            }
            None => self.line(&format!("{step}: done, {text}")),
        }
    }

    /// Every few seconds, the calls made so far, their tokens and their cost.
    fn spent(&self, step: &str, spend: &Spend) {
        let line = {
            let mut spent = self.spent.lock().expect("spent lock");
            spent.0.add(spend);
            let due = spent.1.is_none_or(|said| said.elapsed() >= SPENT_EVERY);
            due.then(|| {
                spent.1 = Some(Instant::now());
                format!("{step}: model calls so far: {}", spent.0)
            })
        };
        if let Some(line) = line {
            self.line(&line);
        }
    }
}
