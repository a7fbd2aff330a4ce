//! The protobuf shape of every Kubernetes message, loaded from
//! `messages.txt` (written by `tools/k8s_pb_table.py` from the `k8s-pb`
//! crate's generated sources) and given the JSON names of its fields.
//!
//! `k8s-pb` ships prost structs only, whose field names are prost's
//! snake_case; the JSON names (`volumeID`, `$ref`, `x-kubernetes-...`) come
//! from the k8s-openapi schemas the sandbox already has
//! (`builtin::schemas`), matched field by field on their letters and
//! digits. A protobuf field with no JSON property of its own is a Go
//! struct embedded inline (`Volume.volumeSource`,
//! `ConfigMapKeySelector.localObjectReference`): its fields sit in the
//! parent's JSON object.
//!
//! What this module must NOT do: encode or decode bytes (`super` does);
//! it only describes.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

const TABLE: &str = include_str!("messages.txt");

/// Where the meta/v1 messages live (`Status`, `DeleteOptions`,
/// `WatchEvent`), which every group version shares.
const META: &str = "apimachinery.pkg.apis.meta.v1";

/// A field's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Str,
    Bool,
    I32,
    I64,
    F64,
    Bytes,
    Msg(usize),
    /// `map<string, string>`.
    MapStr,
    /// `map<string, bytes>` (a Secret's data).
    MapBytes,
    /// `map<string, Message>`.
    MapMsg(usize),
}

/// A message whose JSON form is not an object of its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    None,
    /// `metav1.Time`: an RFC 3339 string to the second.
    Time,
    /// `metav1.MicroTime`: an RFC 3339 string to the microsecond.
    MicroTime,
    /// `metav1.Duration`: a Go duration string (`1m30s`).
    Duration,
    /// `intstr.IntOrString`: a number or a string.
    IntOrString,
    /// `resource.Quantity`: its string.
    Quantity,
    /// `runtime.RawExtension`, `metav1.FieldsV1`, apiextensions `JSON`:
    /// raw JSON bytes embedded as JSON.
    RawJson,
    /// apiextensions `JSONSchemaPropsOrArray`: a schema or an array of them.
    SchemaOrArray,
    /// apiextensions `JSONSchemaPropsOrBool`: a schema or a boolean.
    SchemaOrBool,
    /// apiextensions `JSONSchemaPropsOrStringArray`: a schema or strings.
    SchemaOrStrings,
    /// `ExtraValue` (a user's extra attributes): an array of strings.
    Strings,
}

/// One field of a message.
#[derive(Debug, Clone)]
pub struct Field {
    pub number: u32,
    /// The JSON property; `None` for an inline embedded struct.
    pub json: Option<String>,
    /// prost's name, for error messages.
    pub snake: String,
    pub ty: Ty,
    pub repeated: bool,
}

/// One message.
#[derive(Debug, Clone)]
pub struct Message {
    pub path: String,
    pub special: Special,
    /// In field-number order.
    pub fields: Vec<Field>,
    /// Indexes into `fields` sorted by JSON name, for encoding an object by
    /// its own (usually few) properties instead of looking up every field
    /// of the message in it; `None` when a field is an inline struct or
    /// two fields share a name, which only a walk of the fields encodes
    /// right.
    pub by_json: Option<Vec<usize>>,
}

/// Every message, and the served kinds' messages by apiVersion and kind.
#[derive(Debug)]
pub struct Schema {
    pub messages: Vec<Message>,
    by_lower_path: HashMap<String, usize>,
    /// Module path -> message name -> message, as spelt: the lookup of
    /// every encode and decode, without building a lower-cased key.
    by_module: HashMap<String, HashMap<String, usize>>,
    /// apiVersion -> module path (`apps/v1` -> `api.apps.v1`).
    modules: HashMap<String, String>,
}

