//! What the static arms need to know about Python source, read with a real parser
//! (rustpython-parser): a module's imports, its definitions keyed by qualified name with their
//! text, its pytest fixtures by registered name, and the names a function references.
//!
//! Everything here is per file and knows nothing of the repository; [`super::modules`] turns the
//! relative names found here into repository modules.

use std::collections::{BTreeMap, BTreeSet};

use rustpython_ast::Visitor;
use rustpython_parser::Parse;
use rustpython_parser::ast::{self, Constant, Expr, Ranged, Stmt};

/// A file the parser rejected (a syntax error, or Python 2 source).
#[derive(Debug, Clone, thiserror::Error)]
#[error("parse {path}: {message}")]
pub struct ParseFailure {
    pub path: String,
    pub message: String,
}

/// A parsed Python file.
pub struct ParsedModule {
    pub path: String,
    text: String,
    suite: ast::Suite,
}

/// One import statement (anywhere in a file).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Import {
    /// `import a.b.c` or `import a.b as x`.
    Module { name: String, alias: Option<String> },
    /// `from ..a import b as c`: `level` leading dots, `module` after them, and the imported names
    /// with their aliases (`*` for a star import).
    From {
        level: u32,
        module: Option<String>,
        names: Vec<(String, Option<String>)>,
    },
}

/// What kind of thing a definition is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefinitionKind {
    Function,
    Class,
    /// A module-level assignment (`CONSTANT = ...`).
    Variable,
}

/// One definition: its kind, its text and (for a class) its base-class expressions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    pub kind: DefinitionKind,
    /// The definition's source text; for a class, the class minus the nested definitions that are
    /// keyed on their own, so editing one method changes that method's key alone.
    pub text: String,
    /// Dotted base-class names as written (`["abc", "Mapping"]`), for method lookup through bases.
    pub bases: Vec<Vec<String>>,
}

/// A pytest fixture defined in a file.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// The name tests request it by: `name=` of `@pytest.fixture(name=...)`, else the function name.
    pub name: String,
    pub function: ast::StmtFunctionDef,
}

impl ParsedModule {
    /// Parses `text`; `path` names the file in messages.
    pub fn parse(path: &str, text: &str) -> Result<Self, ParseFailure> {
        let suite = ast::Suite::parse(text, path).map_err(|error| ParseFailure {
            path: path.to_string(),
            message: error.to_string(),
        })?;
        Ok(ParsedModule {
            path: path.to_string(),
            text: text.to_string(),
            suite,
        })
    }

    /// Every import statement in the file, at any depth, in order.
    pub fn imports(&self) -> Vec<Import> {
        imports_in(&self.suite)
    }

    /// The imports at module level only (the names every function in the module sees).
    pub fn top_level_imports(&self) -> Vec<Import> {
        let top: Vec<Stmt> = self
            .suite
            .iter()
            .filter(|statement| matches!(statement, Stmt::Import(_) | Stmt::ImportFrom(_)))
            .cloned()
            .collect();
        imports_in(&top)
    }

    /// Definitions keyed by qualified name under `module` (`module.Class.method`). Definitions under
    /// module-level `if`/`try` blocks count; definitions inside functions are part of the function.
    /// A name defined twice (alternative definitions under `try`/`except`) gets the texts joined.
    pub fn definitions(&self, module: &str) -> BTreeMap<String, Definition> {
        let mut definitions = BTreeMap::new();
        self.collect_definitions(&self.suite, module, true, &mut definitions);
        definitions
    }

