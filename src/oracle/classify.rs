//! Turns one pytest run (how it ended and what the plugin recorded) into a verdict per test.
//!
//! The rule the paper learned the hard way: a missing verdict is never a failure. Only a run that
//! ended normally (exit code 0 or 1, with the plugin's session-finish record) gives verdicts; a run
//! aborted by a collection error, interrupted, timed out or crashed gives every test `Unknown`, and
//! a test without a complete record in a good run is `Unknown` too. Sub-test results (unittest
//! `subTest`, pytest-subtests) carry their test's node id and are grouped under it: the test failed
//! if any of them failed, and its failure names the sub-tests that failed. A skipped sub-test does
//! not make its test skipped; the test's own call and its other sub-tests decide.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

use crate::process;
use crate::records::{Outcome, RunRecord};

/// How a test failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureKind {
    /// An `AssertionError` (or a subclass) in the test's call.
    Assertion,
    /// Another exception in the test's call, by class name.
    Exception(String),
    /// A `NameError` (or subclass) raised by the test's own module code, which imports nothing
    /// with `*`: the test used a name its file never defines. It fails whatever the library does.
    UndefinedNameInTest(String),
    /// An exception while setting the test up (a fixture failed), by class name.
    SetupError(String),
    /// An exception while tearing the test down, by class name.
    TeardownError(String),
    /// Sub-tests failed (`self.subTest(...)`, `subtests.test(...)`): how the first failed, and
    /// each failing sub-test's description (`(x=2)`, `[message] (i=1)`) in the order they ran.
    SubTests {
        failure: Box<FailureKind>,
        subtests: Vec<String>,
    },
}

/// Why a test has no verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnknownReason {
    /// A collection error aborted the batch.
    CollectionError,
    /// pytest exited with a code that gives no per-test verdicts (2 to 5, or another).
    ExitCode(i32),
    /// The run was killed after its timeout.
    Timeout,
    /// The process died by a signal or ended without finishing the session.
    Crash(String),
    /// The run ended normally but the test has no complete record.
    MissingRecord,
    /// The test was skipped (or xfailed): it neither passed nor failed.
    Skipped,
}

/// The verdict on one test in one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Passed,
    Failed(FailureKind),
    Unknown(UnknownReason),
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailureKind::Assertion => write!(f, "assertion"),
            FailureKind::Exception(class) => write!(f, "{class}"),
            FailureKind::UndefinedNameInTest(class) => {
                write!(f, "{class} in the test file's own code")
            }
            FailureKind::SetupError(class) => write!(f, "setup error: {class}"),
            FailureKind::TeardownError(class) => write!(f, "teardown error: {class}"),
            FailureKind::SubTests { failure, subtests } => {
                let noun = if subtests.len() == 1 {
                    "sub-test"
                } else {
                    "sub-tests"
                };
                write!(f, "{failure} in {noun} {}", subtests.join("; "))
            }
        }
    }
}

impl fmt::Display for UnknownReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnknownReason::CollectionError => write!(f, "collection error"),
            UnknownReason::ExitCode(2) => write!(f, "interrupted (exit code 2)"),
            UnknownReason::ExitCode(3) => write!(f, "internal error (exit code 3)"),
            UnknownReason::ExitCode(4) => write!(f, "usage error (exit code 4)"),
            UnknownReason::ExitCode(5) => write!(f, "no tests collected (exit code 5)"),
            UnknownReason::ExitCode(code) => write!(f, "exit code {code}"),
            UnknownReason::Timeout => write!(f, "timeout"),
            UnknownReason::Crash(how) => write!(f, "crash: {how}"),
            UnknownReason::MissingRecord => write!(f, "missing record"),
            UnknownReason::Skipped => write!(f, "skipped"),
        }
    }
}

