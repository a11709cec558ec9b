//! The async client of one `models:` entry: it sends a [`ChatRequest`] in the entry's wire format,
//! within its limits, retrying transport faults, and returns the answer text with its usage.
//!
//! The key is read once from the variable the entry names and goes into the auth header of each
//! request, marked sensitive; every text a server sends back is redacted before it is kept.

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderValue;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::error::ModelError;
use super::limits::Limits;
use super::request::ChatRequest;
use super::retry::{Backoff, MAX_RETRY_AFTER, retry_after, retryable_status};
use super::secret::ApiKey;
use super::usage::Usage;
use super::wire::{self, WireRequest};
use crate::pipeline::ModelSpec;

/// Characters of a server's error body kept in a message.
const BODY_EXCERPT: usize = 400;

/// A finished call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// The model's answer, verbatim.
    pub text: String,
    pub usage: Usage,
    /// Why the model stopped, as the API says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
    /// Attempts it took (1 without a retry).
    pub attempts: u32,
}

/// The client of one model entry; cheap to share behind an `Arc`.
#[derive(Debug, Clone)]
pub struct ModelClient {
    name: String,
    spec: ModelSpec,
    base_url: String,
    key: Option<ApiKey>,
    http: reqwest::Client,
    limits: Arc<Limits>,
    backoff: Backoff,
}

/// One attempt's outcome short of success.
enum Attempt {
    /// A transport fault: worth another try after `after` (when the server said).
    Retry {
        reason: String,
        after: Option<Duration>,
    },
    Fail(ModelError),
}

impl ModelClient {
    /// The client of entry `name`, at `base_url` when given (a started local server), else the
    /// entry's or the provider's address; the key comes from the variable the entry names.
    pub fn from_spec(
        name: &str,
        spec: &ModelSpec,
        base_url: Option<&str>,
    ) -> Result<Self, ModelError> {
        let key = match &spec.api_key_env {
            Some(variable) => {
                Some(
                    ApiKey::from_env(variable).ok_or_else(|| ModelError::MissingKey {
                        model: name.to_string(),
                        variable: variable.clone(),
                    })?,
                )
            }
            None => None,
        };
        let base_url = base_url
            .map(str::to_string)
            .or_else(|| spec.base_url.clone())
            .or_else(|| spec.provider.default_base_url().map(str::to_string))
            .ok_or_else(|| ModelError::Client {
                model: name.to_string(),
                reason: format!(
                    "provider `{}` has no default address and none was given",
                    spec.provider
                ),
            })?;
        Self::new(name, spec, &base_url, key)
    }

    /// A client with an explicit address and key.
    pub fn new(
        name: &str,
        spec: &ModelSpec,
        base_url: &str,
        key: Option<ApiKey>,
    ) -> Result<Self, ModelError> {
        let mut builder = reqwest::Client::builder()
            .pool_max_idle_per_host(spec.concurrency)
            .connect_timeout(Duration::from_secs_f64(spec.timeout.min(30.0)));
        if is_loopback(base_url) {
            // A proxy from the environment must not swallow a local server's traffic.
            builder = builder.no_proxy();
        }
        let http = builder.build().map_err(|error| ModelError::Client {
            model: name.to_string(),
            reason: error.to_string(),
        })?;
        Ok(ModelClient {
            name: name.to_string(),
            spec: spec.clone(),
            base_url: base_url.trim_end_matches('/').to_string(),
            key,
            http,
            limits: Arc::new(Limits::new(
                spec.concurrency,
                spec.requests_per_minute,
                spec.tokens_per_minute,
            )),
            backoff: Backoff::default(),
        })
    }

    /// The same client with another backoff (tests shorten it).
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// The entry's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The entry.
    pub fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    /// The address requests go to.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The request `request` becomes on the wire (for snapshots and `explain`).
    pub fn wire_request(&self, request: &ChatRequest) -> WireRequest {
        wire::build(&self.spec, &self.base_url, request)
    }

    /// Sends `request` and returns the answer, retrying transport faults up to the entry's
    /// `retries`. Dropping the future abandons the request.
    pub async fn complete(&self, request: &ChatRequest) -> Result<Completion, ModelError> {
        let outgoing = self.wire_request(request);
        let tokens = request.estimated_prompt_tokens() + u64::from(self.spec.max_output_tokens);
        let _slot = self.limits.slot().await;
        let mut retry = 0;
        loop {
            self.limits.admit(tokens).await;
            match self.attempt(&outgoing).await {
                Ok((answer, latency)) => {
                    return Ok(Completion {
                        text: answer.text,
                        usage: Usage {
                            tokens_in: answer.tokens_in,
                            tokens_out: answer.tokens_out,
                            latency_ms: u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
                        },
                        stop: answer.stop,
                        attempts: retry + 1,
                    });
                }
                Err(Attempt::Fail(error)) => return Err(error),
                Err(Attempt::Retry { reason, .. }) if retry >= self.spec.retries => {
                    return Err(ModelError::Exhausted {
                        model: self.name.clone(),
                        attempts: retry + 1,
                        last: reason,
                    });
                }
                Err(Attempt::Retry { after, .. }) => {
                    if let Some(after) = after.filter(|after| *after > MAX_RETRY_AFTER) {
                        return Err(ModelError::WaitTooLong {
                            model: self.name.clone(),
                            seconds: after.as_secs(),
                        });
                    }
                    tokio::time::sleep(self.backoff.delay(retry, after)).await;
                    retry += 1;
                }
            }
        }
    }

