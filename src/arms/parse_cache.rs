//! Parsed Python files shared by every claim judged in this process, keyed by git blob id and path.
//!
//! The claims of one commit read the same test module, the same touched source files and the same
//! repository modules; parsing them once per claim made the anchoring arms spend most of their time
//! in the parser. A blob id names the content exactly, so a hit can never be stale; the path is part
//! of the key because relative imports resolve against it. The cache is bounded by emptying it
//! when full, which costs only re-parsing.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use super::source::{RepoFiles, SourceError};
use crate::syntax::python::{ParseFailure, ParsedModule};

/// Files kept before the cache is emptied.
const CAPACITY: usize = 1024;

type Parsed = Result<Arc<ParsedModule>, ParseFailure>;

fn cache() -> &'static Mutex<BTreeMap<(String, String), Parsed>> {
    static CACHE: OnceLock<Mutex<BTreeMap<(String, String), Parsed>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(BTreeMap::new()))
}

/// The file at `path` in `files`, parsed: `None` when the commit has no such file.
pub fn parse_at(files: &RepoFiles, path: &str) -> Result<Option<Parsed>, SourceError> {
    let Some(blob) = files.blob_id(path) else {
        return Ok(None);
    };
    let key = (blob.to_string(), path.to_string());
    if let Some(parsed) = cache().lock().expect("parse cache lock").get(&key) {
        return Ok(Some(parsed.clone()));
    }
    let Some(text) = files.read(path)? else {
        return Ok(None);
    };
    // Parse outside the lock: other threads judge other claims meanwhile.
    let parsed = ParsedModule::parse(path, &text).map(Arc::new);
    let mut cache = cache().lock().expect("parse cache lock");
    if cache.len() >= CAPACITY {
        cache.clear();
    }
    cache.insert(key, parsed.clone());
    Ok(Some(parsed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arms::test_repository::two_commits;

    #[test]
    fn the_same_blob_at_the_same_path_is_parsed_once() {
        let fixture = two_commits(
            &[("pkg/a.py", "X = 1\n"), ("pkg/b.py", "X = 1\n")],
            &[("pkg/a.py", Some("X = 2\n"))],
        );
        let parent = RepoFiles::at(&fixture.repository, &fixture.parent).unwrap();
        let child = RepoFiles::at(&fixture.repository, &fixture.child).unwrap();
        let first = parse_at(&parent, "pkg/b.py").unwrap().unwrap().unwrap();
        let again = parse_at(&child, "pkg/b.py").unwrap().unwrap().unwrap();
        assert!(Arc::ptr_eq(&first, &again), "an unchanged file is shared");
        // The same content at another path is another module (relative imports differ).
        let other = parse_at(&parent, "pkg/a.py").unwrap().unwrap().unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(other.path, "pkg/a.py");
        let changed = parse_at(&child, "pkg/a.py").unwrap().unwrap().unwrap();
        assert!(
            !Arc::ptr_eq(&other, &changed),
            "a changed file is parsed anew"
        );
        assert!(parse_at(&parent, "pkg/missing.py").unwrap().is_none());
    }
}
