//! The paraphrase control: a claim's test rewritten so that its surface changes and its behaviour
//! does not.
//!
//! If an arm keys on how a test is written rather than on what it asserts, renaming its locals
//! should move its verdicts. The rewrite is syntactic and made with a real parser
//! (rustpython-parser), never a model:
//!
//! - local bindings (assignment, `for`, `with … as`, `except … as`, walrus and comprehension
//!   targets) are renamed to meaningless identifiers (`v1`, `v2`, …);
//! - docstrings (of the test and of functions and classes inside it) are replaced;
//! - whitespace is reflowed: indentation width changed, blank lines dropped, spacing inside lines
//!   normalised, bracketed continuation lines joined (comments inside brackets go with them).
//!
//! Left untouched, because Python or pytest reads them by name: attribute names, called names,
//! imported names, parameters (pytest injects fixtures by parameter name; a nested function's
//! parameters may be passed by keyword), `self`, keyword-argument names, names declared `global`
//! or `nonlocal`, names bound in a class body or by a `match` pattern, and every string's content.
//! A test that reads its own locals by name (`locals()`, `vars()`, `eval`, `exec`, frame or code
//! inspection) or prints an expression's text (`f"{x=}"`) cannot be rewritten safely and is refused
//! with the reason.
//!
//! Every rewrite is checked before it is returned: it must parse, and its syntax tree must equal the
//! original's with the renames applied and docstrings blanked on both sides. Whether it still
//! collects and passes at the parent is the oracle's question, asked by the `paraphrase` step.

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;

use rustpython_ast::fold::Fold;
use rustpython_parser::ast::{self, Constant, Expr, Identifier, Stmt, text_size::TextRange};
use rustpython_parser::lexer::lex;
use rustpython_parser::{Mode, Parse, Tok};
use serde::{Deserialize, Serialize};

use crate::syntax::python::dedent;

/// What replaces every docstring.
pub const DOCSTRING: &str = "\"\"\"Check this case.\"\"\"";

/// A rewritten test and what was done to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Paraphrase {
    /// The rewritten function, unindented.
    pub source: String,
    /// Old local name → new name.
    pub renamed: BTreeMap<String, String>,
    /// Docstrings replaced.
    pub docstrings: u32,
    /// Whether the whitespace was reflowed (false when the reflow would have changed the syntax
    /// tree, so only the renames and docstrings were kept).
    pub reflowed: bool,
    /// Names the rewrite left alone on purpose: parameters, called, imported and attribute names.
    pub kept: BTreeSet<String>,
}

/// Why a test could not be rewritten safely.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The source is not a function the parser reads.
    #[error("parse the test: {0}")]
    Parse(String),
    /// Renaming could change what the test does.
    #[error("rewrite the test: {0}")]
    Unsafe(String),
    /// The rewrite's syntax tree differs from the original's (a defect of the rewriter).
    #[error("rewrite the test: the rewrite's syntax tree differs from the original's ({0})")]
    Changed(String),
}

/// Builtins that read a function's locals by name.
const INTROSPECTION: &[&str] = &["locals", "vars", "eval", "exec", "globals", "dir"];

/// Attributes that reach a function's code or frame.
const CODE_ATTRIBUTES: &[&str] = &["f_locals", "__code__", "co_varnames", "f_code"];

fn parse_suite(source: &str) -> Result<ast::Suite, Refusal> {
    ast::Suite::parse(source, "<claim>").map_err(|error| Refusal::Parse(error.to_string()))
}

/// The one function statement of a suite.
fn function_of(suite: ast::Suite) -> Result<Stmt, Refusal> {
    suite
        .into_iter()
        .find(|statement| matches!(statement, Stmt::FunctionDef(_) | Stmt::AsyncFunctionDef(_)))
        .ok_or_else(|| Refusal::Parse("the source holds no function definition".into()))
}

/// The scope a name is bound in while surveying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Function,
    Class,
}

