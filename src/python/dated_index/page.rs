//! One project's page of the dated index: the upstream index's PEP 691 JSON read into
//! [`ProjectFiles`], and written back as a PEP 503 HTML page holding only the files uploaded
//! before a cutoff. HTML is what every pip reads (pip 18 on Python 3.6, 19 on 2.7), and a file
//! keeps its place on the upstream: the page links there, with its hash, `Requires-Python` and
//! yanked state as the upstream gave them.

use std::collections::BTreeMap;
use std::fmt::Write;

use reqwest::Url;
use serde::Deserialize;

use super::cutoff::{ReleaseCutoff, upload_seconds};
use crate::python::specifier::SpecifierSet;
use crate::python::version::PythonVersion;
use crate::view::escape::html;

/// One file of a project as the dated index offers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedFile {
    pub filename: String,
    /// Where the upstream serves it, absolute, with its hash as the fragment (`#sha256=…`).
    pub url: String,
    /// Its `Requires-Python`, when it declares one.
    pub requires_python: Option<String>,
    /// The reason it was yanked (empty when none was given); `None` when it is not yanked.
    pub yanked: Option<String>,
    /// Its upload time, seconds since the epoch.
    pub uploaded: i64,
    /// The hash of its metadata file (`sha256=…`, or `true`), when the upstream serves one
    /// beside it (PEP 658/714), so that a new pip resolves without downloading it.
    pub metadata: Option<String>,
}

/// A project's files, from the upstream index's JSON page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectFiles {
    /// The project's name as the upstream spells it.
    pub name: String,
    pub files: Vec<IndexedFile>,
}

/// Why a project's JSON page could not be read into files the dated index can bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    /// The page is not PEP 691 JSON.
    #[error("read the package index's JSON page of `{project}`: {reason}")]
    Unreadable { project: String, reason: String },
    /// A file has no upload time (an index without PEP 700), so nothing says whether it came
    /// before the cutoff.
    #[error(
        "the package index gives no upload time for `{filename}` of `{project}`, so it cannot \
         bound releases by date"
    )]
    Undated { project: String, filename: String },
}

/// A project's page as PEP 691 writes it (only what the dated index uses).
#[derive(Deserialize)]
struct JsonPage {
    #[serde(default)]
    name: Option<String>,
    files: Vec<JsonFile>,
}

#[derive(Deserialize)]
struct JsonFile {
    filename: String,
    url: String,
    #[serde(default)]
    hashes: BTreeMap<String, String>,
    #[serde(default, rename = "requires-python")]
    requires_python: Option<String>,
    /// `false`, `true`, or the reason as a string.
    #[serde(default)]
    yanked: serde_json::Value,
    #[serde(default, rename = "upload-time")]
    upload_time: Option<String>,
    /// PEP 714's name, then PEP 658's.
    #[serde(default, rename = "core-metadata")]
    core_metadata: serde_json::Value,
    #[serde(default, rename = "dist-info-metadata")]
    dist_info_metadata: serde_json::Value,
}

/// The hash algorithms pip checks, most preferred first.
const HASHES: [&str; 5] = ["sha256", "sha384", "sha512", "sha224", "md5"];

