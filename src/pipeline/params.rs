//! A step kind's parameters: one typed struct per kind, the single source of names, types,
//! defaults, ranges and help.
//!
//! The struct derives `serde::Deserialize`, `serde::Serialize` and `schemars::JsonSchema`:
//! - a field's name is its serde name, its help is its doc comment;
//! - a default is `#[serde(default = ...)]` (a field without one, and not an `Option`, is required);
//! - a range is `#[schemars(range(min = 1))]`, stated in the error a value out of it gets;
//! - a field that must not enter the items' keys (a timeout, a slot count) is
//!   `#[serde(skip_serializing)]`: the key is the struct serialized, defaults written out;
//! - names of other things in the pipeline are typed: [`ModelName`], [`StepName`], [`RepoName`],
//!   [`ProjectFile`], so the loader checks that they exist.
//!
//! The loader checks a step's `with:` against the schema of its kind's struct (every problem at its
//! line and column), then deserializes it once into [`ParsedParams`]; the step's code reads the
//! struct with [`crate::engine::StepContext::params`].

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// What a step kind's parameter struct is.
pub trait Params:
    DeserializeOwned + Serialize + JsonSchema + fmt::Debug + Send + Sync + 'static
{
}

impl<T> Params for T where
    T: DeserializeOwned + Serialize + JsonSchema + fmt::Debug + Send + Sync + 'static
{
}

/// A kind without parameters.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// A kind's parameter struct, as the engine and loader use it without knowing its type.
#[derive(Clone, Copy)]
pub struct ParamsDecl {
    schema: fn() -> serde_json::Value,
    parse: fn(&serde_json::Value) -> Result<ParsedParams, String>,
}

impl fmt::Debug for ParamsDecl {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("ParamsDecl")
    }
}

fn schema_of<P: Params>() -> serde_json::Value {
    schema_for::<P>()
}

fn parse_of<P: Params>(with: &serde_json::Value) -> Result<ParsedParams, String> {
    // Deserialized from the borrowed value: a long `foreach:` is not copied to be parsed.
    let params = if with.is_null() {
        P::deserialize(&serde_json::Value::Object(serde_json::Map::new()))
    } else {
        P::deserialize(with)
    }
    .map_err(|error| error.to_string())?;
    let key = serde_json::to_value(&params).map_err(|error| error.to_string())?;
    Ok(ParsedParams {
        value: Arc::new(params),
        key,
    })
}

/// The JSON Schema of `T`, nested structs inlined: what the loader checks a map against and what
/// `claimflow schema` prints.
pub fn schema_for<T: JsonSchema>() -> serde_json::Value {
    schemars::generate::SchemaSettings::draft2020_12()
        .with(|settings| settings.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// The properties of an object schema, in declaration order, as the loader checks them.
pub fn specs_of(schema: &serde_json::Value) -> Vec<ParamSpec> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|list| list.iter().filter_map(|name| name.as_str()).collect())
        .unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| ParamSpec {
            name: name.clone(),
            ty: ParamType::of(property),
            required: required.contains(&name.as_str()),
            help: property["description"]
                .as_str()
                .unwrap_or_default()
                .replace('\n', " "),
            default: property.get("default").cloned(),
            minimum: property["minimum"].as_f64(),
            maximum: property["maximum"].as_f64(),
            key: property["writeOnly"] != serde_json::Value::Bool(true),
        })
        .collect()
}

/// Checks the numbers of `with` against the ranges `specs` declare: the loader reports them with
/// positions first; this catches parameters built in code.
fn check_ranges(specs: &[ParamSpec], with: &serde_json::Value) -> Result<(), String> {
    for spec in specs {
        let Some(number) = with.get(&spec.name).and_then(serde_json::Value::as_f64) else {
            continue;
        };
        let below = spec.minimum.is_some_and(|minimum| number < minimum);
        let above = spec.maximum.is_some_and(|maximum| number > maximum);
        if below || above {
            return Err(format!(
                "`{}` must be {}, found {number}",
                spec.name,
                spec.range().unwrap_or_default()
            ));
        }
    }
    Ok(())
}

