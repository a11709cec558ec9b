//! Reads the literal keyword arguments of the `setup(...)` call in a `setup.py`, statically: the
//! script is never executed (it is mined code). Values that are names bound at module level to
//! literals (`install_requires=requirements`) are followed; anything computed is left out.

use std::collections::BTreeMap;

use rustpython_parser::Parse;
use rustpython_parser::ast::{self, Constant, Expr, Stmt};

/// A literal value of a `setup()` keyword.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupValue {
    String(String),
    Strings(Vec<String>),
    /// `extras_require`: group -> requirements.
    Groups(BTreeMap<String, Vec<String>>),
}

/// The literal keywords of the first `setup(...)` call, by keyword; None when the script does not
/// parse as Python 3 (a Python 2 era script) or has no such call.
pub fn setup_keywords(source: &str) -> Option<BTreeMap<String, SetupValue>> {
    let suite = ast::Suite::parse(source, "setup.py").ok()?;
    let mut bindings = BTreeMap::new();
    for statement in &suite {
        if let Stmt::Assign(assign) = statement {
            for target in &assign.targets {
                if let Expr::Name(name) = target {
                    bindings.insert(name.id.to_string(), (*assign.value).clone());
                }
            }
        }
    }
    let call = find_setup_call(&suite)?;
    let mut keywords = BTreeMap::new();
    for keyword in &call.keywords {
        match &keyword.arg {
            Some(name) => {
                if let Some(value) = literal(&keyword.value, &bindings) {
                    keywords.insert(name.to_string(), value);
                }
            }
            // `setup(**options)` with `options = dict(...)` or `{...}` bound at module level.
            None => keywords.extend(splatted(&keyword.value, &bindings)),
        }
    }
    Some(keywords)
}

