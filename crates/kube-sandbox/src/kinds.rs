//! Per-kind rules the real API server applies on writes: defaulting,
//! allocation (Service cluster IPs and node ports) and validation of names
//! and immutable fields.
//!
//! These functions change the object in place or return field causes for a
//! 422 Invalid; they never touch the store, so they can be tested alone.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use kube_semantics::field_error::FieldError;

use crate::registry::{NameRule, Resource, Special};
use crate::status::{ApiError, Cause};

mod service;

use service::*;

/// The first address the Service cluster-IP allocator hands out
/// (10.96.0.0/12 is kubeadm's default service range).
const SERVICE_RANGE_BASE: u32 = u32::from_be_bytes([10, 96, 0, 0]);
/// Size of the /12 service range.
const SERVICE_RANGE_SIZE: u32 = 1 << 20;
/// The default NodePort range, 30000-32767, as the real server uses.
const NODE_PORT_MIN: u16 = 30000;
const NODE_PORT_MAX: u16 = 32767;

/// Allocators for Service cluster IPs and node ports.
#[derive(Debug, Default)]
pub struct Allocators {
    next_ip: u32,
    used_ips: BTreeSet<String>,
    used_ports: BTreeSet<u16>,
}

impl Allocators {
    fn alloc_ip(&mut self) -> Option<String> {
        // .0 is the network address and .1 is the `kubernetes` Service's
        // address on a real cluster; start after them.
        for _ in 0..SERVICE_RANGE_SIZE {
            self.next_ip = (self.next_ip % (SERVICE_RANGE_SIZE - 2)) + 1;
            let ip = std::net::Ipv4Addr::from(SERVICE_RANGE_BASE + self.next_ip + 1).to_string();
            if self.used_ips.insert(ip.clone()) {
                return Some(ip);
            }
        }
        None
    }

    fn alloc_port(&mut self) -> Option<u16> {
        let p = (NODE_PORT_MIN..=NODE_PORT_MAX).find(|p| !self.used_ports.contains(p))?;
        self.used_ports.insert(p);
        Some(p)
    }

    /// Marks a Service's addresses and ports as taken (a restored store).
    pub fn reserve(&mut self, svc: &Value) {
        if let Some(ip) = svc.pointer("/spec/clusterIP").and_then(Value::as_str) {
            self.used_ips.insert(ip.to_string());
        }
        for p in node_ports(svc) {
            self.used_ports.insert(p);
        }
    }

    /// Returns a deleted Service's addresses and ports to the pools.
    pub fn release(&mut self, svc: &Value) {
        if let Some(ip) = svc.pointer("/spec/clusterIP").and_then(Value::as_str) {
            self.used_ips.remove(ip);
        }
        for p in node_ports(svc) {
            self.used_ports.remove(&p);
        }
    }
}

fn node_ports(svc: &Value) -> Vec<u16> {
    svc.pointer("/spec/ports")
        .and_then(Value::as_array)
        .map(|ports| {
            ports
                .iter()
                .filter_map(|p| p.get("nodePort").and_then(Value::as_u64))
                .filter_map(|p| u16::try_from(p).ok())
                .collect()
        })
        .unwrap_or_default()
}

fn cause(reason: &str, field: &str, message: String) -> Cause {
    Cause {
        reason: reason.into(),
        field: field.into(),
        message,
    }
}

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
}

fn is_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_label)
}

/// Validates `metadata.name` by the kind's rule.
pub fn validate_name(rule: NameRule, name: &str) -> Result<(), Cause> {
    let invalid = |msg: &str| {
        Err(cause(
            "FieldValueInvalid",
            "metadata.name",
            format!("Invalid value: {name:?}: {msg}"),
        ))
    };
    match rule {
        NameRule::Label if !is_label(name) => {
            if name.len() > 63 {
                invalid("must be no more than 63 characters")
            } else {
                invalid(DNS1123_LABEL_MSG)
            }
        }
        NameRule::Subdomain if !is_subdomain(name) => {
            if name.len() > 253 {
                invalid("must be no more than 253 characters")
            } else {
                invalid(DNS1123_SUBDOMAIN_MSG)
            }
        }
        NameRule::PathSegment if name == "." || name == ".." => {
            invalid(&format!("may not be '{name}'"))
        }
        NameRule::PathSegment if name.contains('/') || name.contains('%') => {
            invalid("may not contain '/' or '%'")
        }
        _ => Ok(()),
    }
}

