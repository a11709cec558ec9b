//! The Python side: interpreters, per-repository virtual environments, and the pytest plugin the
//! crate writes out at run time to ask pytest what only pytest knows.