impl ParamsDecl {
    /// The declaration of the struct `P`.
    pub const fn of<P: Params>() -> Self {
        ParamsDecl {
            schema: schema_of::<P>,
            parse: parse_of::<P>,
        }
    }

    /// The JSON Schema of the struct (for `claimflow schema` and editors).
    pub fn schema(&self) -> serde_json::Value {
        (self.schema)()
    }

    /// The parameters, in declaration order, as the loader checks them.
    pub fn specs(&self) -> Vec<ParamSpec> {
        specs_of(&self.schema())
    }

    /// Deserializes a `with:` (absent = no parameters) into the struct, its ranges checked.
    pub fn parse(&self, with: &serde_json::Value) -> Result<ParsedParams, String> {
        check_ranges(&self.specs(), with)?;
        (self.parse)(with)
    }
}

/// A step's parameters, parsed once when the pipeline loads.
#[derive(Clone)]
pub struct ParsedParams {
    value: Arc<dyn Any + Send + Sync>,
    key: serde_json::Value,
}

impl ParsedParams {
    /// Parameters already parsed (tests, steps built in code).
    pub fn of<P: Params>(params: P) -> Self {
        let key = serde_json::to_value(&params).expect("parameter structs serialize");
        ParsedParams {
            value: Arc::new(params),
            key,
        }
    }

    /// The struct, if it is a `P`.
    pub fn get<P: Params>(&self) -> Option<&P> {
        self.value.downcast_ref::<P>()
    }

    /// The parameters with the version of the arm the step runs in their key (`arm_version`).
    pub fn with_arm_version(mut self, version: u32) -> Self {
        if let serde_json::Value::Object(map) = &mut self.key {
            map.insert("arm_version".to_string(), version.into());
        }
        self
    }

    /// What enters every item's key: the struct serialized, defaults written out, fields marked
    /// `skip_serializing` left out.
    pub fn key(&self) -> &serde_json::Value {
        &self.key
    }
}

impl fmt::Debug for ParsedParams {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "ParsedParams({})", self.key)
    }
}

impl PartialEq for ParsedParams {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

/// The type a `with:` parameter must have; the loader checks it with positions.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamType {
    String,
    Integer,
    Number,
    Bool,
    /// One of the listed strings.
    Enum(Vec<String>),
    /// A list of strings.
    StringList,
    /// A project-relative file that must exist.
    File,
    /// The name of a `models:` entry.
    Model,
    /// The name of a step (a control naming the arm it wraps).
    Step,
    /// The name of a `repos:` entry.
    Repo,
    /// A list of step names.
    StepList,
    /// A list of `repos:` entry names.
    RepoList,
    /// A list of strings, or a single string (a glob): `foreach:`.
    StringOrList,
    /// A map from names to lists of strings (`commits: {repo: [id, ...]}`).
    ListMap,
    /// A map with keys of its own (a nested struct), checked key by key.
    Object(Vec<ParamSpec>),
    /// A map or any value the step kind checks itself.
    Any,
}

/// The extension keyword naming what a string refers to.
const REFERS: &str = "x-refers";

impl ParamType {
    /// The type a property's schema describes.
    fn of(property: &serde_json::Value) -> Self {
        match property[REFERS].as_str() {
            Some("model") => return ParamType::Model,
            Some("step") => return ParamType::Step,
            Some("repository") => return ParamType::Repo,
            Some("file") => return ParamType::File,
            _ => {}
        }
        if let Some(values) = enum_values(property) {
            return ParamType::Enum(values);
        }
        if let Some(any_of) = property["anyOf"].as_array() {
            let kinds: Vec<ParamType> = any_of
                .iter()
                .filter(|variant| variant["type"] != "null")
                .map(ParamType::of)
                .collect();
            return match kinds.as_slice() {
                [only] => only.clone(),
                _ if kinds.contains(&ParamType::String)
                    && kinds.contains(&ParamType::StringList) =>
                {
                    ParamType::StringOrList
                }
                _ => ParamType::Any,
            };
        }
        let types: Vec<&str> = match &property["type"] {
            serde_json::Value::String(name) => vec![name.as_str()],
            serde_json::Value::Array(names) => names
                .iter()
                .filter_map(|name| name.as_str())
                .filter(|name| *name != "null")
                .collect(),
            _ => Vec::new(),
        };
        match types.as_slice() {
            ["integer"] => ParamType::Integer,
            ["number"] => ParamType::Number,
            ["boolean"] => ParamType::Bool,
            ["string"] => ParamType::String,
            ["object"] if property["properties"].is_object() => {
                ParamType::Object(specs_of(property))
            }
            ["object"]
                if property["additionalProperties"]["type"] == "array"
                    && property["additionalProperties"]["items"]["type"] == "string" =>
            {
                ParamType::ListMap
            }
            ["array"] => match property["items"][REFERS].as_str() {
                Some("step") => ParamType::StepList,
                Some("repository") => ParamType::RepoList,
                _ if property["items"]["type"] == "string" => ParamType::StringList,
                _ => ParamType::Any,
            },
            _ => ParamType::Any,
        }
    }
}