/// Validates `metadata.labels` as the API server does for every kind: keys
/// are qualified names, values are label values (strings).
pub fn validate_labels(obj: &Value) -> Vec<Cause> {
    let Some(labels) = obj.pointer("/metadata/labels") else {
        return Vec::new();
    };
    let Some(labels) = labels.as_object() else {
        if labels.is_null() {
            return Vec::new();
        }
        return vec![cause(
            "FieldValueInvalid",
            "metadata.labels",
            "Invalid value: must be a map of strings".into(),
        )];
    };
    let mut causes = Vec::new();
    for (key, value) in labels {
        for msg in kube_semantics::names::is_qualified_name(key) {
            causes.push(cause(
                "FieldValueInvalid",
                "metadata.labels",
                format!("Invalid value: {key:?}: {msg}"),
            ));
        }
        match value.as_str() {
            Some(v) => {
                for msg in kube_semantics::names::is_valid_label_value(v) {
                    causes.push(cause(
                        "FieldValueInvalid",
                        &format!("metadata.labels.{key}"),
                        format!("Invalid value: {v:?}: {msg}"),
                    ));
                }
            }
            None => causes.push(cause(
                "FieldValueInvalid",
                &format!("metadata.labels.{key}"),
                format!("Invalid value: {value}: must be a string"),
            )),
        }
    }
    causes
}

/// The status a create leaves on a kind whose status is a subresource:
/// the kind's own rule where the strategy sets one, else the zero value of
/// its status struct (built-in kinds), else none (custom resources).
pub fn initial_status(res: &Resource, obj: &Value, now: &str) -> Option<Value> {
    match res.special {
        // `ServiceStatus.loadBalancer` is a struct, never omitted.
        Special::Service => Some(json!({"loadBalancer": {}})),
        _ if res.builtin => kube_semantics::defaults::initial_status_at(
            &res.group, &res.kind, obj, now,
        )
        .or_else(|| {
            crate::builtin::find_version(&res.group, &res.version, &res.kind)
                .and_then(|b| (b.zero_status)())
        }),
        _ => None,
    }
}

/// What the API server does while decoding a body into its typed form,
/// before any strategy runs: a Secret's `stringData` is folded into
/// base64 `data` (the v1 to internal conversion), and `data` that is not
/// base64 fails the decode with 400.
pub fn decode(res: &Resource, obj: &mut Value) -> Result<(), ApiError> {
    if res.special == Special::Secret {
        decode_secret(obj)?;
    }
    if res.special == Special::Crd {
        crd_defaults(obj);
    }
    if res.builtin {
        crate::decode_error::zero_null_elements(res, obj);
        canonical_quantities(res, obj)?;
        // Defaulting runs as part of decoding, on every write.
        kube_semantics::defaults::apply_defaults(&res.group, &res.version, &res.kind, obj);
    }
    Ok(())
}

/// Every `resource.Quantity` the kind stores is rewritten in its
/// canonical form (`0.5` -> `500m`, `1024Mi` -> `1Gi`); a value that does
/// not parse fails the decode with 400, as the server's JSON decoder does.
/// `ResourceList` maps (a path ending in a map of quantities) are also
/// rounded up to milli precision, as the core/v1 defaulting does.
fn canonical_quantities(res: &Resource, obj: &mut Value) -> Result<(), ApiError> {
    use kube_semantics::quantity::{Seg, canonicalize_at, canonicalize_resource_list_at};
    for pattern in crate::builtin::quantity_paths(&res.group, &res.kind) {
        let done = if matches!(pattern.last(), Some(Seg::AnyKey)) {
            canonicalize_resource_list_at(obj, pattern)
        } else {
            canonicalize_at(obj, pattern)
        };
        if let Err(e) = done {
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"{version}\" cannot be handled as a {kind}: {error}",
                kind = res.kind,
                version = res.version,
                error = e.error
            )));
        }
    }
    Ok(())
}

/// The validation the registry strategy runs after defaulting, as
/// `kube-semantics` implements it: 422 causes.
pub fn validate(res: &Resource, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    if !res.builtin {
        return Vec::new();
    }
    kube_semantics::validation::validate(&res.group, &res.kind, obj, old)
        .into_iter()
        .map(Cause::from)
        .collect()
}

/// What a create does beyond defaulting for some kinds: a Job's
/// generated selector and labels (from its uid), a Pod's admission
/// (default tolerations, service account, priority), a DaemonSet's
/// template-generation annotation.
pub fn prepare_create(res: &Resource, obj: &mut Value) -> Result<(), Vec<Cause>> {
    match (res.group.as_str(), res.kind.as_str()) {
        ("batch", "Job") => {
            let uid = obj
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            kube_semantics::defaults::job_generated_selector(obj, &uid);
        }
        ("", "Pod") => {
            kube_semantics::defaults::admit_pod_create(obj)
                .map_err(|message| vec![cause("FieldValueForbidden", "spec.priority", message)])?;
        }
        ("apps", "DaemonSet") => {
            kube_semantics::defaults::daemon_set_template_generation(None, obj)
        }
        _ => {}
    }
    Ok(())
}

