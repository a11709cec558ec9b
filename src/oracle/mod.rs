//! The execution oracle: runs each claim N times at the parent and, with the parent's test files
//! restored, N times at the child, and labels it flipped, held or discarded.
