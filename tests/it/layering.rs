//! Layering: no import cycles between the crate's files, nor between its top-level modules, so
//! that a lower layer (the pipeline, the engine) never reaches up into what builds on it (the step
//! kinds, the executors, the CLI).
//!
//! The check reads `src/` as text: every `use` and every path starting with `crate`, `super` or
//! `self` (and paths through a module a `use` imported) is resolved to the file that defines the
//! item, following `pub use` re-exports, so that a `mod.rs` that only declares and re-exports its
//! children is not itself a dependency. Inline `#[cfg(test)]` modules are left out: a unit test
//! may exercise a lower layer with the real step kinds above it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path (`["engine", "step"]`); the crate root is empty.
type Module = Vec<String>;

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Punct(&'static str),
}

/// One path a `use` names, with the name it binds.
struct UsePath {
    path: Vec<String>,
    public: bool,
    binds: String,
}

struct File {
    tokens: Vec<Token>,
    uses: Vec<UsePath>,
    is_facade: bool,
}

/// The crate's files by module path.
fn read_crate(src: &Path) -> BTreeMap<Module, File> {
    let mut files = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(directory) = stack.pop() {
        for entry in std::fs::read_dir(&directory).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                let module = module_of(src, &path);
                let text = std::fs::read_to_string(&path).unwrap();
                let tokens = without_test_modules(tokenize(&strip(&text)));
                let mut file = File {
                    uses: Vec::new(),
                    is_facade: path.ends_with("mod.rs"),
                    tokens,
                };
                file.uses = uses(&module, &file.tokens);
                files.insert(module, file);
            }
        }
    }
    files
}

fn module_of(src: &Path, path: &Path) -> Module {
    let relative: PathBuf = path.strip_prefix(src).unwrap().with_extension("");
    let mut module: Module = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    if module.last().is_some_and(|last| last == "mod") {
        module.pop();
    }
    if module == ["lib"] || module == ["main"] {
        module.clear();
    }
    module
}

/// The text without comments, string and character literals.
fn strip(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        if rest.starts_with(&['/', '/']) {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if rest.starts_with(&['/', '*']) {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i..].starts_with(&['/', '*']) {
                    depth += 1;
                    i += 2;
                } else if chars[i..].starts_with(&['*', '/']) {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if rest[0] == 'r'
            && (rest.get(1) == Some(&'"') || rest.get(1) == Some(&'#'))
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'))
        {
            let hashes = rest[1..].iter().take_while(|&&c| c == '#').count();
            if rest.get(1 + hashes) != Some(&'"') {
                out.push('r');
                i += 1;
                continue;
            }
            i += 2 + hashes;
            while i < chars.len() {
                if chars[i] == '"' && chars[i + 1..].iter().take(hashes).all(|&c| c == '#') {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
            out.push_str("\"\"");
        } else if rest[0] == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if rest[0] == '\'' && (rest.get(2) == Some(&'\'') || rest.get(1) == Some(&'\\')) {
            // A character literal ('{', '\n', '\u{7f}'); a lifetime has no closing quote.
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(rest[0]);
            i += 1;
        }
    }
    out
}

fn tokenize(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(Token::Ident(chars[start..i].iter().collect()));
            continue;
        }
        let punct = match c {
            ':' if chars.get(i + 1) == Some(&':') => {
                i += 1;
                Some("::")
            }
            '{' => Some("{"),
            '}' => Some("}"),
            ',' => Some(","),
            ';' => Some(";"),
            '*' => Some("*"),
            '#' => Some("#"),
            '[' => Some("["),
            '(' => Some("("),
            ')' => Some(")"),
            '!' => Some("!"),
            _ if c.is_whitespace() => None,
            _ => Some("."),
        };
        tokens.extend(punct.map(Token::Punct));
        i += 1;
    }
    tokens
}

fn ident(token: Option<&Token>) -> Option<&str> {
    match token {
        Some(Token::Ident(name)) => Some(name),
        _ => None,
    }
}

/// The tokens without `#[cfg(test)] mod name { ... }` blocks.
fn without_test_modules(tokens: Vec<Token>) -> Vec<Token> {
    let cfg_test = [
        Token::Punct("#"),
        Token::Punct("["),
        Token::Ident("cfg".into()),
        Token::Punct("("),
        Token::Ident("test".into()),
        Token::Punct(")"),
    ];
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i..].starts_with(&cfg_test)
            && ident(tokens.get(i + 7)) == Some("mod")
            && tokens.get(i + 9) == Some(&Token::Punct("{"))
        {
            let mut depth = 0;
            i += 9;
            while i < tokens.len() {
                match tokens[i] {
                    Token::Punct("{") => depth += 1,
                    Token::Punct("}") => depth -= 1,
                    _ => {}
                }
                i += 1;
                if depth == 0 {
                    break;
                }
            }
            continue;
        }
        out.push(tokens[i].clone());
        i += 1;
    }
    out
}