/// What a pass over the function finds: bindings, occurrences, and names to keep.
#[derive(Default)]
struct Survey {
    scopes: Vec<Scope>,
    /// Names bound by assignment-like targets in function scopes.
    bound: BTreeSet<String>,
    /// Every `Name` node: its id and range.
    occurrences: Vec<(String, TextRange)>,
    /// Names bound by `except … as`, with the handler's range (the name has no range of its own).
    handler_names: Vec<(String, TextRange)>,
    /// Names never to rename, and the reason class they fall in.
    parameters: BTreeSet<String>,
    called: BTreeSet<String>,
    imported: BTreeSet<String>,
    attributes: BTreeSet<String>,
    other_kept: BTreeSet<String>,
    docstrings: Vec<TextRange>,
    unsafe_reason: Option<String>,
}

impl Survey {
    fn docstring_of(&mut self, body: &[Stmt]) {
        if let Some(Stmt::Expr(statement)) = body.first()
            && let Expr::Constant(constant) = statement.value.as_ref()
            && matches!(constant.value, Constant::Str(_))
        {
            self.docstrings.push(constant.range);
        }
    }

    fn keep_bound_in_class(&mut self, target: &Expr) {
        if self.scopes.last() == Some(&Scope::Class) {
            for name in target_names(target) {
                self.other_kept.insert(name);
            }
        }
    }
}

/// The names a target expression binds.
fn target_names(target: &Expr) -> Vec<String> {
    match target {
        Expr::Name(name) => vec![name.id.to_string()],
        Expr::Tuple(tuple) => tuple.elts.iter().flat_map(target_names).collect(),
        Expr::List(list) => list.elts.iter().flat_map(target_names).collect(),
        Expr::Starred(starred) => target_names(&starred.value),
        _ => Vec::new(),
    }
}

impl Fold<TextRange> for Survey {
    type TargetU = TextRange;
    type Error = Infallible;
    type UserContext = ();

    fn will_map_user(&mut self, _user: &TextRange) {}

    fn map_user(&mut self, user: TextRange, _context: ()) -> Result<TextRange, Infallible> {
        Ok(user)
    }

    fn fold_stmt_function_def(
        &mut self,
        node: ast::StmtFunctionDef,
    ) -> Result<ast::StmtFunctionDef, Infallible> {
        if !self.scopes.is_empty() {
            self.other_kept.insert(node.name.to_string());
        }
        self.docstring_of(&node.body);
        self.scopes.push(Scope::Function);
        let node = rustpython_ast::fold::fold_stmt_function_def(self, node);
        self.scopes.pop();
        node
    }

    fn fold_stmt_async_function_def(
        &mut self,
        node: ast::StmtAsyncFunctionDef,
    ) -> Result<ast::StmtAsyncFunctionDef, Infallible> {
        if !self.scopes.is_empty() {
            self.other_kept.insert(node.name.to_string());
        }
        self.docstring_of(&node.body);
        self.scopes.push(Scope::Function);
        let node = rustpython_ast::fold::fold_stmt_async_function_def(self, node);
        self.scopes.pop();
        node
    }

    fn fold_stmt_class_def(
        &mut self,
        node: ast::StmtClassDef,
    ) -> Result<ast::StmtClassDef, Infallible> {
        self.other_kept.insert(node.name.to_string());
        self.docstring_of(&node.body);
        self.scopes.push(Scope::Class);
        let node = rustpython_ast::fold::fold_stmt_class_def(self, node);
        self.scopes.pop();
        node
    }

    fn fold_expr_lambda(&mut self, node: ast::ExprLambda) -> Result<ast::ExprLambda, Infallible> {
        self.scopes.push(Scope::Function);
        let node = rustpython_ast::fold::fold_expr_lambda(self, node);
        self.scopes.pop();
        node
    }

    fn fold_expr_name(&mut self, node: ast::ExprName) -> Result<ast::ExprName, Infallible> {
        let id = node.id.to_string();
        if !matches!(node.ctx, ast::ExprContext::Load) {
            if self.scopes.last() == Some(&Scope::Class) {
                self.other_kept.insert(id.clone());
            } else {
                self.bound.insert(id.clone());
            }
        }
        self.occurrences.push((id, node.range));
        Ok(node)
    }

