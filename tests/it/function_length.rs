//! Function length: no function or method in `src/` has a body over `MAX_BODY_LINES` lines, so
//! that each reads top-down as a few named pieces.
//!
//! Every `src/**/*.rs` is parsed with `syn`; a body's length is the count of lines from its opening
//! brace to its closing brace. Unit tests (`#[cfg(test)]` modules, `#[test]` functions) are left
//! out. The functions not yet split are listed by name in `NOT_YET_SPLIT`; the list may only
//! shrink: a listed function that is now short, or gone, fails the check until its entry goes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The longest body, in lines, a function may have.
const MAX_BODY_LINES: usize = 100;

/// Functions still over `MAX_BODY_LINES`, by `module::[Type::]function`, with their body's length
/// when they were listed.
const NOT_YET_SPLIT: &[&str] = &[];

/// One function or method whose body was measured.
struct Measured {
    name: String,
    file: PathBuf,
    line: usize,
    lines: usize,
}

/// Walks one file, naming each function by its module path and, for methods, its `Self` type.
struct Measure<'a> {
    file: &'a Path,
    scope: Vec<String>,
    found: Vec<Measured>,
}

impl Measure<'_> {
    fn record(&mut self, name: &syn::Ident, body: &syn::Block) {
        let braces = body.brace_token.span;
        let (open, close) = (braces.open().start().line, braces.close().end().line);
        let mut path = self.scope.clone();
        path.push(name.to_string());
        self.found.push(Measured {
            name: path.join("::"),
            file: self.file.to_path_buf(),
            line: name.span().start().line,
            lines: close - open + 1,
        });
    }

    fn within(&mut self, name: String, visit: impl FnOnce(&mut Self)) {
        self.scope.push(name);
        visit(self);
        self.scope.pop();
    }
}

impl<'ast> Visit<'ast> for Measure<'_> {
    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if is_test(&module.attrs) {
            return;
        }
        self.within(module.ident.to_string(), |this| {
            syn::visit::visit_item_mod(this, module)
        });
    }

    fn visit_item_fn(&mut self, function: &'ast syn::ItemFn) {
        if is_test(&function.attrs) {
            return;
        }
        self.record(&function.sig.ident, &function.block);
        let name = function.sig.ident.to_string();
        self.within(name, |this| syn::visit::visit_item_fn(this, function));
    }

    fn visit_item_impl(&mut self, block: &'ast syn::ItemImpl) {
        if is_test(&block.attrs) {
            return;
        }
        let name = type_name(&block.self_ty);
        self.within(name, |this| syn::visit::visit_item_impl(this, block));
    }

    fn visit_impl_item_fn(&mut self, method: &'ast syn::ImplItemFn) {
        if is_test(&method.attrs) {
            return;
        }
        self.record(&method.sig.ident, &method.block);
        let name = method.sig.ident.to_string();
        self.within(name, |this| syn::visit::visit_impl_item_fn(this, method));
    }

    fn visit_item_trait(&mut self, item: &'ast syn::ItemTrait) {
        let name = item.ident.to_string();
        self.within(name, |this| syn::visit::visit_item_trait(this, item));
    }

    fn visit_trait_item_fn(&mut self, method: &'ast syn::TraitItemFn) {
        if let Some(body) = &method.default {
            self.record(&method.sig.ident, body);
        }
        let name = method.sig.ident.to_string();
        self.within(name, |this| syn::visit::visit_trait_item_fn(this, method));
    }
}

/// Whether the attributes mark a unit test or test-only code.
fn is_test(attributes: &[syn::Attribute]) -> bool {
    attributes.iter().any(|attribute| {
        let path = attribute.path();
        if path.is_ident("cfg") {
            let tokens = attribute
                .meta
                .require_list()
                .map(|list| list.tokens.to_string());
            tokens.is_ok_and(|tokens| tokens == "test")
        } else {
            path.segments
                .last()
                .is_some_and(|last| last.ident == "test")
        }
    })
}

/// The last path segment of an `impl` block's type (`Executor` for `impl<'a> Executor<'a>`),
/// through references; `_` for other types.
fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(path) => path
            .path
            .segments
            .last()
            .map_or_else(|| "_".to_owned(), |segment| segment.ident.to_string()),
        syn::Type::Reference(reference) => type_name(&reference.elem),
        _ => "_".to_owned(),
    }
}

/// The module path of a file under `src/` (`engine::executor` for `src/engine/executor.rs`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|component| component.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

fn rust_files(directory: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(directory).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
}

/// Every function and method body in one file's `text`, outside unit tests, named under `module`.
fn measure_file(file: &Path, module: Vec<String>, text: &str) -> Vec<Measured> {
    let syntax =
        syn::parse_file(text).unwrap_or_else(|error| panic!("{}: {error}", file.display()));
    let mut measure = Measure {
        file,
        scope: module,
        found: Vec::new(),
    };
    measure.visit_file(&syntax);
    measure.found
}

/// Every function and method body in `src/`, outside unit tests.
fn measure_crate() -> Vec<Measured> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut found = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let module = module_of(&src, &path);
        found.extend(measure_file(
            path.strip_prefix(root).unwrap(),
            module,
            &text,
        ));
    }
    found
}

#[test]
fn no_function_body_is_over_the_limit_unless_listed() {
    let long: Vec<Measured> = measure_crate()
        .into_iter()
        .filter(|function| function.lines > MAX_BODY_LINES)
        .collect();
    let mut problems = Vec::new();
    for function in &long {
        let listed = NOT_YET_SPLIT.contains(&function.name.as_str());
        eprintln!(
            "{}:{}: {} has {} lines{}",
            function.file.display(),
            function.line,
            function.name,
            function.lines,
            if listed { " (listed)" } else { "" }
        );
        if !listed {
            problems.push(format!(
                "{}:{}: {} has a body of {} lines, over {MAX_BODY_LINES}: split it into named pieces",
                function.file.display(),
                function.line,
                function.name,
                function.lines
            ));
        }
    }
    let long_names: BTreeMap<&str, &Measured> = long
        .iter()
        .map(|function| (function.name.as_str(), function))
        .collect();
    for name in NOT_YET_SPLIT {
        if !long_names.contains_key(name) {
            problems.push(format!(
                "{name} is listed in NOT_YET_SPLIT but is no longer over {MAX_BODY_LINES} lines \
                 (or is gone): remove it from the list"
            ));
        }
    }
    eprintln!("{} functions over {MAX_BODY_LINES} lines", long.len());
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

#[test]
fn bodies_are_measured_brace_to_brace_and_unit_tests_are_left_out() {
    let body = |lines: usize| "    let _ = 1;\n".repeat(lines - 2);
    let text = format!(
        "pub fn short() {{\n{}}}\n\
         mod inner {{\n    impl<'a> Thing<'a> {{\n        fn method(&self) {{\n{}}}\n    }}\n}}\n\
         #[cfg(test)]\nmod tests {{\n    fn helper() {{\n{}}}\n}}\n\
         #[test]\nfn test() {{\n{}}}\n",
        body(3),
        body(101),
        body(200),
        body(200)
    );
    let found = measure_file(Path::new("src/example.rs"), vec!["example".into()], &text);
    let measured: Vec<(&str, usize, usize)> = found
        .iter()
        .map(|function| (function.name.as_str(), function.line, function.lines))
        .collect();
    assert_eq!(
        measured,
        [
            ("example::short", 1, 3),
            ("example::inner::Thing::method", 6, 101)
        ]
    );
}
