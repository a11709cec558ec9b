//! The arms: strategies that predict, per claim, whether a commit made it false.