/// A DaemonSet's template-generation annotation follows template changes.
pub fn prepare_update(res: &Resource, old: &Value, new: &mut Value) {
    if res.group == "apps" && res.kind == "DaemonSet" {
        kube_semantics::defaults::daemon_set_template_generation(Some(old), new);
    }
}

/// `SetDefaults_CustomResourceDefinitionSpec`: the singular name and the
/// list kind from the kind, and no conversion.
fn crd_defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut)
        && let Some(kind) = names
            .get("kind")
            .and_then(Value::as_str)
            .map(str::to_string)
    {
        if names
            .get("singular")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            names.insert("singular".into(), json!(kind.to_lowercase()));
        }
        if names
            .get("listKind")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
    }
    if !spec.get("conversion").is_some_and(Value::is_object) {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
}

fn decode_secret(obj: &mut Value) -> Result<(), ApiError> {
    use base64::Engine as _;
    let engine = base64::engine::general_purpose::STANDARD;
    let Some(m) = obj.as_object_mut() else {
        return Ok(());
    };
    if let Some(data) = m.get("data").and_then(Value::as_object) {
        for v in data.values() {
            let Some(text) = v.as_str() else {
                if v.is_null() {
                    continue;
                }
                return Err(ApiError::bad_request(format!(
                    "Secret in version \"v1\" cannot be handled as a Secret: json: cannot unmarshal {} into Go struct field Secret.data of type []uint8",
                    crate::decode_error::json_kind(v, false)
                )));
            };
            // Go's decoder skips line breaks; offsets count the bytes kept.
            let text: String = text.chars().filter(|c| !matches!(c, '\r' | '\n')).collect();
            if let Err(e) = engine.decode(&text) {
                return Err(ApiError::bad_request(format!(
                    "Secret in version \"v1\" cannot be handled as a Secret: {}",
                    go_base64_error(&e)
                )));
            }
        }
    }
    // stringData wins over data for the same key, as the conversion
    // writes it last.
    if let Some(sd) = m.remove("stringData") {
        let Some(sd) = sd.as_object() else {
            if sd.is_null() {
                return Ok(());
            }
            return Err(ApiError::bad_request(format!(
                "Secret in version \"v1\" cannot be handled as a Secret: json: cannot unmarshal {} into Go struct field Secret.stringData of type map[string]string",
                crate::decode_error::json_kind(&sd, false)
            )));
        };
        let data = m
            .entry("data")
            .or_insert_with(|| Value::Object(Default::default()));
        if !data.is_object() {
            *data = Value::Object(Default::default());
        }
        for (k, v) in sd {
            let Some(text) = v.as_str() else {
                return Err(ApiError::bad_request(format!(
                    "Secret in version \"v1\" cannot be handled as a Secret: json: cannot unmarshal {} into Go struct field Secret.stringData of type string",
                    crate::decode_error::json_kind(v, false)
                )));
            };
            if let Some(d) = data.as_object_mut() {
                d.insert(k.clone(), json!(engine.encode(text)));
            }
        }
    }
    Ok(())
}

/// Go's `encoding/base64` error text for the first bad byte.
fn go_base64_error(e: &base64::DecodeError) -> String {
    match e {
        base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _) => {
            format!("illegal base64 data at input byte {at}")
        }
        base64::DecodeError::InvalidLength(len) => {
            // Go reports the offset where the final group falls short.
            format!("illegal base64 data at input byte {}", len - len % 4)
        }
        base64::DecodeError::InvalidPadding => "illegal base64 data at input byte 0".to_string(),
    }
}