    fn collect_definitions(
        &self,
        body: &[Stmt],
        prefix: &str,
        module_level: bool,
        into: &mut BTreeMap<String, Definition>,
    ) {
        for statement in body {
            match statement {
                Stmt::FunctionDef(function) => {
                    let text = self.decorated_text(&function.decorator_list, statement);
                    add_definition(
                        into,
                        format!("{prefix}.{}", function.name),
                        DefinitionKind::Function,
                        text,
                        Vec::new(),
                    );
                }
                Stmt::AsyncFunctionDef(function) => {
                    let text = self.decorated_text(&function.decorator_list, statement);
                    add_definition(
                        into,
                        format!("{prefix}.{}", function.name),
                        DefinitionKind::Function,
                        text,
                        Vec::new(),
                    );
                }
                Stmt::ClassDef(class) => {
                    let name = format!("{prefix}.{}", class.name);
                    let text = self.class_text(class, statement);
                    let bases = class.bases.iter().filter_map(chain).collect();
                    add_definition(into, name.clone(), DefinitionKind::Class, text, bases);
                    self.collect_definitions(&class.body, &name, false, into);
                }
                Stmt::Assign(assign) if module_level => {
                    for target in &assign.targets {
                        for name in assigned_names(target) {
                            let text = self.slice(statement.range());
                            add_definition(
                                into,
                                format!("{prefix}.{name}"),
                                DefinitionKind::Variable,
                                text,
                                Vec::new(),
                            );
                        }
                    }
                }
                Stmt::AnnAssign(assign) if module_level => {
                    for name in assigned_names(&assign.target) {
                        let text = self.slice(statement.range());
                        add_definition(
                            into,
                            format!("{prefix}.{name}"),
                            DefinitionKind::Variable,
                            text,
                            Vec::new(),
                        );
                    }
                }
                Stmt::If(block) => {
                    self.collect_definitions(&block.body, prefix, module_level, into);
                    self.collect_definitions(&block.orelse, prefix, module_level, into);
                }
                Stmt::Try(block) => {
                    self.collect_definitions(&block.body, prefix, module_level, into);
                    for handler in &block.handlers {
                        let ast::ExceptHandler::ExceptHandler(handler) = handler;
                        self.collect_definitions(&handler.body, prefix, module_level, into);
                    }
                    self.collect_definitions(&block.orelse, prefix, module_level, into);
                    self.collect_definitions(&block.finalbody, prefix, module_level, into);
                }
                _ => {}
            }
        }
    }

    /// The decorators' text followed by the definition's (the parser's range may or may not cover
    /// the decorators; either way the text is the same at both commits for the same source).
    fn decorated_text(&self, decorators: &[Expr], statement: &Stmt) -> String {
        let mut text = String::new();
        for decorator in decorators {
            text.push('@');
            text.push_str(&self.slice(decorator.range()));
            text.push('\n');
        }
        text.push_str(&self.slice(statement.range()));
        text
    }

    /// A class's text without its directly nested function and class definitions: the header and
    /// the other body statements, each as written. Built from statements rather than by cutting the
    /// nested definitions out, so removing a method leaves no stray blank lines that would read as a
    /// change to the class itself.
    fn class_text(&self, class: &ast::StmtClassDef, statement: &Stmt) -> String {
        let mut text = String::new();
        for decorator in &class.decorator_list {
            text.push('@');
            text.push_str(&self.slice(decorator.range()));
            text.push('\n');
        }
        let start = statement.range().start().to_usize();
        let header_end = class
            .body
            .first()
            .map(start_with_decorators)
            .unwrap_or(statement.range().end().to_usize());
        text.push_str(self.text[start..header_end].trim_end());
        for nested in &class.body {
            if !matches!(
                nested,
                Stmt::FunctionDef(_) | Stmt::AsyncFunctionDef(_) | Stmt::ClassDef(_)
            ) {
                text.push('\n');
                text.push_str(&self.slice(nested.range()));
            }
        }
        text
    }

    fn slice(&self, range: ast::text_size::TextRange) -> String {
        self.text[range.start().to_usize()..range.end().to_usize()].to_string()
    }

    /// The pytest fixtures defined at module level or in a class body, in order.
    pub fn fixtures(&self) -> Vec<Fixture> {
        let mut fixtures = Vec::new();
        collect_fixtures(&self.suite, &mut fixtures);
        fixtures
    }