    fn fold_expr_call(&mut self, node: ast::ExprCall) -> Result<ast::ExprCall, Infallible> {
        if let Expr::Name(name) = node.func.as_ref() {
            let id = name.id.as_str();
            if INTROSPECTION.contains(&id) {
                self.unsafe_reason
                    .get_or_insert_with(|| format!("it calls `{id}()`, which reads names"));
            }
            self.called.insert(id.to_string());
        }
        rustpython_ast::fold::fold_expr_call(self, node)
    }

    fn fold_expr_attribute(
        &mut self,
        node: ast::ExprAttribute,
    ) -> Result<ast::ExprAttribute, Infallible> {
        let attribute = node.attr.as_str();
        if CODE_ATTRIBUTES.contains(&attribute) {
            self.unsafe_reason.get_or_insert_with(|| {
                format!("it reads `.{attribute}`, which exposes local names")
            });
        }
        self.attributes.insert(attribute.to_string());
        rustpython_ast::fold::fold_expr_attribute(self, node)
    }

    fn fold_arg(&mut self, node: ast::Arg) -> Result<ast::Arg, Infallible> {
        self.parameters.insert(node.arg.to_string());
        rustpython_ast::fold::fold_arg(self, node)
    }

    fn fold_alias(&mut self, node: ast::Alias) -> Result<ast::Alias, Infallible> {
        let bound = node
            .asname
            .as_ref()
            .map(Identifier::to_string)
            .unwrap_or_else(|| node.name.split('.').next().unwrap_or("").to_string());
        self.imported.insert(bound);
        self.imported.insert(node.name.to_string());
        rustpython_ast::fold::fold_alias(self, node)
    }

    fn fold_stmt_global(&mut self, node: ast::StmtGlobal) -> Result<ast::StmtGlobal, Infallible> {
        self.other_kept
            .extend(node.names.iter().map(Identifier::to_string));
        rustpython_ast::fold::fold_stmt_global(self, node)
    }

    fn fold_stmt_nonlocal(
        &mut self,
        node: ast::StmtNonlocal,
    ) -> Result<ast::StmtNonlocal, Infallible> {
        self.other_kept
            .extend(node.names.iter().map(Identifier::to_string));
        rustpython_ast::fold::fold_stmt_nonlocal(self, node)
    }

    fn fold_stmt_assign(&mut self, node: ast::StmtAssign) -> Result<ast::StmtAssign, Infallible> {
        for target in &node.targets {
            self.keep_bound_in_class(target);
        }
        rustpython_ast::fold::fold_stmt_assign(self, node)
    }

    fn fold_excepthandler_except_handler(
        &mut self,
        node: ast::ExceptHandlerExceptHandler,
    ) -> Result<ast::ExceptHandlerExceptHandler, Infallible> {
        if let Some(name) = &node.name {
            if self.scopes.last() == Some(&Scope::Class) {
                self.other_kept.insert(name.to_string());
            } else {
                self.bound.insert(name.to_string());
                self.handler_names.push((name.to_string(), node.range));
            }
        }
        rustpython_ast::fold::fold_excepthandler_except_handler(self, node)
    }

    fn fold_pattern_match_as(
        &mut self,
        node: ast::PatternMatchAs,
    ) -> Result<ast::PatternMatchAs, Infallible> {
        if let Some(name) = &node.name {
            self.other_kept.insert(name.to_string());
        }
        rustpython_ast::fold::fold_pattern_match_as(self, node)
    }

    fn fold_pattern_match_star(
        &mut self,
        node: ast::PatternMatchStar,
    ) -> Result<ast::PatternMatchStar, Infallible> {
        if let Some(name) = &node.name {
            self.other_kept.insert(name.to_string());
        }
        rustpython_ast::fold::fold_pattern_match_star(self, node)
    }

    fn fold_pattern_match_mapping(
        &mut self,
        node: ast::PatternMatchMapping,
    ) -> Result<ast::PatternMatchMapping, Infallible> {
        if let Some(name) = &node.rest {
            self.other_kept.insert(name.to_string());
        }
        rustpython_ast::fold::fold_pattern_match_mapping(self, node)
    }
}

/// The syntax tree with ranges dropped, `renames` applied to names and every docstring blanked:
/// two sources that differ only in what a paraphrase may change normalise to equal trees.
struct Normalize<'a> {
    renames: &'a BTreeMap<String, String>,
}

