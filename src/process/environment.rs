//! The one way a child's environment is built. It starts scrubbed: nothing of claimflow's own
//! environment but `PATH` and `HOME`, and the `C.UTF-8` locale. Each use then adds, by name, what
//! it needs — the package index and proxy settings for pip and uv, a compiler for a build, a
//! cluster's own variables for a Slurm job, what a `command` step's `env:` names — or sets values
//! of its own (a test process's private `HOME`). A variable nobody named never reaches a child, so
//! an API key in the user's shell stays with claimflow, and the uses cannot drift apart: the
//! groups below are the one list of what each kind of child may see.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::Command;

/// How pip and uv reach a package index: a mirror, extra indexes, a certificate bundle, a proxy.
pub const PACKAGE_INDEX: &[&str] = &[
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "PIP_CERT",
    "PIP_TRUSTED_HOST",
    "PIP_DEFAULT_TIMEOUT",
    "UV_INDEX_URL",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// The variables by which pip and uv would look beyond the one index they are given: a mirror,
/// extra indexes, directories of files.
const OTHER_INDEXES: &[&str] = &[
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "UV_INDEX_URL",
    "UV_EXTRA_INDEX_URL",
    "UV_FIND_LINKS",
];

/// What a build of native code reads: the compilers and where temporary files go.
pub const BUILD: &[&str] = &["CC", "CXX", "TMPDIR"];

/// What a Slurm job needs of the submitting shell beyond the package index: who runs it, where the
/// interpreters and `uv` are, which cluster configuration applies.
pub const CLUSTER: &[&str] = &[
    "USER",
    "LOGNAME",
    "PYENV_ROOT",
    "CLAIMFLOW_UV",
    "SLURM_CONF",
];

/// Reads one variable of claimflow's own environment.
type Lookup = fn(&OsStr) -> Option<OsString>;

/// A child's environment under construction: variables by name, applied to a command with
/// everything else cleared.
#[derive(Debug, Clone)]
pub struct ChildEnvironment {
    variables: BTreeMap<OsString, OsString>,
    parent: Lookup,
}

impl ChildEnvironment {
    /// `PATH` and `HOME` as claimflow has them, `LANG` and `LC_ALL` set to `C.UTF-8`, nothing else.
    pub fn scrubbed() -> Self {
        Self::scrubbed_over(|name| std::env::var_os(name))
    }

    /// [`ChildEnvironment::scrubbed`] over a parent environment of the caller's (for tests).
    pub fn scrubbed_over(parent: Lookup) -> Self {
        ChildEnvironment {
            variables: BTreeMap::new(),
            parent,
        }
        .pass_exact(["PATH", "HOME"])
        .set("LANG", "C.UTF-8")
        .set("LC_ALL", "C.UTF-8")
    }

    /// Passes each of `group`'s variables that claimflow's environment sets, in its upper-case
    /// spelling and its lower-case one (`https_proxy` is as common as `HTTPS_PROXY`).
    pub fn pass(self, group: &[&str]) -> Self {
        let spellings: Vec<String> = group
            .iter()
            .flat_map(|name| [name.to_string(), name.to_ascii_lowercase()])
            .collect();
        self.pass_exact(spellings.iter().map(String::as_str))
    }

    /// Passes the variables named, spelled exactly so, that claimflow's environment sets.
    pub fn pass_exact<'a>(mut self, names: impl IntoIterator<Item = &'a str>) -> Self {
        for name in names {
            if let Some(value) = (self.parent)(OsStr::new(name)) {
                self.variables.insert(name.into(), value);
            }
        }
        self
    }

    /// Sets `name` to `value`, whatever was passed for it.
    pub fn set(mut self, name: &str, value: impl AsRef<OsStr>) -> Self {
        self.variables
            .insert(name.into(), value.as_ref().to_os_string());
        self
    }

    /// Takes `name` out, whatever passed or set it.
    pub fn remove(mut self, name: &str) -> Self {
        self.variables.remove(OsStr::new(name));
        self
    }

    /// Puts `directory` first on `PATH` (before what passed, else `/usr/bin:/bin`).
    pub fn path_first(mut self, directory: &Path) -> Self {
        let mut path = directory.as_os_str().to_os_string();
        path.push(":");
        path.push(
            self.variables
                .get(OsStr::new("PATH"))
                .map_or(OsStr::new("/usr/bin:/bin"), OsString::as_os_str),
        );
        self.variables.insert("PATH".into(), path);
        self
    }

    /// Python writes no bytecode and reads no user site: what it runs is the environment alone.
    pub fn python_quiet(self) -> Self {
        self.set("PYTHONDONTWRITEBYTECODE", "1")
            .set("PYTHONNOUSERSITE", "1")
    }

    /// An installer (pip, uv, venv creation): the package index and build settings passed, no
    /// prompts or version checks, uv never downloading an interpreter of its own, and the caches
    /// under `pip_cache` (uv's beside it) when given.
    pub fn installer(self, pip_cache: Option<&Path>) -> Self {
        let environment = self
            .pass(PACKAGE_INDEX)
            .pass(BUILD)
            .python_quiet()
            .set("PIP_DISABLE_PIP_VERSION_CHECK", "1")
            .set("PIP_NO_WARN_SCRIPT_LOCATION", "1")
            .set("PIP_NO_INPUT", "1")
            .set("UV_PYTHON_DOWNLOADS", "never");
        match pip_cache {
            Some(cache) => environment
                .set("PIP_CACHE_DIR", cache)
                .set("UV_CACHE_DIR", cache.with_file_name("uv")),
            None => environment,
        }
    }

    /// An installer kept to the one index at `url` (a dated index on the loopback): the mirror,
    /// extra indexes and find-links directories claimflow's environment names are left out, pip
    /// reads no configuration file (`os.devnull`: from pip 10 on, not even the global one), and
    /// the loopback is reached without a proxy. pip 18 and 19 still read the global file; the
    /// builder checks what pip says it looks in.
    pub fn only_index(mut self, url: &str) -> Self {
        for name in OTHER_INDEXES {
            self = self.remove(name).remove(&name.to_ascii_lowercase());
        }
        let mut environment = self
            .set("PIP_INDEX_URL", url)
            .set("UV_INDEX_URL", url)
            .set("PIP_CONFIG_FILE", "/dev/null");
        for name in ["NO_PROXY", "no_proxy"] {
            let bypass = match environment.variables.get(OsStr::new(name)) {
                Some(list) if !list.is_empty() => {
                    let mut list = list.clone();
                    list.push(",127.0.0.1");
                    list
                }
                _ => OsString::from("127.0.0.1"),
            };
            environment = environment.set(name, bypass);
        }
        environment
    }

    /// The variables, sorted by name.
    pub fn variables(&self) -> impl Iterator<Item = (&OsStr, &OsStr)> {
        self.variables
            .iter()
            .map(|(name, value)| (name.as_os_str(), value.as_os_str()))
    }

    /// Gives `command` exactly these variables: its inherited environment is cleared first.
    pub fn apply(&self, command: &mut Command) {
        command.env_clear().envs(self.variables());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent(name: &OsStr) -> Option<OsString> {
        let value = match name.to_str()? {
            "PATH" => "/usr/bin:/bin",
            "HOME" => "/home/user",
            "LANG" => "de_DE.UTF-8",
            "OPENAI_API_KEY" => "sk-fake",
            "https_proxy" => "http://proxy:3128",
            "PIP_INDEX_URL" => "https://mirror/simple",
            "CC" => "clang",
            "SLURM_CONF" => "/etc/slurm.conf",
            _ => return None,
        };
        Some(value.into())
    }

    fn names(environment: &ChildEnvironment) -> Vec<String> {
        environment
            .variables()
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect()
    }

    fn value(environment: &ChildEnvironment, wanted: &str) -> Option<String> {
        environment
            .variables()
            .find(|(name, _)| *name == wanted)
            .map(|(_, value)| value.to_string_lossy().into_owned())
    }

    #[test]
    fn the_scrubbed_default_is_path_home_and_the_locale() {
        let scrubbed = ChildEnvironment::scrubbed_over(parent);
        assert_eq!(names(&scrubbed), ["HOME", "LANG", "LC_ALL", "PATH"]);
        assert_eq!(value(&scrubbed, "LANG").as_deref(), Some("C.UTF-8"));
        let mut command = Command::new("true");
        command.env("OPENAI_API_KEY", "sk-fake");
        scrubbed.apply(&mut command);
        let applied: Vec<_> = command.get_envs().map(|(name, _)| name).collect();
        assert_eq!(applied, ["HOME", "LANG", "LC_ALL", "PATH"]);
    }

    #[test]
    fn each_use_gets_its_own_group_and_no_key() {
        let installer =
            ChildEnvironment::scrubbed_over(parent).installer(Some(Path::new("/cache/pip")));
        assert_eq!(
            value(&installer, "https_proxy").as_deref(),
            Some("http://proxy:3128")
        );
        assert_eq!(value(&installer, "CC").as_deref(), Some("clang"));
        assert_eq!(
            value(&installer, "UV_CACHE_DIR").as_deref(),
            Some("/cache/uv")
        );
        assert_eq!(value(&installer, "SLURM_CONF"), None, "not a cluster's job");
        let job = ChildEnvironment::scrubbed_over(parent)
            .pass(PACKAGE_INDEX)
            .pass(CLUSTER);
        assert_eq!(
            value(&job, "SLURM_CONF").as_deref(),
            Some("/etc/slurm.conf")
        );
        assert_eq!(value(&job, "CC"), None, "a node's compiler is its own");
        for environment in [&installer, &job] {
            assert_eq!(value(environment, "OPENAI_API_KEY"), None);
        }
        let named = ChildEnvironment::scrubbed_over(parent)
            .pass_exact(["OPENAI_API_KEY", "UNSET"])
            .remove("OPENAI_API_KEY");
        assert_eq!(names(&named), ["HOME", "LANG", "LC_ALL", "PATH"]);
    }

    #[test]
    fn an_installer_kept_to_one_index_sees_no_other() {
        fn parent_with_indexes(name: &OsStr) -> Option<OsString> {
            let value = match name.to_str()? {
                "PIP_FIND_LINKS" => "/opt/wheels",
                "pip_extra_index_url" => "https://extra/simple",
                "UV_INDEX_URL" => "https://mirror/simple",
                "NO_PROXY" => "localhost",
                other => return parent(OsStr::new(other)),
            };
            Some(value.into())
        }
        let dated = "http://127.0.0.1:4000/20160101T000000Z/simple/";
        let installer = ChildEnvironment::scrubbed_over(parent_with_indexes)
            .installer(None)
            .only_index(dated);
        for name in ["PIP_FIND_LINKS", "pip_extra_index_url"] {
            assert_eq!(value(&installer, name), None, "{name}");
        }
        assert_eq!(value(&installer, "PIP_INDEX_URL").as_deref(), Some(dated));
        assert_eq!(value(&installer, "UV_INDEX_URL").as_deref(), Some(dated));
        assert_eq!(
            value(&installer, "PIP_CONFIG_FILE").as_deref(),
            Some("/dev/null")
        );
        assert_eq!(
            value(&installer, "NO_PROXY").as_deref(),
            Some("localhost,127.0.0.1")
        );
        assert_eq!(value(&installer, "no_proxy").as_deref(), Some("127.0.0.1"));
        // The proxy itself still reaches the installer, for the files on the upstream.
        assert_eq!(
            value(&installer, "https_proxy").as_deref(),
            Some("http://proxy:3128")
        );
    }

    #[test]
    fn a_directory_goes_first_on_the_path() {
        let environment =
            ChildEnvironment::scrubbed_over(parent).path_first(Path::new("/venv/bin"));
        assert_eq!(
            value(&environment, "PATH").as_deref(),
            Some("/venv/bin:/usr/bin:/bin")
        );
        let bare = ChildEnvironment::scrubbed_over(|_| None).path_first(Path::new("/venv/bin"));
        assert_eq!(
            value(&bare, "PATH").as_deref(),
            Some("/venv/bin:/usr/bin:/bin")
        );
    }
}
