//! Which repository module a Python file is, and which repository modules an import statement
//! loads.
//!
//! A file's module name follows Python's package rule: walk up from the file while the directory
//! holds an `__init__.py`; those directories are its packages (`src/pkg/cache.py` with
//! `src/pkg/__init__.py` is `pkg.cache`, whatever the directory above). Namespace packages have no
//! `__init__.py`, so every file is also known by its path with a leading `src/` dropped
//! (`pkg/sub/mod.py` → `pkg.sub.mod`); the package-rule name wins where both exist.
//!
//! Importing `a.b.c` executes `a/__init__.py`, `a/b/__init__.py` and `a/b/c.py`, so an import
//! loads every package on the way; `from a import b` loads `a` and, when `b` is a submodule, `a.b`.

use std::collections::{BTreeMap, BTreeSet};

use super::python::Import;

/// The Python files of one commit, by module name.
#[derive(Debug, Clone, Default)]
pub struct ModuleIndex {
    /// Module name → path (package-rule names first, path names where no package-rule name exists).
    paths: BTreeMap<String, String>,
    /// Path → its package-rule module name.
    names: BTreeMap<String, String>,
}

impl ModuleIndex {
    /// Indexes `files` (repository-relative `.py` paths).
    pub fn new(files: &BTreeSet<String>) -> Self {
        let mut index = ModuleIndex::default();
        for path in files {
            let name = package_rule_name(path, files);
            index.names.insert(path.clone(), name.clone());
            index.paths.insert(name, path.clone());
        }
        for path in files {
            index
                .paths
                .entry(path_name(path))
                .or_insert_with(|| path.clone());
        }
        index
    }

    /// The module name of `path` (its package-rule name), or its path name for a file not indexed.
    pub fn module_name(&self, path: &str) -> String {
        self.names
            .get(path)
            .cloned()
            .unwrap_or_else(|| path_name(path))
    }

    /// The file of module `module`, if it is in the repository.
    pub fn path_of(&self, module: &str) -> Option<&str> {
        self.paths.get(module).map(String::as_str)
    }

    /// The package relative imports in `path` start from: the module itself for an `__init__.py`,
    /// else its parent. A test directory without `__init__.py` falls back to the path's directories,
    /// as pytest's rootdir-relative import would see them.
    fn package_of(&self, path: &str) -> Vec<String> {
        let mut parts: Vec<String> = self
            .module_name(path)
            .split('.')
            .map(str::to_string)
            .collect();
        if !path.ends_with("__init__.py") {
            parts.pop();
        }
        if parts.is_empty() {
            parts = path_name(path).split('.').map(str::to_string).collect();
            parts.pop();
        }
        parts
    }

    /// The absolute module an import statement in `importer` names before its imported names
    /// (`from ..a import b` → the grandparent package joined with `a`), or `None` when the relative
    /// import climbs above the top package.
    pub fn from_base(&self, importer: &str, level: u32, module: Option<&str>) -> Option<String> {
        let mut parts = if level == 0 {
            Vec::new()
        } else {
            let mut package = self.package_of(importer);
            for _ in 1..level {
                package.pop()?;
            }
            package
        };
        if let Some(module) = module {
            parts.extend(module.split('.').map(str::to_string));
        }
        (!parts.is_empty()).then(|| parts.join("."))
    }

    /// The repository files `import` in `importer` loads, by path.
    pub fn loaded_by(&self, importer: &str, import: &Import) -> BTreeSet<String> {
        let mut modules = Vec::new();
        match import {
            Import::Module { name, .. } => modules.extend(prefixes(name)),
            Import::From {
                level,
                module,
                names,
            } => {
                let Some(base) = self.from_base(importer, *level, module.as_deref()) else {
                    return BTreeSet::new();
                };
                modules.extend(prefixes(&base));
                for (name, _) in names {
                    if name != "*" {
                        modules.push(format!("{base}.{name}"));
                    }
                }
            }
        }
        modules
            .iter()
            .filter_map(|module| self.path_of(module))
            .map(str::to_string)
            .collect()
    }

    /// The local names `import` binds in `importer`, each with the absolute dotted name it stands
    /// for; star imports come back as `("*", module)`.
    pub fn bindings(&self, importer: &str, import: &Import) -> Vec<(String, String)> {
        match import {
            Import::Module { name, alias: None } => {
                let head = name.split('.').next().unwrap_or(name).to_string();
                vec![(head.clone(), head)]
            }
            Import::Module {
                name,
                alias: Some(alias),
            } => vec![(alias.clone(), name.clone())],
            Import::From {
                level,
                module,
                names,
            } => {
                let Some(base) = self.from_base(importer, *level, module.as_deref()) else {
                    return Vec::new();
                };
                names
                    .iter()
                    .map(|(name, alias)| {
                        if name == "*" {
                            ("*".to_string(), base.clone())
                        } else {
                            (
                                alias.clone().unwrap_or_else(|| name.clone()),
                                format!("{base}.{name}"),
                            )
                        }
                    })
                    .collect()
            }
        }
    }
}

/// `a.b.c` → `a`, `a.b`, `a.b.c`.
fn prefixes(name: &str) -> Vec<String> {
    let parts: Vec<&str> = name.split('.').collect();
    (1..=parts.len())
        .map(|end| parts[..end].join("."))
        .collect()
}