    /// The methods of the module-level class `class` (for a test's `setUp`), empty when absent.
    pub fn methods_of(&self, class: &str) -> Vec<ast::StmtFunctionDef> {
        self.suite
            .iter()
            .filter_map(|statement| match statement {
                Stmt::ClassDef(found) if found.name.as_str() == class => Some(found),
                _ => None,
            })
            .flat_map(|found| found.body.iter())
            .filter_map(|statement| match statement {
                Stmt::FunctionDef(function) => Some(function.clone()),
                _ => None,
            })
            .collect()
    }
}

/// Where one definition sits in its file: its qualified name within the module (`Client.get`) and
/// its first (decorators included) and last 1-based lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefinitionLines {
    pub name: String,
    pub first: u32,
    pub last: u32,
}

impl ParsedModule {
    /// Every function, class and module-level variable with its line range, outermost first, so a
    /// line can be mapped to the innermost definition holding it (a `path:line` citation).
    pub fn definition_lines(&self) -> Vec<DefinitionLines> {
        let starts: Vec<usize> = std::iter::once(0)
            .chain(self.text.match_indices('\n').map(|(at, _)| at + 1))
            .collect();
        let line_of = |offset: usize| starts.partition_point(|start| *start <= offset) as u32;
        let mut found = Vec::new();
        collect_lines(&self.suite, "", true, &mut |name, statement| {
            let start = start_with_decorators(statement);
            let end = statement
                .range()
                .end()
                .to_usize()
                .saturating_sub(1)
                .max(start);
            found.push(DefinitionLines {
                name,
                first: line_of(start),
                last: line_of(end),
            });
        });
        found
    }
}

fn collect_lines(
    body: &[Stmt],
    prefix: &str,
    module_level: bool,
    found: &mut dyn FnMut(String, &Stmt),
) {
    let qualified = |name: &str| match prefix {
        "" => name.to_string(),
        _ => format!("{prefix}.{name}"),
    };
    for statement in body {
        match statement {
            Stmt::FunctionDef(function) => found(qualified(&function.name), statement),
            Stmt::AsyncFunctionDef(function) => found(qualified(&function.name), statement),
            Stmt::ClassDef(class) => {
                let name = qualified(&class.name);
                found(name.clone(), statement);
                collect_lines(&class.body, &name, false, found);
            }
            Stmt::Assign(assign) if module_level => {
                for name in assign.targets.iter().flat_map(assigned_names) {
                    found(qualified(&name), statement);
                }
            }
            Stmt::AnnAssign(assign) if module_level => {
                for name in assigned_names(&assign.target) {
                    found(qualified(&name), statement);
                }
            }
            Stmt::If(block) => {
                collect_lines(&block.body, prefix, module_level, found);
                collect_lines(&block.orelse, prefix, module_level, found);
            }
            Stmt::Try(block) => {
                collect_lines(&block.body, prefix, module_level, found);
                for handler in &block.handlers {
                    let ast::ExceptHandler::ExceptHandler(handler) = handler;
                    collect_lines(&handler.body, prefix, module_level, found);
                }
                collect_lines(&block.orelse, prefix, module_level, found);
                collect_lines(&block.finalbody, prefix, module_level, found);
            }
            _ => {}
        }
    }
}

fn add_definition(
    into: &mut BTreeMap<String, Definition>,
    name: String,
    kind: DefinitionKind,
    text: String,
    bases: Vec<Vec<String>>,
) {
    into.entry(name)
        .and_modify(|existing| {
            existing.text.push('\n');
            existing.text.push_str(&text);
            existing.bases.extend(bases.iter().cloned());
        })
        .or_insert(Definition { kind, text, bases });
}