impl ProjectFiles {
    /// Reads `project`'s JSON page, fetched from `page_url` (relative file URLs resolve against
    /// it). Every file must carry an upload time.
    pub fn from_json(project: &str, page_url: &Url, json: &[u8]) -> Result<Self, PageError> {
        let unreadable = |reason: String| PageError::Unreadable {
            project: project.to_string(),
            reason,
        };
        let page: JsonPage =
            serde_json::from_slice(json).map_err(|error| unreadable(error.to_string()))?;
        let mut files = Vec::with_capacity(page.files.len());
        for file in page.files {
            let uploaded = file
                .upload_time
                .as_deref()
                .and_then(upload_seconds)
                .ok_or_else(|| PageError::Undated {
                    project: project.to_string(),
                    filename: file.filename.clone(),
                })?;
            let mut url = page_url.join(&file.url).map_err(|error| {
                unreadable(format!(
                    "the URL `{}` of `{}`: {error}",
                    file.url, file.filename
                ))
            })?;
            let hash = HASHES
                .iter()
                .find_map(|name| Some(format!("{name}={}", file.hashes.get(*name)?)));
            url.set_fragment(hash.as_deref());
            let yanked = match file.yanked {
                serde_json::Value::String(reason) => Some(reason),
                serde_json::Value::Bool(true) => Some(String::new()),
                _ => None,
            };
            let metadata = metadata_hash(&file.core_metadata)
                .or_else(|| metadata_hash(&file.dist_info_metadata));
            files.push(IndexedFile {
                filename: file.filename,
                url: url.to_string(),
                requires_python: file.requires_python.filter(|text| !text.trim().is_empty()),
                yanked,
                uploaded,
                metadata,
            });
        }
        Ok(ProjectFiles {
            name: page.name.unwrap_or_else(|| project.to_string()),
            files,
        })
    }

    /// Whether no file of the project is dated before `cutoff`, though it has files: they were
    /// all uploaded again later (as atomicwrites' were, every release on 2022-07-09), or the
    /// project came later. Its upload times then say nothing of what was current at the cutoff,
    /// and it is offered whole.
    pub fn offered_whole(&self, cutoff: ReleaseCutoff) -> bool {
        !self.files.is_empty()
            && !self
                .files
                .iter()
                .any(|file| file.uploaded < cutoff.seconds())
    }

    /// The PEP 503 page of the files uploaded before `cutoff` (all of them when none was, see
    /// [`ProjectFiles::offered_whole`]).
    pub fn render(&self, cutoff: ReleaseCutoff) -> String {
        let name = html(&self.name);
        let mut page = format!(
            "<!DOCTYPE html>\n<html>\n  <head>\n    <meta name=\"pypi:repository-version\" \
             content=\"1.0\">\n    <title>Links for {name}</title>\n  </head>\n  <body>\n    \
             <h1>Links for {name}</h1>\n"
        );
        let whole = self.offered_whole(cutoff);
        for file in self
            .files
            .iter()
            .filter(|file| whole || file.uploaded < cutoff.seconds())
        {
            let _ = write!(page, "    <a href=\"{}\"", html(&file.url));
            if let Some(requires) = &file.requires_python {
                let _ = write!(page, " data-requires-python=\"{}\"", html(requires));
            }
            if let Some(reason) = &file.yanked {
                let _ = write!(page, " data-yanked=\"{}\"", html(reason));
            }
            if let Some(metadata) = &file.metadata {
                let metadata = html(metadata);
                let _ = write!(
                    page,
                    " data-core-metadata=\"{metadata}\" data-dist-info-metadata=\"{metadata}\""
                );
            }
            let _ = writeln!(page, ">{}</a><br />", html(&file.filename));
        }
        page.push_str("  </body>\n</html>\n");
        page
    }

    /// The moment just after the last file of the oldest final release `specifier` allows was
    /// uploaded (yanked releases left out): from then on that release installs. `None` when no
    /// release is allowed.
    pub fn first_release_after(&self, specifier: &SpecifierSet) -> Option<ReleaseCutoff> {
        let mut releases: BTreeMap<PythonVersion, i64> = BTreeMap::new();
        for file in self.files.iter().filter(|file| file.yanked.is_none()) {
            let Some(version) = final_version(&self.name, &file.filename) else {
                continue;
            };
            if specifier.allows(version) {
                let last = releases.entry(version).or_insert(file.uploaded);
                *last = (*last).max(file.uploaded);
            }
        }
        let (_, uploaded) = releases.into_iter().next()?;
        Some(ReleaseCutoff::from_seconds(uploaded + 1))
    }
}

/// A metadata hash as the HTML attribute writes it: `sha256=…` from `{"sha256": …}`, `true`.
fn metadata_hash(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::Bool(true) => Some("true".to_string()),
        serde_json::Value::Object(hashes) => HASHES.iter().find_map(|name| {
            let hash = hashes.get(*name)?.as_str()?;
            Some(format!("{name}={hash}"))
        }),
        _ => None,
    }
}

