//! Statistics over the oracle's labels and the arms' predictions, and the report built from them.
