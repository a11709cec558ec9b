//! The language models the model arms ask: providers and their wire formats, the async client with
//! its limits and transport retries, the arms' questions and user messages, the guard that keeps
//! test files out of every message, and the reader that turns an answer into a verdict.
//!
//! Nothing here knows about steps or the cache: a step builds a [`ChatRequest`] from a question and
//! a claim, checks it with [`guard`], sends it with a [`ModelClient`] and reads the answer with
//! [`answer::read`].

pub mod answer;
pub mod ask;
pub mod client;
pub mod error;
pub mod guard;
pub mod limits;
pub mod question;
pub mod request;
pub mod retry;
pub mod secret;
pub mod usage;
pub mod wire;

pub use answer::{Reading, read};
pub use ask::{Answered, ask, question_request, render_request};
pub use client::{Completion, ModelClient};
pub use error::{ErrorClass, ModelError};
pub use question::Question;
pub use request::{AnswerFormat, ChatRequest};
pub use retry::Backoff;
pub use secret::ApiKey;
pub use usage::{Totals, Usage};
