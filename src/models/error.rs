//! Why a model call failed, and what class of failure it is.
//!
//! No message here ever holds the key: server text is passed through [`ApiKey::redact`] before it
//! is kept, and the key is never formatted into anything else.
//!
//! [`ApiKey::redact`]: super::ApiKey::redact

/// How the caller should treat a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The user's setup is wrong (a missing key, a rejected key): exit 2, nothing retried.
    Input,
    /// The transport kept failing after every retry: worth running again later.
    Transient,
    /// The call cannot succeed as it stands (a refused request, an unreadable answer body).
    Failure,
    /// The message would have shown the model a test file: a broken invariant, nothing sent.
    Leak,
}

/// A failed model call; the message names the model entry.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The entry names a key variable that is not set.
    #[error(
        "model `{model}`: the variable `{variable}` named by `api_key_env` is not set; export the \
         key in it"
    )]
    MissingKey { model: String, variable: String },
    /// The server rejected the key.
    #[error(
        "model `{model}`: the server rejected the key ({status}): {body}; check the variable \
         named by `api_key_env`"
    )]
    Unauthorized {
        model: String,
        status: u16,
        body: String,
    },
    /// Every attempt hit a transport fault.
    #[error("model `{model}`: gave up after {attempts} attempts: {last}")]
    Exhausted {
        model: String,
        attempts: u32,
        last: String,
    },
    /// The server asked to wait longer than claimflow waits.
    #[error("model `{model}`: the server asks to wait {seconds} s before retrying")]
    WaitTooLong { model: String, seconds: u64 },
    /// The server refused the request itself (400, 404, 422, …).
    #[error("model `{model}`: the server refused the request ({status}): {body}")]
    Refused {
        model: String,
        status: u16,
        body: String,
    },
    /// The answer body is not what the wire format promises.
    #[error("model `{model}`: unreadable answer body: {reason}")]
    Malformed { model: String, reason: String },
    /// The message would show the model a test file; it was not sent.
    #[error("model `{model}`: refused to send a message showing a test file: {problem}")]
    Leak { model: String, problem: String },
    /// The HTTP client could not be built.
    #[error("model `{model}`: build the HTTP client: {reason}")]
    Client { model: String, reason: String },
}

impl ModelError {
    /// The failure's class.
    pub fn class(&self) -> ErrorClass {
        match self {
            ModelError::MissingKey { .. } | ModelError::Unauthorized { .. } => ErrorClass::Input,
            ModelError::Exhausted { .. } | ModelError::WaitTooLong { .. } => ErrorClass::Transient,
            ModelError::Leak { .. } => ErrorClass::Leak,
            ModelError::Refused { .. }
            | ModelError::Malformed { .. }
            | ModelError::Client { .. } => ErrorClass::Failure,
        }
    }
}
