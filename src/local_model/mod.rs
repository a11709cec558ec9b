//! The embedded local model: what the model arms run on when no API key is set. claimflow
//! provisions llama.cpp's `llama-server` and the SmolLM2-135M-Instruct model once per machine
//! ([`provision`]), then each run starts a server on a loopback port ([`LocalServer`]) and talks to
//! it as to any OpenAI-compatible provider. The model is tiny: it proves the path, not the paper.

mod commands;
pub mod embedded;
mod provision;
mod server;

pub use embedded::{EmbeddedError, LocalModel};
pub use provision::{
    LLAMA_CPP_PROJECT, LLAMA_CPP_SOURCE_BLAKE3, LLAMA_CPP_VERSION, MODEL_BLAKE3, MODEL_FILE,
    MODEL_ID, MODEL_PROJECT, MODEL_VERSION, ProvisionError, Provisioned, models_dir,
    pinned_fingerprint, provision,
};
pub use server::{LocalServer, ServerError, ServerOptions, TRAINED_CONTEXT};
