//! The local model a run starts itself: a `models:` entry `{provider: llama-server}` with no
//! `base_url` is served by one `llama-server` per process, started on the first call that is not
//! in the cache (provisioning the model first if this machine has not), shared by every step and
//! every entry that uses it, and stopped when the run that started it ends (a [`LocalModel`] is
//! held by the run's session; and on Ctrl-C or SIGTERM, with every process group claimflow
//! started). A run whose calls are all cached starts no server at all.
//!
//! The server's address never enters a key: a call's key names the pinned model
//! ([`super::pinned_fingerprint`]), and the server is refused if what was provisioned is not it.

use std::path::Path;
use std::sync::Mutex;

use super::provision::{ProvisionError, Provisioned, models_dir, provision};
use super::server::{LocalServer, ServerError, ServerOptions};

/// The local model of one run: its server once a call has started it, stopped when the run
/// ends (it is held by the run's session, and dropping the server kills its process group).
#[derive(Default)]
pub struct LocalModel {
    server: Mutex<Option<LocalServer>>,
}

/// Why the local model could not be made ready.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    #[error("provision the local model: {0}")]
    Provision(#[from] ProvisionError),
    #[error(transparent)]
    Server(#[from] ServerError),
    /// What is provisioned is not the model a call's key names.
    #[error(
        "the local model under {models} is not the pinned one (model {found}); remove that \
         directory and run `claimflow models provision` again"
    )]
    NotPinned { models: String, found: String },
}

impl LocalModel {
    /// True while this run's server runs (tests ask).
    pub fn is_running(&self) -> bool {
        self.server()
            .as_mut()
            .is_some_and(|server| server.is_running())
    }

    fn server(&self) -> std::sync::MutexGuard<'_, Option<LocalServer>> {
        self.server
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The base URL of the embedded server, started now if it is not running: provisioned first when
    /// this machine has no local model (minutes, once), its output in `log`. `say` gets one line per
    /// thing the user should know (provisioning, the server's address). Blocking; callers wait for the
    /// one start in progress.
    pub fn base_url(&self, log: &Path, say: &dyn Fn(&str)) -> Result<String, EmbeddedError> {
        let mut shared = self.server();
        if let Some(server) = shared.as_mut() {
            if server.is_running() {
                return Ok(server.base_url());
            }
            say(&format!(
                "the local model's server stopped on its own (its log: {}); starting it again",
                server.log().display()
            ));
            *shared = None;
        }
        let models = models_dir();
        let provisioned = match Provisioned::load(&models)? {
            Some(provisioned) => provisioned,
            None => {
                say(
                    "the local model is not provisioned on this machine: provisioning it now, once \
                 (building llama-server takes about 6 to 10 minutes on 2 cores)",
                );
                provision(&models, say)?
            }
        };
        if !provisioned.is_pinned() {
            return Err(EmbeddedError::NotPinned {
                models: models.display().to_string(),
                found: provisioned.model_digest.to_string(),
            });
        }
        if let Some(directory) = log.parent() {
            std::fs::create_dir_all(directory).map_err(|source| ServerError::Io {
                context: format!("create {}", directory.display()),
                source,
            })?;
        }
        say(&format!(
            "starting the local model ({}, llama.cpp {})",
            provisioned.model_id(),
            provisioned.llama_cpp
        ));
        let options = ServerOptions {
            log: Some(log.to_path_buf()),
            ..ServerOptions::default()
        };
        let server = LocalServer::start(&provisioned, &options)?;
        let url = server.base_url();
        say(&format!(
            "the local model answers at {url} (log: {})",
            log.display()
        ));
        *shared = Some(server);
        Ok(url)
    }
}