impl Normalize<'_> {
    fn blank_docstring(body: &mut [Stmt<()>]) {
        if let Some(Stmt::Expr(statement)) = body.first_mut()
            && let Expr::Constant(constant) = statement.value.as_mut()
            && matches!(constant.value, Constant::Str(_))
        {
            constant.value = Constant::Str(String::new());
            constant.kind = None;
        }
    }

    fn rename(&self, name: Identifier) -> Identifier {
        match self.renames.get(name.as_str()) {
            Some(new) => Identifier::new(new.clone()),
            None => name,
        }
    }
}

impl Fold<TextRange> for Normalize<'_> {
    type TargetU = ();
    type Error = Infallible;
    type UserContext = ();

    fn will_map_user(&mut self, _user: &TextRange) {}

    fn map_user(&mut self, _user: TextRange, _context: ()) -> Result<(), Infallible> {
        Ok(())
    }

    fn fold_expr_name(&mut self, node: ast::ExprName) -> Result<ast::ExprName<()>, Infallible> {
        let mut folded = rustpython_ast::fold::fold_expr_name(self, node)?;
        folded.id = self.rename(folded.id);
        Ok(folded)
    }

    fn fold_excepthandler_except_handler(
        &mut self,
        node: ast::ExceptHandlerExceptHandler,
    ) -> Result<ast::ExceptHandlerExceptHandler<()>, Infallible> {
        let mut folded = rustpython_ast::fold::fold_excepthandler_except_handler(self, node)?;
        folded.name = folded.name.map(|name| self.rename(name));
        Ok(folded)
    }

    fn fold_stmt_function_def(
        &mut self,
        node: ast::StmtFunctionDef,
    ) -> Result<ast::StmtFunctionDef<()>, Infallible> {
        let mut folded = rustpython_ast::fold::fold_stmt_function_def(self, node)?;
        Self::blank_docstring(&mut folded.body);
        Ok(folded)
    }

    fn fold_stmt_async_function_def(
        &mut self,
        node: ast::StmtAsyncFunctionDef,
    ) -> Result<ast::StmtAsyncFunctionDef<()>, Infallible> {
        let mut folded = rustpython_ast::fold::fold_stmt_async_function_def(self, node)?;
        Self::blank_docstring(&mut folded.body);
        Ok(folded)
    }

    fn fold_stmt_class_def(
        &mut self,
        node: ast::StmtClassDef,
    ) -> Result<ast::StmtClassDef<()>, Infallible> {
        let mut folded = rustpython_ast::fold::fold_stmt_class_def(self, node)?;
        Self::blank_docstring(&mut folded.body);
        Ok(folded)
    }
}

fn normalize(statement: Stmt, renames: &BTreeMap<String, String>) -> Stmt<()> {
    let mut folder = Normalize { renames };
    match folder.fold_stmt(statement) {
        Ok(folded) => folded,
        Err(never) => match never {},
    }
}

/// Every identifier the lexer sees in `source` (so new names collide with none).
fn identifiers(source: &str) -> BTreeSet<String> {
    lex(source, Mode::Module)
        .filter_map(Result::ok)
        .filter_map(|(token, _)| match token {
            Tok::Name { name } => Some(name),
            _ => None,
        })
        .collect()
}

/// The range of the name an `except … as name` handler binds, found with the lexer.
fn handler_name_range(source: &str, handler: TextRange, name: &str) -> Option<TextRange> {
    let text = &source[handler.start().to_usize()..handler.end().to_usize()];
    let mut after_as = false;
    for (token, range) in lex(text, Mode::Module).filter_map(Result::ok) {
        match token {
            Tok::As => after_as = true,
            Tok::Name { name: found } if after_as && found == name => {
                return Some(range + handler.start());
            }
            Tok::Colon if after_as => return None,
            _ => {}
        }
    }
    None
}