impl UnknownReason {
    /// Its name among the `unknown_causes` of `oracle_summary.json`.
    pub fn name(&self) -> &'static str {
        match self {
            UnknownReason::CollectionError => "collection_error",
            UnknownReason::ExitCode(5) => "not_collected",
            UnknownReason::ExitCode(_) => "exit_code",
            UnknownReason::Timeout => "timeout",
            UnknownReason::Crash(_) => "crash",
            UnknownReason::MissingRecord => "missing_record",
            UnknownReason::Skipped => "skipped",
        }
    }

    /// The [`UnknownReason::name`] of the reason an unknown run record's `detail` was written
    /// from (its `Display`); `other` for a detail no reason writes.
    pub fn name_of_detail(detail: &str) -> &'static str {
        let exit_code = [
            "interrupted (",
            "internal error (",
            "usage error (",
            "exit code ",
        ];
        if detail.starts_with("collection error") {
            "collection_error"
        } else if detail.starts_with("no tests collected") {
            "not_collected"
        } else if exit_code.iter().any(|prefix| detail.starts_with(prefix)) {
            "exit_code"
        } else if detail == "timeout" {
            "timeout"
        } else if detail.starts_with("crash:") {
            "crash"
        } else if detail == "missing record" {
            "missing_record"
        } else if detail == "skipped" {
            "skipped"
        } else {
            "other"
        }
    }
}

impl Verdict {
    /// The run record of this verdict for run `run`.
    pub fn run_record(&self, run: u32) -> RunRecord {
        let (outcome, detail) = match self {
            Verdict::Passed => (Outcome::Passed, None),
            Verdict::Failed(kind) => (Outcome::Failed, Some(kind.to_string())),
            Verdict::Unknown(reason) => (Outcome::Unknown, Some(reason.to_string())),
        };
        RunRecord {
            run,
            outcome,
            detail,
        }
    }
}

/// A file (or other collector) that failed to collect, with the exception line of its report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectionError {
    /// The collector's node id (a test file's path, relative to the rootdir).
    pub node: String,
    /// The last `E   …` line of the report (`ImportError: cannot import name 'x' …`).
    pub message: String,
}

impl CollectionError {
    /// The module or name an import failed on, when the error is an import error.
    pub fn missing_name(&self) -> Option<String> {
        missing_name(&self.message)
    }
}

/// The verdicts of one run, for the node ids it selected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchVerdicts {
    pub verdicts: BTreeMap<String, Verdict>,
    pub collection_errors: Vec<CollectionError>,
    /// True when the batch as a whole gave no verdicts (aborted, timed out, crashed).
    pub aborted: bool,
}

/// One line of the plugin's record file.
#[derive(Debug, Deserialize)]
struct Record {
    event: String,
    #[serde(default)]
    node: String,
    #[serde(default)]
    phase: String,
    #[serde(default)]
    outcome: String,
    #[serde(default)]
    exception: Option<String>,
    #[serde(default)]
    assertion: bool,
    #[serde(default)]
    undefined_name_in_test_file: bool,
    #[serde(default)]
    longrepr: Option<String>,
    /// The sub-test a record is about (or, without sub-test reports, the sub-test a failure left).
    #[serde(default)]
    subtest: Option<String>,
}

/// Classifies the selected node ids of one run.
pub fn classify(selected: &[String], outcome: &process::Outcome, records: &str) -> BatchVerdicts {
    let mut tests: BTreeMap<&str, Vec<Record>> = BTreeMap::new();
    let mut collection_errors = Vec::new();
    let mut finished = false;
    for line in records.lines() {
        // A line that does not parse is the tail of a crash; the missing finish record says so.
        let Ok(record) = serde_json::from_str::<Record>(line) else {
            continue;
        };
        match record.event.as_str() {
            "test" => {
                if let Some(node) = selected.iter().find(|node| **node == record.node) {
                    tests.entry(node.as_str()).or_default().push(record);
                }
            }
            "collect" => collection_errors.push(CollectionError {
                node: record.node.clone(),
                message: exception_line(record.longrepr.as_deref().unwrap_or_default()),
            }),
            "finish" => finished = true,
            _ => {}
        }
    }

    let batch_reason = match outcome {
        process::Outcome::TimedOut => Some(UnknownReason::Timeout),
        process::Outcome::Signalled(signal) => {
            Some(UnknownReason::Crash(format!("killed by signal {signal}")))
        }
        process::Outcome::Exited(0 | 1) if finished => None,
        process::Outcome::Exited(code @ (0 | 1)) => Some(UnknownReason::Crash(format!(
            "pytest exited with code {code} before finishing the session"
        ))),
        process::Outcome::Exited(_) if !collection_errors.is_empty() => {
            Some(UnknownReason::CollectionError)
        }
        process::Outcome::Exited(code) => Some(UnknownReason::ExitCode(*code)),
        process::Outcome::Cancelled => {
            Some(UnknownReason::Crash("the run was cancelled".to_string()))
        }
    };

    let verdicts = selected
        .iter()
        .map(|node| {
            let verdict = match &batch_reason {
                Some(reason) => Verdict::Unknown(reason.clone()),
                None => tests
                    .get(node.as_str())
                    .map_or(Verdict::Unknown(UnknownReason::MissingRecord), |records| {
                        test_verdict(records)
                    }),
            };
            (node.clone(), verdict)
        })
        .collect();
    BatchVerdicts {
        verdicts,
        collection_errors,
        aborted: batch_reason.is_some(),
    }
}

