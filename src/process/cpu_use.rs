//! Why a child outlived its timeout: it was starved of CPU, or it hung.
//!
//! A time limit cannot tell the two apart by itself. On a loaded machine (a load of 20 on a few
//! cores) a test suite that needs two seconds of CPU may not get them within its limit; a suite
//! that hangs (a deadlock, a read that never returns) sleeps. The kernel keeps what separates
//! them: the CPU time each process got (`utime`/`stime` in `/proc/<pid>/stat`, with what its
//! reaped children got in `cutime`/`cstime`) and the time each thread spent runnable but waiting
//! for a CPU (the run delay, the second field of `/proc/<pid>/task/<tid>/schedstat`). A run that
//! spent most of its wall time waiting for a CPU was starved; one that neither ran nor waited was
//! asleep, and hung. Where the kernel keeps no run delay (no schedstats), the machine's CPU
//! pressure (`/proc/pressure/cpu`, "some avg10") or load per core says whether the machine was
//! busy, and the leader's state whether it was runnable.
//!
//! [`classify`] and the parsers are pure functions over numbers and text; [`sample_group`] and
//! [`sample_machine`] are the thin readers, taken at the moment a deadline fires (before the group
//! is killed, while it can still be read).

use std::fmt;
use std::path::Path;
use std::time::Duration;

/// A run that waited for a CPU at least this share of its wall time was starved.
const WAITING_STARVED: f64 = 0.5;
/// A run that waited at least this share, on a busy machine, while getting less than
/// [`FAR_BELOW_ONE_CORE`] of a core, was starved too.
const WAITING_NOTABLE: f64 = 0.1;
/// A CPU share this far below one core is what a starved run gets on a busy machine.
const FAR_BELOW_ONE_CORE: f64 = 0.5;
/// A machine is busy when some task waited for a CPU this share of the last ten seconds …
const BUSY_PRESSURE: f64 = 40.0;
/// … or when its one-minute load is this many times its cores.
const BUSY_LOAD_PER_CORE: f64 = 1.5;

/// What a process group got from the CPU while it ran.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GroupUse {
    /// CPU time of the group's live processes and of the children they reaped.
    pub cpu: Duration,
    /// Time its threads spent runnable but waiting for a CPU; None without schedstats.
    pub run_delay: Option<Duration>,
    /// Whether any of its processes was running or runnable when sampled.
    pub runnable: bool,
}

/// How busy the whole machine was.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MachineLoad {
    /// `/proc/pressure/cpu` "some avg10": the share (in percent) of the last ten seconds some
    /// task waited for a CPU; None without PSI.
    pub cpu_pressure: Option<f64>,
    /// The one-minute load average; None when unreadable.
    pub load: Option<f64>,
    /// Cores this process may run on.
    pub cores: usize,
}

impl MachineLoad {
    /// The one-minute load per core.
    pub fn load_per_core(&self) -> Option<f64> {
        self.load.map(|load| load / self.cores.max(1) as f64)
    }

    /// Whether the machine was busy enough to starve a run.
    pub fn busy(&self) -> bool {
        self.cpu_pressure
            .is_some_and(|pressure| pressure >= BUSY_PRESSURE)
            || self
                .load_per_core()
                .is_some_and(|load| load >= BUSY_LOAD_PER_CORE)
    }
}

impl fmt::Display for MachineLoad {
    /// "load 20.3 on 2 cores, CPU pressure 85%".
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.load {
            Some(load) => write!(formatter, "load {load:.1} on {} cores", self.cores)?,
            None => write!(formatter, "load unknown on {} cores", self.cores)?,
        }
        if let Some(pressure) = self.cpu_pressure {
            write!(formatter, ", CPU pressure {pressure:.0}%")?;
        }
        Ok(())
    }
}

/// Why a run outlived its timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StallKind {
    /// It wanted a CPU and did not get one: the machine was too busy. Trying again may finish.
    Starved,
    /// It neither ran nor waited for a CPU (or it ran freely and did not finish): trying again
    /// would hang again.
    Hung,
}

/// A timed-out run, as measured when its deadline fired.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stall {
    pub kind: StallKind,
    /// Its wall time until the deadline.
    pub wall: Duration,
    pub group: GroupUse,
    pub machine: MachineLoad,
}