/// Makes a path absolute: `crate::…`, `super::…` and `self::…` against `module`.
fn absolute(module: &Module, path: &[String]) -> Option<Vec<String>> {
    let first = path.first()?;
    match first.as_str() {
        "crate" => Some(path[1..].to_vec()),
        "self" => Some([module.as_slice(), &path[1..]].concat()),
        "super" => {
            let ups = path
                .iter()
                .take_while(|segment| *segment == "super")
                .count();
            let base = module.get(..module.len().checked_sub(ups)?)?;
            Some([base, &path[ups..]].concat())
        }
        _ => None,
    }
}

/// The paths the `use` declarations of a file name, absolute.
fn uses(module: &Module, tokens: &[Token]) -> Vec<UsePath> {
    let mut found = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        if *token != Token::Ident("use".into()) {
            continue;
        }
        let public = ident(tokens.get(i.wrapping_sub(1))) == Some("pub")
            || (tokens.get(i.wrapping_sub(1)) == Some(&Token::Punct(")"))
                && ident(tokens.get(i.wrapping_sub(4))) == Some("pub"));
        let end = tokens[i..]
            .iter()
            .position(|token| *token == Token::Punct(";"))
            .map_or(tokens.len(), |end| i + end);
        let mut paths = Vec::new();
        expand(&tokens[i + 1..end], &[], &mut paths);
        for (path, alias) in paths {
            let absolute = absolute(module, &path).or_else(|| {
                // A path through a child module declared in this file (`use step::Pool`).
                (path.len() > 1).then(|| [module.as_slice(), &path].concat())
            });
            if let Some(absolute) = absolute {
                let binds = alias.unwrap_or_else(|| path.last().cloned().unwrap_or_default());
                found.push(UsePath {
                    path: absolute,
                    public,
                    binds,
                });
            }
        }
    }
    found
}

/// Expands a use tree into paths, each with its alias.
fn expand(tokens: &[Token], prefix: &[String], out: &mut Vec<(Vec<String>, Option<String>)>) {
    let mut i = 0;
    let mut path = prefix.to_vec();
    while i < tokens.len() {
        match &tokens[i] {
            Token::Ident(name) if name == "as" => {
                let alias = ident(tokens.get(i + 1)).map(str::to_string);
                out.push((std::mem::take(&mut path), alias));
                i += 2;
                continue;
            }
            Token::Ident(name) => path.push(name.clone()),
            Token::Punct("*") => path.push("*".into()),
            Token::Punct("{") => {
                let mut depth = 0;
                let start = i + 1;
                while i < tokens.len() {
                    match tokens[i] {
                        Token::Punct("{") => depth += 1,
                        Token::Punct("}") => depth -= 1,
                        _ => {}
                    }
                    if depth == 0 {
                        break;
                    }
                    i += 1;
                }
                let inner = &tokens[start..i.min(tokens.len())];
                let mut depth = 0;
                let mut from = 0;
                for (j, token) in inner.iter().enumerate() {
                    match token {
                        Token::Punct("{") => depth += 1,
                        Token::Punct("}") => depth -= 1,
                        Token::Punct(",") if depth == 0 => {
                            expand(&inner[from..j], &path, out);
                            from = j + 1;
                        }
                        _ => {}
                    }
                }
                expand(&inner[from..], &path, out);
                path.clear();
            }
            Token::Punct(",") => {
                if !path.is_empty() {
                    out.push((std::mem::take(&mut path), None));
                }
                path = prefix.to_vec();
            }
            _ => {}
        }
        i += 1;
    }
    if path.len() > prefix.len() || (!path.is_empty() && prefix.is_empty()) {
        out.push((path, None));
    }
}