    async fn attempt(
        &self,
        outgoing: &WireRequest,
    ) -> Result<(wire::WireAnswer, Duration), Attempt> {
        let wire = self.spec.provider.wire();
        let mut builder = self
            .http
            .post(&outgoing.url)
            .timeout(Duration::from_secs_f64(self.spec.timeout))
            .json(&outgoing.body);
        for (name, value) in wire::fixed_headers(wire) {
            builder = builder.header(name, value);
        }
        if let Some(key) = &self.key {
            for (name, value) in wire::auth_headers(wire, key) {
                let mut value = HeaderValue::from_str(&value).map_err(|_| {
                    Attempt::Fail(ModelError::Client {
                        model: self.name.clone(),
                        reason: "the key holds characters a header cannot carry".to_string(),
                    })
                })?;
                value.set_sensitive(true);
                builder = builder.header(name, value);
            }
        }
        let started = Instant::now();
        let response = builder.send().await.map_err(|error| Attempt::Retry {
            reason: self.describe(&error),
            after: None,
        })?;
        let status = response.status();
        let after = retry_after(response.headers());
        let bytes = response.bytes().await.map_err(|error| Attempt::Retry {
            reason: self.describe(&error),
            after: None,
        })?;
        let latency = started.elapsed();
        let body = self.redact(&String::from_utf8_lossy(&bytes));
        if status.is_success() {
            let json: serde_json::Value = serde_json::from_str(&body).map_err(|error| {
                Attempt::Fail(ModelError::Malformed {
                    model: self.name.clone(),
                    reason: format!("not JSON ({error}): {}", excerpt(&body)),
                })
            })?;
            let answer = wire::parse(wire, &json).map_err(|reason| {
                Attempt::Fail(ModelError::Malformed {
                    model: self.name.clone(),
                    reason: format!("{reason}: {}", excerpt(&body)),
                })
            })?;
            return Ok((answer, latency));
        }
        if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
            return Err(Attempt::Fail(ModelError::Unauthorized {
                model: self.name.clone(),
                status: status.as_u16(),
                body: excerpt(&body),
            }));
        }
        if retryable_status(status) {
            return Err(Attempt::Retry {
                reason: format!("status {}: {}", status.as_u16(), excerpt(&body)),
                after,
            });
        }
        Err(Attempt::Fail(ModelError::Refused {
            model: self.name.clone(),
            status: status.as_u16(),
            body: excerpt(&body),
        }))
    }

    /// A transport error as a message, its causes included, the key redacted.
    fn describe(&self, error: &reqwest::Error) -> String {
        if error.is_timeout() {
            return format!("no answer within {} s", self.spec.timeout);
        }
        let mut text = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        self.redact(&text)
    }

    fn redact(&self, text: &str) -> String {
        match &self.key {
            Some(key) => key.redact(text),
            None => text.to_string(),
        }
    }
}

/// The first characters of a body, on one line.
fn excerpt(body: &str) -> String {
    let flat: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= BODY_EXCERPT {
        return flat;
    }
    let cut: String = flat.chars().take(BODY_EXCERPT).collect();
    format!("{cut}…")
}

/// True for an address on this machine.
fn is_loopback(base_url: &str) -> bool {
    let rest = base_url
        .split_once("://")
        .map_or(base_url, |(_, rest)| rest);
    let host = rest.split(['/', ':']).next().unwrap_or("");
    matches!(host, "localhost" | "127.0.0.1" | "[") || rest.starts_with("[::1]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_addresses_are_recognised() {
        assert!(is_loopback("http://127.0.0.1:8080/v1"));
        assert!(is_loopback("http://localhost/v1"));
        assert!(is_loopback("http://[::1]:9000"));
        assert!(!is_loopback("https://api.openai.com/v1"));
    }

    #[test]
    fn excerpts_are_one_bounded_line() {
        let long = "word\n".repeat(500);
        let cut = excerpt(&long);
        assert!(!cut.contains('\n'));
        assert!(cut.chars().count() <= BODY_EXCERPT + 1);
    }
}