fn normal(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

fn lower_camel(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The OpenAPI definition name of a message path, lower-cased
/// (`api.core.v1.Pod` -> `io.k8s.api.core.v1.pod`).
fn definition_of(path: &str) -> String {
    let p = path
        .replacen("apiextensions_apiserver", "apiextensions-apiserver", 1)
        .replacen("kube_aggregator", "kube-aggregator", 1);
    format!("io.k8s.{p}").to_ascii_lowercase()
}

fn special_of(path: &str) -> Special {
    let Some((module, name)) = path.rsplit_once('.') else {
        return Special::None;
    };
    match (module, name) {
        (META, "Time") => Special::Time,
        (META, "MicroTime") => Special::MicroTime,
        (META, "Duration") => Special::Duration,
        (META, "FieldsV1") => Special::RawJson,
        ("apimachinery.pkg.runtime", "RawExtension") => Special::RawJson,
        ("apimachinery.pkg.util.intstr", "IntOrString") => Special::IntOrString,
        ("apimachinery.pkg.api.resource", "Quantity") => Special::Quantity,
        (m, "Json") if m.starts_with("apiextensions_apiserver") => Special::RawJson,
        (_, "ExtraValue") => Special::Strings,
        (m, "JsonSchemaPropsOrArray") if m.starts_with("apiextensions_apiserver") => {
            Special::SchemaOrArray
        }
        (m, "JsonSchemaPropsOrBool") if m.starts_with("apiextensions_apiserver") => {
            Special::SchemaOrBool
        }
        (m, "JsonSchemaPropsOrStringArray") if m.starts_with("apiextensions_apiserver") => {
            Special::SchemaOrStrings
        }
        _ => Special::None,
    }
}

/// A field line's type before message paths are resolved to indexes.
enum RawTy<'a> {
    Plain(Ty),
    Msg(&'a str),
    MapMsg(&'a str),
}

fn raw_ty(t: &str) -> Option<(RawTy<'_>, bool)> {
    let (t, repeated) = match t.strip_prefix("[]") {
        Some(rest) => (rest, true),
        None => (t, false),
    };
    let ty = match t {
        "string" => RawTy::Plain(Ty::Str),
        "bool" => RawTy::Plain(Ty::Bool),
        "int32" => RawTy::Plain(Ty::I32),
        "int64" => RawTy::Plain(Ty::I64),
        "double" => RawTy::Plain(Ty::F64),
        "bytes" => RawTy::Plain(Ty::Bytes),
        "map:string" => RawTy::Plain(Ty::MapStr),
        "map:bytes" => RawTy::Plain(Ty::MapBytes),
        other => {
            if let Some(p) = other.strip_prefix("map:msg:") {
                RawTy::MapMsg(p)
            } else {
                RawTy::Msg(other.strip_prefix("msg:")?)
            }
        }
    };
    Some((ty, repeated))
}

impl Schema {
    fn load(definitions: &serde_json::Map<String, Value>) -> Schema {
        // Definitions by lower-cased name: k8s-pb sometimes changes the case
        // of a Go type name (`AWSElasticBlockStoreVolumeSource` ->
        // `AwsElasticBlockStoreVolumeSource`).
        let defs: HashMap<String, &Value> = definitions
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect();
        let mut paths: Vec<&str> = Vec::new();
        let mut raw_fields: Vec<Vec<(u32, &str, &str)>> = Vec::new();
        let mut modules = HashMap::new();
        for line in TABLE.lines() {
            let mut parts = line.split(' ');
            match (parts.next(), parts.next(), parts.next(), parts.next()) {
                (Some("M"), Some(path), None, None) => {
                    paths.push(path);
                    raw_fields.push(Vec::new());
                }
                (Some("F"), Some(n), Some(name), Some(t)) => {
                    if let (Ok(n), Some(fields)) = (n.parse(), raw_fields.last_mut()) {
                        fields.push((n, name, t));
                    }
                }
                (Some("K"), Some(api_version), Some(_kind), Some(path)) => {
                    if let Some((module, _)) = path.rsplit_once('.') {
                        modules.insert(api_version.to_string(), module.to_string());
                    }
                }
                _ => {}
            }
        }
        let by_lower_path: HashMap<String, usize> = paths
            .iter()
            .enumerate()
            .map(|(i, p)| (p.to_ascii_lowercase(), i))
            .collect();
        let index = |p: &str| by_lower_path.get(&p.to_ascii_lowercase()).copied();
        let mut messages = Vec::with_capacity(paths.len());
        for (path, fields) in paths.iter().zip(&raw_fields) {
            let props: Option<HashMap<String, &String>> = defs
                .get(&definition_of(path))
                .and_then(|d| d.get("properties"))
                .and_then(Value::as_object)
                .map(|p| p.keys().map(|k| (normal(k), k)).collect());
            let mut out = Vec::with_capacity(fields.len());
            for (number, snake, t) in fields {
                let Some((rt, repeated)) = raw_ty(t) else {
                    continue;
                };
                let ty = match rt {
                    RawTy::Plain(ty) => ty,
                    RawTy::Msg(p) => match index(p) {
                        Some(i) => Ty::Msg(i),
                        None => continue,
                    },
                    RawTy::MapMsg(p) => match index(p) {
                        Some(i) => Ty::MapMsg(i),
                        None => continue,
                    },
                };
                let json = match &props {
                    Some(props) => match props.get(&normal(snake)) {
                        Some(name) => Some((*name).clone()),
                        // Declared in protobuf, absent from the JSON
                        // object, its own fields in it: an inline
                        // embedded struct.
                        None if !repeated
                            && matches!(ty, Ty::Msg(i) if raw_fields[i]
                                .iter()
                                .any(|(_, sn, _)| props.contains_key(&normal(sn)))) =>
                        {
                            None
                        }
                        None => Some(lower_camel(snake)),
                    },
                    None => Some(lower_camel(snake)),
                };
                out.push(Field {
                    number: *number,
                    json,
                    snake: (*snake).to_string(),
                    ty,
                    repeated,
                });
            }
            messages.push(Message {
                path: (*path).to_string(),
                special: special_of(path),
                fields: out,
                by_json: None,
            });
        }
        // An inline struct has no definition of its own (k8s-openapi
        // flattens it): its fields are named by the parent's properties.
        let mut renames = Vec::new();
        for (path, m) in paths.iter().zip(&messages) {
            let Some(props) = defs
                .get(&definition_of(path))
                .and_then(|d| d.get("properties"))
                .and_then(Value::as_object)
            else {
                continue;
            };
            let props: HashMap<String, &String> = props.keys().map(|k| (normal(k), k)).collect();
            for f in m.fields.iter().filter(|f| f.json.is_none()) {
                let Ty::Msg(inner) = f.ty else { continue };
                if defs.contains_key(&definition_of(&messages[inner].path)) {
                    continue;
                }
                for (k, g) in messages[inner].fields.iter().enumerate() {
                    if let Some(name) = props.get(&normal(&g.snake)) {
                        renames.push((inner, k, (*name).clone()));
                    }
                }
            }
        }
        for (m, f, name) in renames {
            messages[m].fields[f].json = Some(name);
        }
        for m in &mut messages {
            let mut order: Vec<usize> = (0..m.fields.len()).collect();
            order.sort_by(|a, b| m.fields[*a].json.cmp(&m.fields[*b].json));
            let flat = m.fields.iter().all(|f| f.json.is_some())
                && order
                    .windows(2)
                    .all(|w| m.fields[w[0]].json != m.fields[w[1]].json);
            m.by_json = flat.then_some(order);
        }
        let mut by_module: HashMap<String, HashMap<String, usize>> = HashMap::new();
        for (i, m) in messages.iter().enumerate() {
            if let Some((module, name)) = m.path.rsplit_once('.') {
                by_module
                    .entry(module.to_string())
                    .or_default()
                    .insert(name.to_string(), i);
            }
        }
        Schema {
            messages,
            by_lower_path,
            by_module,
            modules,
        }
    }

    /// The message of a kind at an apiVersion (`v1`, `ConfigMapList`), the
    /// meta/v1 kinds (`Status`, `DeleteOptions`, `WatchEvent`) at any.
    pub fn kind(&self, api_version: &str, kind: &str) -> Option<usize> {
        if kind.is_empty() {
            return None;
        }
        let find = |module: &str| {
            self.by_module
                .get(module)
                .and_then(|names| names.get(kind))
                .or_else(|| {
                    // Names differing in case only (k8s-pb's spelling of
                    // a Go name) are found as before.
                    self.by_lower_path
                        .get(&format!("{module}.{kind}").to_ascii_lowercase())
                })
                .copied()
        };
        // The meta/v1 kinds are sent under any group version
        // (`meta.k8s.io/v1`, `v1`, the resource's own).
        if matches!(kind, "Status" | "DeleteOptions" | "WatchEvent") {
            return find(META);
        }
        find(self.modules.get(api_version)?)
    }

    /// A message by its path.
    #[cfg(test)]
    pub fn path(&self, path: &str) -> Option<usize> {
        self.by_lower_path.get(&path.to_ascii_lowercase()).copied()
    }
}

/// The schema, built on first use (a protobuf request).
pub fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| Schema::load(crate::builtin::schemas()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_names_come_from_the_schemas() {
        let s = schema();
        let find = |path: &str, snake: &str| {
            let m = &s.messages[s.path(path).unwrap()];
            m.fields
                .iter()
                .find(|f| f.snake == snake)
                .unwrap()
                .json
                .clone()
        };
        assert_eq!(
            find("api.core.v1.AWSElasticBlockStoreVolumeSource", "volume_id").as_deref(),
            Some("volumeID")
        );
        assert_eq!(
            find("api.core.v1.PodStatus", "pod_ips").as_deref(),
            Some("podIPs")
        );
        // Embedded inline in JSON.
        assert_eq!(find("api.core.v1.Volume", "volume_source"), None);
        assert_eq!(
            find("api.core.v1.ConfigMapKeySelector", "local_object_reference"),
            None
        );
        assert_eq!(
            s.kind("apps/v1", "Deployment")
                .map(|i| s.messages[i].path.as_str()),
            Some("api.apps.v1.Deployment")
        );
        assert_eq!(
            s.kind("v1", "Status").map(|i| s.messages[i].path.as_str()),
            Some("apimachinery.pkg.apis.meta.v1.Status")
        );
        assert_eq!(s.kind("example.com/v1", "Widget"), None);
        // Fields of an inline struct, named by the parent's schema.
        assert_eq!(
            find("api.core.v1.VolumeSource", "downward_api").as_deref(),
            Some("downwardAPI")
        );
        assert_eq!(
            find("api.core.v1.PersistentVolumeSource", "scale_io").as_deref(),
            Some("scaleIO")
        );
    }

    /// Every field of every message a served kind reaches has its JSON
    /// name from that kind's schema, not from the camel-case fallback,
    /// except where the protobuf and JSON forms differ on purpose.
    #[test]
    fn every_served_kind_resolves_its_json_names() {
        let s = schema();
        let defs = crate::builtin::schemas();
        let lower: std::collections::HashSet<String> =
            defs.keys().map(|k| k.to_ascii_lowercase()).collect();
        let mut seen = std::collections::HashSet::new();
        let mut stack: Vec<usize> = crate::builtin::table()
            .iter()
            .filter_map(|b| {
                let av = if b.group.is_empty() {
                    b.version.to_string()
                } else {
                    format!("{}/{}", b.group, b.version)
                };
                s.kind(&av, b.kind)
            })
            .collect();
        assert!(stack.len() > 50, "{}", stack.len());
        let mut missing = Vec::new();
        while let Some(i) = stack.pop() {
            if !seen.insert(i) {
                continue;
            }
            let m = &s.messages[i];
            if m.special != Special::None {
                continue;
            }
            if !lower.contains(&definition_of(&m.path)) {
                missing.push(m.path.clone());
                continue;
            }
            for f in &m.fields {
                match f.ty {
                    // Inline structs are named by their parent (checked above).
                    Ty::Msg(_) if f.json.is_none() => {}
                    Ty::Msg(j) | Ty::MapMsg(j) => stack.push(j),
                    _ => {}
                }
            }
        }
        missing.sort();
        // Types of Kubernetes releases after the v1.33 the sandbox serves
        // (k8s-pb is newer than k8s-openapi's v1_33): no stored object has them.
        assert_eq!(
            missing,
            [
                "api.core.v1.ContainerRestartRule",
                "api.core.v1.FileKeySelector",
                "api.core.v1.PodExtendedResourceClaimStatus",
                "api.core.v1.WorkloadReference",
            ]
        );
    }
}
