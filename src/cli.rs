//! The command line: clap definitions (doc comments are the help text) and the verbs they run.