fn find_setup_call(statements: &[Stmt]) -> Option<&ast::ExprCall> {
    for statement in statements {
        let found = match statement {
            Stmt::Expr(expression) => match &*expression.value {
                Expr::Call(call) if is_setup(&call.func) => Some(call),
                _ => None,
            },
            Stmt::If(branch) => {
                find_setup_call(&branch.body).or_else(|| find_setup_call(&branch.orelse))
            }
            Stmt::FunctionDef(function) => find_setup_call(&function.body),
            Stmt::With(with) => find_setup_call(&with.body),
            Stmt::Try(attempt) => find_setup_call(&attempt.body)
                .or_else(|| find_setup_call(&attempt.orelse))
                .or_else(|| {
                    attempt.handlers.iter().find_map(|handler| {
                        let ast::ExceptHandler::ExceptHandler(handler) = handler;
                        find_setup_call(&handler.body)
                    })
                }),
            _ => None,
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

fn is_setup(function: &Expr) -> bool {
    match function {
        Expr::Name(name) => name.id.as_str() == "setup",
        Expr::Attribute(attribute) => attribute.attr.as_str() == "setup",
        _ => false,
    }
}

fn splatted(value: &Expr, bindings: &BTreeMap<String, Expr>) -> BTreeMap<String, SetupValue> {
    let mut keywords = BTreeMap::new();
    let value = match value {
        Expr::Name(name) => match bindings.get(name.id.as_str()) {
            Some(bound) => bound,
            None => return keywords,
        },
        other => other,
    };
    match value {
        Expr::Dict(dict) => {
            for (key, item) in dict.keys.iter().zip(&dict.values) {
                if let Some(Expr::Constant(key)) = key
                    && let Constant::Str(key) = &key.value
                    && let Some(item) = literal(item, bindings)
                {
                    keywords.insert(key.clone(), item);
                }
            }
        }
        Expr::Call(call) if matches!(&*call.func, Expr::Name(name) if name.id.as_str() == "dict") => {
            for keyword in &call.keywords {
                if let (Some(name), Some(item)) = (&keyword.arg, literal(&keyword.value, bindings))
                {
                    keywords.insert(name.to_string(), item);
                }
            }
        }
        _ => {}
    }
    keywords
}

fn literal(value: &Expr, bindings: &BTreeMap<String, Expr>) -> Option<SetupValue> {
    match value {
        Expr::Constant(constant) => match &constant.value {
            Constant::Str(text) => Some(SetupValue::String(text.clone())),
            _ => None,
        },
        Expr::List(ast::ExprList { elts, .. }) | Expr::Tuple(ast::ExprTuple { elts, .. }) => {
            strings(elts, bindings).map(SetupValue::Strings)
        }
        Expr::BinOp(operation) if operation.op == ast::Operator::Add => {
            match (
                literal(&operation.left, bindings)?,
                literal(&operation.right, bindings)?,
            ) {
                (SetupValue::Strings(mut left), SetupValue::Strings(right)) => {
                    left.extend(right);
                    Some(SetupValue::Strings(left))
                }
                _ => None,
            }
        }
        Expr::Dict(dict) => {
            let mut groups = BTreeMap::new();
            for (key, item) in dict.keys.iter().zip(&dict.values) {
                let Some(Expr::Constant(key)) = key else {
                    continue;
                };
                let Constant::Str(key) = &key.value else {
                    continue;
                };
                match literal(item, bindings) {
                    Some(SetupValue::Strings(items)) => {
                        groups.insert(key.clone(), items);
                    }
                    Some(SetupValue::String(item)) => {
                        groups.insert(key.clone(), vec![item]);
                    }
                    _ => {}
                }
            }
            Some(SetupValue::Groups(groups))
        }
        // One level of indirection only: a name bound to a name is not followed (no cycles).
        Expr::Name(name) => match bindings.get(name.id.as_str()) {
            Some(Expr::Name(_)) | None => None,
            Some(bound) => literal(bound, bindings),
        },
        _ => None,
    }
}

fn strings(elements: &[Expr], bindings: &BTreeMap<String, Expr>) -> Option<Vec<String>> {
    let mut strings = Vec::new();
    for element in elements {
        match literal(element, bindings)? {
            SetupValue::String(text) => strings.push(text),
            _ => return None,
        }
    }
    Some(strings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_literal_keywords_and_module_level_bindings() {
        let source = r#"
import setuptools
requirements = ["six>=1.9", "attrs"]
test_requirements = ["pytest", "mock"] + ["hypothesis"]
if __name__ == "__main__":
    setuptools.setup(
        name="demo",
        python_requires=">=2.7, !=3.0.*",
        install_requires=requirements,
        tests_require=test_requirements,
        extras_require={"test": ["pytest-mock"], "docs": "sphinx"},
        classifiers=["Programming Language :: Python :: 2.7"],
        version=get_version(),
    )
"#;
        let keywords = setup_keywords(source).unwrap();
        assert_eq!(keywords["name"], SetupValue::String("demo".into()));
        assert_eq!(
            keywords["install_requires"],
            SetupValue::Strings(vec!["six>=1.9".into(), "attrs".into()])
        );
        assert_eq!(
            keywords["tests_require"],
            SetupValue::Strings(vec!["pytest".into(), "mock".into(), "hypothesis".into()])
        );
        let SetupValue::Groups(groups) = &keywords["extras_require"] else {
            panic!("extras_require is a dict");
        };
        assert_eq!(groups["test"], ["pytest-mock"]);
        assert_eq!(groups["docs"], ["sphinx"]);
        assert!(!keywords.contains_key("version"));
    }

    #[test]
    fn reads_splatted_options_and_skips_python_2_scripts() {
        let source = "from setuptools import setup\noptions = dict(name='x', python_requires='>=3.6')\nsetup(**options)\n";
        let keywords = setup_keywords(source).unwrap();
        assert_eq!(
            keywords["python_requires"],
            SetupValue::String(">=3.6".into())
        );
        assert_eq!(setup_keywords("print 'hello'\nsetup(name='x')\n"), None);
    }
}