/// Where a statement starts, counting the decorators of a decorated definition (the `@` sits one
/// byte before the decorator expression).
fn start_with_decorators(statement: &Stmt) -> usize {
    let decorators = match statement {
        Stmt::FunctionDef(function) => function.decorator_list.as_slice(),
        Stmt::AsyncFunctionDef(function) => function.decorator_list.as_slice(),
        Stmt::ClassDef(class) => class.decorator_list.as_slice(),
        _ => &[],
    };
    decorators
        .iter()
        .map(|decorator| decorator.range().start().to_usize().saturating_sub(1))
        .chain([statement.range().start().to_usize()])
        .min()
        .unwrap_or_default()
}

fn assigned_names(target: &Expr) -> Vec<String> {
    match target {
        Expr::Name(name) => vec![name.id.to_string()],
        Expr::Tuple(tuple) => tuple.elts.iter().flat_map(assigned_names).collect(),
        Expr::List(list) => list.elts.iter().flat_map(assigned_names).collect(),
        _ => Vec::new(),
    }
}

fn collect_fixtures(body: &[Stmt], into: &mut Vec<Fixture>) {
    for statement in body {
        match statement {
            Stmt::FunctionDef(function) => {
                if let Some(name) = fixture_name(function) {
                    into.push(Fixture {
                        name,
                        function: function.clone(),
                    });
                }
            }
            Stmt::ClassDef(class) => collect_fixtures(&class.body, into),
            _ => {}
        }
    }
}

/// The registered name when `function` is decorated as a fixture (`@pytest.fixture`,
/// `@fixture(...)`, `@pytest.yield_fixture`, `@pytest_asyncio.fixture`).
fn fixture_name(function: &ast::StmtFunctionDef) -> Option<String> {
    for decorator in &function.decorator_list {
        let (callee, keywords) = match decorator {
            Expr::Call(call) => (call.func.as_ref(), call.keywords.as_slice()),
            other => (other, [].as_slice()),
        };
        let Some(path) = chain(callee) else { continue };
        let last = path.last().map(String::as_str);
        if !matches!(last, Some("fixture" | "yield_fixture")) {
            continue;
        }
        let registered = keywords.iter().find_map(|keyword| {
            match (keyword.arg.as_ref().map(|arg| arg.as_str()), &keyword.value) {
                (Some("name"), Expr::Constant(constant)) => match &constant.value {
                    Constant::Str(name) => Some(name.clone()),
                    _ => None,
                },
                _ => None,
            }
        });
        return Some(registered.unwrap_or_else(|| function.name.to_string()));
    }
    None
}

/// Parses one function's source (a test as the claim records it, possibly an indented method).
pub fn parse_function(path: &str, source: &str) -> Result<ast::StmtFunctionDef, ParseFailure> {
    let dedented = dedent(source);
    let module = ParsedModule::parse(path, &dedented)?;
    module
        .suite
        .into_iter()
        .find_map(|statement| match statement {
            Stmt::FunctionDef(function) => Some(function),
            // An async test is read as a plain function: only its names matter here.
            Stmt::AsyncFunctionDef(function) => Some(ast::StmtFunctionDef {
                range: function.range,
                name: function.name,
                args: function.args,
                body: function.body,
                decorator_list: function.decorator_list,
                returns: function.returns,
                type_comment: function.type_comment,
                type_params: function.type_params,
            }),
            _ => None,
        })
        .ok_or_else(|| ParseFailure {
            path: path.to_string(),
            message: "the claim's source holds no function definition".to_string(),
        })
}

/// Removes the indentation common to every non-blank line.
pub fn dedent(source: &str) -> String {
    let indent = source
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = String::with_capacity(source.len());
    for line in source.lines() {
        out.push_str(line.get(indent..).unwrap_or("").trim_end_matches('\r'));
        out.push('\n');
    }
    out
}

/// The parameter names of a function, in order (including `self`).
pub fn parameters(function: &ast::StmtFunctionDef) -> Vec<String> {
    let arguments = &function.args;
    arguments
        .posonlyargs
        .iter()
        .chain(&arguments.args)
        .chain(&arguments.kwonlyargs)
        .map(|argument| argument.def.arg.to_string())
        .collect()
}