/// Defaults and validates an object about to be created. `obj` has its
/// metadata already set.
pub fn on_create(
    res: &Resource,
    obj: &mut Value,
    alloc: &mut Allocators,
) -> Result<(), Vec<Cause>> {
    let causes = validate_labels(obj);
    if !causes.is_empty() {
        return Err(causes);
    }
    match res.special {
        Special::Namespace => {
            let name = obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let labels = ensure_object(obj, &["metadata", "labels"]);
            labels.insert("kubernetes.io/metadata.name".into(), json!(name));
            let spec = ensure_object(obj, &["spec"]);
            spec.insert("finalizers".into(), json!(["kubernetes"]));
            obj["status"] = json!({"phase": "Active"});
            Ok(())
        }
        Special::Service => service_create(obj, alloc),
        Special::Secret => {
            if obj.get("type").is_none_or(Value::is_null) {
                obj["type"] = json!("Opaque");
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Checks an update against the old object: immutable fields, Service
/// allocations carried over, namespace labels kept.
pub fn on_update(res: &Resource, old: &Value, new: &mut Value) -> Result<(), Vec<Cause>> {
    let causes = validate_labels(new);
    if !causes.is_empty() {
        return Err(causes);
    }
    match res.special {
        Special::ConfigMap | Special::Secret => {
            let mut causes = Vec::new();
            if res.special == Special::Secret {
                if new.get("type").is_none_or(Value::is_null) {
                    new["type"] = old.get("type").cloned().unwrap_or(json!("Opaque"));
                }
                if new.get("type") != old.get("type") {
                    causes.push(cause(
                        "FieldValueInvalid",
                        "type",
                        format!("Invalid value: {}: field is immutable", new["type"]),
                    ));
                }
            }
            if old.get("immutable").and_then(Value::as_bool) == Some(true) {
                for field in ["data", "binaryData", "stringData"] {
                    if res.special == Special::ConfigMap && field == "stringData" {
                        continue;
                    }
                    if new.get(field) != old.get(field) {
                        causes.push(cause(
                            "FieldValueForbidden",
                            field,
                            "Forbidden: field is immutable when `immutable` is set".into(),
                        ));
                    }
                }
                if new.get("immutable").and_then(Value::as_bool) != Some(true) {
                    causes.push(cause(
                        "FieldValueForbidden",
                        "immutable",
                        "Forbidden: field is immutable when `immutable` is set".into(),
                    ));
                }
            }
            if causes.is_empty() {
                Ok(())
            } else {
                Err(causes)
            }
        }
        Special::Service => service_update(old, new),
        Special::Namespace => {
            // The name label is enforced by the server.
            let name = old
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let labels = ensure_object(new, &["metadata", "labels"]);
            labels.insert("kubernetes.io/metadata.name".into(), json!(name));
            if new.pointer("/spec/finalizers").is_none()
                && let Some(f) = old.pointer("/spec/finalizers")
            {
                ensure_object(new, &["spec"]).insert("finalizers".into(), f.clone());
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The `autoscaling/v1` Scale of a workload, as its `/scale` subresource
/// answers it.
pub fn scale_of(res: &Resource, obj: &Value) -> Value {
    let mut meta = serde_json::Map::new();
    for f in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = obj.pointer(&format!("/metadata/{f}")) {
            meta.insert(f.into(), v.clone());
        }
    }
    let replicas = obj
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let selector = obj.pointer("/spec/selector");
    // A ReplicationController's selector is a plain map; the apps kinds
    // hold a LabelSelector.
    let selector = if res.group.is_empty() {
        selector.map(|s| json!({ "matchLabels": s }))
    } else {
        selector.cloned()
    };
    let mut status = json!({
        "replicas": obj.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
    });
    if let Some(sel) =
        kube_semantics::printers::label_selector_string(selector.as_ref()).filter(|s| !s.is_empty())
    {
        status["selector"] = json!(sel);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": {"replicas": replicas},
        "status": status,
    })
}

/// The replica count a Scale written to `/scale` asks for, or the 422 the
/// server answers for a bad one.
pub fn scale_replicas(res: &Resource, name: &str, scale: &Value) -> Result<i64, ApiError> {
    let invalid = |message: String| {
        ApiError::invalid(
            "autoscaling",
            "Scale",
            &res.plural,
            name,
            vec![cause("FieldValueInvalid", "spec.replicas", message)],
        )
    };
    match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => Ok(0),
        Some(v) => match v.as_i64() {
            Some(n) if n < 0 => Err(invalid(format!(
                "Invalid value: {n}: must be greater than or equal to 0"
            ))),
            Some(n) if n > i64::from(i32::MAX) => Err(ApiError::bad_request(format!(
                "Scale in version \"v1\" cannot be handled as a Scale: json: cannot unmarshal number {n} into Go struct field ScaleSpec.spec.replicas of type int32"
            ))),
            Some(n) => Ok(n),
            None => Err(ApiError::bad_request(format!(
                "Scale in version \"v1\" cannot be handled as a Scale: json: cannot unmarshal {} into Go struct field ScaleSpec.spec.replicas of type int32",
                crate::decode_error::json_kind(v, false)
            ))),
        },
    }
}

fn ensure_object<'a>(v: &'a mut Value, path: &[&str]) -> &'a mut serde_json::Map<String, Value> {
    let mut cur = v;
    for key in path {
        if !cur.is_object() {
            *cur = json!({});
        }
        let map = match cur {
            Value::Object(m) => m,
            _ => unreachable!("replaced by an object just above"),
        };
        let entry = map.entry(key.to_string()).or_insert_with(|| json!({}));
        if !entry.is_object() {
            *entry = json!({});
        }
        cur = entry;
    }
    match cur {
        Value::Object(m) => m,
        _ => unreachable!("ensured to be an object in the loop"),
    }
}

#[cfg(test)]
mod tests;