/// The verdict of one test from its phase records (sub-results included).
fn test_verdict(records: &[Record]) -> Verdict {
    let phase = |name: &'static str| records.iter().filter(move |record| record.phase == name);
    // pytest reports teardown for every test it set up; without it the record is incomplete.
    if phase("teardown").next().is_none() {
        return Verdict::Unknown(UnknownReason::MissingRecord);
    }
    let class = |record: &Record| {
        record
            .exception
            .clone()
            .unwrap_or_else(|| "unknown exception".to_string())
    };
    if let Some(setup) = phase("setup").find(|record| record.outcome == "failed") {
        return Verdict::Failed(FailureKind::SetupError(class(setup)));
    }
    let failed: Vec<&Record> = phase("call")
        .filter(|record| record.outcome == "failed")
        .collect();
    if let Some(first) = failed.first() {
        let failure = if first.assertion {
            FailureKind::Assertion
        } else if first.undefined_name_in_test_file {
            FailureKind::UndefinedNameInTest(class(first))
        } else {
            FailureKind::Exception(class(first))
        };
        let mut subtests: Vec<String> = Vec::new();
        for name in failed.iter().filter_map(|record| record.subtest.clone()) {
            if !subtests.contains(&name) {
                subtests.push(name);
            }
        }
        return Verdict::Failed(if subtests.is_empty() {
            failure
        } else {
            FailureKind::SubTests {
                failure: Box::new(failure),
                subtests,
            }
        });
    }
    let own_call = || phase("call").filter(|record| record.subtest.is_none());
    if phase("setup")
        .chain(own_call())
        .any(|record| record.outcome == "skipped")
    {
        return Verdict::Unknown(UnknownReason::Skipped);
    }
    if own_call().next().is_none() {
        return Verdict::Unknown(UnknownReason::MissingRecord);
    }
    if let Some(teardown) = phase("teardown").find(|record| record.outcome == "failed") {
        return Verdict::Failed(FailureKind::TeardownError(class(teardown)));
    }
    Verdict::Passed
}

/// The last line of a report that names an exception (`E   ImportError: …`), else its last line.
fn exception_line(longrepr: &str) -> String {
    let lines: Vec<&str> = longrepr.lines().map(str::trim_end).collect();
    lines
        .iter()
        .rev()
        .find_map(|line| line.strip_prefix("E ").map(str::trim))
        .or_else(|| {
            lines
                .iter()
                .rev()
                .find(|line| !line.trim().is_empty())
                .copied()
        })
        .unwrap_or_default()
        .to_string()
}