/// The module name by the package rule (see the module docs).
fn package_rule_name(path: &str, files: &BTreeSet<String>) -> String {
    let mut directories: Vec<&str> = path.split('/').collect();
    let file = directories.pop().unwrap_or(path);
    let stem = file.strip_suffix(".py").unwrap_or(file);
    let mut parts = Vec::new();
    if stem != "__init__" {
        parts.push(stem);
    }
    while let Some(directory) = directories.last() {
        let init = format!("{}/__init__.py", directories.join("/"));
        if !files.contains(&init) {
            break;
        }
        parts.push(directory);
        directories.pop();
    }
    if parts.is_empty() {
        // A top-level `__init__.py` (the repository is itself a package): name it by its path.
        return path_name(path);
    }
    parts.reverse();
    parts.join(".")
}

/// The module name by path, with a leading `src/` dropped.
fn path_name(path: &str) -> String {
    let trimmed = path.strip_prefix("src/").unwrap_or(path);
    let trimmed = trimmed.strip_suffix(".py").unwrap_or(trimmed);
    let trimmed = trimmed.strip_suffix("/__init__").unwrap_or(trimmed);
    trimmed.replace('/', ".")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index() -> ModuleIndex {
        let files = [
            "src/pkg/__init__.py",
            "src/pkg/cache.py",
            "src/pkg/sub/__init__.py",
            "src/pkg/sub/deep.py",
            "tests/__init__.py",
            "tests/unit/__init__.py",
            "tests/unit/test_cache.py",
            "tests/unit/helpers.py",
            "loose/test_flat.py",
            "nspkg/inner/mod.py",
        ];
        ModuleIndex::new(&files.iter().map(|file| file.to_string()).collect())
    }

    fn from(level: u32, module: Option<&str>, names: &[&str]) -> Import {
        Import::From {
            level,
            module: module.map(str::to_string),
            names: names.iter().map(|name| (name.to_string(), None)).collect(),
        }
    }

    #[test]
    fn names_modules_by_package_rule_and_src_layout() {
        let index = index();
        assert_eq!(index.module_name("src/pkg/cache.py"), "pkg.cache");
        assert_eq!(index.module_name("src/pkg/__init__.py"), "pkg");
        assert_eq!(
            index.module_name("tests/unit/test_cache.py"),
            "tests.unit.test_cache"
        );
        assert_eq!(index.module_name("loose/test_flat.py"), "test_flat");
        assert_eq!(index.path_of("pkg.sub.deep"), Some("src/pkg/sub/deep.py"));
        // A namespace package is found by its path name.
        assert_eq!(index.path_of("nspkg.inner.mod"), Some("nspkg/inner/mod.py"));
    }

    #[test]
    fn resolves_relative_imports() {
        let index = index();
        let test = "tests/unit/test_cache.py";
        assert_eq!(
            index.loaded_by(test, &from(1, None, &["helpers"])),
            BTreeSet::from([
                "tests/__init__.py".to_string(),
                "tests/unit/__init__.py".to_string(),
                "tests/unit/helpers.py".to_string()
            ])
        );
        assert_eq!(
            index.from_base(test, 2, Some("pkg")),
            Some("tests.pkg".to_string())
        );
        assert_eq!(index.from_base(test, 4, None), None);
        assert_eq!(
            index.from_base("src/pkg/sub/__init__.py", 2, Some("cache")),
            Some("pkg.cache".to_string())
        );
        assert_eq!(
            index.loaded_by("src/pkg/sub/deep.py", &from(2, None, &["cache"])),
            BTreeSet::from([
                "src/pkg/__init__.py".to_string(),
                "src/pkg/cache.py".to_string()
            ])
        );
    }

    #[test]
    fn absolute_imports_load_every_package_on_the_way() {
        let index = index();
        let import = Import::Module {
            name: "pkg.sub.deep".into(),
            alias: None,
        };
        assert_eq!(
            index.loaded_by("tests/unit/test_cache.py", &import),
            BTreeSet::from([
                "src/pkg/__init__.py".to_string(),
                "src/pkg/sub/__init__.py".to_string(),
                "src/pkg/sub/deep.py".to_string()
            ])
        );
        // `from pkg import cache` loads the submodule; `from pkg import Thing` only the package.
        assert_eq!(
            index.loaded_by("t.py", &from(0, Some("pkg"), &["cache", "Thing"])),
            BTreeSet::from([
                "src/pkg/__init__.py".to_string(),
                "src/pkg/cache.py".to_string()
            ])
        );
        assert!(
            index
                .loaded_by("t.py", &from(0, Some("os"), &["path"]))
                .is_empty()
        );
    }

    #[test]
    fn binds_local_names_to_absolute_names() {
        let index = index();
        let test = "tests/unit/test_cache.py";
        assert_eq!(
            index.bindings(
                test,
                &Import::Module {
                    name: "pkg.cache".into(),
                    alias: None
                }
            ),
            [("pkg".to_string(), "pkg".to_string())]
        );
        assert_eq!(
            index.bindings(
                test,
                &Import::From {
                    level: 1,
                    module: Some("helpers".into()),
                    names: vec![("make".into(), Some("build".into())), ("*".into(), None)],
                }
            ),
            [
                ("build".to_string(), "tests.unit.helpers.make".to_string()),
                ("*".to_string(), "tests.unit.helpers".to_string())
            ]
        );
    }
}
