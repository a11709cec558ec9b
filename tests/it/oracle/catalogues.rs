//! Gettext catalogues a project compiles when it is built: the checkout its tests run in holds the
//! `.mo` files `msgfmt` would write from the tracked `.po` sources.

use claimflow::oracle::ImportErrorPolicy;

use super::fixture::{Change, FixtureRepo};
use super::library::Case;
use super::procedure::{judge_in, render};
use super::python::environment;

const CORE: &str = "def add(a, b):\n    return a + b\n";

/// French translations of a greeting (plain), a count (plural) and a menu entry (context), in
/// the layout humanize keeps its catalogues in.
const CATALOGUE: &str = r#"# French translations of pkg.
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"
"Language: fr\n"
"Plural-Forms: nplurals=2; plural=(n > 1);\n"

msgid "hello"
msgstr "bonjour"

msgid "one file"
msgid_plural "{n} files"
msgstr[0] "un fichier"
msgstr[1] "{n} fichiers"

msgctxt "menu"
msgid "Open"
msgstr "Ouvrir"
"#;

const TEST_I18N: &str = r#"import gettext
import os

import pkg
from pkg.core import add

LOCALE = os.path.join(os.path.dirname(pkg.__file__), "locale")


def french():
    return gettext.translation("pkg", localedir=LOCALE, languages=["fr"])


def test_hello():
    assert french().gettext("hello") == "bonjour"


def test_counts():
    assert french().ngettext("one file", "{n} files", 0) == "un fichier"
    assert french().ngettext("one file", "{n} files", 2) == "{n} fichiers"
    assert french().pgettext("menu", "Open") == "Ouvrir"


def test_add():
    assert add(1, 2) == 3
"#;

/// Regression (humanize: the 68 claims of a commit got no verdict): humanize tracks its catalogues
/// only as `src/humanize/locale/<lang>/LC_MESSAGES/humanize.po` and compiles them with a script of
/// its own, so `tests/test_i18n.py` found no `.mo` in a checkout that was never built. Every
/// checkout now holds the `.mo` beside each `.po` that has none.
#[test]
fn a_catalogue_tracked_only_as_po_is_compiled_for_the_tests() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut repo = FixtureRepo::init(&dir.path().join("repo"));
    let base = repo.commit(
        None,
        "A library translated into French",
        &[
            Change::Write("pkg/__init__.py", ""),
            Change::Write("pkg/core.py", CORE),
            Change::Write("pkg/locale/fr/LC_MESSAGES/pkg.po", CATALOGUE),
            Change::Write("tests/test_i18n.py", TEST_I18N),
        ],
    );
    let commit = repo.commit(
        Some(base),
        "Add counts from one",
        &[
            Change::Write("pkg/core.py", &CORE.replace("a + b", "a + b + 1")),
            Change::Write(
                "tests/test_i18n.py",
                &TEST_I18N.replace("add(1, 2) == 3", "add(1, 2) == 4"),
            ),
        ],
    );
    let judgements = judge_in(
        &repo.repository,
        &environment(),
        dir.path(),
        Case {
            parent: base,
            commit,
        },
        &[
            "tests/test_i18n.py::test_hello",
            "tests/test_i18n.py::test_counts",
            "tests/test_i18n.py::test_add",
        ],
        3,
        ImportErrorPolicy::Discard,
    );
    assert_eq!(
        render(&judgements),
        "tests/test_i18n.py::test_hello\n  label: Held\n  cause: None\n  reason: -\n  \
         parent: PPP\n  child: PPP\n\
         tests/test_i18n.py::test_counts\n  label: Held\n  cause: None\n  reason: -\n  \
         parent: PPP\n  child: PPP\n\
         tests/test_i18n.py::test_add\n  label: Flipped\n  cause: None\n  \
         reason: failed 3 of 3 runs at the child: assertion\n  parent: PPP\n  child: FFF\n"
    );
}