impl Stall {
    /// Measures the group led by `leader` and the machine, `wall` into the run, and classifies.
    pub fn measure(leader: u32, wall: Duration) -> Self {
        let group = sample_group(Path::new("/proc"), leader);
        let machine = sample_machine(Path::new("/proc"));
        Stall {
            kind: classify(wall, &group, &machine),
            wall,
            group,
            machine,
        }
    }

    /// Whether the run was starved of CPU (rather than hung).
    pub fn starved(&self) -> bool {
        self.kind == StallKind::Starved
    }
}

impl fmt::Display for Stall {
    /// "it got 0.4s of CPU in 30.0s and waited 62% of that time for a CPU; load 20.3 on 2 cores".
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "it got {:.1}s of CPU in {:.1}s",
            self.group.cpu.as_secs_f64(),
            self.wall.as_secs_f64()
        )?;
        if let Some(delay) = self.group.run_delay {
            write!(
                formatter,
                " and waited {:.0}% of that time for a CPU",
                100.0 * share(delay, self.wall)
            )?;
        }
        write!(formatter, "; {}", self.machine)
    }
}

/// How many times in all a run that was starved of CPU is tried.
pub const STARVED_ATTEMPTS: u32 = 3;

/// The pause after starved attempt `attempt` (from 1): 2 s, then 4 s, so a burst of load may pass.
pub fn starved_backoff(attempt: u32) -> Duration {
    Duration::from_secs(2u64 << attempt.saturating_sub(1).min(8))
}

/// Runs `attempt` (given its number, from 1) again while `starved` says its result was starved
/// of CPU, [`STARVED_ATTEMPTS`] times in all, pausing [`starved_backoff`] between tries. Returns
/// the last result (which the caller finds still starved when every attempt was) or the first
/// error.
pub fn retry_starved<T, E>(
    mut attempt: impl FnMut(u32) -> Result<T, E>,
    starved: impl Fn(&T) -> bool,
) -> Result<T, E> {
    let mut number = 1;
    loop {
        let result = attempt(number)?;
        if number >= STARVED_ATTEMPTS || !starved(&result) {
            return Ok(result);
        }
        std::thread::sleep(starved_backoff(number));
        number += 1;
    }
}

fn share(part: Duration, whole: Duration) -> f64 {
    if whole.is_zero() {
        return 0.0;
    }
    part.as_secs_f64() / whole.as_secs_f64()
}

/// Tells a starved run from a hung one by what its group got over `wall`.
///
/// With a run delay: starved when it waited for a CPU most of the time, or a notable share of it
/// on a busy machine while getting far less than a core. Without one: starved when the machine
/// was busy, the group got far less than a core, and it was runnable when sampled (a sleeping
/// group on a busy machine is still a hang).
pub fn classify(wall: Duration, group: &GroupUse, machine: &MachineLoad) -> StallKind {
    let cpu_share = share(group.cpu, wall);
    let starved = match group.run_delay {
        Some(delay) => {
            let waiting = share(delay, wall);
            waiting >= WAITING_STARVED
                || (waiting >= WAITING_NOTABLE && machine.busy() && cpu_share < FAR_BELOW_ONE_CORE)
        }
        None => machine.busy() && cpu_share < FAR_BELOW_ONE_CORE && group.runnable,
    };
    if starved {
        StallKind::Starved
    } else {
        StallKind::Hung
    }
}

/// The fields of `/proc/<pid>/stat` this module reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessStat {
    /// `R` running or runnable, `S` sleeping, `D` in uninterruptible sleep, …
    pub state: char,
    pub group: i64,
    /// `utime + stime + cutime + cstime`, in clock ticks.
    pub ticks: u64,
}

/// Parses one `/proc/<pid>/stat` line. The command name may hold spaces and parentheses, so the
/// fields are counted from its last `)`.
pub fn parse_stat(text: &str) -> Option<ProcessStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) pgrp(2) … utime(11) stime(12) cutime(13) cstime(14).
    let state = fields.first()?.chars().next()?;
    let group = fields.get(2)?.parse().ok()?;
    let mut ticks = 0u64;
    for index in 11..=14 {
        // cutime and cstime are signed in the kernel's format; they are never negative in practice.
        let value: i64 = fields.get(index)?.parse().ok()?;
        ticks += value.max(0) as u64;
    }
    Some(ProcessStat {
        state,
        group,
        ticks,
    })
}