/// The dotted name an expression spells (`a.b.c` → `["a","b","c"]`), if it is a name or a chain of
/// attributes on a name.
pub fn chain(expression: &Expr) -> Option<Vec<String>> {
    match expression {
        Expr::Name(name) => Some(vec![name.id.to_string()]),
        Expr::Attribute(attribute) => {
            let mut names = chain(&attribute.value)?;
            names.push(attribute.attr.to_string());
            Some(names)
        }
        _ => None,
    }
}

/// The names a function (or a block of statements) references, as written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct References {
    /// Every name and attribute chain rooted at a name (`cache.get` → `["cache","get"]`).
    pub chains: BTreeSet<Vec<String>>,
    /// The chains that are called (`Cache()`), so a constructed class brings in `__init__`.
    pub calls: BTreeSet<Vec<String>>,
    /// Local names (or `self.x` chains, dotted) bound to the result of calling a chain
    /// (`c = Cache()` → `c` → `["Cache"]`); the first binding wins.
    pub bindings: BTreeMap<String, Vec<String>>,
    /// Attributes read from a call's result (`Cache().get` → (`["Cache"]`, `get`)).
    pub receiver_calls: BTreeSet<(Vec<String>, String)>,
    /// Attributes read from values that are neither names nor calls of a name (`x[0].pop`), and
    /// the special methods syntax and builtins call implicitly (`len(x)` calls `__len__`, `x[k]`
    /// calls `__getitem__`, `a == b` calls `__eq__`, `for` calls `__iter__`); whose class they run
    /// on is unknown here, so they are bare attributes.
    pub loose_attributes: BTreeSet<String>,
    /// What the function returns or yields, when that is a call of a chain or a bound name
    /// (a fixture's product).
    pub returned: Vec<Vec<String>>,
    /// Import statements inside the function.
    pub imports: Vec<Import>,
}

impl References {
    /// The names `function` references: its body, parameter annotations and defaults, decorators.
    pub fn of_function(function: &ast::StmtFunctionDef) -> Self {
        let mut collector = ReferenceCollector::default();
        collector.visit_stmt(Stmt::FunctionDef(function.clone()));
        collector.finish()
    }
}

#[derive(Default)]
struct ReferenceCollector {
    references: References,
    /// Returned bare names, resolved through bindings at the end.
    returned_names: Vec<String>,
}

impl ReferenceCollector {
    fn finish(mut self) -> References {
        for name in std::mem::take(&mut self.returned_names) {
            if let Some(callee) = self.references.bindings.get(&name).cloned() {
                self.references.returned.push(callee);
            }
        }
        self.references
    }

    fn note_product(&mut self, value: &Expr) {
        match value {
            Expr::Call(call) => {
                if let Some(callee) = chain(&call.func) {
                    self.references.returned.push(callee);
                }
            }
            Expr::Name(name) => self.returned_names.push(name.id.to_string()),
            _ => {}
        }
    }

    fn bind(&mut self, target: &Expr, value: &Expr) {
        if let (Some(target), Expr::Call(call)) = (chain(target), value)
            && let Some(callee) = chain(&call.func)
        {
            self.references
                .bindings
                .entry(target.join("."))
                .or_insert(callee);
        }
    }
}

/// The special method a builtin calls on its argument.
fn builtin_special_method(builtin: &str) -> Option<&'static str> {
    Some(match builtin {
        "len" => "__len__",
        "iter" | "list" | "tuple" | "set" | "frozenset" | "sorted" | "sum" | "min" | "max"
        | "any" | "all" | "enumerate" | "zip" => "__iter__",
        "next" => "__next__",
        "repr" => "__repr__",
        "str" => "__str__",
        "bool" => "__bool__",
        "hash" => "__hash__",
        "reversed" => "__reversed__",
        "abs" => "__abs__",
        "int" => "__int__",
        "float" => "__float__",
        "format" => "__format__",
        _ => return None,
    })
}