/// The allowed strings of an enum property (`enum: [...]`, or `oneOf` constants when the
/// variants carry docs).
fn enum_values(property: &serde_json::Value) -> Option<Vec<String>> {
    if let Some(values) = property["enum"].as_array() {
        // An optional enum lists `null` among its values: leaving the key out says that.
        return values
            .iter()
            .filter(|value| !value.is_null())
            .map(|value| value.as_str().map(str::to_string))
            .collect();
    }
    let variants = property["oneOf"].as_array()?;
    let mut values = Vec::new();
    for variant in variants {
        if let Some(value) = variant["const"].as_str() {
            values.push(value.to_string());
        } else {
            values.extend(enum_values(variant)?);
        }
    }
    Some(values)
}

/// One parameter a step kind accepts under `with:`, as its struct declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSpec {
    pub name: String,
    pub ty: ParamType,
    pub required: bool,
    /// One line for listings and hints (the field's doc comment).
    pub help: String,
    /// The default, written out.
    pub default: Option<serde_json::Value>,
    /// The smallest value allowed, for numbers.
    pub minimum: Option<f64>,
    /// The largest value allowed, for numbers.
    pub maximum: Option<f64>,
    /// Whether the value enters the items' keys.
    pub key: bool,
}

impl ParamSpec {
    /// The allowed range in words (`at least 1`, `between 0 and 1`), if the parameter has one.
    pub fn range(&self) -> Option<String> {
        let number = |value: f64| {
            if value.fract() == 0.0 && value.abs() < 1e15 {
                format!("{}", value as i64)
            } else {
                format!("{value}")
            }
        };
        match (self.minimum, self.maximum) {
            (Some(min), Some(max)) => Some(format!("between {} and {}", number(min), number(max))),
            (Some(min), None) => Some(format!("at least {}", number(min))),
            (None, Some(max)) => Some(format!("at most {}", number(max))),
            (None, None) => None,
        }
    }
}

macro_rules! reference {
    ($(#[$doc:meta])* $name:ident, $refers:literal, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str(&self.0)
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({"type": "string", "description": $what, "x-refers": $refers})
            }
        }
    };
}

reference!(
    /// The name of a `models:` entry.
    ModelName,
    "model",
    "the name of a `models:` entry"
);
reference!(
    /// The name of another step of the pipeline, which this step needs.
    StepName,
    "step",
    "the name of a step this step needs"
);
reference!(
    /// The name of a `repos:` entry.
    RepoName,
    "repository",
    "the name of a `repos:` entry"
);
reference!(
    /// A project-relative file that must exist when the pipeline loads.
    ProjectFile,
    "file",
    "a file, relative to the project root"
);

/// A list of strings, or one string (a glob).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ListOrGlob {
    /// A glob matched in the project root.
    Glob(String),
    /// The elements themselves.
    List(Vec<String>),
}

/// Read by its shape, as `untagged` would, but without first copying the value into serde's
/// buffer to try each variant: a `foreach:` can list tens of thousands of elements.
impl<'de> Deserialize<'de> for ListOrGlob {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Shape;
        impl<'de> serde::de::Visitor<'de> for Shape {
            type Value = ListOrGlob;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("a glob (a string) or a list of strings")
            }