/// Parses `/proc/<pid>/task/<tid>/schedstat` ("cpu-ns run-delay-ns timeslices") into the run
/// delay.
pub fn parse_schedstat(text: &str) -> Option<Duration> {
    let delay: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(Duration::from_nanos(delay))
}

/// Parses `/proc/pressure/cpu` into its "some avg10" (percent).
pub fn parse_pressure(text: &str) -> Option<f64> {
    let line = text.lines().find(|line| line.starts_with("some "))?;
    line.split_whitespace()
        .find_map(|field| field.strip_prefix("avg10="))?
        .parse()
        .ok()
}

/// Parses `/proc/loadavg` into its one-minute load.
pub fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

/// What the process group `leader` leads got from the CPU, read from `proc` (`/proc`): the sum
/// over its member processes, and over their threads' run delays.
pub fn sample_group(proc: &Path, leader: u32) -> GroupUse {
    // SAFETY: sysconf only reads a configuration value.
    let ticks_per_second = match unsafe { libc::sysconf(libc::_SC_CLK_TCK) } {
        ticks if ticks > 0 => ticks as f64,
        _ => 100.0,
    };
    let mut ticks = 0u64;
    let mut delay: Option<Duration> = None;
    let mut runnable = false;
    let members = std::fs::read_dir(proc)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok());
    for pid in members {
        let dir = proc.join(pid.to_string());
        let Some(stat) = std::fs::read_to_string(dir.join("stat"))
            .ok()
            .and_then(|text| parse_stat(&text))
        else {
            continue;
        };
        if stat.group != i64::from(leader) {
            continue;
        }
        ticks += stat.ticks;
        runnable |= stat.state == 'R';
        let threads = std::fs::read_dir(dir.join("task")).into_iter().flatten();
        for thread in threads.flatten() {
            if let Some(thread_delay) = std::fs::read_to_string(thread.path().join("schedstat"))
                .ok()
                .and_then(|text| parse_schedstat(&text))
            {
                *delay.get_or_insert(Duration::ZERO) += thread_delay;
            }
        }
    }
    GroupUse {
        cpu: Duration::from_secs_f64(ticks as f64 / ticks_per_second),
        run_delay: delay,
        runnable,
    }
}