fn comparison_special_method(operator: &ast::CmpOp) -> Option<&'static str> {
    use ast::CmpOp;
    Some(match operator {
        CmpOp::Eq => "__eq__",
        CmpOp::NotEq => "__ne__",
        CmpOp::Lt => "__lt__",
        CmpOp::LtE => "__le__",
        CmpOp::Gt => "__gt__",
        CmpOp::GtE => "__ge__",
        CmpOp::In | CmpOp::NotIn => "__contains__",
        CmpOp::Is | CmpOp::IsNot => return None,
    })
}

fn operator_special_method(operator: &ast::Operator) -> &'static str {
    use ast::Operator;
    match operator {
        Operator::Add => "__add__",
        Operator::Sub => "__sub__",
        Operator::Mult => "__mul__",
        Operator::MatMult => "__matmul__",
        Operator::Div => "__truediv__",
        Operator::Mod => "__mod__",
        Operator::Pow => "__pow__",
        Operator::LShift => "__lshift__",
        Operator::RShift => "__rshift__",
        Operator::BitOr => "__or__",
        Operator::BitXor => "__xor__",
        Operator::BitAnd => "__and__",
        Operator::FloorDiv => "__floordiv__",
    }
}

impl ReferenceCollector {
    fn implicit(&mut self, method: &str) {
        self.references.loose_attributes.insert(method.to_string());
    }
}

impl Visitor for ReferenceCollector {
    fn visit_expr_subscript(&mut self, node: ast::ExprSubscript) {
        self.implicit(match node.ctx {
            ast::ExprContext::Load => "__getitem__",
            ast::ExprContext::Store => "__setitem__",
            ast::ExprContext::Del => "__delitem__",
        });
        self.generic_visit_expr_subscript(node);
    }

    fn visit_expr_compare(&mut self, node: ast::ExprCompare) {
        for operator in &node.ops {
            if let Some(method) = comparison_special_method(operator) {
                self.implicit(method);
            }
        }
        self.generic_visit_expr_compare(node);
    }

    fn visit_expr_bin_op(&mut self, node: ast::ExprBinOp) {
        self.implicit(operator_special_method(&node.op));
        self.generic_visit_expr_bin_op(node);
    }

    fn visit_stmt_aug_assign(&mut self, node: ast::StmtAugAssign) {
        let method = operator_special_method(&node.op);
        self.implicit(&method.replacen("__", "__i", 1));
        self.implicit(method);
        // `x[k] += 1` reads the item before it writes it back.
        if matches!(node.target.as_ref(), Expr::Subscript(_)) {
            self.implicit("__getitem__");
        }
        self.generic_visit_stmt_aug_assign(node);
    }

    fn visit_stmt_for(&mut self, node: ast::StmtFor) {
        self.implicit("__iter__");
        self.generic_visit_stmt_for(node);
    }

    fn visit_comprehension(&mut self, node: ast::Comprehension) {
        self.implicit("__iter__");
        self.generic_visit_comprehension(node);
    }

    fn visit_expr_name(&mut self, node: ast::ExprName) {
        self.references.chains.insert(vec![node.id.to_string()]);
    }

    fn visit_expr_attribute(&mut self, node: ast::ExprAttribute) {
        let expression = Expr::Attribute(node.clone());
        if let Some(names) = chain(&expression) {
            self.references.chains.insert(names);
            return;
        }
        match node.value.as_ref() {
            Expr::Call(call) if chain(&call.func).is_some() => {
                let callee = chain(&call.func).unwrap_or_default();
                self.references
                    .receiver_calls
                    .insert((callee, node.attr.to_string()));
            }
            _ => {
                self.references
                    .loose_attributes
                    .insert(node.attr.to_string());
            }
        }
        self.generic_visit_expr_attribute(node);
    }

    fn visit_expr_call(&mut self, node: ast::ExprCall) {
        if let Some(callee) = chain(&node.func) {
            if let [builtin] = callee.as_slice()
                && let Some(method) = builtin_special_method(builtin)
            {
                self.implicit(method);
            }
            self.references.calls.insert(callee);
        }
        self.generic_visit_expr_call(node);
    }