/// Rewrites the test function `source` (indented or not).
pub fn paraphrase(source: &str) -> Result<Paraphrase, Refusal> {
    let source = dedent(source);
    let original = function_of(parse_suite(&source)?)?;
    let survey = surveyed(&source, &original)?;
    let kept = never_renamed(&survey);
    let taken = identifiers(&source);
    let renamed = new_names(&survey, &kept, &taken);
    let mut edits = rename_edits(&source, &survey, &renamed)?;
    // A test that reads its own docstring keeps it.
    let docstrings = if source.contains("__doc__") {
        0
    } else {
        edits.extend(
            survey
                .docstrings
                .iter()
                .map(|range| (*range, DOCSTRING.to_string())),
        );
        survey.docstrings.len() as u32
    };
    let renamed_source = applied(&source, edits)?;
    let expected = normalize(original, &renamed);
    let same_tree = |candidate: &str| -> Result<(), Refusal> {
        let statement = function_of(parse_suite(candidate)?)?;
        if normalize(statement, &BTreeMap::new()) == expected {
            Ok(())
        } else {
            Err(Refusal::Changed("compare the normalised trees".into()))
        }
    };
    same_tree(&renamed_source)?;
    let (source, reflowed) = match reflow(&renamed_source) {
        Some(flowed) if same_tree(&flowed).is_ok() => (flowed, true),
        _ => (renamed_source, false),
    };
    let mut kept_names = kept;
    kept_names.extend(survey.attributes);
    kept_names
        .retain(|name| taken.contains(name) || survey.occurrences.iter().any(|(id, _)| id == name));
    Ok(Paraphrase {
        source,
        renamed,
        docstrings,
        reflowed,
        kept: kept_names,
    })
}

/// What the test `original` (parsed from `source`) binds, uses and keeps; refused when it reads
/// its locals by name or prints an expression's text.
fn surveyed(source: &str, original: &Stmt) -> Result<Survey, Refusal> {
    let mut survey = Survey::default();
    let _ = survey.fold_stmt(original.clone());
    if let Some(reason) = survey.unsafe_reason.take() {
        return Err(Refusal::Unsafe(reason));
    }
    if fstring_prints_text(source) {
        return Err(Refusal::Unsafe(
            "an f-string prints an expression's text (`{x=}`)".into(),
        ));
    }
    Ok(survey)
}

/// The names Python or pytest reads by name: parameters, called, imported and other kept names,
/// and `self`, `cls`, `__class__`.
fn never_renamed(survey: &Survey) -> BTreeSet<String> {
    let mut kept: BTreeSet<String> = BTreeSet::new();
    kept.extend(survey.parameters.iter().cloned());
    kept.extend(survey.called.iter().cloned());
    kept.extend(survey.imported.iter().cloned());
    kept.extend(survey.other_kept.iter().cloned());
    kept.extend(["self", "cls", "__class__"].map(String::from));
    kept
}

/// Each local to rename and its new name (`v1`, `v2`, … in order of first appearance, skipping
/// any identifier already `taken`).
fn new_names(
    survey: &Survey,
    kept: &BTreeSet<String>,
    taken: &BTreeSet<String>,
) -> BTreeMap<String, String> {
    let mut order: Vec<(usize, &String)> = survey
        .bound
        .iter()
        .filter(|name| !kept.contains(*name) && !name.starts_with("__"))
        .map(|name| (first_appearance(survey, name), name))
        .collect();
    order.sort();
    let mut renamed = BTreeMap::new();
    let mut counter = 0;
    for (_, name) in order {
        let new = loop {
            counter += 1;
            let candidate = format!("v{counter}");
            if !taken.contains(&candidate) {
                break candidate;
            }
        };
        renamed.insert(name.clone(), new);
    }
    renamed
}

/// Where `name` first appears, as a `Name` node or an `except … as` handler.
fn first_appearance(survey: &Survey, name: &str) -> usize {
    survey
        .occurrences
        .iter()
        .filter(|(id, _)| id == name)
        .map(|(_, range)| range.start().to_usize())
        .chain(
            survey
                .handler_names
                .iter()
                .filter(|(id, _)| id == name)
                .map(|(_, range)| range.start().to_usize()),
        )
        .min()
        .unwrap_or(usize::MAX)
}