/// How busy the machine is now, read from `proc` (`/proc`).
pub fn sample_machine(proc: &Path) -> MachineLoad {
    let read = |name: &str| std::fs::read_to_string(proc.join(name)).ok();
    MachineLoad {
        cpu_pressure: read("pressure/cpu").and_then(|text| parse_pressure(&text)),
        load: read("loadavg").and_then(|text| parse_loadavg(&text)),
        cores: std::thread::available_parallelism().map_or(1, usize::from),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn idle() -> MachineLoad {
        MachineLoad {
            cpu_pressure: Some(0.5),
            load: Some(0.3),
            cores: 2,
        }
    }

    fn busy() -> MachineLoad {
        MachineLoad {
            cpu_pressure: Some(85.0),
            load: Some(20.0),
            cores: 2,
        }
    }

    fn used(cpu: f64, delay: Option<f64>, runnable: bool) -> GroupUse {
        GroupUse {
            cpu: Duration::from_secs_f64(cpu),
            run_delay: delay.map(Duration::from_secs_f64),
            runnable,
        }
    }

    #[test]
    fn a_run_that_waited_most_of_its_time_for_a_cpu_was_starved() {
        let wall = 30 * SECOND;
        assert_eq!(
            classify(wall, &used(3.0, Some(24.0), true), &busy()),
            StallKind::Starved
        );
        // The run delay alone says so, whatever the load figures.
        assert_eq!(
            classify(wall, &used(3.0, Some(24.0), false), &idle()),
            StallKind::Starved
        );
    }

    #[test]
    fn a_run_that_slept_is_hung_even_on_a_busy_machine() {
        let wall = 30 * SECOND;
        assert_eq!(
            classify(wall, &used(0.4, Some(0.1), false), &busy()),
            StallKind::Hung
        );
        assert_eq!(
            classify(wall, &used(0.4, Some(0.0), false), &idle()),
            StallKind::Hung
        );
    }

    #[test]
    fn a_run_that_had_a_core_and_did_not_finish_is_hung() {
        // A busy loop: a whole core, almost no waiting.
        assert_eq!(
            classify(30 * SECOND, &used(29.5, Some(0.3), true), &busy()),
            StallKind::Hung
        );
    }

    #[test]
    fn some_waiting_counts_only_on_a_busy_machine_and_far_below_one_core() {
        let group = used(6.0, Some(6.0), true);
        assert_eq!(classify(30 * SECOND, &group, &busy()), StallKind::Starved);
        assert_eq!(classify(30 * SECOND, &group, &idle()), StallKind::Hung);
    }

    #[test]
    fn without_schedstats_the_load_and_the_state_decide() {
        let wall = 30 * SECOND;
        assert_eq!(
            classify(wall, &used(2.0, None, true), &busy()),
            StallKind::Starved
        );
        assert_eq!(
            classify(wall, &used(2.0, None, false), &busy()),
            StallKind::Hung
        );
        assert_eq!(
            classify(wall, &used(2.0, None, true), &idle()),
            StallKind::Hung
        );
        // The load per core alone marks a machine without PSI busy.
        let loaded = MachineLoad {
            cpu_pressure: None,
            load: Some(8.0),
            cores: 2,
        };
        assert_eq!(
            classify(wall, &used(2.0, None, true), &loaded),
            StallKind::Starved
        );
    }

    #[test]
    fn a_starved_run_is_tried_three_times_and_a_hung_one_once() {
        let mut tries = 0;
        let last: Result<u32, ()> = retry_starved(
            |attempt| {
                tries += 1;
                Ok(attempt)
            },
            |_| true,
        );
        assert_eq!((last, tries), (Ok(STARVED_ATTEMPTS), 3));
        let mut tries = 0;
        let last: Result<u32, ()> = retry_starved(
            |attempt| {
                tries += 1;
                Ok(attempt)
            },
            |_| false,
        );
        assert_eq!((last, tries), (Ok(1), 1));
        assert_eq!(starved_backoff(1), Duration::from_secs(2));
        assert_eq!(starved_backoff(2), Duration::from_secs(4));
    }

    #[test]
    fn parses_proc_files() {
        let stat = "4242 (py (test) x) R 1 4240 4240 0 -1 4194304 10 0 0 0 150 30 12 8 20 0 1 0 \
                    100 0 0";
        assert_eq!(
            parse_stat(stat),
            Some(ProcessStat {
                state: 'R',
                group: 4240,
                ticks: 200
            })
        );
        assert_eq!(parse_stat("4242 (python"), None);
        assert_eq!(
            parse_schedstat("190462 3098307 3\n"),
            Some(Duration::from_nanos(3_098_307))
        );
        assert_eq!(
            parse_pressure(
                "some avg10=21.61 avg60=12.23 avg300=4.48 total=17106844\n\
                 full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
            ),
            Some(21.61)
        );
        assert_eq!(parse_loadavg("1.86 0.78 0.30 3/138 9804\n"), Some(1.86));
    }

    #[test]
    fn samples_a_live_group() {
        // This test's own group, after this thread used some CPU.
        let started = std::time::Instant::now();
        let mut spin = 0u64;
        while started.elapsed() < Duration::from_millis(100) {
            spin = std::hint::black_box(spin.wrapping_add(1));
        }
        // SAFETY: getpgrp has no arguments and cannot fail.
        let group = unsafe { libc::getpgrp() } as u32;
        let sample = sample_group(Path::new("/proc"), group);
        assert!(sample.cpu > Duration::ZERO, "{sample:?}");
        assert!(sample_machine(Path::new("/proc")).cores >= 1);
    }

    #[test]
    fn says_what_it_measured() {
        let stall = Stall {
            kind: StallKind::Starved,
            wall: 30 * SECOND,
            group: used(0.4, Some(18.6), true),
            machine: busy(),
        };
        assert_eq!(
            stall.to_string(),
            "it got 0.4s of CPU in 30.0s and waited 62% of that time for a CPU; load 20.0 on 2 \
             cores, CPU pressure 85%"
        );
    }
}