    fn visit_stmt_assign(&mut self, node: ast::StmtAssign) {
        for target in &node.targets {
            self.bind(target, &node.value);
        }
        self.generic_visit_stmt_assign(node);
    }

    fn visit_stmt_ann_assign(&mut self, node: ast::StmtAnnAssign) {
        if let Some(value) = &node.value {
            self.bind(&node.target, value);
        }
        self.generic_visit_stmt_ann_assign(node);
    }

    fn visit_withitem(&mut self, node: ast::WithItem) {
        self.implicit("__enter__");
        self.implicit("__exit__");
        if let Some(target) = &node.optional_vars {
            self.bind(target, &node.context_expr);
        }
        self.generic_visit_withitem(node);
    }

    fn visit_stmt_return(&mut self, node: ast::StmtReturn) {
        if let Some(value) = &node.value {
            self.note_product(value);
        }
        self.generic_visit_stmt_return(node);
    }

    fn visit_expr_yield(&mut self, node: ast::ExprYield) {
        if let Some(value) = &node.value {
            self.note_product(value);
        }
        self.generic_visit_expr_yield(node);
    }

    fn visit_stmt_import(&mut self, node: ast::StmtImport) {
        self.references
            .imports
            .extend(imports_in(&[Stmt::Import(node)]));
    }

    fn visit_stmt_import_from(&mut self, node: ast::StmtImportFrom) {
        self.references
            .imports
            .extend(imports_in(&[Stmt::ImportFrom(node)]));
    }
}