/// The edits that rename each occurrence of a renamed local, handler names included; refused
/// when an occurrence's position does not spell the name (inside an f-string).
fn rename_edits(
    source: &str,
    survey: &Survey,
    renamed: &BTreeMap<String, String>,
) -> Result<Vec<(TextRange, String)>, Refusal> {
    let mut edits: Vec<(TextRange, String)> = Vec::new();
    for (id, range) in &survey.occurrences {
        if let Some(new) = renamed.get(id) {
            let spelled = &source[range.start().to_usize()..range.end().to_usize()];
            if spelled != id {
                return Err(Refusal::Unsafe(format!(
                    "the local `{id}` is used where the parser gives no exact position (an \
                     f-string)"
                )));
            }
            edits.push((*range, new.clone()));
        }
    }
    for (id, handler) in &survey.handler_names {
        if let Some(new) = renamed.get(id) {
            let range = handler_name_range(source, *handler, id).ok_or_else(|| {
                Refusal::Unsafe(format!("cannot find the name `{id}` of an except clause"))
            })?;
            edits.push((range, new.clone()));
        }
    }
    Ok(edits)
}

/// `source` with `edits` applied, in order of position; overlapping edits are refused.
fn applied(source: &str, mut edits: Vec<(TextRange, String)>) -> Result<String, Refusal> {
    edits.sort_by_key(|(range, _)| range.start());
    let mut edited = String::with_capacity(source.len());
    let mut at = 0;
    for (range, text) in &edits {
        let start = range.start().to_usize();
        if start < at {
            return Err(Refusal::Changed("two edits overlap".into()));
        }
        edited.push_str(&source[at..start]);
        edited.push_str(text);
        at = range.end().to_usize();
    }
    edited.push_str(&source[at..]);
    Ok(edited)
}

/// Whether an f-string in `source` uses the `=` specifier, which prints the expression's text.
fn fstring_prints_text(source: &str) -> bool {
    lex(source, Mode::Module)
        .filter_map(Result::ok)
        .any(|(token, range)| match token {
            Tok::String { kind, .. } if kind.is_any_fstring() => {
                let text = &source[range.start().to_usize()..range.end().to_usize()];
                ["=}", "=!", "=:"]
                    .iter()
                    .any(|pattern| text.contains(pattern))
            }
            _ => false,
        })
}

/// Whether `token` ends a value (so a following `(` or `[` is a call or subscript, and a
/// following `-` is binary).
fn ends_value(token: &Tok) -> bool {
    matches!(
        token,
        Tok::Name { .. }
            | Tok::Int { .. }
            | Tok::Float { .. }
            | Tok::Complex { .. }
            | Tok::String { .. }
            | Tok::Rpar
            | Tok::Rsqb
            | Tok::Rbrace
            | Tok::True
            | Tok::False
            | Tok::None
            | Tok::Ellipsis
    )
}

fn may_be_unary(token: &Tok) -> bool {
    matches!(
        token,
        Tok::Minus | Tok::Plus | Tok::Tilde | Tok::Star | Tok::DoubleStar
    )
}

/// The whitespace between `previous` and `next` on one line, given the innermost open bracket.
fn spacing(
    previous: &Tok,
    previous_unary: bool,
    next: &Tok,
    bracket: Option<&Tok>,
) -> &'static str {
    use Tok::*;
    if matches!(previous, Lpar | Lsqb | Lbrace) || matches!(next, Rpar | Rsqb | Rbrace) {
        return "";
    }
    if matches!(next, Comma | Semi | Colon) {
        return "";
    }
    if matches!(previous, Colon) {
        return if matches!(bracket, Some(Lsqb)) {
            ""
        } else {
            " "
        };
    }
    if matches!(next, Dot) && matches!(previous, Int { .. }) {
        return " ";
    }
    if matches!(previous, Dot) || matches!(next, Dot) {
        return "";
    }
    if matches!(next, Lpar | Lsqb) && ends_value(previous) {
        return "";
    }
    if (matches!(previous, Equal) || matches!(next, Equal)) && matches!(bracket, Some(Lpar)) {
        return "";
    }
    if previous_unary {
        return "";
    }
    " "
}