struct Crate {
    files: BTreeMap<Module, File>,
}

impl Crate {
    /// The longest prefix of `path` that is a file.
    fn file_of(&self, path: &[String]) -> Module {
        (0..=path.len())
            .rev()
            .map(|length| path[..length].to_vec())
            .find(|prefix| self.files.contains_key(prefix))
            .unwrap_or_default()
    }

    fn defines(&self, module: &Module, name: &str) -> bool {
        let tokens = &self.files[module].tokens;
        tokens.windows(2).any(|pair| {
            ident(pair.get(1)) == Some(name)
                && matches!(
                    ident(pair.first()),
                    Some(
                        "struct"
                            | "enum"
                            | "fn"
                            | "trait"
                            | "type"
                            | "const"
                            | "static"
                            | "mod"
                            | "union"
                    )
                )
        })
    }

    /// The file that defines what `path` names, following re-exports.
    fn resolve(&self, path: &[String], depth: usize) -> Module {
        let module = self.file_of(path);
        let rest = &path[module.len()..];
        let Some(name) = rest.first() else {
            return module;
        };
        if depth > 16 || name == "self" || name == "*" || self.defines(&module, name) {
            return module;
        }
        for export in self.files[&module].uses.iter().filter(|used| used.public) {
            if export.path.last().is_some_and(|last| last == "*") {
                let base = &export.path[..export.path.len() - 1];
                let target = self.resolve(&[base, rest].concat(), depth + 1);
                if target != self.file_of(base) || self.defines(&target, name) {
                    return target;
                }
            } else if export.binds == *name {
                return self.resolve(&[&export.path[..], &rest[1..]].concat(), depth + 1);
            }
        }
        module
    }

    /// Every file a file depends on, with one path that shows it.
    fn edges(&self) -> BTreeMap<Module, BTreeMap<Module, String>> {
        let mut edges: BTreeMap<Module, BTreeMap<Module, String>> = BTreeMap::new();
        for (module, file) in &self.files {
            let mut paths: Vec<Vec<String>> = Vec::new();
            let mut imported_modules: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for used in &file.uses {
                // A facade re-exporting its own children does not depend on them.
                if file.is_facade && used.public && used.path.starts_with(module) {
                    continue;
                }
                // `use super::*` in a child brings names, not a dependency on the facade.
                if used.path.last().is_some_and(|last| last == "*")
                    && module.starts_with(&used.path[..used.path.len() - 1])
                {
                    continue;
                }
                if self.files.contains_key(&used.path) {
                    imported_modules.insert(used.binds.clone(), used.path.clone());
                }
                paths.push(used.path.clone());
            }
            let tokens = &file.tokens;
            let mut i = 0;
            while i < tokens.len() {
                let start = ident(tokens.get(i));
                let after_path = i > 0 && tokens[i - 1] == Token::Punct("::");
                let head = match start {
                    Some("crate" | "super" | "self") if !after_path => {
                        Some(vec![start.unwrap().to_string()])
                    }
                    Some(name) if !after_path && imported_modules.contains_key(name) => {
                        Some(imported_modules[name].clone())
                    }
                    _ => None,
                };
                let Some(mut path) = head else {
                    i += 1;
                    continue;
                };
                while tokens.get(i + 1) == Some(&Token::Punct("::")) {
                    match ident(tokens.get(i + 2)) {
                        Some(segment) => path.push(segment.to_string()),
                        None => break,
                    }
                    i += 2;
                }
                if let Some(absolute) = absolute(module, &path).or(Some(path)) {
                    paths.push(absolute);
                }
                i += 1;
            }
            for path in paths {
                let target = self.resolve(&path, 0);
                if target != *module && !target.is_empty() {
                    edges
                        .entry(module.clone())
                        .or_default()
                        .entry(target)
                        .or_insert_with(|| path.join("::"));
                }
            }
        }
        edges
    }
}