/// The version of a distribution file named `filename` of `project`, when it is a final release
/// (`3.5.0`; not `3.5.0rc1`, whose pip would not pick unasked).
fn final_version(project: &str, filename: &str) -> Option<PythonVersion> {
    let version = if let Some(stem) = filename
        .strip_suffix(".whl")
        .or_else(|| filename.strip_suffix(".egg"))
    {
        stem.split('-').nth(1)?
    } else {
        let stem = [".tar.gz", ".tar.bz2", ".tar.xz", ".tgz", ".zip", ".tar"]
            .iter()
            .find_map(|extension| filename.strip_suffix(extension))?;
        // The name may hold dashes (`pytest-testmon-0.9.19`); the version does not.
        let (name, version) = stem.rsplit_once('-')?;
        if crate::python::requirement_name(name)? != crate::python::requirement_name(project)? {
            return None;
        }
        version
    };
    let is_final = version
        .split('.')
        .all(|part| !part.is_empty() && part.bytes().all(|byte| byte.is_ascii_digit()));
    if is_final { version.parse().ok() } else { None }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four files of `six` as pypi.org's JSON page lists them (hashes shortened), with a yanked
    /// one and a relative URL of the kind a mirror serves.
    const SIX: &str = r#"{
      "meta": {"api-version": "1.1"},
      "name": "six",
      "versions": ["1.9.0", "1.10.0", "1.11.0"],
      "files": [
        {"filename": "six-1.9.0.tar.gz", "url": "https://files.example/six-1.9.0.tar.gz",
         "hashes": {"sha256": "aaa"}, "requires-python": null, "yanked": false,
         "upload-time": "2015-01-02T03:04:05.678901Z"},
        {"filename": "six-1.10.0-py2.py3-none-any.whl", "url": "../../packages/six-1.10.0-py2.py3-none-any.whl",
         "hashes": {"md5": "m", "sha256": "bbb"}, "requires-python": "", "yanked": "broken <wheel> & \"more\"",
         "upload-time": "2015-10-07T03:05:14.000000Z", "core-metadata": {"sha256": "ccc"}},
        {"filename": "six-1.10.0.tar.gz", "url": "https://files.example/six-1.10.0.tar.gz",
         "hashes": {"sha256": "ddd"}, "yanked": false,
         "upload-time": "2015-10-07T03:05:20Z", "dist-info-metadata": true},
        {"filename": "six-1.11.0.tar.gz", "url": "https://files.example/six-1.11.0.tar.gz",
         "hashes": {"sha256": "eee"}, "requires-python": ">=2.7, !=3.0.*", "yanked": false,
         "upload-time": "2017-09-17T18:46:53.000000Z"}
      ]
    }"#;

    fn six() -> ProjectFiles {
        let page = Url::parse("https://mirror.example/simple/six/").unwrap();
        ProjectFiles::from_json("six", &page, SIX.as_bytes()).unwrap()
    }

    #[test]
    fn the_page_holds_only_files_uploaded_before_the_cutoff() {
        // 2016-01-01T00:00:00Z: 1.9.0 and 1.10.0 were out, 1.11.0 was not.
        let page = six().render(ReleaseCutoff::from_seconds(1_451_606_400));
        insta::assert_snapshot!(page, @r#"
        <!DOCTYPE html>
        <html>
          <head>
            <meta name="pypi:repository-version" content="1.0">
            <title>Links for six</title>
          </head>
          <body>
            <h1>Links for six</h1>
            <a href="https://files.example/six-1.9.0.tar.gz#sha256=aaa">six-1.9.0.tar.gz</a><br />
            <a href="https://mirror.example/packages/six-1.10.0-py2.py3-none-any.whl#sha256=bbb" data-yanked="broken &lt;wheel&gt; &amp; &quot;more&quot;" data-core-metadata="sha256=ccc" data-dist-info-metadata="sha256=ccc">six-1.10.0-py2.py3-none-any.whl</a><br />
            <a href="https://files.example/six-1.10.0.tar.gz#sha256=ddd" data-core-metadata="true" data-dist-info-metadata="true">six-1.10.0.tar.gz</a><br />
          </body>
        </html>
        "#);
        let later = six().render(ReleaseCutoff::from_seconds(1_600_000_000));
        assert!(
            later.contains(
                "<a href=\"https://files.example/six-1.11.0.tar.gz#sha256=eee\" \
                 data-requires-python=\"&gt;=2.7, !=3.0.*\">six-1.11.0.tar.gz</a>"
            ),
            "{later}"
        );
        // The cutoff itself is not before it: a file uploaded at that second is left out.
        let at_upload = six().render(ReleaseCutoff::from_seconds(1_444_187_120));
        assert!(at_upload.contains("six-1.10.0-py2.py3-none-any.whl"));
        assert!(!at_upload.contains("six-1.10.0.tar.gz"));
    }

    #[test]
    fn a_project_with_no_file_dated_before_the_cutoff_is_offered_whole() {
        // 2014-01-01: before every upload, as 2019 is before atomicwrites' re-uploads of 2022.
        let before = ReleaseCutoff::from_seconds(1_388_534_400);
        assert!(six().offered_whole(before));
        assert_eq!(six().render(before).matches("<a href").count(), 4);
        assert!(!six().offered_whole(ReleaseCutoff::from_seconds(1_451_606_400)));
        let empty = ProjectFiles {
            name: "six".into(),
            files: vec![],
        };
        assert!(!empty.offered_whole(before));
    }

    #[test]
    fn a_file_without_an_upload_time_refuses_the_page() {
        let undated = SIX.replace(
            r#""upload-time": "2017-09-17T18:46:53.000000Z""#,
            r#""size": 1"#,
        );
        let page = Url::parse("https://mirror.example/simple/six/").unwrap();
        let error = ProjectFiles::from_json("six", &page, undated.as_bytes()).unwrap_err();
        assert_eq!(
            error,
            PageError::Undated {
                project: "six".into(),
                filename: "six-1.11.0.tar.gz".into()
            }
        );
        assert_eq!(
            error.to_string(),
            "the package index gives no upload time for `six-1.11.0.tar.gz` of `six`, so it \
             cannot bound releases by date"
        );
        let html = ProjectFiles::from_json("six", &page, b"<!DOCTYPE html><html>").unwrap_err();
        assert!(matches!(html, PageError::Unreadable { .. }), "{html}");
    }

    #[test]
    fn a_tool_requirement_moves_the_bound_past_its_oldest_release() {
        let after = |spec: &str| {
            six()
                .first_release_after(&SpecifierSet::parse(spec).unwrap())
                .map(|cutoff| cutoff.to_string())
        };
        // 1.10.0's last file (the sdist) went up at 03:05:20; its yanked wheel does not count.
        assert_eq!(
            after(">=1.10,<1.11").as_deref(),
            Some("2015-10-07T03:05:21Z")
        );
        assert_eq!(after(">=1.0").as_deref(), Some("2015-01-02T03:04:06Z"));
        assert_eq!(after("==1.11.0").as_deref(), Some("2017-09-17T18:46:54Z"));
        assert_eq!(after(">=2"), None);
    }

    #[test]
    fn versions_are_read_from_wheel_and_sdist_names() {
        let version = |project: &str, file: &str| final_version(project, file);
        assert_eq!(
            version("pytest-testmon", "pytest-testmon-0.9.19.tar.gz"),
            Some(PythonVersion::new(0, 9, 19))
        );
        assert_eq!(
            version("pytest", "pytest-3.5.0-py2.py3-none-any.whl"),
            Some(PythonVersion::new(3, 5, 0))
        );
        assert_eq!(version("pytest", "pytest-3.5.0rc1.tar.gz"), None);
        assert_eq!(version("pytest", "pytest-xdist-1.0.tar.gz"), None);
        assert_eq!(version("pytest", "pytest-3.5.0.exe"), None);
    }
}