/// The function re-emitted from its tokens with another indentation width, no blank lines,
/// normalised spacing and bracketed continuations joined; `None` when the lexer rejects it.
fn reflow(source: &str) -> Option<String> {
    let tokens: Vec<(Tok, TextRange)> = lex(source, Mode::Module).collect::<Result<_, _>>().ok()?;
    let first_indent = source
        .lines()
        .map(|line| line.len() - line.trim_start().len())
        .find(|width| *width > 0)
        .unwrap_or(4);
    let unit = if first_indent == 2 { 4 } else { 2 };
    let mut out = String::with_capacity(source.len());
    let mut level = 0usize;
    let mut brackets: Vec<Tok> = Vec::new();
    let mut line_start = true;
    let mut previous: Option<(Tok, bool)> = None;
    let mut last_end = 0;
    for (token, range) in tokens {
        let (start, end) = (range.start().to_usize(), range.end().to_usize());
        let text = &source[start..end];
        // The lexer drops comments; they live in the gaps between tokens (never in strings,
        // which are tokens). Comments inside brackets go with the joined lines.
        let gap = &source[last_end.min(start)..start];
        last_end = end.max(last_end);
        if brackets.is_empty() {
            let comments: Vec<&str> = gap
                .lines()
                .filter_map(|line| line.find('#').map(|at| line[at..].trim_end()))
                .collect();
            for comment in comments {
                if line_start {
                    out.push_str(&" ".repeat(level * unit));
                    out.push_str(comment);
                    out.push('\n');
                } else {
                    out.push_str("  ");
                    out.push_str(comment);
                }
            }
        }
        match token {
            Tok::Indent => level += 1,
            Tok::Dedent => level = level.saturating_sub(1),
            Tok::Newline => {
                out.push('\n');
                line_start = true;
                previous = None;
            }
            Tok::EndOfFile | Tok::StartModule => {}
            token => {
                let unary = if line_start {
                    out.push_str(&" ".repeat(level * unit));
                    may_be_unary(&token) || matches!(token, Tok::At)
                } else {
                    let (before, before_unary) = previous.as_ref().expect("mid-line");
                    out.push_str(spacing(before, *before_unary, &token, brackets.last()));
                    may_be_unary(&token) && !ends_value(before)
                };
                out.push_str(text);
                match token {
                    Tok::Lpar | Tok::Lsqb | Tok::Lbrace => brackets.push(token.clone()),
                    Tok::Rpar | Tok::Rsqb | Tok::Rbrace => {
                        brackets.pop();
                    }
                    _ => {}
                }
                line_start = false;
                previous = Some((token, unary));
            }
        }
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_locals_and_keeps_what_pytest_and_python_read_by_name() {
        let source = "\
def test_restock(inv, tmp_path):
    \"\"\"Restocking adds up.\"\"\"
    before = inv.stock(\"apple\")
    inv.restock(\"apple\", count=2)
    after = inv.stock(\"apple\")
    assert after == before + 2, \"before was %d\" % before
";
        let rewrite = paraphrase(source).unwrap();
        assert_eq!(
            rewrite.renamed,
            BTreeMap::from([
                ("before".to_string(), "v1".to_string()),
                ("after".to_string(), "v2".to_string()),
            ])
        );
        assert_eq!(rewrite.docstrings, 1);
        assert!(rewrite.reflowed);
        for name in [
            "inv",
            "tmp_path",
            "stock",
            "restock",
            "count",
            "\"apple\"",
            "\"before was %d\"",
        ] {
            assert!(
                rewrite.source.contains(name),
                "{name} lost:\n{}",
                rewrite.source
            );
        }
        assert!(!rewrite.source.contains("before ="), "{}", rewrite.source);
        assert!(!rewrite.source.contains("+ before"), "{}", rewrite.source);
        insta::assert_snapshot!(rewrite.source);
    }

    #[test]
    fn every_binding_form_is_renamed() {
        let source = "\
def test_forms(tally):
    for item, count in tally.items():
        total = count
    with open('x') as handle:
        pass
    try:
        pass
    except ValueError as error:
        raise
    squares = [n * n for n in range(3)]
    if (found := tally.get('a')):
        pass
    first, *rest = squares
    assert total and handle and squares and found and first and rest
";
        let rewrite = paraphrase(source).unwrap();
        let old: BTreeSet<&str> = rewrite.renamed.keys().map(String::as_str).collect();
        assert_eq!(
            old,
            BTreeSet::from([
                "count", "error", "first", "found", "handle", "item", "n", "rest", "squares",
                "total"
            ])
        );
        assert!(
            rewrite.source.contains("except ValueError as v"),
            "{}",
            rewrite.source
        );
        insta::assert_snapshot!(rewrite.source);
    }

    #[test]
    fn called_imported_and_class_body_names_are_kept() {
        let source = "\
def test_kept(self):
    from tally import Tally as T
    import json
    make = T
    counter = make()
    class Local:
        value = 1
    value = Local.value
    assert json.dumps(counter.total()) and value
";
        let rewrite = paraphrase(source).unwrap();
        let old: BTreeSet<&str> = rewrite.renamed.keys().map(String::as_str).collect();
        assert_eq!(old, BTreeSet::from(["counter"]));
        for name in [
            "self", "T", "json", "make", "Local", "value", "total", "dumps",
        ] {
            assert!(
                rewrite.kept.contains(name),
                "{name} not kept: {:?}",
                rewrite.kept
            );
        }
    }

    #[test]
    fn an_indented_method_is_rewritten_unindented() {
        let source =
            "    def test_len(self):\n        items = [1, 2]\n        assert len(items) == 2\n";
        let rewrite = paraphrase(source).unwrap();
        assert_eq!(
            rewrite.source,
            "def test_len(self):\n  v1 = [1, 2]\n  assert len(v1) == 2\n"
        );
    }

    #[test]
    fn reads_of_locals_by_name_are_refused() {
        for source in [
            "def test_a():\n    x = 1\n    assert locals()['x'] == 1\n",
            "def test_b():\n    x = 1\n    assert f'{x=}' == 'x=1'\n",
            "def test_c():\n    import sys\n    x = 1\n    assert sys._getframe().f_locals['x']\n",
        ] {
            assert!(
                matches!(paraphrase(source), Err(Refusal::Unsafe(_))),
                "{source}"
            );
        }
    }

    #[test]
    fn nested_parameters_shadowing_a_local_keep_both() {
        let source = "\
def test_nested():
    x = 2
    def double(x):
        return x * 2
    assert double(x=x) == 4
";
        let rewrite = paraphrase(source).unwrap();
        assert!(rewrite.renamed.is_empty(), "{:?}", rewrite.renamed);
        assert!(rewrite.source.contains("double(x=x)"), "{}", rewrite.source);
    }

    #[test]
    fn a_new_name_never_collides_with_an_existing_one() {
        let source = "def test_v(v1):\n    value = v1\n    assert value\n";
        let rewrite = paraphrase(source).unwrap();
        assert_eq!(rewrite.renamed["value"], "v2");
    }

    #[test]
    fn reflow_joins_bracketed_lines_and_keeps_strings_verbatim() {
        let source = "\
def test_wrap(tally):
    expected = {
        'a': 1,   # the first
        'b':    [1,2 ,3][ 1 : ],
    }
    text = '''two
    lines'''
    assert tally.as_dict(  ) == expected, text
";
        let rewrite = paraphrase(source).unwrap();
        assert!(rewrite.reflowed);
        assert!(
            rewrite.source.contains("'''two\n    lines'''"),
            "{}",
            rewrite.source
        );
        insta::assert_snapshot!(rewrite.source);
    }

    #[test]
    fn every_rewrite_parses() {
        let sources = [
            "def test_a(x):\n    y = -x ** -2\n    z = {**{'a': y}}\n    assert z['a'] and y[1:-1] is not None\n",
            "async def test_b(client):\n    response = await client.get('/')\n    assert response.status == 200\n",
            "@pytest.mark.parametrize('n', [1, 2])\ndef test_c(n):\n    m = n  \\\n        + 1\n    assert m > n\n",
            "def test_d():\n    f = lambda *a, **k: (a, k)\n    result = f(1, b=2)\n    assert result == ((1,), {'b': 2})\n",
        ];
        for source in sources {
            let rewrite =
                paraphrase(source).unwrap_or_else(|refusal| panic!("{source}: {refusal}"));
            assert!(parse_suite(&rewrite.source).is_ok(), "{}", rewrite.source);
        }
    }
}