/// The name an import error is about: `cannot import name 'x'`, `No module named 'x'`, or a
/// module-level `has no attribute 'x'`. Python 2 writes the names without quotes.
pub fn missing_name(message: &str) -> Option<String> {
    const PATTERNS: &[&str] = &[
        "cannot import name ",
        "No module named ",
        "has no attribute ",
    ];
    PATTERNS.iter().find_map(|pattern| {
        let (_, rest) = message.split_once(pattern)?;
        let name: String = rest
            .trim_start_matches(['\'', '"'])
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.')
            .collect();
        (!name.is_empty()).then_some(name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SELECTED: &[&str] = &[
        "tests/test_a.py::test_passes",
        "tests/test_a.py::test_asserts",
        "tests/test_a.py::test_raises",
    ];

    fn selected() -> Vec<String> {
        SELECTED.iter().map(|node| node.to_string()).collect()
    }

    fn test_lines(node: &str, call: &str) -> String {
        format!(
            "{{\"event\":\"test\",\"node\":\"{node}\",\"phase\":\"setup\",\"outcome\":\"passed\"}}\n\
             {{\"event\":\"test\",\"node\":\"{node}\",\"phase\":\"call\",{call}}}\n\
             {{\"event\":\"test\",\"node\":\"{node}\",\"phase\":\"teardown\",\"outcome\":\"passed\"}}\n"
        )
    }

    /// The record file of a normal run of the three tests.
    fn full_run() -> String {
        let mut text = String::from("{\"event\":\"start\"}\n");
        text.push_str(&test_lines(SELECTED[0], "\"outcome\":\"passed\""));
        text.push_str(&test_lines(
            SELECTED[1],
            "\"outcome\":\"failed\",\"exception\":\"AssertionError\",\"assertion\":true,\"longrepr\":\"E   assert 1 == 2\"",
        ));
        text.push_str(&test_lines(
            SELECTED[2],
            "\"outcome\":\"failed\",\"exception\":\"AttributeError\",\"assertion\":false",
        ));
        text.push_str("{\"event\":\"finish\",\"exitstatus\":1}\n");
        text
    }

    fn verdict_of(batch: &BatchVerdicts, node: &str) -> Verdict {
        batch.verdicts[node].clone()
    }

    #[test]
    fn exit_code_1_gives_each_test_its_own_verdict() {
        let batch = classify(&selected(), &process::Outcome::Exited(1), &full_run());
        assert!(!batch.aborted);
        assert_eq!(verdict_of(&batch, SELECTED[0]), Verdict::Passed);
        assert_eq!(
            verdict_of(&batch, SELECTED[1]),
            Verdict::Failed(FailureKind::Assertion)
        );
        assert_eq!(
            verdict_of(&batch, SELECTED[2]),
            Verdict::Failed(FailureKind::Exception("AttributeError".into()))
        );
    }

    #[test]
    fn a_name_error_of_the_test_files_own_code_is_told_apart() {
        let mut text = String::from("{\"event\":\"start\"}\n");
        text.push_str(&test_lines(
            SELECTED[0],
            "\"outcome\":\"failed\",\"exception\":\"NameError\",\"assertion\":false,\
             \"undefined_name_in_test_file\":true",
        ));
        text.push_str(&test_lines(
            SELECTED[1],
            "\"outcome\":\"failed\",\"exception\":\"NameError\",\"assertion\":false",
        ));
        text.push_str("{\"event\":\"finish\",\"exitstatus\":1}\n");
        let batch = classify(&selected(), &process::Outcome::Exited(1), &text);
        let own = verdict_of(&batch, SELECTED[0]);
        assert_eq!(
            own,
            Verdict::Failed(FailureKind::UndefinedNameInTest("NameError".into()))
        );
        assert_eq!(
            verdict_of(&batch, SELECTED[1]),
            Verdict::Failed(FailureKind::Exception("NameError".into()))
        );
        let Verdict::Failed(kind) = own else {
            unreachable!()
        };
        assert_eq!(kind.to_string(), "NameError in the test file's own code");
    }

    #[test]
    fn exit_code_0_passes_and_a_test_without_records_is_unknown() {
        let mut text = String::from("{\"event\":\"start\"}\n");
        text.push_str(&test_lines(SELECTED[0], "\"outcome\":\"passed\""));
        text.push_str("{\"event\":\"finish\",\"exitstatus\":0}\n");
        let batch = classify(&selected(), &process::Outcome::Exited(0), &text);
        assert_eq!(verdict_of(&batch, SELECTED[0]), Verdict::Passed);
        assert_eq!(
            verdict_of(&batch, SELECTED[1]),
            Verdict::Unknown(UnknownReason::MissingRecord)
        );
    }

    /// Pins the paper's worst measurement error: a batch aborted by a collection error once read as
    /// fifteen failures from a commit that touched an unrelated module.
    #[test]
    fn collection_error_aborting_a_batch_yields_no_verdicts() {
        let text = "{\"event\":\"start\"}\n\
            {\"event\":\"collect\",\"node\":\"tests/test_b.py\",\"outcome\":\"failed\",\"longrepr\":\"tests/test_b.py:1: in <module>\\n    from pkg import gone\\nE   ImportError: cannot import name 'gone' from 'pkg'\"}\n\
            {\"event\":\"finish\",\"exitstatus\":2}\n";
        let batch = classify(&selected(), &process::Outcome::Exited(2), text);
        assert!(batch.aborted);
        for node in SELECTED {
            assert_eq!(
                verdict_of(&batch, node),
                Verdict::Unknown(UnknownReason::CollectionError)
            );
        }
        assert_eq!(
            batch.collection_errors,
            vec![CollectionError {
                node: "tests/test_b.py".into(),
                message: "ImportError: cannot import name 'gone' from 'pkg'".into(),
            }]
        );
        assert_eq!(
            batch.collection_errors[0].missing_name().as_deref(),
            Some("gone")
        );
    }

    #[test]
    fn exit_codes_2_to_5_give_no_verdicts_even_with_records() {
        for code in 2..=5 {
            let text = full_run().replace("\"exitstatus\":1", &format!("\"exitstatus\":{code}"));
            let batch = classify(&selected(), &process::Outcome::Exited(code), &text);
            assert!(batch.aborted, "exit code {code}");
            for node in SELECTED {
                assert_eq!(
                    verdict_of(&batch, node),
                    Verdict::Unknown(UnknownReason::ExitCode(code))
                );
            }
        }
        // A conftest.py that fails to import stops pytest (exit 4) before the plugin writes anything.
        let batch = classify(&selected(), &process::Outcome::Exited(4), "");
        assert_eq!(
            verdict_of(&batch, SELECTED[0]),
            Verdict::Unknown(UnknownReason::ExitCode(4))
        );
        assert_eq!(
            UnknownReason::ExitCode(5).to_string(),
            "no tests collected (exit code 5)"
        );
    }

    #[test]
    fn crash_mid_run_with_a_truncated_record_file_gives_no_verdicts() {
        let text = full_run();
        let truncated = &text[..text
            .find("\"phase\":\"call\",\"outcome\":\"failed\"")
            .unwrap()];
        for outcome in [process::Outcome::Signalled(11), process::Outcome::Exited(1)] {
            let batch = classify(&selected(), &outcome, truncated);
            assert!(batch.aborted);
            for node in SELECTED {
                assert!(
                    matches!(
                        verdict_of(&batch, node),
                        Verdict::Unknown(UnknownReason::Crash(_))
                    ),
                    "{outcome:?} {node}"
                );
            }
        }
    }

    #[test]
    fn timeout_gives_no_verdicts() {
        let batch = classify(&selected(), &process::Outcome::TimedOut, &full_run());
        assert!(batch.aborted);
        assert_eq!(
            verdict_of(&batch, SELECTED[0]),
            Verdict::Unknown(UnknownReason::Timeout)
        );
        assert_eq!(
            verdict_of(&batch, SELECTED[0])
                .run_record(4)
                .detail
                .as_deref(),
            Some("timeout")
        );
    }

    /// The records of one test with sub-test records between its setup and teardown.
    fn with_subtests(node: &str, calls: &[&str]) -> String {
        let mut text = format!(
            "{{\"event\":\"test\",\"node\":\"{node}\",\"phase\":\"setup\",\"outcome\":\"passed\"}}\n"
        );
        for call in calls {
            text.push_str(&format!(
                "{{\"event\":\"test\",\"node\":\"{node}\",\"phase\":\"call\",{call}}}\n"
            ));
        }
        text.push_str(&format!(
            "{{\"event\":\"test\",\"node\":\"{node}\",\"phase\":\"teardown\",\"outcome\":\"passed\"}}\n\
             {{\"event\":\"finish\",\"exitstatus\":1}}\n"
        ));
        text
    }

    #[test]
    fn subtest_failures_are_grouped_under_their_test_and_named() {
        let node = SELECTED[0];
        // pytest-subtests: one record per sub-test, then the test's own passing call.
        let text = with_subtests(
            node,
            &[
                "\"outcome\":\"passed\",\"subtest\":\"(x=1)\"",
                "\"outcome\":\"failed\",\"subtest\":\"(x=2)\",\"exception\":\"AssertionError\",\"assertion\":true",
                "\"outcome\":\"failed\",\"subtest\":\"[big] (x=3)\",\"exception\":\"KeyError\",\"assertion\":false",
                "\"outcome\":\"passed\"",
            ],
        );
        let batch = classify(&[node.to_string()], &process::Outcome::Exited(1), &text);
        assert_eq!(batch.verdicts.len(), 1);
        let verdict = verdict_of(&batch, node);
        assert_eq!(
            verdict,
            Verdict::Failed(FailureKind::SubTests {
                failure: Box::new(FailureKind::Assertion),
                subtests: vec!["(x=2)".into(), "[big] (x=3)".into()],
            })
        );
        assert_eq!(
            verdict.run_record(0).detail.as_deref(),
            Some("assertion in sub-tests (x=2); [big] (x=3)")
        );
        // Plain pytest: the first failing sub-test ends the test; the plugin names it on the call.
        let text = with_subtests(
            node,
            &[
                "\"outcome\":\"failed\",\"subtest\":\"(x=2)\",\"exception\":\"ValueError\",\"assertion\":false",
            ],
        );
        let batch = classify(&[node.to_string()], &process::Outcome::Exited(1), &text);
        assert_eq!(
            verdict_of(&batch, node).run_record(0).detail.as_deref(),
            Some("ValueError in sub-test (x=2)")
        );
    }

    #[test]
    fn a_skipped_subtest_leaves_its_test_to_the_others() {
        let node = SELECTED[0];
        let text = with_subtests(
            node,
            &[
                "\"outcome\":\"skipped\",\"subtest\":\"(x=1)\"",
                "\"outcome\":\"passed\",\"subtest\":\"(x=2)\"",
                "\"outcome\":\"passed\"",
            ],
        );
        let batch = classify(&[node.to_string()], &process::Outcome::Exited(0), &text);
        assert_eq!(verdict_of(&batch, node), Verdict::Passed);
        // Sub-test records alone are not the test's record.
        let text = with_subtests(node, &["\"outcome\":\"passed\",\"subtest\":\"(x=2)\""]);
        let batch = classify(&[node.to_string()], &process::Outcome::Exited(0), &text);
        assert_eq!(
            verdict_of(&batch, node),
            Verdict::Unknown(UnknownReason::MissingRecord)
        );
    }

    #[test]
    fn setup_errors_and_skips_are_told_apart() {
        let node = SELECTED[0];
        let setup_error = format!(
            "{{\"event\":\"test\",\"node\":\"{node}\",\"phase\":\"setup\",\"outcome\":\"failed\",\"exception\":\"KeyError\"}}\n\
             {{\"event\":\"test\",\"node\":\"{node}\",\"phase\":\"teardown\",\"outcome\":\"passed\"}}\n\
             {{\"event\":\"finish\",\"exitstatus\":1}}\n"
        );
        let batch = classify(
            &[node.to_string()],
            &process::Outcome::Exited(1),
            &setup_error,
        );
        assert_eq!(
            verdict_of(&batch, node),
            Verdict::Failed(FailureKind::SetupError("KeyError".into()))
        );
        let skipped = setup_error
            .replace(
                "\"outcome\":\"failed\",\"exception\":\"KeyError\"",
                "\"outcome\":\"skipped\"",
            )
            .replace("\"exitstatus\":1", "\"exitstatus\":0");
        let batch = classify(&[node.to_string()], &process::Outcome::Exited(0), &skipped);
        assert_eq!(
            verdict_of(&batch, node),
            Verdict::Unknown(UnknownReason::Skipped)
        );
    }

    #[test]
    fn missing_names_are_read_from_python_2_and_3_messages() {
        assert_eq!(
            missing_name("ModuleNotFoundError: No module named 'pkg.old'").as_deref(),
            Some("pkg.old")
        );
        assert_eq!(
            missing_name("ImportError: cannot import name helper").as_deref(),
            Some("helper")
        );
        assert_eq!(
            missing_name("AttributeError: module 'pkg' has no attribute 'gone'").as_deref(),
            Some("gone")
        );
        assert_eq!(missing_name("SyntaxError: invalid syntax"), None);
    }

    #[test]
    fn every_unknown_reason_is_named_back_from_its_detail() {
        let reasons = [
            UnknownReason::CollectionError,
            UnknownReason::ExitCode(2),
            UnknownReason::ExitCode(3),
            UnknownReason::ExitCode(4),
            UnknownReason::ExitCode(5),
            UnknownReason::ExitCode(-7),
            UnknownReason::Timeout,
            UnknownReason::Crash("signal 9".into()),
            UnknownReason::MissingRecord,
            UnknownReason::Skipped,
        ];
        for reason in reasons {
            assert_eq!(
                UnknownReason::name_of_detail(&reason.to_string()),
                reason.name(),
                "{reason}"
            );
        }
        assert_eq!(
            UnknownReason::name_of_detail("collection error: ImportError: x"),
            "collection_error"
        );
        assert_eq!(UnknownReason::name_of_detail("something else"), "other");
    }
}