            fn visit_str<E: serde::de::Error>(self, glob: &str) -> Result<ListOrGlob, E> {
                Ok(ListOrGlob::Glob(glob.to_string()))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut elements: A,
            ) -> Result<ListOrGlob, A::Error> {
                let mut list = Vec::with_capacity(elements.size_hint().unwrap_or(0));
                while let Some(element) = elements.next_element()? {
                    list.push(element);
                }
                Ok(ListOrGlob::List(list))
            }
        }
        deserializer.deserialize_any(Shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A struct with every feature the loader reads.
    #[derive(Debug, Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Example {
        /// How many runs.
        #[serde(default = "ten")]
        #[schemars(range(min = 1))]
        runs: u32,
        /// Seconds before a run is killed.
        #[serde(default, skip_serializing)]
        timeout: Option<f64>,
        /// The model asked.
        model: ModelName,
        /// Which way.
        #[serde(default)]
        way: Way,
        /// Arms compared.
        #[serde(default)]
        arms: Vec<StepName>,
        /// One item each.
        #[serde(default)]
        foreach: Option<ListOrGlob>,
    }

    fn ten() -> u32 {
        10
    }

    #[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "kebab-case")]
    enum Way {
        #[default]
        Up,
        /// Downwards.
        Down,
    }

    #[test]
    fn the_struct_is_the_single_source_of_names_types_defaults_ranges_and_help() {
        let specs = ParamsDecl::of::<Example>().specs();
        let by_name = |name: &str| specs.iter().find(|spec| spec.name == name).unwrap();
        let runs = by_name("runs");
        assert_eq!(runs.ty, ParamType::Integer);
        assert!(!runs.required);
        assert_eq!(runs.help, "How many runs.");
        assert_eq!(runs.default, Some(serde_json::json!(10)));
        assert_eq!(runs.range().as_deref(), Some("at least 1"));
        assert!(runs.key);
        let timeout = by_name("timeout");
        assert_eq!(timeout.ty, ParamType::Number);
        assert!(!timeout.key);
        assert_eq!(by_name("model").ty, ParamType::Model);
        assert!(by_name("model").required);
        assert_eq!(
            by_name("way").ty,
            ParamType::Enum(vec!["up".into(), "down".into()])
        );
        assert_eq!(by_name("arms").ty, ParamType::StepList);
        assert_eq!(by_name("foreach").ty, ParamType::StringOrList);
    }

    #[test]
    fn a_foreach_is_a_glob_or_a_list_of_strings_and_nothing_else() {
        let read = |value: serde_json::Value| serde_json::from_value::<ListOrGlob>(value);
        assert_eq!(
            read(serde_json::json!("notes/*.txt")).unwrap(),
            ListOrGlob::Glob("notes/*.txt".into())
        );
        assert_eq!(
            read(serde_json::json!(["a", "b"])).unwrap(),
            ListOrGlob::List(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            read(serde_json::json!([])).unwrap(),
            ListOrGlob::List(vec![])
        );
        for wrong in [
            serde_json::json!(3),
            serde_json::json!([1]),
            serde_json::json!({"a": 1}),
        ] {
            assert!(read(wrong.clone()).is_err(), "{wrong}");
        }
        // Written back as it was read.
        let list = ListOrGlob::List(vec!["x".into()]);
        assert_eq!(
            serde_json::to_value(&list).unwrap(),
            serde_json::json!(["x"])
        );
    }

    #[test]
    fn the_key_writes_defaults_out_and_leaves_marked_fields_out() {
        let parsed = ParamsDecl::of::<Example>()
            .parse(&serde_json::json!({"model": "m", "timeout": 5.0}))
            .unwrap();
        assert_eq!(
            parsed.key(),
            &serde_json::json!({"runs": 10, "model": "m", "way": "up", "arms": [], "foreach": null})
        );
        assert_eq!(parsed.get::<Example>().unwrap().timeout, Some(5.0));
        assert!(parsed.get::<NoParams>().is_none());
    }
}