fn imports_in(body: &[Stmt]) -> Vec<Import> {
    #[derive(Default)]
    struct ImportCollector {
        imports: Vec<Import>,
    }
    impl Visitor for ImportCollector {
        fn visit_stmt_import(&mut self, node: ast::StmtImport) {
            for alias in node.names {
                self.imports.push(Import::Module {
                    name: alias.name.to_string(),
                    alias: alias.asname.map(|name| name.to_string()),
                });
            }
        }
        fn visit_stmt_import_from(&mut self, node: ast::StmtImportFrom) {
            self.imports.push(Import::From {
                level: node.level.map(|level| level.to_u32()).unwrap_or(0),
                module: node.module.map(|name| name.to_string()),
                names: node
                    .names
                    .into_iter()
                    .map(|alias| {
                        (
                            alias.name.to_string(),
                            alias.asname.map(|name| name.to_string()),
                        )
                    })
                    .collect(),
            });
        }
    }
    let mut collector = ImportCollector::default();
    for statement in body {
        collector.visit_stmt(statement.clone());
    }
    collector.imports
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = r#"
import os.path
from . import sibling
from ..pkg import thing as other
import pytest

LIMIT = 3

class A(Base):
    @staticmethod
    def make():
        return A()

    size = 1

    def pop(self):
        return 1

    @property
    def value(self):
        return 2

class B:
    def pop(self):
        return 3

@pytest.fixture(name="cr")
def make_cache():
    c = Cache(maxsize=2)
    yield c

@pytest.fixture
def plain():
    return helpers.build()
"#;

    fn module() -> ParsedModule {
        ParsedModule::parse("pkg/mod.py", SOURCE).unwrap()
    }

    #[test]
    fn keys_definitions_by_qualified_name() {
        let definitions = module().definitions("pkg.mod");
        let names: Vec<&str> = definitions.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "pkg.mod.A",
                "pkg.mod.A.make",
                "pkg.mod.A.pop",
                "pkg.mod.A.value",
                "pkg.mod.B",
                "pkg.mod.B.pop",
                "pkg.mod.LIMIT",
                "pkg.mod.make_cache",
                "pkg.mod.plain",
            ]
        );
        let class = &definitions["pkg.mod.A"];
        assert_eq!(class.kind, DefinitionKind::Class);
        assert!(class.text.contains("size = 1"));
        assert!(!class.text.contains("def pop"), "{}", class.text);
        assert!(!class.text.contains("property"), "{}", class.text);
        assert!(!class.text.contains("staticmethod"), "{}", class.text);
        assert!(class.text.starts_with("class A(Base):\n"), "{}", class.text);
        assert_eq!(class.bases, vec![vec!["Base".to_string()]]);
        assert!(definitions["pkg.mod.A.value"].text.contains("@property"));
    }

    #[test]
    fn reads_imports_with_levels_and_aliases() {
        assert_eq!(
            module().imports()[..3],
            [
                Import::Module {
                    name: "os.path".into(),
                    alias: None
                },
                Import::From {
                    level: 1,
                    module: None,
                    names: vec![("sibling".into(), None)]
                },
                Import::From {
                    level: 2,
                    module: Some("pkg".into()),
                    names: vec![("thing".into(), Some("other".into()))]
                },
            ]
        );
    }

    #[test]
    fn finds_fixtures_by_registered_name_and_what_they_make() {
        let fixtures = module().fixtures();
        let names: Vec<&str> = fixtures
            .iter()
            .map(|fixture| fixture.name.as_str())
            .collect();
        assert_eq!(names, ["cr", "plain"]);
        let made = References::of_function(&fixtures[0].function);
        assert_eq!(made.returned, vec![vec!["Cache".to_string()]]);
        let plain = References::of_function(&fixtures[1].function);
        assert_eq!(
            plain.returned,
            vec![vec!["helpers".to_string(), "build".to_string()]]
        );
    }

    #[test]
    fn collects_references_of_an_indented_test_method() {
        let source = "    def test_x(self, cr):\n        c = Cache()\n        assert c.get(1) is None\n        assert make().pop() == 1\n        assert xs[0].clear() is None\n";
        let function = parse_function("tests/test_x.py", source).unwrap();
        assert_eq!(parameters(&function), ["self", "cr"]);
        let references = References::of_function(&function);
        assert!(
            references
                .chains
                .contains(&vec!["c".to_string(), "get".to_string()])
        );
        assert!(references.calls.contains(&vec!["Cache".to_string()]));
        assert_eq!(references.bindings["c"], vec!["Cache".to_string()]);
        assert!(
            references
                .receiver_calls
                .contains(&(vec!["make".to_string()], "pop".to_string()))
        );
        assert!(references.loose_attributes.contains("clear"));
    }

    #[test]
    fn syntax_and_builtins_reference_special_methods() {
        let source = "def test_x(t):\n    assert len(t) == 2\n    assert 'a' in t\n    t['b'] += 1\n    assert [k for k in t]\n";
        let function = parse_function("tests/test_x.py", source).unwrap();
        let loose = References::of_function(&function).loose_attributes;
        let expected = [
            "__add__",
            "__contains__",
            "__eq__",
            "__getitem__",
            "__iadd__",
            "__iter__",
            "__len__",
            "__setitem__",
        ];
        assert_eq!(
            loose.iter().map(String::as_str).collect::<Vec<_>>(),
            expected
        );
    }

    #[test]
    fn reports_unparsable_source() {
        let failure = ParsedModule::parse("py2.py", "print 'hello'\n")
            .err()
            .unwrap();
        assert!(failure.to_string().starts_with("parse py2.py:"));
    }

    #[test]
    fn definition_lines_span_decorators_and_nest_methods() {
        let module = ParsedModule::parse("m.py", SOURCE).unwrap();
        let lines = module.definition_lines();
        let find = |name: &str| {
            lines
                .iter()
                .find(|found| found.name == name)
                .map(|found| (found.first, found.last))
        };
        assert_eq!(find("LIMIT"), Some((7, 7)));
        assert_eq!(find("A"), Some((9, 21)));
        assert_eq!(find("A.make"), Some((10, 12)));
        assert_eq!(find("A.value"), Some((19, 21)));
        assert_eq!(find("B.pop"), Some((24, 25)));
    }
}