/// The strongly connected components of more than one node (Tarjan).
fn cycles<N: Ord + Clone>(graph: &BTreeMap<N, BTreeMap<N, String>>) -> Vec<Vec<N>> {
    struct Search<'g, N> {
        graph: &'g BTreeMap<N, BTreeMap<N, String>>,
        index: BTreeMap<N, usize>,
        low: BTreeMap<N, usize>,
        stack: Vec<N>,
        on_stack: BTreeSet<N>,
        found: Vec<Vec<N>>,
    }
    impl<N: Ord + Clone> Search<'_, N> {
        fn visit(&mut self, node: &N) {
            let number = self.index.len();
            self.index.insert(node.clone(), number);
            self.low.insert(node.clone(), number);
            self.stack.push(node.clone());
            self.on_stack.insert(node.clone());
            for next in self.graph.get(node).into_iter().flat_map(BTreeMap::keys) {
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node.clone(), low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node.clone(), low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                loop {
                    let member = self.stack.pop().unwrap();
                    self.on_stack.remove(&member);
                    let done = member == *node;
                    component.push(member);
                    if done {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut search = Search {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !search.index.contains_key(node) {
            search.visit(node);
        }
    }
    search.found
}

/// Each cycle, with the references that close it.
fn describe<N: Ord + Clone>(
    found: &[Vec<N>],
    graph: &BTreeMap<N, BTreeMap<N, String>>,
    name: impl Fn(&N) -> String,
) -> String {
    let mut text = String::new();
    for component in found {
        let names: Vec<String> = component.iter().map(&name).collect();
        text.push_str(&format!("cycle: {}\n", names.join(", ")));
        for from in component {
            for (to, example) in graph.get(from).into_iter().flatten() {
                if component.contains(to) {
                    text.push_str(&format!("  {} -> {} ({example})\n", name(from), name(to)));
                }
            }
        }
    }
    text
}

fn source_crate() -> Crate {
    Crate {
        files: read_crate(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src")),
    }
}

fn top_level(
    edges: &BTreeMap<Module, BTreeMap<Module, String>>,
) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (from, targets) in edges {
        for (to, example) in targets {
            if from[0] != to[0] {
                graph
                    .entry(from[0].clone())
                    .or_default()
                    .entry(to[0].clone())
                    .or_insert_with(|| format!("{}: {example}", from.join("/")));
            }
        }
    }
    graph
}

#[test]
fn top_level_modules_import_each_other_in_one_direction() {
    let edges = source_crate().edges();
    let graph = top_level(&edges);
    let found = cycles(&graph);
    assert!(
        found.is_empty(),
        "top-level modules import each other; move the shared type to the lower one, or pass \
         the higher one in through a trait:\n{}",
        describe(&found, &graph, String::clone)
    );
}

/// The layers everything else builds on: the cache, the pipeline's model and the engine.
const LOWER_LAYERS: [&str; 3] = ["cache", "pipeline", "engine"];

/// What the lower layers may import besides each other: running a process and cleaning up after
/// it, which know nothing of steps, claims or models. Every other module (the step kinds, the
/// arms, the oracle, Python, models, the local model, statistics, mining, records, the executors,
/// the CLI, and any module added later) builds on the lower layers and may not be imported by them.
const FOUNDATION: [&str; 2] = ["process", "process_groups"];

/// The imports of `graph` from a lower layer into anything but a lower layer or the foundation.
fn upward_imports(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<String> {
    let mut upward = Vec::new();
    for lower in LOWER_LAYERS {
        for (to, example) in graph.get(lower).into_iter().flatten() {
            if !LOWER_LAYERS.contains(&to.as_str()) && !FOUNDATION.contains(&to.as_str()) {
                upward.push(format!("{lower} -> {to} ({example})"));
            }
        }
    }
    upward
}

#[test]
fn the_cache_the_pipeline_and_the_engine_import_no_domain_module() {
    // Not only no cycle: no edge up at all (the engine used to enter the local model's scope, and
    // the loader of `models:` used to name the local model's id).
    let edges = source_crate().edges();
    let upward = upward_imports(&top_level(&edges));
    assert!(
        upward.is_empty(),
        "a lower layer imports a module built on it; pass what it needs in through a trait or a \
         session value instead:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_direction_check_sees_an_import_into_a_new_module() {
    // A module nobody listed (here `telemetry`) counts as built on the engine, so the engine
    // importing it is reported; importing the foundation is not.
    let directory = tempfile::tempdir().unwrap();
    let src = directory.path();
    std::fs::write(
        src.join("lib.rs"),
        "pub mod engine;\npub mod process;\npub mod telemetry;\n",
    )
    .unwrap();
    std::fs::write(src.join("process.rs"), "pub fn run() {}\n").unwrap();
    std::fs::write(src.join("telemetry.rs"), "pub struct Meter;\n").unwrap();
    std::fs::write(
        src.join("engine.rs"),
        "use crate::telemetry::Meter;\nfn go(_: Meter) { crate::process::run(); }\n",
    )
    .unwrap();
    let checked = Crate {
        files: read_crate(src),
    };
    assert_eq!(
        upward_imports(&top_level(&checked.edges())),
        ["engine -> telemetry (engine: telemetry::Meter)"]
    );
}

#[test]
fn files_import_each_other_in_one_direction() {
    let edges = source_crate().edges();
    let found = cycles(&edges);
    assert!(
        found.is_empty(),
        "files import each other:\n{}",
        describe(&found, &edges, |module| module.join("/"))
    );
}

#[test]
fn the_check_finds_a_cycle_through_a_re_export() {
    // A crate where `a` re-exports its child `c`'s function, `c` uses `b`'s type and `b` calls
    // the function through `a`: the check must follow the re-export to see b -> a/c, and must
    // not count `a` re-exporting its own child, nor `b`'s unit tests.
    let directory = tempfile::tempdir().unwrap();
    let src = directory.path();
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod a;\npub mod b;\n").unwrap();
    std::fs::write(src.join("a/mod.rs"), "mod c;\npub use c::helper;\n").unwrap();
    std::fs::write(
        src.join("a/c.rs"),
        "use crate::b::Thing;\npub fn helper(_: &Thing) -> &'static str { \"{\" }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("b.rs"),
        "pub struct Thing;\nfn call() { crate::a::helper(&Thing); }\n#[cfg(test)]\nmod tests { use crate::a::Thing; }\n",
    )
    .unwrap();
    let checked = Crate {
        files: read_crate(src),
    };
    let edges = checked.edges();
    let name = |module: &Module| module.join("/");
    let found = cycles(&edges);
    assert_eq!(
        describe(&found, &edges, name),
        "cycle: a/c, b\n  a/c -> b (b::Thing)\n  b -> a/c (a::helper)\n"
    );
    let graph = top_level(&edges);
    assert_eq!(cycles(&graph), vec![vec!["a".to_string(), "b".to_string()]]);
}
