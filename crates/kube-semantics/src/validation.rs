//! The API server's validation of the kinds a sync controller copies most.
//!
//! [`validate`] answers what `kube-apiserver` v1.33 answers with a 422
//! `Invalid`: the list of field errors (`Status.details.causes`) for a
//! ConfigMap, Secret, ServiceAccount, Role, ClusterRole, RoleBinding,
//! ClusterRoleBinding, NetworkPolicy, Pod, PodTemplate, ReplicationController,
//! Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob,
//! HorizontalPodAutoscaler, Ingress, PersistentVolumeClaim,
//! PodDisruptionBudget, PriorityClass or StorageClass, plus the
//! generic `metadata` rules (annotations, finalizers, ownerReferences) every
//! kind goes through. [`summary`] builds the Status message around them.
//!
//! The input is the object as the server would store it after defaulting
//! (fields such as `restartPolicy`, `dnsPolicy`, `imagePullPolicy`,
//! `terminationMessagePolicy` and port `protocol` are expected to be filled
//! in; an absent one is reported `Required value`, as upstream reports an
//! empty one). JSON values of the wrong type are treated as absent: the real
//! server would have refused them while decoding, before validation.
//!
//! The field paths, reasons and messages are upstream's, byte for byte
//! (checked against `pkg/apis/core/validation`, `apps`, `rbac`,
//! `networking` and apimachinery's `util/validation`), quirks included:
//! `data[%s][username]` for basic-auth Secrets, `downwarAPI`/`cephFS` in
//! volume errors, owner-reference errors without an index, Go's `%#v` of a
//! selector or strategy as the invalid value. Where a text could not be
//! confirmed for v1.33 the item's doc comment says so. The order of the
//! errors follows upstream's checks, except that Go iterates maps in random
//! order and this module in document order.
//!
//! Covered: ObjectMeta annotations (keys, 256 KiB), finalizers,
//! ownerReferences; ConfigMap and Secret keys, sizes, Secret types and the
//! `immutable` rules; RBAC rules, aggregation, roleRef and subjects, roleRef
//! immutability; NetworkPolicy selectors, ports, peers, ipBlocks, policy
//! types; pod specs (containers and init containers: names, images, ports,
//! env, envFrom, volume mounts, pull and termination-message policies, host
//! port conflicts; volumes: names and exactly one source; restart and DNS
//! policies, node selector, service account and node names, deadlines,
//! hostname); Deployment, ReplicaSet, StatefulSet, DaemonSet selectors,
//! replicas, strategies and selector immutability, the StatefulSet update
//! rule; Job and CronJob restart policies and counters; ReplicationController;
//! HorizontalPodAutoscaler replica bounds, scaleTargetRef, metrics and
//! behavior; Ingress backends, hosts, paths and path types, TLS hosts and
//! secrets, class name; PersistentVolumeClaim access modes, selector, storage
//! request (presence and sign), class name, volume mode; PodDisruptionBudget
//! budgets, selector, eviction policy; PriorityClass value and preemption
//! policy (and their immutability); StorageClass provisioner, parameters keys,
//! reclaim policy, binding mode and update rules.
//!
//! Not covered (accepted here, possibly refused upstream): probes and
//! lifecycle handlers, security contexts, affinity, tolerations, topology
//! spread, resources (quantities are another module's), the details of each
//! volume source beyond its required name, Job fields beyond the counters
//! and restart policy, ServiceAccount secret references (upstream checks
//! none), `ValidateObjectMetaUpdate` (names, namespace, uid changes), the
//! HPA `scaleTargetRef.apiVersion` check, PVC update immutability and data
//! sources, StorageClass parameter sizes and allowed topologies.
//!
//! This module must NOT validate `metadata.name`, `metadata.namespace` or the
//! object's own labels (see [`crate::names`]), resource quantities (beyond the
//! sign checks some specs make on an already parsed value) or
//! requests-versus-limits, and must NOT do admission (quota, defaulting,
//! mutation): it only reads the object.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};

use serde_json::{Map, Value};

use crate::field_error::FieldError;
use crate::gofmt::{aggregate, quote};
use crate::names::{
    NameRule, is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
    is_valid_path_segment_name,
};

/// Largest total size of a ConfigMap's or Secret's data (`core.MaxSecretSize`).
pub const MAX_DATA_SIZE: usize = 1024 * 1024;
/// Largest total size of an object's annotations, keys plus values
/// (apimachinery's `TotalAnnotationSizeLimitB`).
pub const MAX_ANNOTATIONS_SIZE: usize = 256 * 1024;

/// The RBAC API group, the only one a `roleRef` or a User/Group subject may name.
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// The message of every `field is immutable` error (`ValidateImmutableField`).
const IMMUTABLE: &str = "field is immutable";
/// `IsNegativeErrorMsg`.
const NEGATIVE: &str = "must be greater than or equal to 0";
/// The detail of `ConfigMap`/`Secret` changes after `immutable: true`.
const IMMUTABLE_WHEN_SET: &str = "field is immutable when `immutable` is set";
/// `validation.InclusiveRangeError(1, 65535)`.
const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";
/// The selector/template mismatch of every workload kind.
const SELECTOR_MISMATCH: &str = "`selector` does not match template `labels`";
/// The message of an invalid CIDR in a legacy (non-strict) field.
const CIDR_INVALID: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

// ---------------------------------------------------------------------------
// Field errors, as apimachinery's constructors build them.

/// `field.Required`: `Required value[: detail]`.
fn required(field: &str, detail: &str) -> FieldError {
    FieldError {
        reason: "FieldValueRequired",
        field: field.to_string(),
        message: with_detail("Required value".to_string(), detail),
    }
}

/// `field.Invalid`: `Invalid value: <value>[: detail]`. `value` is already
/// rendered the way Go's `%q`/`%v`/`%#v` would print it.
fn invalid(field: &str, value: &str, detail: &str) -> FieldError {
    FieldError {
        reason: "FieldValueInvalid",
        field: field.to_string(),
        message: with_detail(format!("Invalid value: {value}"), detail),
    }
}

/// `field.Invalid` on a string value (printed with `%q`).
fn invalid_str(field: &str, value: &str, detail: &str) -> FieldError {
    invalid(field, &quote(value), detail)
}

/// `field.NotSupported`: `Unsupported value: <value>: supported values: ...`.
fn not_supported(field: &str, value: &str, supported: &[&str]) -> FieldError {
    let detail = if supported.is_empty() {
        String::new()
    } else {
        let quoted: Vec<String> = supported.iter().map(|s| quote(s)).collect();
        format!("supported values: {}", quoted.join(", "))
    };
    FieldError {
        reason: "FieldValueNotSupported",
        field: field.to_string(),
        message: with_detail(format!("Unsupported value: {}", quote(value)), &detail),
    }
}

/// `field.NotSupported` on a value already rendered (a struct's `%#v`).
fn not_supported_raw(field: &str, value: &str, supported: &[&str]) -> FieldError {
    let mut e = not_supported(field, "", supported);
    e.message = e.message.replacen("\"\"", value, 1);
    e
}

/// `field.Forbidden`: `Forbidden: detail`.
fn forbidden(field: &str, detail: &str) -> FieldError {
    FieldError {
        reason: "FieldValueForbidden",
        field: field.to_string(),
        message: with_detail("Forbidden".to_string(), detail),
    }
}

/// `field.Duplicate`: `Duplicate value: "v"`.
fn duplicate(field: &str, value: &str) -> FieldError {
    FieldError {
        reason: "FieldValueDuplicate",
        field: field.to_string(),
        message: format!("Duplicate value: {}", quote(value)),
    }
}

/// `field.NotFound`: `Not found: "v"`.
fn not_found(field: &str, value: &str) -> FieldError {
    FieldError {
        reason: "FieldValueNotFound",
        field: field.to_string(),
        message: format!("Not found: {}", quote(value)),
    }
}

/// `field.TooLong` as apimachinery words it since v1.32 (`may not be more
/// than N bytes`; older servers said `may not be more than N bytes`), as
/// reports from v1.32 clusters show it.
fn too_long(field: &str, max: usize) -> FieldError {
    FieldError {
        reason: "FieldValueTooLong",
        field: field.to_string(),
        message: format!("Too long: may not be more than {max} bytes"),
    }
}

fn with_detail(mut s: String, detail: &str) -> String {
    if !detail.is_empty() {
        s.push_str(": ");
        s.push_str(detail);
    }
    s
}

/// The Status message of a 422 `Invalid` (`errors.NewInvalid`):
/// `ConfigMap "x" is invalid: data[k]: Invalid value: ...` for one error,
/// `... is invalid: [a, b]` for several (repeated texts printed once), and
/// `ConfigMap "x" is invalid` for none.
///
/// `kind` is the qualified kind as `schema.GroupKind.String()` prints it:
/// `Kind` for the core group, `Kind.group` otherwise (`Deployment.apps`).
pub fn summary(kind: &str, name: &str, errs: &[FieldError]) -> String {
    if errs.is_empty() {
        return format!("{kind} {} is invalid", quote(name));
    }
    let texts: Vec<String> = errs
        .iter()
        .map(|e| format!("{}: {}", e.field, e.message))
        .collect();
    format!("{kind} {} is invalid: {}", quote(name), aggregate(&texts))
}

// ---------------------------------------------------------------------------
// Field paths, printed as `field.Path.String()` does.

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

fn key(path: &str, k: &str) -> String {
    format!("{path}[{k}]")
}

// ---------------------------------------------------------------------------
// Typed views of untyped JSON. A value of the wrong type reads as absent.

fn get<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    v.as_object()
        .and_then(|m| m.get(k))
        .filter(|x| !x.is_null())
}

fn map_at<'a>(v: &'a Value, k: &str) -> Option<&'a Map<String, Value>> {
    get(v, k).and_then(Value::as_object)
}

fn string<'a>(v: &'a Value, k: &str) -> &'a str {
    get(v, k).and_then(Value::as_str).unwrap_or("")
}

fn opt_string<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    get(v, k).and_then(Value::as_str)
}

fn arr<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    get(v, k)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn int(v: &Value, k: &str) -> Option<i64> {
    get(v, k).and_then(as_int)
}

fn as_int(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e18)
            .map(|f| f as i64)
    })
}

fn strings_of<'a>(v: &'a Value, k: &str) -> Vec<&'a str> {
    arr(v, k).iter().filter_map(Value::as_str).collect()
}

/// A `map[string]string` field: non-string values are skipped.
fn string_map<'a>(v: &'a Value, k: &str) -> Option<BTreeMap<&'a str, &'a str>> {
    map_at(v, k).map(|m| {
        m.iter()
            .filter_map(|(k, v)| v.as_str().map(|s| (k.as_str(), s)))
            .collect()
    })
}

// ---------------------------------------------------------------------------
// Go `%#v` renderings of the composite values some messages print.

fn go_string_slice(items: Option<&[&str]>) -> String {
    match items {
        None => "[]string(nil)".to_string(),
        Some(items) => {
            let q: Vec<String> = items.iter().map(|s| quote(s)).collect();
            format!("[]string{{{}}}", q.join(", "))
        }
    }
}

fn go_string_map(m: Option<&BTreeMap<&str, &str>>) -> String {
    match m {
        None => "map[string]string(nil)".to_string(),
        Some(m) => {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}:{}", quote(k), quote(v)))
                .collect();
            format!("map[string]string{{{}}}", parts.join(", "))
        }
    }
}

/// `%#v` of a `metav1.LabelSelector` (the form kubectl users know from
/// `spec.selector: Invalid value: v1.LabelSelector{...}: field is immutable`).
/// `null` stands for a nil selector.
fn go_label_selector(sel: Option<&Value>) -> String {
    let Some(sel) = sel.filter(|s| s.is_object()) else {
        return "null".to_string();
    };
    let labels = string_map(sel, "matchLabels");
    let exprs = match get(sel, "matchExpressions").and_then(Value::as_array) {
        None => "[]v1.LabelSelectorRequirement(nil)".to_string(),
        Some(items) => {
            let parts: Vec<String> = items
                .iter()
                .map(|e| {
                    let values = get(e, "values")
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>());
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                        quote(string(e, "key")),
                        quote(string(e, "operator")),
                        go_string_slice(values.as_deref())
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", parts.join(", "))
        }
    };
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{}}}",
        go_string_map(labels.as_ref()),
        exprs
    )
}

/// How an `intstr.IntOrString` prints (it is a `fmt.Stringer`: unquoted).
fn go_int_or_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => as_int(other).map_or_else(|| other.to_string(), |n| n.to_string()),
    }
}

// ---------------------------------------------------------------------------
// apimachinery `util/validation` checks.

/// `IsConfigMapKey`: problems with a ConfigMap or Secret key.
pub fn is_config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let ok = !value.is_empty()
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    if !ok {
        errs.push(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' \
             (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is \
             '[-._a-zA-Z0-9]+')"
                .to_string(),
        );
    }
    errs.extend(has_chdir_prefix(value));
    errs
}

fn has_chdir_prefix(value: &str) -> Vec<String> {
    match value {
        "." => vec!["must not be '.'".to_string()],
        ".." => vec!["must not be '..'".to_string()],
        v if v.starts_with("..") => vec!["must not start with '..'".to_string()],
        _ => Vec::new(),
    }
}

/// `IsRelaxedEnvVarName`: the environment variable rule with the
/// `RelaxedEnvironmentVariableValidation` feature on (beta, on by default
/// since v1.32): any printable ASCII but `=`.
pub fn is_relaxed_env_var_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.is_empty() {
        errs.push("environment variable name must be non-empty".to_string());
    }
    if value.chars().any(|c| !(' '..='~').contains(&c) || c == '=') {
        errs.push(
            "a valid environment variable name must consist only of printable ASCII characters \
             other than '='"
                .to_string(),
        );
    }
    errs
}

/// `IsValidPortName`: an IANA service name.
pub fn is_valid_port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push("must be no more than 15 characters".to_string());
    }
    if port.is_empty()
        || !port
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    {
        errs.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
        );
    }
    if !port.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".to_string());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_string());
    }
    errs
}

fn is_valid_port_num(n: i64) -> bool {
    (1..=65535).contains(&n)
}

/// `IsValidPercent`.
fn is_valid_percent(s: &str) -> bool {
    s.strip_suffix('%')
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()))
}

const PERCENT_ERR: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/// A parsed CIDR: its network address, prefix length and address width.
#[derive(Clone, Copy)]
struct Cidr {
    net: u128,
    prefix: u32,
    bits: u32,
}

impl Cidr {
    fn contains(&self, ip: u128, bits: u32) -> bool {
        if bits != self.bits {
            return false;
        }
        let shift = self.bits - self.prefix;
        shift >= 128 || (ip >> shift) == (self.net >> shift)
    }
}

/// Go's `netutils.ParseCIDRSloppy`: like `net.ParseCIDR`, but IPv4 octets
/// may carry leading zeros (read as decimal), as the legacy fields allow.
fn parse_cidr(s: &str) -> Option<Cidr> {
    let (ip, prefix) = s.split_once('/')?;
    if prefix.is_empty() || prefix.len() > 3 || !prefix.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let prefix: u32 = prefix.parse().ok()?;
    let (addr, bits) = if ip.contains(':') {
        match ip.parse::<IpAddr>().ok()? {
            IpAddr::V6(a) => (u128::from(a), 128),
            IpAddr::V4(a) => (u128::from(u32::from(a)), 32),
        }
    } else {
        (u128::from(u32::from(parse_ipv4_sloppy(ip)?)), 32)
    };
    if prefix > bits {
        return None;
    }
    let shift = bits - prefix;
    let net = if shift >= 128 {
        0
    } else {
        (addr >> shift) << shift
    };
    Some(Cidr { net, prefix, bits })
}

fn parse_ipv4_sloppy(s: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (o, p) in octets.iter_mut().zip(parts) {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        *o = p.parse().ok()?;
    }
    Some(Ipv4Addr::from(octets))
}

// ---------------------------------------------------------------------------
// Label selectors (`metav1.LabelSelector`).

/// `ValidateLabels` (apimachinery): every problem is reported on `path`
/// itself, not on the key.
fn validate_labels(labels: &Map<String, Value>, path: &str, errs: &mut Vec<FieldError>) {
    for (k, v) in labels {
        for msg in is_qualified_name(k) {
            errs.push(invalid_str(path, k, &msg));
        }
        if let Some(v) = v.as_str() {
            for msg in is_valid_label_value(v) {
                errs.push(invalid_str(path, v, &msg));
            }
        }
    }
}

/// `ValidateLabelSelector` with invalid label values rejected.
fn validate_label_selector(sel: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(labels) = map_at(sel, "matchLabels") {
        validate_labels(labels, &child(path, "matchLabels"), errs);
    }
    for (i, expr) in arr(sel, "matchExpressions").iter().enumerate() {
        let p = index(&child(path, "matchExpressions"), i);
        let values = arr(expr, "values");
        match string(expr, "operator") {
            "In" | "NotIn" => {
                if values.is_empty() {
                    errs.push(required(
                        &child(&p, "values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    errs.push(forbidden(
                        &child(&p, "values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => errs.push(invalid_str(
                &child(&p, "operator"),
                other,
                "not a valid selector operator",
            )),
        }
        let k = string(expr, "key");
        for msg in is_qualified_name(k) {
            errs.push(invalid_str(&child(&p, "key"), k, &msg));
        }
        for (j, v) in values.iter().enumerate() {
            let v = v.as_str().unwrap_or("");
            for msg in is_valid_label_value(v) {
                errs.push(invalid_str(&index(&child(&p, "values"), j), v, &msg));
            }
        }
    }
}

/// A selector as `metav1.LabelSelectorAsSelector` converts it.
enum Selector {
    /// A nil selector: matches nothing.
    Nothing,
    /// The AND of these requirements (none: matches everything).
    Requirements(Vec<(String, String, Vec<String>)>),
}

impl Selector {
    /// `LabelSelectorAsSelector`; `None` where it returns an error.
    fn from_json(sel: Option<&Value>) -> Option<Self> {
        let Some(sel) = sel else {
            return Some(Self::Nothing);
        };
        let mut reqs = Vec::new();
        if let Some(labels) = map_at(sel, "matchLabels") {
            for (k, v) in labels {
                let v = v.as_str().unwrap_or("");
                if !is_qualified_name(k).is_empty() || !is_valid_label_value(v).is_empty() {
                    return None;
                }
                reqs.push((k.clone(), "In".to_string(), vec![v.to_string()]));
            }
        }
        for expr in arr(sel, "matchExpressions") {
            let k = string(expr, "key");
            let op = string(expr, "operator");
            let values: Vec<String> = arr(expr, "values")
                .iter()
                .map(|v| v.as_str().unwrap_or("").to_string())
                .collect();
            let ok = match op {
                "In" | "NotIn" => !values.is_empty(),
                "Exists" | "DoesNotExist" => values.is_empty(),
                _ => false,
            };
            if !ok
                || !is_qualified_name(k).is_empty()
                || values.iter().any(|v| !is_valid_label_value(v).is_empty())
            {
                return None;
            }
            reqs.push((k.to_string(), op.to_string(), values));
        }
        Some(Self::Requirements(reqs))
    }

    fn is_empty(&self) -> bool {
        matches!(self, Self::Requirements(r) if r.is_empty())
    }

    fn matches(&self, labels: Option<&BTreeMap<&str, &str>>) -> bool {
        let Self::Requirements(reqs) = self else {
            return false;
        };
        reqs.iter().all(|(k, op, values)| {
            let got = labels.and_then(|l| l.get(k.as_str()).copied());
            match op.as_str() {
                "In" => got.is_some_and(|g| values.iter().any(|v| v == g)),
                "NotIn" => got.is_none_or(|g| values.iter().all(|v| v != g)),
                "Exists" => got.is_some(),
                _ => got.is_none(),
            }
        })
    }
}

// ---------------------------------------------------------------------------
// ObjectMeta.

/// The generic `metadata` rules (`ValidateObjectMeta` minus names and
/// labels). `kube_finalizers` adds core's rule that a finalizer without a
/// `/` must be one of the standard names; custom resources skip it.
fn validate_meta(obj: &Value, kube_finalizers: bool, errs: &mut Vec<FieldError>) {
    let Some(meta) = get(obj, "metadata") else {
        return;
    };
    if let Some(annotations) = map_at(meta, "annotations") {
        validate_annotations(annotations, "metadata.annotations", errs);
    }
    validate_owner_references(meta, errs);
    let finalizers = strings_of(meta, "finalizers");
    for f in &finalizers {
        for msg in is_qualified_name(f) {
            errs.push(invalid_str("metadata.finalizers", f, &msg));
        }
    }
    if finalizers.contains(&"orphan") && finalizers.contains(&"foregroundDeletion") {
        errs.push(invalid(
            "metadata.finalizers",
            &go_string_slice(Some(&finalizers)),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    if kube_finalizers {
        for (i, f) in finalizers.iter().enumerate() {
            if !f.contains('/') && !matches!(*f, "kubernetes" | "orphan" | "foregroundDeletion") {
                errs.push(invalid_str(
                    &index("metadata.finalizers", i),
                    f,
                    "name is neither a standard finalizer name nor is it fully qualified",
                ));
            }
        }
    }
}

/// `ValidateAnnotations`: keys are qualified names compared in lower case,
/// and keys plus values total at most 256 KiB. Every error is on `path`.
fn validate_annotations(annotations: &Map<String, Value>, path: &str, errs: &mut Vec<FieldError>) {
    let mut size = 0usize;
    for (k, v) in annotations {
        for msg in is_qualified_name(&k.to_lowercase()) {
            errs.push(invalid_str(path, k, &msg));
        }
        size += k.len() + v.as_str().map_or(0, str::len);
    }
    if size > MAX_ANNOTATIONS_SIZE {
        errs.push(too_long(path, MAX_ANNOTATIONS_SIZE));
    }
}

/// `ValidateOwnerReferences`. Upstream reports on `metadata.ownerReferences`
/// without an index. The two-controllers error prints the whole list with
/// Go's `%#v` (pointers included), which cannot be reproduced; its value
/// here is a placeholder, its detail upstream's.
fn validate_owner_references(meta: &Value, errs: &mut Vec<FieldError>) {
    let path = "metadata.ownerReferences";
    let mut first_controller: Option<String> = None;
    for r in arr(meta, "ownerReferences") {
        let api_version = string(r, "apiVersion");
        let kind = string(r, "kind");
        let (group, version) = split_api_version(api_version);
        if version.is_empty() {
            errs.push(invalid_str(
                &child(path, "apiVersion"),
                api_version,
                "version must not be empty",
            ));
        }
        if kind.is_empty() {
            errs.push(invalid_str(
                &child(path, "kind"),
                kind,
                "kind must not be empty",
            ));
        }
        let name = string(r, "name");
        if name.is_empty() {
            errs.push(invalid_str(
                &child(path, "name"),
                name,
                "name must not be empty",
            ));
        }
        let uid = string(r, "uid");
        if uid.is_empty() {
            errs.push(invalid_str(
                &child(path, "uid"),
                uid,
                "uid must not be empty",
            ));
        }
        if group.is_empty() && version == "v1" && kind == "Event" {
            errs.push(invalid(
                path,
                "v1.OwnerReference{...}",
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if get(r, "controller").and_then(Value::as_bool) == Some(true) {
            let current = format!("{kind}/{name}");
            match &first_controller {
                Some(first) => errs.push(invalid(
                    path,
                    "[]v1.OwnerReference{...}",
                    &format!(
                        "Only one reference can have Controller set to true. Found \"true\" in \
                         references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
}

/// `schema.ParseGroupVersion`, forgiving: a malformed value has no version.
fn split_api_version(s: &str) -> (&str, &str) {
    match s.split('/').collect::<Vec<_>>().as_slice() {
        [v] => ("", v),
        [g, v] => (g, v),
        _ => ("", ""),
    }
}

// ---------------------------------------------------------------------------
// ConfigMap, Secret, ServiceAccount.

/// Bytes a base64 string decodes to, or `None` when it is not base64.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut nbits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        nbits += 6;
        if nbits >= 8 {
            nbits -= 8;
            out.push(((acc >> nbits) & 0xff) as u8);
        }
    }
    Some(out)
}

/// Size of a `[]byte` field value as stored in JSON (base64); a value that
/// is not base64 counts its text length (the server would not decode it).
fn bytes_len(v: &Value) -> usize {
    v.as_str()
        .map_or(0, |s| base64_decode(s).map_or(s.len(), |b| b.len()))
}

fn validate_config_map(obj: &Value, errs: &mut Vec<FieldError>) {
    let empty = Map::new();
    let data = map_at(obj, "data").unwrap_or(&empty);
    let binary = map_at(obj, "binaryData").unwrap_or(&empty);
    let mut total = 0usize;
    for (k, v) in data {
        for msg in is_config_map_key(k) {
            errs.push(invalid_str(&key("data", k), k, &msg));
        }
        if binary.contains_key(k) {
            errs.push(invalid_str(
                &key("data", k),
                k,
                "duplicate of key present in binaryData",
            ));
        }
        total += v.as_str().map_or(0, str::len);
    }
    for (k, v) in binary {
        for msg in is_config_map_key(k) {
            errs.push(invalid_str(&key("binaryData", k), k, &msg));
        }
        if data.contains_key(k) {
            errs.push(invalid_str(
                &key("binaryData", k),
                k,
                "duplicate of key present in data",
            ));
        }
        total += bytes_len(v);
    }
    if total > MAX_DATA_SIZE {
        // Upstream reports the whole object: `field.NewPath("")`, which
        // prints as `[]`.
        errs.push(too_long("[]", MAX_DATA_SIZE));
    }
}

/// After `immutable: true`, the flag and the data fields may not change.
fn validate_immutable_data(obj: &Value, old: &Value, fields: &[&str], errs: &mut Vec<FieldError>) {
    if get(old, "immutable").and_then(Value::as_bool) != Some(true) {
        return;
    }
    if get(obj, "immutable").and_then(Value::as_bool) != Some(true) {
        errs.push(forbidden("immutable", IMMUTABLE_WHEN_SET));
    }
    for f in fields {
        let new = map_at(obj, f).filter(|m| !m.is_empty());
        let before = map_at(old, f).filter(|m| !m.is_empty());
        if new != before {
            errs.push(forbidden(f, IMMUTABLE_WHEN_SET));
        }
    }
}

/// A Secret's data as the server sees it: `stringData` merged over `data`
/// (the v1 conversion does this before validation), values as bytes.
fn secret_data(obj: &Value) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    if let Some(data) = map_at(obj, "data") {
        for (k, v) in data {
            let s = v.as_str().unwrap_or("");
            out.insert(
                k.clone(),
                base64_decode(s).unwrap_or_else(|| s.as_bytes().to_vec()),
            );
        }
    }
    if let Some(data) = map_at(obj, "stringData") {
        for (k, v) in data {
            out.insert(k.clone(), v.as_str().unwrap_or("").as_bytes().to_vec());
        }
    }
    out
}

fn validate_secret(obj: &Value, errs: &mut Vec<FieldError>) {
    let ty = opt_string(obj, "type").unwrap_or("Opaque");
    let data = secret_data(obj);
    let mut total = 0usize;
    for (k, v) in &data {
        for msg in is_config_map_key(k) {
            errs.push(invalid_str(&key("data", k), k, &msg));
        }
        total += v.len();
    }
    if total > MAX_DATA_SIZE {
        errs.push(too_long("data", MAX_DATA_SIZE));
    }
    match ty {
        "kubernetes.io/service-account-token" => {
            let sa = get(obj, "metadata")
                .map(|m| {
                    map_at(m, "annotations")
                        .and_then(|a| a.get("kubernetes.io/service-account.name"))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                })
                .unwrap_or("");
            if sa.is_empty() {
                errs.push(required(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                    "",
                ));
            }
        }
        "kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson" => {
            let k = if ty == "kubernetes.io/dockercfg" {
                ".dockercfg"
            } else {
                ".dockerconfigjson"
            };
            match data.get(k) {
                None => errs.push(required(&key("data", k), "")),
                Some(bytes) => {
                    if let Some(msg) = go_json_map_error(bytes) {
                        errs.push(invalid_str(
                            &key("data", k),
                            "<secret contents redacted>",
                            &msg,
                        ));
                    }
                }
            }
        }
        "kubernetes.io/basic-auth"
            if !data.contains_key("username") && !data.contains_key("password") =>
        {
            // Upstream builds these paths from the literal "data[%s]".
            errs.push(required("data[%s][username]", ""));
            errs.push(required("data[%s][password]", ""));
        }
        "kubernetes.io/ssh-auth" if data.get("ssh-privatekey").is_none_or(Vec::is_empty) => {
            errs.push(required("data[%s][ssh-privatekey]", ""));
        }
        "kubernetes.io/tls" => {
            for k in ["tls.crt", "tls.key"] {
                if !data.contains_key(k) {
                    errs.push(required(&key("data", k), ""));
                }
            }
        }
        _ => {}
    }
}

/// The error Go's `json.Unmarshal(b, &map[string]interface{}{})` returns,
/// if any. Type mismatches and truncation are worded exactly; other syntax
/// errors are reconstructed for the common cases (`invalid character 'x'
/// looking for beginning of value`, `... after top-level value`) and fall
/// back to Go's generic wording otherwise.
fn go_json_map_error(bytes: &[u8]) -> Option<String> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(_) | Value::Null) => None,
        Ok(other) => {
            let ty = match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                _ => "bool",
            };
            Some(format!(
                "json: cannot unmarshal {ty} into Go value of type map[string]interface {{}}"
            ))
        }
        Err(e) if e.is_eof() => Some("unexpected end of JSON input".to_string()),
        Err(e) => {
            let text = String::from_utf8_lossy(bytes);
            let first = text
                .trim_start_matches([' ', '\t', '\n', '\r'])
                .chars()
                .next();
            let valid_start = first.is_some_and(|c| {
                matches!(c, '{' | '[' | '"' | '-' | 't' | 'f' | 'n') || c.is_ascii_digit()
            });
            if let Some(c) = first.filter(|_| !valid_start) {
                return Some(format!(
                    "invalid character {} looking for beginning of value",
                    go_quote_char(c)
                ));
            }
            if e.to_string().starts_with("trailing characters") {
                let c = text
                    .chars()
                    .nth(e.column().saturating_sub(1))
                    .unwrap_or(' ');
                return Some(format!(
                    "invalid character {} after top-level value",
                    go_quote_char(c)
                ));
            }
            Some("invalid character in JSON input".to_string())
        }
    }
}

/// Go's `quoteChar` in `encoding/json` errors.
fn go_quote_char(c: char) -> String {
    match c {
        '\'' => "'\\''".to_string(),
        '"' => "'\"'".to_string(),
        c => {
            let q = quote(&c.to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

// ---------------------------------------------------------------------------
// RBAC.

fn validate_policy_rules(obj: &Value, namespaced: bool, errs: &mut Vec<FieldError>) {
    for (i, rule) in arr(obj, "rules").iter().enumerate() {
        let p = index("rules", i);
        if arr(rule, "verbs").is_empty() {
            errs.push(required(
                &child(&p, "verbs"),
                "verbs must contain at least one value",
            ));
        }
        let urls = get(rule, "nonResourceURLs").and_then(Value::as_array);
        if let Some(urls) = urls.filter(|u| !u.is_empty()) {
            let strs: Vec<&str> = urls.iter().filter_map(Value::as_str).collect();
            let shown = go_string_slice(Some(&strs));
            if namespaced {
                errs.push(invalid(
                    &child(&p, "nonResourceURLs"),
                    &shown,
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if !arr(rule, "apiGroups").is_empty()
                || !arr(rule, "resources").is_empty()
                || !arr(rule, "resourceNames").is_empty()
            {
                errs.push(invalid(
                    &child(&p, "nonResourceURLs"),
                    &shown,
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if arr(rule, "apiGroups").is_empty() {
            errs.push(required(
                &child(&p, "apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if arr(rule, "resources").is_empty() {
            errs.push(required(
                &child(&p, "resources"),
                "resource rules must supply at least one resource",
            ));
        }
        if !arr(rule, "resourceNames").is_empty() && arr(rule, "resources").len() > 1 {
            errs.push(required(
                &child(&p, "resourceNames"),
                "resource names cannot apply to multiple resources",
            ));
        }
    }
}

fn validate_cluster_role(obj: &Value, errs: &mut Vec<FieldError>) {
    validate_policy_rules(obj, false, errs);
    if let Some(agg) = get(obj, "aggregationRule") {
        let path = "aggregationRule.clusterRoleSelectors";
        let selectors = arr(agg, "clusterRoleSelectors");
        if selectors.is_empty() {
            errs.push(required(
                path,
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            ));
        }
        for (i, sel) in selectors.iter().enumerate() {
            let p = index(path, i);
            validate_label_selector(sel, &p, errs);
            if Selector::from_json(Some(sel)).is_none() {
                // Upstream prints the nil selector the conversion returned.
                errs.push(invalid_str(&p, "null", "invalid label selector."));
            }
        }
    }
}

fn validate_binding(
    obj: &Value,
    old: Option<&Value>,
    namespaced: bool,
    errs: &mut Vec<FieldError>,
) {
    let role_ref = get(obj, "roleRef").unwrap_or(&Value::Null);
    let api_group = string(role_ref, "apiGroup");
    if api_group != RBAC_GROUP {
        errs.push(not_supported("roleRef.apiGroup", api_group, &[RBAC_GROUP]));
    }
    let kind = string(role_ref, "kind");
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&kind) {
        errs.push(not_supported("roleRef.kind", kind, kinds));
    }
    let name = string(role_ref, "name");
    if name.is_empty() {
        errs.push(required("roleRef.name", ""));
    } else {
        for msg in is_valid_path_segment_name(name) {
            errs.push(invalid_str("roleRef.name", name, &msg));
        }
    }
    for (i, subject) in arr(obj, "subjects").iter().enumerate() {
        validate_subject(subject, namespaced, &index("subjects", i), errs);
    }
    if let Some(old) = old {
        let old_ref = get(old, "roleRef").unwrap_or(&Value::Null);
        let same = ["apiGroup", "kind", "name"]
            .iter()
            .all(|f| string(role_ref, f) == string(old_ref, f));
        if !same {
            let shown = format!(
                "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
                quote(api_group),
                quote(kind),
                quote(name)
            );
            errs.push(invalid("roleRef", &shown, "cannot change roleRef"));
        }
    }
}

fn validate_subject(subject: &Value, namespaced: bool, path: &str, errs: &mut Vec<FieldError>) {
    let name = string(subject, "name");
    if name.is_empty() {
        errs.push(required(&child(path, "name"), ""));
    }
    let api_group = string(subject, "apiGroup");
    match string(subject, "kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                for msg in is_dns1123_subdomain(name) {
                    errs.push(invalid_str(&child(path, "name"), name, &msg));
                }
            }
            if !api_group.is_empty() {
                errs.push(not_supported(&child(path, "apiGroup"), api_group, &[""]));
            }
            if !namespaced && string(subject, "namespace").is_empty() {
                errs.push(required(&child(path, "namespace"), ""));
            }
        }
        k @ ("User" | "Group") => {
            if name.is_empty() {
                let what = if k == "User" { "user" } else { "group" };
                errs.push(invalid_str(
                    &child(path, "name"),
                    name,
                    &format!("{what} name cannot be empty"),
                ));
            }
            if api_group != RBAC_GROUP {
                errs.push(not_supported(
                    &child(path, "apiGroup"),
                    api_group,
                    &[RBAC_GROUP],
                ));
            }
        }
        other => errs.push(not_supported(
            &child(path, "kind"),
            other,
            &["ServiceAccount", "User", "Group"],
        )),
    }
}

// ---------------------------------------------------------------------------
// NetworkPolicy.

/// `ValidateNetworkPolicySpec`. A repeated policy type is accepted, as
/// upstream accepts it: only more than two entries is an error.
fn validate_network_policy(obj: &Value, errs: &mut Vec<FieldError>) {
    let spec = get(obj, "spec").unwrap_or(&Value::Null);
    if let Some(sel) = get(spec, "podSelector") {
        validate_label_selector(sel, "spec.podSelector", errs);
    }
    for (dir, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in arr(spec, dir).iter().enumerate() {
            let rp = index(&child("spec", dir), i);
            for (j, port) in arr(rule, "ports").iter().enumerate() {
                validate_np_port(port, &index(&child(&rp, "ports"), j), errs);
            }
            for (j, peer) in arr(rule, peers).iter().enumerate() {
                validate_np_peer(peer, &index(&child(&rp, peers), j), errs);
            }
        }
    }
    let types = arr(spec, "policyTypes");
    if types.len() > 2 {
        let strs: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
        errs.push(invalid(
            "spec.policyTypes",
            &go_policy_types(&strs),
            "may not specify more than two policyTypes",
        ));
        return;
    }
    for (i, t) in types.iter().enumerate() {
        let t = t.as_str().unwrap_or("");
        if t != "Ingress" && t != "Egress" {
            errs.push(not_supported(
                &index("spec.policyTypes", i),
                t,
                &["Ingress", "Egress"],
            ));
        }
    }
}

/// `%#v` of a `[]networking.PolicyType`.
fn go_policy_types(items: &[&str]) -> String {
    let q: Vec<String> = items.iter().map(|s| quote(s)).collect();
    format!("[]networking.PolicyType{{{}}}", q.join(", "))
}

fn validate_np_port(port: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(proto) = opt_string(port, "protocol")
        && !matches!(proto, "TCP" | "UDP" | "SCTP")
    {
        errs.push(not_supported(
            &child(path, "protocol"),
            proto,
            &["TCP", "UDP", "SCTP"],
        ));
    }
    let end = int(port, "endPort");
    match get(port, "port") {
        Some(Value::String(name)) => {
            if let Some(end) = end {
                errs.push(invalid(
                    &child(path, "endPort"),
                    &end.to_string(),
                    "may not be specified when `port` is non-numeric",
                ));
            }
            for msg in is_valid_port_name(name) {
                errs.push(invalid_str(&child(path, "port"), name, &msg));
            }
        }
        Some(p) => {
            let n = as_int(p).unwrap_or(0);
            if !is_valid_port_num(n) {
                errs.push(invalid(&child(path, "port"), &n.to_string(), PORT_RANGE));
            }
            if let Some(end) = end {
                if end < n {
                    // Upstream prints the port, not the endPort, here.
                    errs.push(invalid(
                        &child(path, "endPort"),
                        &n.to_string(),
                        "must be greater than or equal to `port`",
                    ));
                }
                if !is_valid_port_num(end) {
                    errs.push(invalid(
                        &child(path, "endPort"),
                        &end.to_string(),
                        PORT_RANGE,
                    ));
                }
            }
        }
        None => {
            if let Some(end) = end {
                errs.push(invalid(
                    &child(path, "endPort"),
                    &end.to_string(),
                    "may not be specified when `port` is not specified",
                ));
            }
        }
    }
}

fn validate_np_peer(peer: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let mut count = 0;
    for f in ["podSelector", "namespaceSelector"] {
        if let Some(sel) = get(peer, f) {
            count += 1;
            validate_label_selector(sel, &child(path, f), errs);
        }
    }
    let ip_block = get(peer, "ipBlock");
    if let Some(block) = ip_block {
        count += 1;
        validate_ip_block(block, &child(path, "ipBlock"), errs);
    }
    if count == 0 {
        errs.push(required(path, "must specify a peer"));
    } else if count > 1 && ip_block.is_some() {
        errs.push(forbidden(
            path,
            "may not specify both ipBlock and another peer",
        ));
    }
}

/// `ValidateIPBlock` with the legacy (non-strict) CIDR parsing v1.33 uses by
/// default (`StrictIPCIDRValidation` is alpha and off).
fn validate_ip_block(block: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let cidr = string(block, "cidr");
    if cidr.is_empty() {
        errs.push(required(&child(path, "cidr"), ""));
        return;
    }
    let Some(outer) = parse_cidr(cidr) else {
        errs.push(invalid_str(&child(path, "cidr"), cidr, CIDR_INVALID));
        return;
    };
    for (i, except) in arr(block, "except").iter().enumerate() {
        let p = index(&child(path, "except"), i);
        let except = except.as_str().unwrap_or("");
        let Some(inner) = parse_cidr(except) else {
            errs.push(invalid_str(&p, except, CIDR_INVALID));
            continue;
        };
        if !outer.contains(inner.net, inner.bits) || outer.prefix >= inner.prefix {
            errs.push(invalid_str(&p, except, "must be a strict subset of `cidr`"));
        }
    }
}

// ---------------------------------------------------------------------------
// Pods and pod templates.

/// What differs between a Pod's spec and a template's.
#[derive(Clone, Copy)]
struct PodOpts {
    /// A Pod (not a template): images may not have surrounding whitespace.
    is_pod: bool,
}

/// `ValidatePodTemplateSpec` at `path` (e.g. `spec.template`).
fn validate_pod_template(template: &Value, path: &str, opts: PodOpts, errs: &mut Vec<FieldError>) {
    if let Some(meta) = get(template, "metadata") {
        // Upstream names these `<path>.labels`, not `<path>.metadata.labels`.
        if let Some(labels) = map_at(meta, "labels") {
            validate_labels(labels, &child(path, "labels"), errs);
        }
        if let Some(annotations) = map_at(meta, "annotations") {
            validate_annotations(annotations, &child(path, "annotations"), errs);
        }
    }
    let spec = get(template, "spec").unwrap_or(&Value::Null);
    validate_pod_spec(spec, &child(path, "spec"), opts, errs);
    if !arr(spec, "ephemeralContainers").is_empty() {
        errs.push(forbidden(
            &child(&child(path, "spec"), "ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
}

/// The subset of `ValidatePodSpec` this module covers: volumes, containers
/// and init containers, restart and DNS policies, and a few scalar fields.
/// A negative `terminationGracePeriodSeconds` is not an error: upstream's
/// `ValidatePodSpec` has no such rule (the Pod strategy turns it into 1).
fn validate_pod_spec(spec: &Value, path: &str, opts: PodOpts, errs: &mut Vec<FieldError>) {
    let volumes = validate_volumes(spec, &child(path, "volumes"), errs);
    let containers = arr(spec, "containers");
    let cpath = child(path, "containers");
    if containers.is_empty() {
        errs.push(required(&cpath, ""));
    } else {
        let mut names = BTreeSet::new();
        for (i, c) in containers.iter().enumerate() {
            let p = index(&cpath, i);
            validate_container(c, &volumes, &p, opts, errs);
            let name = string(c, "name");
            if !names.insert(name) {
                errs.push(duplicate(&child(&p, "name"), name));
            }
            if get(c, "restartPolicy").is_some() {
                errs.push(forbidden(
                    &child(&p, "restartPolicy"),
                    "may not be set for non-init containers",
                ));
            }
        }
        validate_host_ports(containers, &cpath, errs);
    }
    let mut all: BTreeSet<&str> = containers.iter().map(|c| string(c, "name")).collect();
    let ipath = child(path, "initContainers");
    for (i, c) in arr(spec, "initContainers").iter().enumerate() {
        let p = index(&ipath, i);
        validate_container(c, &volumes, &p, opts, errs);
        let sidecar = match opt_string(c, "restartPolicy") {
            Some("Always") => true,
            Some(policy) => {
                errs.push(not_supported(
                    &child(&p, "restartPolicy"),
                    policy,
                    &["Always"],
                ));
                false
            }
            None => false,
        };
        let name = string(c, "name");
        if all.contains(name) {
            errs.push(duplicate(&child(&p, "name"), name));
        } else if !name.is_empty() {
            all.insert(name);
        }
        // Upstream checks each init container on its own (they run one at a
        // time), as a one-element list: the path always says `[0]`.
        validate_host_ports(std::slice::from_ref(c), &ipath, errs);
        if !sidecar {
            for f in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if get(c, f).is_some() {
                    errs.push(forbidden(
                        &child(&p, f),
                        "may not be set for init containers without restartPolicy=Always",
                    ));
                }
            }
        }
    }
    match string(spec, "restartPolicy") {
        "Always" | "OnFailure" | "Never" => {}
        "" => errs.push(required(&child(path, "restartPolicy"), "")),
        other => errs.push(not_supported(
            &child(path, "restartPolicy"),
            other,
            &["Always", "OnFailure", "Never"],
        )),
    }
    match string(spec, "dnsPolicy") {
        "ClusterFirstWithHostNet" | "ClusterFirst" | "Default" | "None" => {}
        "" => errs.push(required(&child(path, "dnsPolicy"), "")),
        other => errs.push(not_supported(
            &child(path, "dnsPolicy"),
            other,
            &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        )),
    }
    if let Some(sel) = map_at(spec, "nodeSelector") {
        validate_labels(sel, &child(path, "nodeSelector"), errs);
    }
    if string(spec, "dnsPolicy") == "None" {
        let dp = child(path, "dnsConfig");
        match get(spec, "dnsConfig") {
            None => errs.push(required(
                &dp,
                "must provide `dnsConfig` when `dnsPolicy` is None",
            )),
            Some(cfg) if arr(cfg, "nameservers").is_empty() => errs.push(required(
                &child(&dp, "nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            )),
            Some(_) => {}
        }
    }
    let sa = string(spec, "serviceAccountName");
    if !sa.is_empty() {
        for msg in is_dns1123_subdomain(sa) {
            errs.push(invalid_str(&child(path, "serviceAccountName"), sa, &msg));
        }
    }
    let node = string(spec, "nodeName");
    if !node.is_empty() {
        for msg in is_dns1123_subdomain(node) {
            errs.push(invalid_str(&child(path, "nodeName"), node, &msg));
        }
    }
    if let Some(v) = int(spec, "activeDeadlineSeconds")
        && !(1..=i64::from(i32::MAX)).contains(&v)
    {
        errs.push(invalid(
            &child(path, "activeDeadlineSeconds"),
            &v.to_string(),
            "must be between 1 and 2147483647, inclusive",
        ));
    }
    for f in ["hostname", "subdomain"] {
        let v = string(spec, f);
        if !v.is_empty() {
            for msg in is_dns1123_label(v) {
                errs.push(invalid_str(&child(path, f), v, &msg));
            }
        }
    }
}

/// The volume sources of `core.VolumeSource` in the order upstream checks
/// them (the second one found is the one reported), each with the path
/// segment its `may not specify more than 1 volume type` error uses
/// (upstream misspells two of them: `cephFS`, `downwarAPI`).
const VOLUME_SOURCES: &[(&str, &str)] = &[
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
];

/// `ValidateVolumes`; returns the names of the volumes without errors
/// (upstream only lets mounts refer to those).
fn validate_volumes<'a>(
    spec: &'a Value,
    path: &str,
    errs: &mut Vec<FieldError>,
) -> BTreeSet<&'a str> {
    let mut ok = BTreeSet::new();
    let mut seen = BTreeSet::new();
    for (i, vol) in arr(spec, "volumes").iter().enumerate() {
        let p = index(path, i);
        let mut el = Vec::new();
        let mut count = 0;
        for (src, shown) in VOLUME_SOURCES {
            let Some(source) = get(vol, src) else {
                continue;
            };
            if count > 0 {
                el.push(forbidden(
                    &child(&p, shown),
                    "may not specify more than 1 volume type",
                ));
                continue;
            }
            count += 1;
            let sp = child(&p, src);
            let needed = match *src {
                "secret" => Some("secretName"),
                "configMap" => Some("name"),
                "persistentVolumeClaim" => Some("claimName"),
                _ => None,
            };
            if let Some(f) = needed
                && string(source, f).is_empty()
            {
                el.push(required(&child(&sp, f), ""));
            }
        }
        if count == 0 {
            el.push(required(&p, "must specify a volume type"));
        }
        let name = string(vol, "name");
        let np = child(&p, "name");
        if name.is_empty() {
            el.push(required(&np, ""));
        } else {
            for msg in is_dns1123_label(name) {
                el.push(invalid_str(&np, name, &msg));
            }
        }
        if seen.contains(name) {
            el.push(duplicate(&np, name));
        }
        if el.is_empty() {
            seen.insert(name);
            ok.insert(name);
        } else {
            errs.extend(el);
        }
    }
    ok
}

fn validate_container(
    c: &Value,
    volumes: &BTreeSet<&str>,
    path: &str,
    opts: PodOpts,
    errs: &mut Vec<FieldError>,
) {
    let name = string(c, "name");
    if name.is_empty() {
        errs.push(required(&child(path, "name"), ""));
    } else {
        for msg in is_dns1123_label(name) {
            errs.push(invalid_str(&child(path, "name"), name, &msg));
        }
    }
    let image = string(c, "image");
    if image.is_empty() {
        errs.push(required(&child(path, "image"), ""));
    } else if opts.is_pod && image.trim() != image {
        errs.push(invalid_str(
            &child(path, "image"),
            image,
            "must not have leading or trailing whitespace",
        ));
    }
    match string(c, "terminationMessagePolicy") {
        "File" | "FallbackToLogsOnError" => {}
        "" => errs.push(required(&child(path, "terminationMessagePolicy"), "")),
        other => errs.push(not_supported(
            &child(path, "terminationMessagePolicy"),
            other,
            &["File", "FallbackToLogsOnError"],
        )),
    }
    validate_container_ports(c, &child(path, "ports"), errs);
    if let Some(resources) = get(c, "resources") {
        errs.extend(crate::quantity_validation::validate_resource_requirements(
            &child(path, "resources"),
            resources,
        ));
    }
    validate_env(c, &child(path, "env"), errs);
    validate_env_from(c, &child(path, "envFrom"), errs);
    validate_volume_mounts(c, volumes, &child(path, "volumeMounts"), errs);
    match string(c, "imagePullPolicy") {
        "Always" | "IfNotPresent" | "Never" => {}
        "" => errs.push(required(&child(path, "imagePullPolicy"), "")),
        other => errs.push(not_supported(
            &child(path, "imagePullPolicy"),
            other,
            &["Always", "IfNotPresent", "Never"],
        )),
    }
}

/// `checkHostPortConflicts`: a `protocol/hostIP/hostPort` used twice.
fn validate_host_ports(containers: &[Value], path: &str, errs: &mut Vec<FieldError>) {
    let mut seen = BTreeSet::new();
    for (i, c) in containers.iter().enumerate() {
        for (j, port) in arr(c, "ports").iter().enumerate() {
            let Some(host_port) = int(port, "hostPort").filter(|p| *p != 0) else {
                continue;
            };
            let key = format!(
                "{}/{}/{host_port}",
                string(port, "protocol"),
                string(port, "hostIP")
            );
            if seen.contains(&key) {
                let p = index(&child(&index(path, i), "ports"), j);
                errs.push(duplicate(&child(&p, "hostPort"), &key));
            } else {
                seen.insert(key);
            }
        }
    }
}

fn validate_container_ports(c: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let mut names = BTreeSet::new();
    for (i, port) in arr(c, "ports").iter().enumerate() {
        let p = index(path, i);
        let name = string(port, "name");
        if !name.is_empty() {
            let msgs = is_valid_port_name(name);
            if !msgs.is_empty() {
                for msg in msgs {
                    errs.push(invalid_str(&child(&p, "name"), name, &msg));
                }
            } else if !names.insert(name) {
                errs.push(duplicate(&child(&p, "name"), name));
            }
        }
        match int(port, "containerPort") {
            None | Some(0) => errs.push(required(&child(&p, "containerPort"), "")),
            Some(n) if !is_valid_port_num(n) => {
                errs.push(invalid(
                    &child(&p, "containerPort"),
                    &n.to_string(),
                    PORT_RANGE,
                ));
            }
            Some(_) => {}
        }
        if let Some(h) = int(port, "hostPort").filter(|h| *h != 0)
            && !is_valid_port_num(h)
        {
            errs.push(invalid(&child(&p, "hostPort"), &h.to_string(), PORT_RANGE));
        }
        match string(port, "protocol") {
            "" => errs.push(required(&child(&p, "protocol"), "")),
            "TCP" | "UDP" | "SCTP" => {}
            other => errs.push(not_supported(
                &child(&p, "protocol"),
                other,
                &["SCTP", "TCP", "UDP"],
            )),
        }
    }
}

/// `ValidateEnv` with the relaxed name rule (on by default in v1.33).
fn validate_env(c: &Value, path: &str, errs: &mut Vec<FieldError>) {
    for (i, ev) in arr(c, "env").iter().enumerate() {
        let p = index(path, i);
        let np = child(&p, "name");
        let name = string(ev, "name");
        if name.is_empty() {
            errs.push(required(&np, ""));
        } else {
            for msg in is_relaxed_env_var_name(name) {
                errs.push(invalid_str(&np, name, &msg));
            }
        }
        let Some(from) = get(ev, "valueFrom") else {
            continue;
        };
        let fp = child(&p, "valueFrom");
        let sources = [
            "fieldRef",
            "resourceFieldRef",
            "configMapKeyRef",
            "secretKeyRef",
        ]
        .iter()
        .filter(|f| get(from, f).is_some())
        .count();
        let detail = if sources == 0 {
            "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"
        } else if !string(ev, "value").is_empty() {
            "may not be specified when `value` is not empty"
        } else if sources > 1 {
            "may not have more than one field specified at a time"
        } else {
            ""
        };
        if !detail.is_empty() {
            errs.push(invalid_str(&fp, "", detail));
        }
    }
}

/// `ValidateEnvFrom`: the prefix follows the relaxed variable-name rule;
/// each entry names exactly one ConfigMap or Secret. The count errors sit on
/// `envFrom` itself, without an index, as upstream reports them.
fn validate_env_from(c: &Value, path: &str, errs: &mut Vec<FieldError>) {
    for (i, ev) in arr(c, "envFrom").iter().enumerate() {
        let p = index(path, i);
        let prefix = string(ev, "prefix");
        if !prefix.is_empty() {
            for msg in is_relaxed_env_var_name(prefix) {
                errs.push(invalid_str(&child(&p, "prefix"), prefix, &msg));
            }
        }
        let mut sources = 0;
        for f in ["configMapRef", "secretRef"] {
            let Some(source) = get(ev, f) else {
                continue;
            };
            sources += 1;
            let np = child(&child(&p, f), "name");
            let name = string(source, "name");
            if name.is_empty() {
                errs.push(required(&np, ""));
            } else {
                for msg in NameRule::Subdomain.check(name, true) {
                    errs.push(invalid_str(&np, name, &msg));
                }
            }
        }
        if sources == 0 {
            errs.push(invalid_str(
                path,
                "",
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if sources > 1 {
            errs.push(invalid_str(
                path,
                "",
                "may not have more than one field specified at a time",
            ));
        }
    }
}

fn validate_volume_mounts(
    c: &Value,
    volumes: &BTreeSet<&str>,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let mut mount_points = BTreeSet::new();
    for (i, m) in arr(c, "volumeMounts").iter().enumerate() {
        let p = index(path, i);
        let name = string(m, "name");
        if name.is_empty() {
            errs.push(required(&child(&p, "name"), ""));
        }
        if !volumes.contains(name) {
            errs.push(not_found(&child(&p, "name"), name));
        }
        let mount_path = string(m, "mountPath");
        if mount_path.is_empty() {
            errs.push(required(&child(&p, "mountPath"), ""));
        }
        if !mount_points.insert(mount_path) {
            errs.push(invalid_str(
                &child(&p, "mountPath"),
                mount_path,
                "must be unique",
            ));
        }
    }
}

// ---------------------------------------------------------------------------
// Workloads.

/// Which workload a template belongs to, for the kind-specific messages.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Workload {
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
}

impl Workload {
    /// The word in `empty selector is invalid for <x>` (ReplicaSets share
    /// the Deployment wording upstream).
    fn selector_word(self) -> &'static str {
        match self {
            Self::Deployment | Self::ReplicaSet => "deployment",
            Self::StatefulSet => "statefulset",
            Self::DaemonSet => "daemonset",
        }
    }

    /// The kind in `activeDeadlineSeconds in <X> is not Supported`
    /// (Deployments share the ReplicaSet template check upstream).
    fn deadline_word(self) -> &'static str {
        match self {
            Self::Deployment | Self::ReplicaSet => "ReplicaSet",
            Self::StatefulSet => "StatefulSet",
            Self::DaemonSet => "DaemonSet",
        }
    }
}

fn nonnegative(spec: &Value, f: &str, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(v) = int(spec, f)
        && v < 0
    {
        errs.push(invalid(&child(path, f), &v.to_string(), NEGATIVE));
    }
}

/// `%#v` of a strategy struct whose `RollingUpdate` is a pointer: nil
/// prints as Go does, a set pointer prints its address upstream, which
/// cannot be reproduced (`(...)` stands for it here).
fn go_strategy(go_type: &str, pointer_type: &str, strategy: &Value) -> String {
    let ru = if get(strategy, "rollingUpdate").is_some() {
        format!("(*{pointer_type})(...)")
    } else {
        format!("(*{pointer_type})(nil)")
    };
    format!(
        "{go_type}{{Type:{}, RollingUpdate:{ru}}}",
        quote(string(strategy, "type"))
    )
}

/// `ValidateDeploymentSpec`, `ValidateReplicaSetSpec`,
/// `ValidateStatefulSetSpec` and `ValidateDaemonSetSpec`, plus the update
/// rules of their registry strategies.
fn validate_workload(obj: &Value, old: Option<&Value>, w: Workload, errs: &mut Vec<FieldError>) {
    let spec = get(obj, "spec").unwrap_or(&Value::Null);
    match w {
        Workload::Deployment => nonnegative(spec, "replicas", "spec", errs),
        Workload::ReplicaSet => {
            nonnegative(spec, "replicas", "spec", errs);
            nonnegative(spec, "minReadySeconds", "spec", errs);
        }
        Workload::StatefulSet => validate_statefulset_head(spec, errs),
        Workload::DaemonSet => {}
    }
    let sel = get(spec, "selector").filter(|s| s.is_object());
    let template = get(spec, "template").unwrap_or(&Value::Null);
    let template_labels = get(template, "metadata").and_then(|m| string_map(m, "labels"));
    let mismatch = |errs: &mut Vec<FieldError>| {
        errs.push(invalid(
            "spec.template.metadata.labels",
            &go_string_map(template_labels.as_ref()),
            SELECTOR_MISMATCH,
        ));
    };
    let empty_selector = |s: &Value, errs: &mut Vec<FieldError>| {
        let n = map_at(s, "matchLabels").map_or(0, Map::len) + arr(s, "matchExpressions").len();
        if n == 0 {
            errs.push(invalid(
                "spec.selector",
                &go_label_selector(Some(s)),
                &format!("empty selector is invalid for {}", w.selector_word()),
            ));
        }
    };
    let opts = PodOpts { is_pod: false };
    let tspec = get(template, "spec").unwrap_or(&Value::Null);
    let mut template_checked = true;
    if w == Workload::DaemonSet {
        if let Some(s) = sel {
            validate_label_selector(s, "spec.selector", errs);
        }
        if Selector::from_json(sel).is_some_and(|s| !s.matches(template_labels.as_ref())) {
            mismatch(errs);
        }
        if let Some(s) = sel {
            empty_selector(s, errs);
        }
        validate_pod_template(template, "spec.template", opts, errs);
    } else {
        match sel {
            None => errs.push(required("spec.selector", "")),
            Some(s) => {
                validate_label_selector(s, "spec.selector", errs);
                empty_selector(s, errs);
            }
        }
        match Selector::from_json(sel) {
            None => {
                let detail = if w == Workload::StatefulSet {
                    ""
                } else {
                    "invalid label selector"
                };
                errs.push(invalid("spec.selector", &go_label_selector(sel), detail));
                template_checked = false;
            }
            Some(selector) => {
                if !selector.is_empty() && !selector.matches(template_labels.as_ref()) {
                    mismatch(errs);
                }
                if w == Workload::StatefulSet {
                    // Upstream leaves a StatefulSet's pod spec unvalidated
                    // (its volumes come partly from volumeClaimTemplates).
                    if let Some(meta) = get(template, "metadata") {
                        if let Some(labels) = map_at(meta, "labels") {
                            validate_labels(labels, "spec.template.labels", errs);
                        }
                        if let Some(annotations) = map_at(meta, "annotations") {
                            validate_annotations(annotations, "spec.template.annotations", errs);
                        }
                    }
                } else {
                    validate_pod_template(template, "spec.template", opts, errs);
                }
            }
        }
    }
    // Deployments and ReplicaSets check these inside the template check,
    // which a broken selector skips; the others always do.
    if template_checked || w == Workload::StatefulSet {
        let policy = string(tspec, "restartPolicy");
        if policy != "Always" {
            errs.push(not_supported(
                "spec.template.spec.restartPolicy",
                policy,
                &["Always"],
            ));
        }
        if get(tspec, "activeDeadlineSeconds").is_some() {
            errs.push(forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                &format!(
                    "activeDeadlineSeconds in {} is not Supported",
                    w.deadline_word()
                ),
            ));
        }
    }
    match w {
        Workload::Deployment => {
            validate_deployment_strategy(spec, errs);
            nonnegative(spec, "minReadySeconds", "spec", errs);
            nonnegative(spec, "revisionHistoryLimit", "spec", errs);
            if let Some(pds) = int(spec, "progressDeadlineSeconds") {
                nonnegative(spec, "progressDeadlineSeconds", "spec", errs);
                if pds <= int(spec, "minReadySeconds").unwrap_or(0) {
                    errs.push(invalid(
                        "spec.progressDeadlineSeconds",
                        &pds.to_string(),
                        "must be greater than minReadySeconds",
                    ));
                }
            }
        }
        Workload::DaemonSet => {
            nonnegative(spec, "minReadySeconds", "spec", errs);
            nonnegative(spec, "templateGeneration", "spec", errs);
            validate_daemonset_strategy(spec, errs);
            nonnegative(spec, "revisionHistoryLimit", "spec", errs);
        }
        _ => {}
    }
    let Some(old) = old else {
        return;
    };
    let old_spec = get(old, "spec").unwrap_or(&Value::Null);
    if w == Workload::StatefulSet {
        if statefulset_fixed_fields(spec) != statefulset_fixed_fields(old_spec) {
            errs.push(forbidden(
                "spec",
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', \
                 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and \
                 'minReadySeconds' are forbidden",
            ));
        }
    } else {
        // apps/v1 forbids selector changes (the registry strategies add
        // this for every version but the retired beta ones).
        let old_sel = get(old_spec, "selector");
        if !same_selector(sel, old_sel) {
            errs.push(invalid("spec.selector", &go_label_selector(sel), IMMUTABLE));
        }
    }
}

/// The StatefulSet fields an update may not change: the spec without the
/// ones `ValidateStatefulSetUpdate` lets through.
fn statefulset_fixed_fields(spec: &Value) -> Map<String, Value> {
    let mut out = spec.as_object().cloned().unwrap_or_default();
    for f in [
        "replicas",
        "template",
        "updateStrategy",
        "minReadySeconds",
        "ordinals",
        "persistentVolumeClaimRetentionPolicy",
    ] {
        out.remove(f);
    }
    out.retain(|_, v| !v.is_null());
    out
}

/// The StatefulSet checks that come before the selector upstream.
fn validate_statefulset_head(spec: &Value, errs: &mut Vec<FieldError>) {
    match string(spec, "podManagementPolicy") {
        "" => errs.push(required("spec.podManagementPolicy", "")),
        "OrderedReady" | "Parallel" => {}
        other => errs.push(invalid_str(
            "spec.podManagementPolicy",
            other,
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    let strategy = get(spec, "updateStrategy").unwrap_or(&Value::Null);
    let ru = get(strategy, "rollingUpdate");
    match string(strategy, "type") {
        "" => errs.push(required("spec.updateStrategy", "")),
        "OnDelete" => {
            if let Some(ru) = ru {
                let max = if get(ru, "maxUnavailable").is_some() {
                    "(*intstr.IntOrString)(...)"
                } else {
                    "(*intstr.IntOrString)(nil)"
                };
                errs.push(invalid(
                    "spec.updateStrategy.rollingUpdate",
                    &format!(
                        "apps.RollingUpdateStatefulSetStrategy{{Partition:{}, MaxUnavailable:{max}}}",
                        int(ru, "partition").unwrap_or(0)
                    ),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(ru) = ru {
                let base = "spec.updateStrategy.rollingUpdate";
                nonnegative(ru, "partition", base, errs);
                if let Some(max) = get(ru, "maxUnavailable") {
                    let path = child(base, "maxUnavailable");
                    validate_int_or_percent(max, &path, errs);
                    if int_or_percent_value(Some(max)) == 0 {
                        errs.push(invalid(&path, &go_int_or_string(max), "cannot be 0"));
                    }
                    not_more_than_100_percent(max, &path, errs);
                }
            }
        }
        _ => errs.push(invalid(
            "spec.updateStrategy",
            &go_strategy(
                "apps.StatefulSetUpdateStrategy",
                "apps.RollingUpdateStatefulSetStrategy",
                strategy,
            ),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    if let Some(policy) = get(spec, "persistentVolumeClaimRetentionPolicy") {
        for f in ["whenDeleted", "whenScaled"] {
            let v = string(policy, f);
            if v != "Retain" && v != "Delete" {
                errs.push(not_supported(
                    &format!("spec.persistentVolumeClaimRetentionPolicy.{f}"),
                    v,
                    &["Retain", "Delete"],
                ));
            }
        }
    }
    nonnegative(spec, "replicas", "spec", errs);
    nonnegative(spec, "minReadySeconds", "spec", errs);
    if let Some(start) = get(spec, "ordinals").and_then(|o| int(o, "start"))
        && start < 0
    {
        // Upstream names this path with a literal dot in one segment.
        errs.push(invalid("spec.ordinals.start", &start.to_string(), NEGATIVE));
    }
}

/// Selector equality for the immutability check. Absent and empty
/// `matchLabels`/`matchExpressions` compare equal: after a JSON round trip
/// clients cannot tell them apart.
fn same_selector(a: Option<&Value>, b: Option<&Value>) -> bool {
    fn norm(v: Option<&Value>) -> Value {
        let mut out = Map::new();
        if let Some(v) = v {
            if let Some(m) = map_at(v, "matchLabels").filter(|m| !m.is_empty()) {
                out.insert("matchLabels".into(), Value::Object(m.clone()));
            }
            let e = arr(v, "matchExpressions");
            if !e.is_empty() {
                out.insert("matchExpressions".into(), Value::Array(e.to_vec()));
            }
        }
        Value::Object(out)
    }
    a.is_some() == b.is_some() && norm(a) == norm(b)
}

fn validate_deployment_strategy(spec: &Value, errs: &mut Vec<FieldError>) {
    let strategy = get(spec, "strategy").unwrap_or(&Value::Null);
    let ru = get(strategy, "rollingUpdate");
    match string(strategy, "type") {
        "Recreate" => {
            if ru.is_some() {
                errs.push(forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => match ru {
            None => errs.push(required(
                "spec.strategy.rollingUpdate",
                "this should be defaulted and never be nil",
            )),
            Some(ru) => validate_rolling_update(ru, errs),
        },
        _ => errs.push(not_supported_raw(
            "spec.strategy",
            &go_strategy(
                "apps.DeploymentStrategy",
                "apps.RollingUpdateDeployment",
                strategy,
            ),
            &["Recreate", "RollingUpdate"],
        )),
    }
}

fn validate_daemonset_strategy(spec: &Value, errs: &mut Vec<FieldError>) {
    let strategy = get(spec, "updateStrategy").unwrap_or(&Value::Null);
    let base = "spec.updateStrategy.rollingUpdate";
    match string(strategy, "type") {
        "OnDelete" => {}
        "RollingUpdate" => {
            let Some(ru) = get(strategy, "rollingUpdate") else {
                errs.push(required(base, ""));
                return;
            };
            let unavailable = get(ru, "maxUnavailable");
            let surge = get(ru, "maxSurge");
            for (f, v) in [("maxUnavailable", unavailable), ("maxSurge", surge)] {
                if let Some(v) = v {
                    validate_int_or_percent(v, &child(base, f), errs);
                }
            }
            for (f, v) in [("maxUnavailable", unavailable), ("maxSurge", surge)] {
                if let Some(v) = v {
                    not_more_than_100_percent(v, &child(base, f), errs);
                }
            }
            let has_unavailable = int_or_percent_value(unavailable) != 0;
            let has_surge = int_or_percent_value(surge) != 0;
            if has_unavailable && has_surge {
                errs.push(invalid(
                    &child(base, "maxSurge"),
                    &surge.map_or_else(|| "0".to_string(), go_int_or_string),
                    "may not be set when maxUnavailable is non-zero",
                ));
            } else if !has_unavailable && !has_surge {
                errs.push(required(
                    &child(base, "maxUnavailable"),
                    "cannot be 0 when maxSurge is 0",
                ));
            }
        }
        _ => errs.push(not_supported_raw(
            "spec.updateStrategy",
            &go_strategy(
                "apps.DaemonSetUpdateStrategy",
                "apps.RollingUpdateDaemonSet",
                strategy,
            ),
            &["RollingUpdate", "OnDelete"],
        )),
    }
}

/// `getIntOrPercentValue`: a valid percent's number, an int's value, else 0.
fn int_or_percent_value(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::String(s)) if is_valid_percent(s) => s[..s.len() - 1].parse().unwrap_or(0),
        Some(Value::String(s)) => s.parse().unwrap_or(0),
        Some(other) => as_int(other).unwrap_or(0),
        None => 0,
    }
}

/// `ValidatePositiveIntOrPercent`. The value prints unquoted: an
/// `IntOrString` is a `fmt.Stringer`.
fn validate_int_or_percent(v: &Value, path: &str, errs: &mut Vec<FieldError>) {
    match v {
        Value::String(s) => {
            if !is_valid_percent(s) {
                errs.push(invalid(path, s, PERCENT_ERR));
            }
        }
        other => {
            let n = as_int(other).unwrap_or(0);
            if n < 0 {
                errs.push(invalid(path, &n.to_string(), NEGATIVE));
            }
        }
    }
}

/// `IsNotMoreThan100Percent`.
fn not_more_than_100_percent(v: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if let Value::String(s) = v
        && is_valid_percent(s)
        && int_or_percent_value(Some(v)) > 100
    {
        errs.push(invalid(path, s, "must not be greater than 100%"));
    }
}

fn validate_rolling_update(ru: &Value, errs: &mut Vec<FieldError>) {
    let base = "spec.strategy.rollingUpdate";
    let unavailable = get(ru, "maxUnavailable");
    for f in ["maxUnavailable", "maxSurge"] {
        if let Some(v) = get(ru, f) {
            validate_int_or_percent(v, &child(base, f), errs);
        }
    }
    if int_or_percent_value(unavailable) == 0 && int_or_percent_value(get(ru, "maxSurge")) == 0 {
        errs.push(invalid(
            &child(base, "maxUnavailable"),
            &unavailable.map_or_else(|| "0".to_string(), go_int_or_string),
            "may not be 0 when `maxSurge` is 0",
        ));
    }
    if let Some(v) = unavailable {
        not_more_than_100_percent(v, &child(base, "maxUnavailable"), errs);
    }
}

/// Jobs: the template, and the restart policies a Job allows. The
/// selector the server generates is checked against the labels only when
/// present.
fn validate_job_spec(spec: &Value, path: &str, errs: &mut Vec<FieldError>) {
    for f in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
    ] {
        nonnegative(spec, f, path, errs);
    }
    let template = get(spec, "template").unwrap_or(&Value::Null);
    let tpath = child(path, "template");
    if let Some(sel) = get(spec, "selector").filter(|s| s.is_object()) {
        validate_label_selector(sel, &child(path, "selector"), errs);
        if let Some(selector) = Selector::from_json(Some(sel)) {
            let labels = get(template, "metadata").and_then(|m| string_map(m, "labels"));
            if !selector.matches(labels.as_ref()) {
                errs.push(invalid(
                    &child(&child(&tpath, "metadata"), "labels"),
                    &go_string_map(labels.as_ref()),
                    SELECTOR_MISMATCH,
                ));
            }
        }
    }
    validate_pod_template(template, &tpath, PodOpts { is_pod: false }, errs);
    let tspec = get(template, "spec").unwrap_or(&Value::Null);
    let policy = string(tspec, "restartPolicy");
    if policy != "OnFailure" && policy != "Never" {
        errs.push(not_supported(
            &child(&child(&tpath, "spec"), "restartPolicy"),
            policy,
            &["OnFailure", "Never"],
        ));
    }
}

fn validate_replication_controller(obj: &Value, errs: &mut Vec<FieldError>) {
    let spec = get(obj, "spec").unwrap_or(&Value::Null);
    nonnegative(spec, "minReadySeconds", "spec", errs);
    let selector = string_map(spec, "selector").unwrap_or_default();
    if selector.is_empty() {
        errs.push(required("spec.selector", ""));
    }
    nonnegative(spec, "replicas", "spec", errs);
    let Some(template) = get(spec, "template") else {
        errs.push(required("spec.template", ""));
        return;
    };
    let labels = get(template, "metadata").and_then(|m| string_map(m, "labels"));
    let matches = selector
        .iter()
        .all(|(k, v)| labels.as_ref().and_then(|l| l.get(k)) == Some(v));
    if !selector.is_empty() && !matches {
        errs.push(invalid(
            "spec.template.metadata.labels",
            &go_string_map(labels.as_ref()),
            SELECTOR_MISMATCH,
        ));
    }
    validate_pod_template(template, "spec.template", PodOpts { is_pod: false }, errs);
    let tspec = get(template, "spec").unwrap_or(&Value::Null);
    let policy = string(tspec, "restartPolicy");
    if policy != "Always" {
        errs.push(not_supported(
            "spec.template.spec.restartPolicy",
            policy,
            &["Always"],
        ));
    }
    if get(tspec, "activeDeadlineSeconds").is_some() {
        errs.push(forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in ReplicationController is not Supported",
        ));
    }
}

// ---------------------------------------------------------------------------
// autoscaling: HorizontalPodAutoscaler (v2 field layout; v1 objects carry
// the same replica and scaleTargetRef fields).

/// `MaxStabilizationWindowSeconds`.
const MAX_STABILIZATION_WINDOW_SECONDS: i64 = 3600;
/// `MaxPeriodSeconds`.
const MAX_PERIOD_SECONDS: i64 = 1800;

/// `ValidateCrossVersionObjectReference`: kind and name required and path
/// segments.
fn validate_cross_version_ref(r: &Value, path: &str, errs: &mut Vec<FieldError>) {
    for f in ["kind", "name"] {
        let v = string(r, f);
        if v.is_empty() {
            errs.push(required(&child(path, f), ""));
        } else {
            for msg in is_valid_path_segment_name(v) {
                errs.push(invalid_str(&child(path, f), v, &msg));
            }
        }
    }
}

/// The sign of a quantity field and its canonical text (`Quantity.String()`),
/// or `None` when absent or unparseable (the decoder refuses those).
fn quantity_sign(v: &Value, k: &str) -> Option<(i32, String)> {
    let q = crate::quantity::parse_json(get(v, k)?).ok()?;
    Some((q.sign(), q.canonical()))
}

fn validate_hpa(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let spec = get(obj, "spec").unwrap_or(&Value::Null);
    // Scale-to-zero (`HPAScaleToZero`) is alpha and off in v1.33; an object
    // already stored with `minReplicas: 0` keeps it on update.
    let old_zero =
        old.is_some_and(|o| get(o, "spec").and_then(|s| int(s, "minReplicas")) == Some(0));
    let lower = if old_zero { 0 } else { 1 };
    let min = int(spec, "minReplicas");
    let max = int(spec, "maxReplicas").unwrap_or(0);
    if let Some(m) = min
        && m < lower
    {
        errs.push(invalid(
            "spec.minReplicas",
            &m.to_string(),
            &format!("must be greater than or equal to {lower}"),
        ));
    }
    if max < 1 {
        errs.push(invalid(
            "spec.maxReplicas",
            &max.to_string(),
            "must be greater than 0",
        ));
    }
    if let Some(m) = min
        && max < m
    {
        errs.push(invalid(
            "spec.maxReplicas",
            &max.to_string(),
            "must be greater than or equal to `minReplicas`",
        ));
    }
    let target = get(spec, "scaleTargetRef").unwrap_or(&Value::Null);
    validate_cross_version_ref(target, "spec.scaleTargetRef", errs);
    let metrics = arr(spec, "metrics");
    let mut object_or_external = false;
    for (i, m) in metrics.iter().enumerate() {
        validate_metric_spec(m, &index("spec.metrics", i), errs);
        object_or_external |= matches!(string(m, "type"), "Object" | "External");
    }
    if min == Some(0) && !object_or_external {
        errs.push(forbidden(
            "spec.metrics",
            "must specify at least one Object or External metric to support scaling to zero replicas",
        ));
    }
    if let Some(behavior) = get(spec, "behavior") {
        for f in ["scaleUp", "scaleDown"] {
            if let Some(rules) = get(behavior, f) {
                validate_scaling_rules(rules, &child("spec.behavior", f), errs);
            }
        }
    }
}

fn validate_scaling_rules(rules: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(w) = int(rules, "stabilizationWindowSeconds") {
        let p = child(path, "stabilizationWindowSeconds");
        if w < 0 {
            errs.push(invalid(
                &p,
                &w.to_string(),
                "must be greater than or equal to zero",
            ));
        }
        if w > MAX_STABILIZATION_WINDOW_SECONDS {
            errs.push(invalid(
                &p,
                &w.to_string(),
                &format!("must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"),
            ));
        }
    }
    if let Some(sp) = opt_string(rules, "selectPolicy")
        && !matches!(sp, "Disabled" | "Max" | "Min")
    {
        errs.push(not_supported(
            &child(path, "selectPolicy"),
            sp,
            &["Disabled", "Max", "Min"],
        ));
    }
    let policies = arr(rules, "policies");
    let ppath = child(path, "policies");
    if policies.is_empty() {
        errs.push(required(&ppath, "must specify at least one Policy"));
    }
    for (i, p) in policies.iter().enumerate() {
        let ip = index(&ppath, i);
        let ty = string(p, "type");
        if !matches!(ty, "Pods" | "Percent") {
            errs.push(not_supported(&child(&ip, "type"), ty, &["Percent", "Pods"]));
        }
        let value = int(p, "value").unwrap_or(0);
        if value <= 0 {
            errs.push(invalid(
                &child(&ip, "value"),
                &value.to_string(),
                "must be greater than zero",
            ));
        }
        let period = int(p, "periodSeconds").unwrap_or(0);
        if period <= 0 {
            errs.push(invalid(
                &child(&ip, "periodSeconds"),
                &period.to_string(),
                "must be greater than zero",
            ));
        }
        if period > MAX_PERIOD_SECONDS {
            errs.push(invalid(
                &child(&ip, "periodSeconds"),
                &period.to_string(),
                &format!("must be less than or equal to {MAX_PERIOD_SECONDS}"),
            ));
        }
    }
}

/// The metric source types, sorted as `sets.String.List()` returns them.
const METRIC_SOURCE_TYPES: [&str; 5] = [
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];

fn validate_metric_spec(m: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let ty = string(m, "type");
    if ty.is_empty() {
        errs.push(required(
            &child(path, "type"),
            "must specify a metric source type",
        ));
    }
    if !METRIC_SOURCE_TYPES.contains(&ty) {
        errs.push(not_supported(
            &child(path, "type"),
            ty,
            &METRIC_SOURCE_TYPES,
        ));
    }
    // Upstream checks the sources in this order and only the first present.
    let sources = [
        "object",
        "external",
        "pods",
        "resource",
        "containerResource",
    ];
    let present: Vec<&str> = sources
        .iter()
        .copied()
        .filter(|s| get(m, s).is_some_and(Value::is_object))
        .collect();
    if let Some(first) = present.first() {
        let src = get(m, first).unwrap_or(&Value::Null);
        validate_metric_source(first, src, &child(path, first), errs);
    }
    let expected = match ty {
        "Object" => "object",
        "Pods" => "pods",
        "Resource" => "resource",
        "External" => "external",
        "ContainerResource" => "containerResource",
        _ => "",
    };
    if expected.is_empty() {
        // The switch's default case reports the type a second time.
        errs.push(not_supported(
            &child(path, "type"),
            ty,
            &METRIC_SOURCE_TYPES,
        ));
    } else if !present.contains(&expected) {
        errs.push(required(
            &child(path, expected),
            "must populate information for the given metric source",
        ));
    }
    if present.len() != 1 {
        // Go iterates a set here: the order is random; sorted in this module.
        let mut extra: Vec<&str> = present.into_iter().filter(|s| *s != expected).collect();
        extra.sort_unstable();
        for s in extra {
            errs.push(forbidden(
                &child(path, s),
                "must populate the given metric source only",
            ));
        }
    }
}

fn validate_metric_source(kind: &str, src: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let target = get(src, "target").unwrap_or(&Value::Null);
    let tpath = child(path, "target");
    let has = |k: &str| get(target, k).is_some();
    match kind {
        "object" => {
            let described = get(src, "describedObject").unwrap_or(&Value::Null);
            validate_cross_version_ref(described, &child(path, "describedObject"), errs);
            validate_metric_identifier(src, path, errs);
            validate_metric_target(target, &tpath, errs);
            if !has("value") && !has("averageValue") {
                errs.push(required(
                    &child(&tpath, "averageValue"),
                    "must set either a target value or averageValue",
                ));
            }
        }
        "external" => {
            validate_metric_identifier(src, path, errs);
            validate_metric_target(target, &tpath, errs);
            if !has("value") && !has("averageValue") {
                errs.push(required(
                    &child(&tpath, "averageValue"),
                    "must set either a target value for metric or a per-pod target",
                ));
            }
            if has("value") && has("averageValue") {
                errs.push(forbidden(
                    &child(&tpath, "value"),
                    "may not set both a target value for metric and a per-pod target",
                ));
            }
        }
        "pods" => {
            validate_metric_identifier(src, path, errs);
            validate_metric_target(target, &tpath, errs);
            if !has("averageValue") {
                errs.push(required(
                    &child(&tpath, "averageValue"),
                    "must specify a positive target averageValue",
                ));
            }
        }
        _ => {
            if string(src, "name").is_empty() {
                errs.push(required(
                    &child(path, "name"),
                    "must specify a resource name",
                ));
            }
            if kind == "containerResource" {
                let c = string(src, "container");
                if c.is_empty() {
                    errs.push(required(
                        &child(path, "container"),
                        "must specify a container",
                    ));
                } else {
                    for msg in is_dns1123_label(c) {
                        errs.push(invalid_str(&child(path, "container"), c, &msg));
                    }
                }
            }
            validate_metric_target(target, &tpath, errs);
            if !has("averageUtilization") && !has("averageValue") {
                errs.push(required(
                    &child(&tpath, "averageUtilization"),
                    "must set either a target raw value or a target utilization",
                ));
            }
            if has("averageUtilization") && has("averageValue") {
                errs.push(forbidden(
                    &child(&tpath, "averageValue"),
                    "may not set both a target raw value and a target utilization",
                ));
            }
        }
    }
}

fn validate_metric_identifier(src: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let metric = get(src, "metric").unwrap_or(&Value::Null);
    let p = child(&child(path, "metric"), "name");
    let name = string(metric, "name");
    if name.is_empty() {
        errs.push(required(&p, "must specify a metric name"));
    } else {
        for msg in is_valid_path_segment_name(name) {
            errs.push(invalid_str(&p, name, &msg));
        }
    }
}

fn validate_metric_target(t: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let ty = string(t, "type");
    if ty.is_empty() {
        errs.push(required(
            &child(path, "type"),
            "must specify a metric target type",
        ));
    }
    if !matches!(ty, "Utilization" | "Value" | "AverageValue") {
        errs.push(invalid_str(
            &child(path, "type"),
            ty,
            "must be either Utilization, Value, or AverageValue",
        ));
    }
    for f in ["value", "averageValue"] {
        // A Quantity is a Stringer: its canonical form prints unquoted.
        if let Some((sign, text)) = quantity_sign(t, f)
            && sign != 1
        {
            errs.push(invalid(&child(path, f), &text, "must be positive"));
        }
    }
    if let Some(u) = int(t, "averageUtilization")
        && u < 1
    {
        errs.push(invalid(
            &child(path, "averageUtilization"),
            &u.to_string(),
            "must be greater than 0",
        ));
    }
}

// ---------------------------------------------------------------------------
// networking: Ingress.

/// `IsWildcardDNS1123Subdomain`.
fn is_wildcard_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let ok = value
        .strip_prefix("*.")
        .is_some_and(|rest| is_dns1123_subdomain(rest).is_empty());
    if !ok {
        errs.push(
            "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS \
             subdomain, which must consist of lower case alphanumeric characters, '-' or '.' \
             and end with an alphanumeric character (e.g. '*.example.com', regex used for \
             validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                .to_string(),
        );
    }
    errs
}

/// Go's `netutils.ParseIPSloppy(s) != nil`.
fn is_ip_sloppy(s: &str) -> bool {
    if s.contains(':') {
        s.parse::<std::net::Ipv6Addr>().is_ok()
    } else {
        parse_ipv4_sloppy(s).is_some()
    }
}

/// The invalid path sequences and suffixes of `Exact` and `Prefix` paths.
const INVALID_PATH_SEQUENCES: [&str; 5] = ["//", "/./", "/../", "%2f", "%2F"];
const INVALID_PATH_SUFFIXES: [&str; 2] = ["/..", "/."];

fn validate_ingress(obj: &Value, create: bool, errs: &mut Vec<FieldError>) {
    let spec = get(obj, "spec").unwrap_or(&Value::Null);
    let rules = get(spec, "rules").and_then(Value::as_array);
    let default_backend = get(spec, "defaultBackend").filter(|b| b.is_object());
    if rules.is_none_or(Vec::is_empty) && default_backend.is_none() {
        let shown = if rules.is_some() {
            "[]networking.IngressRule{}"
        } else {
            "[]networking.IngressRule(nil)"
        };
        errs.push(invalid(
            "spec",
            shown,
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if let Some(b) = default_backend {
        validate_ingress_backend(b, "spec.defaultBackend", errs);
    }
    for (i, rule) in rules.map(Vec::as_slice).unwrap_or(&[]).iter().enumerate() {
        let rpath = index("spec.rules", i);
        let host = string(rule, "host");
        if !host.is_empty() {
            let hpath = child(&rpath, "host");
            if is_ip_sloppy(host) {
                errs.push(invalid_str(
                    &hpath,
                    host,
                    "must be a DNS name, not an IP address",
                ));
            }
            let msgs = if host.contains('*') {
                is_wildcard_dns1123_subdomain(host)
            } else {
                is_dns1123_subdomain(host)
            };
            for msg in msgs {
                errs.push(invalid_str(&hpath, host, &msg));
            }
        }
        let Some(http) = get(rule, "http").filter(|h| h.is_object()) else {
            continue;
        };
        let hpath = child(&rpath, "http");
        let paths = arr(http, "paths");
        if paths.is_empty() {
            errs.push(required(&child(&hpath, "paths"), ""));
        }
        for (j, p) in paths.iter().enumerate() {
            validate_ingress_path(p, &index(&child(&hpath, "paths"), j), errs);
        }
    }
    for (i, tls) in arr(spec, "tls").iter().enumerate() {
        let tpath = index("spec.tls", i);
        for (j, host) in strings_of(tls, "hosts").into_iter().enumerate() {
            let msgs = if host.contains('*') {
                is_wildcard_dns1123_subdomain(host)
            } else {
                is_dns1123_subdomain(host)
            };
            for msg in msgs {
                errs.push(invalid_str(&index(&child(&tpath, "hosts"), j), host, &msg));
            }
        }
        let secret = string(tls, "secretName");
        if !secret.is_empty() {
            for msg in is_dns1123_subdomain(secret) {
                errs.push(invalid_str(&child(&tpath, "secretName"), secret, &msg));
            }
        }
    }
    let class = opt_string(spec, "ingressClassName");
    if let Some(c) = class {
        for msg in is_dns1123_subdomain(c) {
            errs.push(invalid_str("spec.ingressClassName", c, &msg));
        }
    }
    // Create only: the legacy annotation must agree with the field.
    let annotation = get(obj, "metadata")
        .and_then(|m| get(m, "annotations"))
        .and_then(|a| opt_string(a, "kubernetes.io/ingress.class"));
    if let (true, Some(a), Some(c)) = (create, annotation, class)
        && a != c
    {
        errs.push(invalid_str(
            "annotations.kubernetes.io/ingress.class",
            a,
            "must match `ingressClassName` when both are specified",
        ));
    }
}

fn validate_ingress_path(p: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let Some(ty) = opt_string(p, "pathType") else {
        errs.push(required(
            &child(path, "pathType"),
            "pathType must be specified",
        ));
        return;
    };
    let value = string(p, "path");
    let ppath = child(path, "path");
    match ty {
        "Exact" | "Prefix" => {
            if !value.starts_with('/') {
                errs.push(invalid_str(&ppath, value, "must be an absolute path"));
            }
            if !value.is_empty() {
                for seq in INVALID_PATH_SEQUENCES {
                    if value.contains(seq) {
                        errs.push(invalid_str(
                            &ppath,
                            value,
                            &format!("must not contain '{seq}'"),
                        ));
                    }
                }
                for suffix in INVALID_PATH_SUFFIXES {
                    if value.ends_with(suffix) {
                        errs.push(invalid_str(
                            &ppath,
                            value,
                            &format!("cannot end with '{suffix}'"),
                        ));
                    }
                }
            }
        }
        "ImplementationSpecific" => {
            if !value.is_empty() && !value.starts_with('/') {
                errs.push(invalid_str(&ppath, value, "must be an absolute path"));
            }
        }
        other => errs.push(not_supported(
            &child(path, "pathType"),
            other,
            &["Exact", "ImplementationSpecific", "Prefix"],
        )),
    }
    let backend = get(p, "backend").unwrap_or(&Value::Null);
    validate_ingress_backend(backend, &child(path, "backend"), errs);
}

fn validate_ingress_backend(b: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let resource = get(b, "resource").filter(|r| r.is_object());
    let service = get(b, "service").filter(|s| s.is_object());
    match (resource, service) {
        (Some(_), Some(_)) => errs.push(invalid_str(
            path,
            "",
            "cannot set both resource and service backends",
        )),
        (Some(r), None) => {
            let rpath = child(path, "resource");
            if let Some(g) = opt_string(r, "apiGroup") {
                for msg in is_dns1123_subdomain(g) {
                    errs.push(invalid_str(&child(&rpath, "apiGroup"), g, &msg));
                }
            }
            for f in ["kind", "name"] {
                let v = string(r, f);
                if v.is_empty() {
                    errs.push(required(&child(&rpath, f), ""));
                } else {
                    for msg in is_valid_path_segment_name(v) {
                        errs.push(invalid_str(&child(&rpath, f), v, &msg));
                    }
                }
            }
        }
        (None, Some(s)) => {
            let spath = child(path, "service");
            let name = string(s, "name");
            if name.is_empty() {
                errs.push(required(&child(&spath, "name"), ""));
            } else {
                // `RelaxedServiceNameValidation` is off in v1.33: DNS-1035.
                for msg in crate::names::is_dns1035_label(name) {
                    errs.push(invalid_str(&child(&spath, "name"), name, &msg));
                }
            }
            let port = get(s, "port").unwrap_or(&Value::Null);
            let port_name = string(port, "name");
            let number = int(port, "number").unwrap_or(0);
            let ppath = child(&spath, "port");
            if !port_name.is_empty() && number != 0 {
                errs.push(invalid_str(
                    path,
                    "",
                    "cannot set both port name & port number",
                ));
            } else if !port_name.is_empty() {
                for msg in is_valid_port_name(port_name) {
                    errs.push(invalid_str(&child(&ppath, "name"), port_name, &msg));
                }
            } else if number != 0 {
                if !is_valid_port_num(number) {
                    errs.push(invalid(
                        &child(&ppath, "number"),
                        &number.to_string(),
                        PORT_RANGE,
                    ));
                }
            } else {
                errs.push(required(path, "port name or number is required"));
            }
        }
        (None, None) => errs.push(invalid_str(
            path,
            "",
            "resource or service backend is required",
        )),
    }
}

// ---------------------------------------------------------------------------
// core: PersistentVolumeClaim.

/// `supportedAccessModes`, sorted.
const ACCESS_MODES: [&str; 4] = [
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];

fn validate_pvc(obj: &Value, errs: &mut Vec<FieldError>) {
    let spec = get(obj, "spec").unwrap_or(&Value::Null);
    let modes = strings_of(spec, "accessModes");
    if modes.is_empty() {
        errs.push(required(
            "spec.accessModes",
            "at least 1 access mode is required",
        ));
    }
    if let Some(sel) = get(spec, "selector").filter(|s| s.is_object()) {
        validate_label_selector(sel, "spec.selector", errs);
    }
    let (mut rwop, mut other) = (false, false);
    for m in &modes {
        if !ACCESS_MODES.contains(m) {
            errs.push(not_supported("spec.accessModes", m, &ACCESS_MODES));
        } else if *m == "ReadWriteOncePod" {
            rwop = true;
        } else {
            other = true;
        }
    }
    if rwop && other {
        errs.push(forbidden(
            "spec.accessModes",
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    // The key sits on `resources`, not `resources.requests`: upstream's path.
    let storage_path = "spec.resources[storage]";
    let requests = get(spec, "resources").and_then(|r| get(r, "requests"));
    match requests.and_then(|r| get(r, "storage")) {
        None => errs.push(required(storage_path, "")),
        Some(_) => {
            if let Some((sign, text)) = requests.and_then(|r| quantity_sign(r, "storage"))
                && sign <= 0
            {
                errs.push(invalid_str(
                    storage_path,
                    &text,
                    "must be greater than zero",
                ));
            }
        }
    }
    if let Some(class) = opt_string(spec, "storageClassName").filter(|c| !c.is_empty()) {
        for msg in is_dns1123_subdomain(class) {
            errs.push(invalid_str("spec.storageClassName", class, &msg));
        }
    }
    if let Some(mode) = opt_string(spec, "volumeMode")
        && !matches!(mode, "Block" | "Filesystem")
    {
        errs.push(not_supported(
            "spec.volumeMode",
            mode,
            &["Block", "Filesystem"],
        ));
    }
}

// ---------------------------------------------------------------------------
// policy: PodDisruptionBudget.

/// `%#v` of a `policy.PodDisruptionBudgetSpec`. Its fields are pointers, so
/// Go prints heap addresses that differ on every request; fixed stand-ins
/// are printed where the real server prints an address.
fn go_pdb_spec(spec: &Value) -> String {
    let ptr = |f: &str, ty: &str, addr: &str| {
        if get(spec, f).is_some() {
            format!("({ty})({addr})")
        } else {
            format!("({ty})(nil)")
        }
    };
    format!(
        "policy.PodDisruptionBudgetSpec{{MinAvailable:{}, Selector:{}, MaxUnavailable:{}, \
         UnhealthyPodEvictionPolicy:{}}}",
        ptr("minAvailable", "*intstr.IntOrString", "0xc000a00000"),
        ptr("selector", "*v1.LabelSelector", "0xc000a00020"),
        ptr("maxUnavailable", "*intstr.IntOrString", "0xc000a00040"),
        ptr(
            "unhealthyPodEvictionPolicy",
            "*policy.UnhealthyPodEvictionPolicyType",
            "0xc000a00060"
        ),
    )
}

fn validate_pdb(obj: &Value, errs: &mut Vec<FieldError>) {
    let spec = get(obj, "spec").unwrap_or(&Value::Null);
    let min = get(spec, "minAvailable");
    let max = get(spec, "maxUnavailable");
    if min.is_some() && max.is_some() {
        errs.push(invalid(
            "spec",
            &go_pdb_spec(spec),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (f, v) in [("minAvailable", min), ("maxUnavailable", max)] {
        if let Some(v) = v {
            let p = child("spec", f);
            validate_int_or_percent(v, &p, errs);
            not_more_than_100_percent(v, &p, errs);
        }
    }
    if let Some(sel) = get(spec, "selector").filter(|s| s.is_object()) {
        validate_label_selector(sel, "spec.selector", errs);
    }
    if let Some(policy) = opt_string(spec, "unhealthyPodEvictionPolicy")
        && !matches!(policy, "AlwaysAllow" | "IfHealthyBudget")
    {
        errs.push(not_supported(
            "spec.unhealthyPodEvictionPolicy",
            policy,
            &["AlwaysAllow", "IfHealthyBudget"],
        ));
    }
}

// ---------------------------------------------------------------------------
// scheduling: PriorityClass.

/// `HighestUserDefinablePriority`.
const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;
/// The built-in system classes: name, value (neither is a global default).
const SYSTEM_PRIORITY_CLASSES: [(&str, i64); 2] = [
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

fn validate_priority_class(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    if let Some(old) = old {
        let (new_value, old_value) = (int(obj, "value"), int(old, "value"));
        if new_value.unwrap_or(0) != old_value.unwrap_or(0) {
            errs.push(forbidden("value", "may not be changed in an update."));
        }
        let policy = opt_string(obj, "preemptionPolicy");
        if policy != opt_string(old, "preemptionPolicy") {
            let shown = policy.map_or_else(|| "null".to_string(), quote);
            errs.push(invalid("preemptionPolicy", &shown, IMMUTABLE));
        }
        return;
    }
    let name = get(obj, "metadata").map_or("", |m| string(m, "name"));
    let value = int(obj, "value").unwrap_or(0);
    if name.starts_with("system-") {
        let global = get(obj, "globalDefault")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let problem = match SYSTEM_PRIORITY_CLASSES.iter().find(|(n, _)| *n == name) {
            None => Some(format!("{name} is not a known system priority class")),
            Some((n, v)) if *v != value => Some(format!("value of {n} PriorityClass must be {v}")),
            Some((n, _)) if global => {
                Some(format!("globalDefault of {n} PriorityClass must be false"))
            }
            Some(_) => None,
        };
        if let Some(problem) = problem {
            errs.push(forbidden(
                "metadata.name",
                &format!(
                    "priority class names with 'system-' prefix are reserved for system use \
                     only. error: {problem}"
                ),
            ));
        }
    } else if value > HIGHEST_USER_DEFINABLE_PRIORITY {
        errs.push(forbidden(
            "value",
            &format!(
                "maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
            ),
        ));
    }
    if let Some(policy) = opt_string(obj, "preemptionPolicy") {
        match policy {
            "PreemptLowerPriority" | "Never" => {}
            "" => errs.push(required("preemptionPolicy", "")),
            other => errs.push(not_supported(
                "preemptionPolicy",
                other,
                &["PreemptLowerPriority", "Never"],
            )),
        }
    }
}

// ---------------------------------------------------------------------------
// storage: StorageClass.

fn validate_storage_class(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let provisioner = string(obj, "provisioner");
    if provisioner.is_empty() {
        errs.push(required("provisioner", ""));
    } else {
        for msg in is_qualified_name(&provisioner.to_lowercase()) {
            errs.push(invalid_str("provisioner", provisioner, &msg));
        }
    }
    if let Some(params) = map_at(obj, "parameters")
        && params.contains_key("")
    {
        errs.push(invalid_str("parameters", "", "field can not be empty."));
    }
    if let Some(policy) = opt_string(obj, "reclaimPolicy")
        && !policy.is_empty()
        && !matches!(policy, "Delete" | "Retain")
    {
        errs.push(not_supported(
            "reclaimPolicy",
            policy,
            &["Delete", "Retain"],
        ));
    }
    match opt_string(obj, "volumeBindingMode") {
        None => errs.push(required("volumeBindingMode", "")),
        Some("Immediate" | "WaitForFirstConsumer") => {}
        Some(other) => errs.push(not_supported(
            "volumeBindingMode",
            other,
            &["Immediate", "WaitForFirstConsumer"],
        )),
    }
    let Some(old) = old else {
        return;
    };
    if get(obj, "parameters") != get(old, "parameters") {
        errs.push(forbidden(
            "parameters",
            "updates to parameters are forbidden.",
        ));
    }
    if provisioner != string(old, "provisioner") {
        errs.push(forbidden(
            "provisioner",
            "updates to provisioner are forbidden.",
        ));
    }
    if string(obj, "reclaimPolicy") != string(old, "reclaimPolicy") {
        errs.push(forbidden(
            "reclaimPolicy",
            "updates to reclaimPolicy are forbidden.",
        ));
    }
    let mode = opt_string(obj, "volumeBindingMode");
    if mode != opt_string(old, "volumeBindingMode") {
        let shown = mode.map_or_else(|| "null".to_string(), quote);
        errs.push(invalid("volumeBindingMode", &shown, IMMUTABLE));
    }
}

// ---------------------------------------------------------------------------
// Entry point.

/// The field errors the API server reports when `obj` (of `group`/`kind`,
/// e.g. `("apps", "Deployment")`, `("", "ConfigMap")`) is created, or
/// updated from `old`. Empty: the server accepts it.
///
/// Kinds not listed in the module doc get only the generic `metadata`
/// rules. Never panics, whatever the JSON.
pub fn validate(group: &str, kind: &str, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let known = matches!(
        (group, kind),
        (
            "",
            "ConfigMap"
                | "Secret"
                | "ServiceAccount"
                | "Pod"
                | "PodTemplate"
                | "ReplicationController"
        ) | (
            "rbac.authorization.k8s.io",
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding"
        ) | ("networking.k8s.io", "NetworkPolicy")
            | (
                "apps",
                "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet"
            )
            | ("batch", "Job" | "CronJob")
            | ("autoscaling", "HorizontalPodAutoscaler")
            | ("networking.k8s.io", "Ingress")
            | ("", "PersistentVolumeClaim")
            | ("policy", "PodDisruptionBudget")
            | ("scheduling.k8s.io", "PriorityClass")
            | ("storage.k8s.io", "StorageClass")
    );
    // Core's ConfigMap and Secret updates check immutability before the
    // object itself; every other kind validates metadata first.
    if let (Some(old), "") = (old, group) {
        match kind {
            "ConfigMap" => validate_immutable_data(obj, old, &["data", "binaryData"], &mut errs),
            "Secret" => {
                let ty = opt_string(obj, "type").unwrap_or("Opaque");
                if ty != opt_string(old, "type").unwrap_or("Opaque") {
                    errs.push(invalid_str("type", ty, IMMUTABLE));
                }
                validate_immutable_data(obj, old, &["data"], &mut errs);
            }
            _ => {}
        }
    }
    validate_meta(obj, known, &mut errs);
    validate_kind(group, kind, obj, old, &mut errs);
    errs
}

fn validate_kind(
    group: &str,
    kind: &str,
    obj: &Value,
    old: Option<&Value>,
    errs: &mut Vec<FieldError>,
) {
    let spec = get(obj, "spec").unwrap_or(&Value::Null);
    match (group, kind) {
        ("", "ConfigMap") => validate_config_map(obj, errs),
        ("", "Secret") => validate_secret(obj, errs),
        ("", "Pod") => validate_pod_spec(spec, "spec", PodOpts { is_pod: true }, errs),
        ("", "PodTemplate") => {
            let template = get(obj, "template").unwrap_or(&Value::Null);
            validate_pod_template(template, "template", PodOpts { is_pod: false }, errs);
        }
        ("", "ReplicationController") => validate_replication_controller(obj, errs),
        ("rbac.authorization.k8s.io", "Role") => validate_policy_rules(obj, true, errs),
        ("rbac.authorization.k8s.io", "ClusterRole") => validate_cluster_role(obj, errs),
        ("rbac.authorization.k8s.io", "RoleBinding") => validate_binding(obj, old, true, errs),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => {
            validate_binding(obj, old, false, errs);
        }
        ("networking.k8s.io", "NetworkPolicy") => validate_network_policy(obj, errs),
        ("apps", "Deployment") => validate_workload(obj, old, Workload::Deployment, errs),
        ("apps", "ReplicaSet") => validate_workload(obj, old, Workload::ReplicaSet, errs),
        ("apps", "StatefulSet") => validate_workload(obj, old, Workload::StatefulSet, errs),
        ("apps", "DaemonSet") => validate_workload(obj, old, Workload::DaemonSet, errs),
        ("batch", "Job") => validate_job_spec(spec, "spec", errs),
        ("batch", "CronJob") => {
            let job = get(spec, "jobTemplate")
                .and_then(|t| get(t, "spec"))
                .unwrap_or(&Value::Null);
            validate_job_spec(job, "spec.jobTemplate.spec", errs);
        }
        ("autoscaling", "HorizontalPodAutoscaler") => validate_hpa(obj, old, errs),
        ("networking.k8s.io", "Ingress") => validate_ingress(obj, old.is_none(), errs),
        ("", "PersistentVolumeClaim") => validate_pvc(obj, errs),
        ("policy", "PodDisruptionBudget") => validate_pdb(obj, errs),
        ("scheduling.k8s.io", "PriorityClass") => validate_priority_class(obj, old, errs),
        ("storage.k8s.io", "StorageClass") => validate_storage_class(obj, old, errs),
        ("", "LimitRange") => errs.extend(crate::quantity_validation::validate_limit_range(obj)),
        ("", "ResourceQuota") => {
            errs.extend(crate::quantity_validation::validate_resource_quota(obj));
        }
        // ServiceAccount: upstream validates only its metadata.
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const RBAC: &str = "rbac.authorization.k8s.io";

    fn container() -> Value {
        json!({
            "name": "web",
            "image": "nginx:1.27",
            "imagePullPolicy": "IfNotPresent",
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
            "env": [
                {"name": "MODE", "value": "prod"},
                {"name": "POD", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}
            ],
            "envFrom": [{"configMapRef": {"name": "settings"}, "prefix": "APP_"}],
            "volumeMounts": [{"name": "data", "mountPath": "/data"}]
        })
    }

    fn pod_spec(restart: &str) -> Value {
        json!({
            "containers": [container()],
            "initContainers": [{
                "name": "init", "image": "busybox", "imagePullPolicy": "Always",
                "terminationMessagePolicy": "File"
            }],
            "volumes": [
                {"name": "data", "emptyDir": {}},
                {"name": "cfg", "configMap": {"name": "settings"}},
                {"name": "creds", "secret": {"secretName": "creds"}}
            ],
            "restartPolicy": restart,
            "dnsPolicy": "ClusterFirst",
            "terminationGracePeriodSeconds": 30,
            "serviceAccountName": "default"
        })
    }

    fn template(restart: &str) -> Value {
        json!({"metadata": {"labels": {"app": "web"}}, "spec": pod_spec(restart)})
    }

    fn meta(name: &str) -> Value {
        json!({"name": name, "namespace": "ns", "uid": "u1"})
    }

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("web"),
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": template("Always"),
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                "revisionHistoryLimit": 10,
                "progressDeadlineSeconds": 600
            }
        })
    }

    fn network_policy() -> Value {
        json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta("np"),
            "spec": {
                "podSelector": {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["be"]}]},
                "ingress": [{
                    "from": [
                        {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}},
                        {"namespaceSelector": {}, "podSelector": {"matchLabels": {"role": "client"}}}
                    ],
                    "ports": [{"protocol": "TCP", "port": 80, "endPort": 90}, {"protocol": "UDP", "port": "dns"}]
                }],
                "egress": [{"to": [{"ipBlock": {"cidr": "fd00::/8"}}]}],
                "policyTypes": ["Ingress", "Egress"]
            }
        })
    }

    /// One valid object of every kind `validate` knows, with its group.
    fn valid_objects() -> Vec<(&'static str, &'static str, Value)> {
        let mut rs = deployment();
        rs["kind"] = json!("ReplicaSet");
        if let Some(spec) = rs["spec"].as_object_mut() {
            spec.remove("strategy");
            spec.remove("progressDeadlineSeconds");
        }
        let sts = json!({
            "metadata": meta("db"),
            "spec": {
                "replicas": 1, "serviceName": "db", "podManagementPolicy": "OrderedReady",
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                "selector": {"matchLabels": {"app": "web"}}, "template": template("Always")
            }
        });
        let ds = json!({
            "metadata": meta("agent"),
            "spec": {
                "selector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}, "template": template("Always"),
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
                "revisionHistoryLimit": 10
            }
        });
        let job = json!({
            "metadata": meta("job"),
            "spec": {
                "backoffLimit": 6, "completions": 1, "parallelism": 1,
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
                "template": {"metadata": {"labels": {"batch.kubernetes.io/controller-uid": "u1"}}, "spec": pod_spec("Never")}
            }
        });
        let cron = json!({
            "metadata": meta("cron"),
            "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": template("OnFailure")}}}
        });
        vec![
            (
                "",
                "ConfigMap",
                json!({
                    "metadata": meta("cfg"),
                    "data": {"app.properties": "a=b", "KEY_1": "v"},
                    "binaryData": {"logo.png": "aGVsbG8="}
                }),
            ),
            (
                "",
                "Secret",
                json!({
                    "metadata": meta("tls"), "type": "kubernetes.io/tls",
                    "data": {"tls.crt": "Y2VydA==", "tls.key": "a2V5"}
                }),
            ),
            (
                "",
                "Secret",
                json!({
                    "metadata": meta("pull"), "type": "kubernetes.io/dockerconfigjson",
                    "data": {".dockerconfigjson": "eyJhdXRocyI6e319"}
                }),
            ),
            (
                "",
                "Secret",
                json!({
                    "metadata": {"name": "tok", "annotations": {"kubernetes.io/service-account.name": "default"}},
                    "type": "kubernetes.io/service-account-token"
                }),
            ),
            (
                "",
                "Secret",
                json!({
                    "metadata": meta("basic"), "type": "kubernetes.io/basic-auth",
                    "stringData": {"username": "admin"}
                }),
            ),
            (
                "",
                "ServiceAccount",
                json!({"metadata": meta("default"), "imagePullSecrets": [{"name": "pull"}]}),
            ),
            (
                "",
                "Pod",
                json!({"metadata": meta("p"), "spec": pod_spec("Always")}),
            ),
            (
                "",
                "PodTemplate",
                json!({"metadata": meta("pt"), "template": template("Always")}),
            ),
            (
                "",
                "ReplicationController",
                json!({
                    "metadata": meta("rc"),
                    "spec": {"replicas": 1, "selector": {"app": "web"}, "template": template("Always")}
                }),
            ),
            (
                RBAC,
                "Role",
                json!({
                    "metadata": meta("r"),
                    "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
                              {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"], "verbs": ["*"]}]
                }),
            ),
            (
                RBAC,
                "ClusterRole",
                json!({
                    "metadata": {"name": "cr"},
                    "rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}],
                    "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate": "true"}}]}
                }),
            ),
            (
                RBAC,
                "RoleBinding",
                json!({
                    "metadata": meta("rb"),
                    "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "r"},
                    "subjects": [
                        {"kind": "ServiceAccount", "name": "default", "namespace": "ns"},
                        {"kind": "User", "apiGroup": RBAC, "name": "alice@example.com"},
                        {"kind": "Group", "apiGroup": RBAC, "name": "system:authenticated"}
                    ]
                }),
            ),
            (
                RBAC,
                "ClusterRoleBinding",
                json!({
                    "metadata": {"name": "crb"},
                    "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "system:controller:x"},
                    "subjects": [{"kind": "ServiceAccount", "name": "sync", "namespace": "mirra"}]
                }),
            ),
            ("networking.k8s.io", "NetworkPolicy", network_policy()),
            ("apps", "Deployment", deployment()),
            ("apps", "ReplicaSet", rs),
            ("apps", "StatefulSet", sts),
            ("apps", "DaemonSet", ds),
            ("batch", "Job", job),
            ("batch", "CronJob", cron),
            ("autoscaling", "HorizontalPodAutoscaler", hpa()),
            ("networking.k8s.io", "Ingress", ingress()),
            ("", "PersistentVolumeClaim", pvc()),
            ("policy", "PodDisruptionBudget", pdb()),
            ("scheduling.k8s.io", "PriorityClass", priority_class()),
            ("storage.k8s.io", "StorageClass", storage_class()),
            (
                "example.com",
                "Widget",
                json!({"metadata": {"name": "w", "finalizers": ["widget"]}}),
            ),
        ]
    }

    fn hpa() -> Value {
        json!({
            "metadata": meta("web"),
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 5,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 80}}},
                    {"type": "Pods", "pods": {"metric": {"name": "rps"},
                        "target": {"type": "AverageValue", "averageValue": "10"}}},
                    {"type": "External", "external": {"metric": {"name": "queue"},
                        "target": {"type": "Value", "value": "100m"}}}
                ],
                "behavior": {"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                    "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}]}}
            }
        })
    }

    fn ingress() -> Value {
        json!({
            "metadata": meta("web"),
            "spec": {
                "ingressClassName": "nginx",
                "defaultBackend": {"service": {"name": "web", "port": {"name": "http"}}},
                "rules": [{
                    "host": "*.example.com",
                    "http": {"paths": [
                        {"path": "/", "pathType": "Prefix",
                         "backend": {"service": {"name": "web", "port": {"number": 80}}}},
                        {"pathType": "ImplementationSpecific",
                         "backend": {"resource": {"apiGroup": "k8s.example.com", "kind": "Bucket", "name": "b"}}}
                    ]}
                }],
                "tls": [{"hosts": ["www.example.com", "*.example.com"], "secretName": "tls"}]
            }
        })
    }

    fn pvc() -> Value {
        json!({
            "metadata": meta("data"),
            "spec": {
                "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
                "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": "standard", "volumeMode": "Filesystem",
                "selector": {"matchLabels": {"tier": "db"}}
            }
        })
    }

    fn pdb() -> Value {
        json!({
            "metadata": meta("web"),
            "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}},
                     "unhealthyPodEvictionPolicy": "AlwaysAllow"}
        })
    }

    fn priority_class() -> Value {
        json!({"metadata": {"name": "high"}, "value": 1_000_000_000, "preemptionPolicy": "Never"})
    }

    fn storage_class() -> Value {
        json!({
            "metadata": {"name": "fast"},
            "provisioner": "ebs.csi.aws.com",
            "parameters": {"type": "gp3"},
            "reclaimPolicy": "Retain",
            "volumeBindingMode": "WaitForFirstConsumer"
        })
    }

    /// A table row: JSON pointer, value to put there, expected (field, message) pairs.
    type Case = (&'static str, Value, &'static [(&'static str, &'static str)]);
    /// A table row whose expectations are built at run time.
    type OwnedCase = (&'static str, Value, Vec<(String, String)>);

    const HPA: &str = "autoscaling";

    #[test]
    fn hpa_replica_and_target_rules() {
        let table: &[Case] = &[
            (
                "/spec/maxReplicas",
                json!(0),
                &[
                    (
                        "spec.maxReplicas",
                        "Invalid value: 0: must be greater than 0",
                    ),
                    (
                        "spec.maxReplicas",
                        "Invalid value: 0: must be greater than or equal to `minReplicas`",
                    ),
                ],
            ),
            (
                "/spec/minReplicas",
                json!(0),
                &[(
                    "spec.minReplicas",
                    "Invalid value: 0: must be greater than or equal to 1",
                )],
            ),
            (
                "/spec/minReplicas",
                json!(6),
                &[(
                    "spec.maxReplicas",
                    "Invalid value: 5: must be greater than or equal to `minReplicas`",
                )],
            ),
            (
                "/spec/scaleTargetRef",
                json!({}),
                &[
                    ("spec.scaleTargetRef.kind", "Required value"),
                    ("spec.scaleTargetRef.name", "Required value"),
                ],
            ),
            (
                "/spec/scaleTargetRef/name",
                json!("a/b"),
                &[(
                    "spec.scaleTargetRef.name",
                    "Invalid value: \"a/b\": may not contain '/'",
                )],
            ),
        ];
        for (pointer, value, want) in table {
            check(
                HPA,
                "HorizontalPodAutoscaler",
                &with(&hpa(), pointer, value.clone()),
                want,
            );
        }
        // An HPA stored with minReplicas 0 may keep it on update, but only
        // with an Object or External metric to scale from zero.
        let zero = with(&hpa(), "/spec/minReplicas", json!(0));
        check_update(HPA, "HorizontalPodAutoscaler", &zero, &zero, &[]);
        let zero = with(
            &zero,
            "/spec/metrics",
            json!([hpa()["spec"]["metrics"][0].clone()]),
        );
        let got = validate(HPA, "HorizontalPodAutoscaler", &zero, Some(&zero));
        assert_eq!(
            pairs(&got),
            vec![(
                "spec.metrics".to_string(),
                "Forbidden: must specify at least one Object or External metric to support scaling to zero replicas".to_string()
            )]
        );
    }

    #[test]
    fn hpa_metric_rules() {
        let table: &[(Value, &[(&str, &str)])] = &[
            (
                json!({"type": "Resource", "resource": {"name": "", "target": {"type": "Utilization", "averageUtilization": 0}}}),
                &[
                    (
                        "spec.metrics[0].resource.name",
                        "Required value: must specify a resource name",
                    ),
                    (
                        "spec.metrics[0].resource.target.averageUtilization",
                        "Invalid value: 0: must be greater than 0",
                    ),
                ],
            ),
            (
                json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Bogus"}}}),
                &[
                    (
                        "spec.metrics[0].resource.target.type",
                        "Invalid value: \"Bogus\": must be either Utilization, Value, or AverageValue",
                    ),
                    (
                        "spec.metrics[0].resource.target.averageUtilization",
                        "Required value: must set either a target raw value or a target utilization",
                    ),
                ],
            ),
            (
                json!({"type": "Pods", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 5}}}),
                &[(
                    "spec.metrics[0].pods",
                    "Required value: must populate information for the given metric source",
                )],
            ),
            (
                json!({"type": "Weird"}),
                &[
                    (
                        "spec.metrics[0].type",
                        "Unsupported value: \"Weird\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
                    ),
                    (
                        "spec.metrics[0].type",
                        "Unsupported value: \"Weird\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
                    ),
                ],
            ),
            (
                json!({"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "0"}},
                       "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 5}}}),
                &[
                    (
                        "spec.metrics[0].pods.target.averageValue",
                        "Invalid value: 0: must be positive",
                    ),
                    (
                        "spec.metrics[0].resource",
                        "Forbidden: must populate the given metric source only",
                    ),
                ],
            ),
            (
                json!({"type": "External", "external": {"metric": {"name": ""}, "target": {"type": "Value"}}}),
                &[
                    (
                        "spec.metrics[0].external.metric.name",
                        "Required value: must specify a metric name",
                    ),
                    (
                        "spec.metrics[0].external.target.averageValue",
                        "Required value: must set either a target value for metric or a per-pod target",
                    ),
                ],
            ),
        ];
        for (metric, want) in table {
            let obj = with(&hpa(), "/spec/metrics", json!([metric]));
            check(HPA, "HorizontalPodAutoscaler", &obj, want);
        }
        let obj = with(
            &hpa(),
            "/spec/behavior/scaleUp",
            json!({"stabilizationWindowSeconds": 3601, "selectPolicy": "Most",
                   "policies": [{"type": "Pods", "value": 0, "periodSeconds": 1801}]}),
        );
        check(
            HPA,
            "HorizontalPodAutoscaler",
            &obj,
            &[
                (
                    "spec.behavior.scaleUp.stabilizationWindowSeconds",
                    "Invalid value: 3601: must be less than or equal to 3600",
                ),
                (
                    "spec.behavior.scaleUp.selectPolicy",
                    "Unsupported value: \"Most\": supported values: \"Disabled\", \"Max\", \"Min\"",
                ),
                (
                    "spec.behavior.scaleUp.policies[0].value",
                    "Invalid value: 0: must be greater than zero",
                ),
                (
                    "spec.behavior.scaleUp.policies[0].periodSeconds",
                    "Invalid value: 1801: must be less than or equal to 1800",
                ),
            ],
        );
    }

    const NET: &str = "networking.k8s.io";
    const DNS1035_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

    #[test]
    fn ingress_backend_rules() {
        let b = "/spec/rules/0/http/paths/0/backend";
        let p = "spec.rules[0].http.paths[0].backend";
        let table: &[(Value, Vec<(String, String)>)] = &[
            (
                json!({"service": {"name": "web", "port": {"number": 70000}}}),
                vec![(format!("{p}.service.port.number"), "Invalid value: 70000: must be between 1 and 65535, inclusive".into())],
            ),
            (
                json!({"service": {"name": "1web", "port": {"number": 80}}}),
                vec![(format!("{p}.service.name"), format!("Invalid value: \"1web\": {DNS1035_ERR}"))],
            ),
            (
                json!({"service": {"name": "web", "port": {"name": "http", "number": 80}}}),
                vec![(p.to_string(), "Invalid value: \"\": cannot set both port name & port number".into())],
            ),
            (
                json!({"service": {"name": "web", "port": {}}}),
                vec![(p.to_string(), "Required value: port name or number is required".into())],
            ),
            (
                json!({"service": {"name": "web", "port": {"name": "HTTP"}}}),
                vec![(format!("{p}.service.port.name"), "Invalid value: \"HTTP\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into()),
                     (format!("{p}.service.port.name"), "Invalid value: \"HTTP\": must contain at least one letter (a-z)".into())],
            ),
            (
                json!({"service": {"port": {"number": 80}}}),
                vec![(format!("{p}.service.name"), "Required value".into())],
            ),
            (
                json!({}),
                vec![(p.to_string(), "Invalid value: \"\": resource or service backend is required".into())],
            ),
            (
                json!({"service": {"name": "web", "port": {"number": 80}}, "resource": {"kind": "K", "name": "n"}}),
                vec![(p.to_string(), "Invalid value: \"\": cannot set both resource and service backends".into())],
            ),
        ];
        for (backend, want) in table {
            let obj = with(&ingress(), b, backend.clone());
            let got = pairs(&validate(NET, "Ingress", &obj, None));
            assert_eq!(&got, want, "{backend}");
        }
    }

    #[test]
    fn ingress_rule_and_path_rules() {
        let path0 = "/spec/rules/0/http/paths/0";
        let p = "spec.rules[0].http.paths[0]";
        let table: &[OwnedCase] = &[
            (
                "/pathType",
                Value::Null,
                vec![(format!("{p}.pathType"), "Required value: pathType must be specified".into())],
            ),
            (
                "/pathType",
                json!("Glob"),
                vec![(format!("{p}.pathType"), "Unsupported value: \"Glob\": supported values: \"Exact\", \"ImplementationSpecific\", \"Prefix\"".into())],
            ),
            (
                "/path",
                json!("api"),
                vec![(format!("{p}.path"), "Invalid value: \"api\": must be an absolute path".into())],
            ),
            (
                "/path",
                json!("/a//b/.."),
                vec![
                    (format!("{p}.path"), "Invalid value: \"/a//b/..\": must not contain '//'".into()),
                    (format!("{p}.path"), "Invalid value: \"/a//b/..\": cannot end with '/..'".into()),
                ],
            ),
        ];
        for (pointer, value, want) in table {
            let obj = if value.is_null() {
                let mut o = ingress();
                if let Some(m) = o.pointer_mut(path0).and_then(Value::as_object_mut) {
                    m.remove("pathType");
                }
                o
            } else {
                with(&ingress(), &format!("{path0}{pointer}"), value.clone())
            };
            let got = pairs(&validate(NET, "Ingress", &obj, None));
            assert_eq!(&got, want, "{pointer}={value}");
        }
        check(
            NET,
            "Ingress",
            &with(&ingress(), "/spec/rules/0/host", json!("10.0.0.1")),
            &[(
                "spec.rules[0].host",
                "Invalid value: \"10.0.0.1\": must be a DNS name, not an IP address",
            )],
        );
        check(
            NET,
            "Ingress",
            &with(&ingress(), "/spec/rules/0/http/paths", json!([])),
            &[("spec.rules[0].http.paths", "Required value")],
        );
        check(
            NET,
            "Ingress",
            &json!({"metadata": meta("x"), "spec": {}}),
            &[(
                "spec",
                "Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified",
            )],
        );
        let annotated = with(
            &ingress(),
            "/metadata/annotations",
            json!({"kubernetes.io/ingress.class": "traefik"}),
        );
        check(
            NET,
            "Ingress",
            &annotated,
            &[(
                "annotations.kubernetes.io/ingress.class",
                "Invalid value: \"traefik\": must match `ingressClassName` when both are specified",
            )],
        );
        check_update(NET, "Ingress", &annotated, &annotated, &[]);
    }

    #[test]
    fn pvc_rules() {
        let table: &[Case] = &[
            (
                "/spec/accessModes",
                json!([]),
                &[(
                    "spec.accessModes",
                    "Required value: at least 1 access mode is required",
                )],
            ),
            (
                "/spec/accessModes",
                json!(["ReadWriteSometimes"]),
                &[(
                    "spec.accessModes",
                    "Unsupported value: \"ReadWriteSometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"",
                )],
            ),
            (
                "/spec/accessModes",
                json!(["ReadWriteOncePod", "ReadWriteOnce"]),
                &[(
                    "spec.accessModes",
                    "Forbidden: may not use ReadWriteOncePod with other access modes",
                )],
            ),
            (
                "/spec/resources",
                json!({}),
                &[("spec.resources[storage]", "Required value")],
            ),
            (
                "/spec/resources/requests/storage",
                json!("0"),
                &[(
                    "spec.resources[storage]",
                    "Invalid value: \"0\": must be greater than zero",
                )],
            ),
            (
                "/spec/volumeMode",
                json!("Raw"),
                &[(
                    "spec.volumeMode",
                    "Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"",
                )],
            ),
            (
                "/spec/storageClassName",
                json!("Fast_SSD"),
                &[(
                    "spec.storageClassName",
                    "Invalid value: \"Fast_SSD\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                )],
            ),
        ];
        for (pointer, value, want) in table {
            check(
                "",
                "PersistentVolumeClaim",
                &with(&pvc(), pointer, value.clone()),
                want,
            );
        }
    }

    #[test]
    fn pdb_rules() {
        let both = with(&pdb(), "/spec/maxUnavailable", json!(1));
        check(
            "policy",
            "PodDisruptionBudget",
            &both,
            &[(
                "spec",
                "Invalid value: policy.PodDisruptionBudgetSpec{MinAvailable:(*intstr.IntOrString)(0xc000a00000), Selector:(*v1.LabelSelector)(0xc000a00020), MaxUnavailable:(*intstr.IntOrString)(0xc000a00040), UnhealthyPodEvictionPolicy:(*policy.UnhealthyPodEvictionPolicyType)(0xc000a00060)}: minAvailable and maxUnavailable cannot be both set",
            )],
        );
        let table: &[Case] = &[
            (
                "/spec/minAvailable",
                json!(-1),
                &[(
                    "spec.minAvailable",
                    "Invalid value: -1: must be greater than or equal to 0",
                )],
            ),
            (
                "/spec/minAvailable",
                json!("150%"),
                &[(
                    "spec.minAvailable",
                    "Invalid value: 150%: must not be greater than 100%",
                )],
            ),
            (
                "/spec/minAvailable",
                json!("half"),
                &[(
                    "spec.minAvailable",
                    "Invalid value: half: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                )],
            ),
            (
                "/spec/selector/matchLabels/app",
                json!("-web"),
                &[(
                    "spec.selector.matchLabels",
                    "Invalid value: \"-web\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                )],
            ),
            (
                "/spec/unhealthyPodEvictionPolicy",
                json!("Never"),
                &[(
                    "spec.unhealthyPodEvictionPolicy",
                    "Unsupported value: \"Never\": supported values: \"AlwaysAllow\", \"IfHealthyBudget\"",
                )],
            ),
        ];
        for (pointer, value, want) in table {
            check(
                "policy",
                "PodDisruptionBudget",
                &with(&pdb(), pointer, value.clone()),
                want,
            );
        }
    }

    #[test]
    fn priority_class_rules() {
        const S: &str = "scheduling.k8s.io";
        let table: &[Case] = &[
            (
                "/value",
                json!(1_000_000_001),
                &[(
                    "value",
                    "Forbidden: maximum allowed value of a user defined priority is 1000000000",
                )],
            ),
            (
                "/preemptionPolicy",
                json!("Always"),
                &[(
                    "preemptionPolicy",
                    "Unsupported value: \"Always\": supported values: \"PreemptLowerPriority\", \"Never\"",
                )],
            ),
            (
                "/metadata/name",
                json!("system-mine"),
                &[(
                    "metadata.name",
                    "Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class",
                )],
            ),
            (
                "/metadata/name",
                json!("system-node-critical"),
                &[(
                    "metadata.name",
                    "Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: value of system-node-critical PriorityClass must be 2000001000",
                )],
            ),
        ];
        for (pointer, value, want) in table {
            check(
                S,
                "PriorityClass",
                &with(&priority_class(), pointer, value.clone()),
                want,
            );
        }
        let system =
            json!({"metadata": {"name": "system-cluster-critical"}, "value": 2_000_000_000});
        check(S, "PriorityClass", &system, &[]);
        let changed = with(&priority_class(), "/value", json!(5));
        check_update(
            S,
            "PriorityClass",
            &changed,
            &priority_class(),
            &[("value", "Forbidden: may not be changed in an update.")],
        );
        let changed = with(
            &priority_class(),
            "/preemptionPolicy",
            json!("PreemptLowerPriority"),
        );
        check_update(
            S,
            "PriorityClass",
            &changed,
            &priority_class(),
            &[(
                "preemptionPolicy",
                "Invalid value: \"PreemptLowerPriority\": field is immutable",
            )],
        );
    }

    #[test]
    fn storage_class_rules() {
        const S: &str = "storage.k8s.io";
        let table: &[Case] = &[
            (
                "/provisioner",
                json!(""),
                &[("provisioner", "Required value")],
            ),
            (
                "/provisioner",
                json!("bad provisioner"),
                &[(
                    "provisioner",
                    "Invalid value: \"bad provisioner\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                )],
            ),
            (
                "/reclaimPolicy",
                json!("Recycle"),
                &[(
                    "reclaimPolicy",
                    "Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\"",
                )],
            ),
            (
                "/volumeBindingMode",
                json!("Later"),
                &[(
                    "volumeBindingMode",
                    "Unsupported value: \"Later\": supported values: \"Immediate\", \"WaitForFirstConsumer\"",
                )],
            ),
        ];
        for (pointer, value, want) in table {
            check(
                S,
                "StorageClass",
                &with(&storage_class(), pointer, value.clone()),
                want,
            );
        }
        // Upper case is checked in lower case: `Example.com/EBS` is fine.
        check(
            S,
            "StorageClass",
            &with(&storage_class(), "/provisioner", json!("Example.com/EBS")),
            &[],
        );
        let changed = with(&storage_class(), "/provisioner", json!("other.example.com"));
        check_update(
            S,
            "StorageClass",
            &changed,
            &storage_class(),
            &[(
                "provisioner",
                "Forbidden: updates to provisioner are forbidden.",
            )],
        );
    }

    /// (field, message) pairs, for compact assertions.
    fn pairs(errs: &[FieldError]) -> Vec<(String, String)> {
        errs.iter()
            .map(|e| (e.field.clone(), e.message.clone()))
            .collect()
    }

    fn check(group: &str, kind: &str, obj: &Value, want: &[(&str, &str)]) {
        let got = pairs(&validate(group, kind, obj, None));
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(f, m)| ((*f).to_string(), (*m).to_string()))
            .collect();
        assert_eq!(got, want, "{kind}: {obj}");
    }

    fn check_update(group: &str, kind: &str, obj: &Value, old: &Value, want: &[(&str, &str)]) {
        let got = pairs(&validate(group, kind, obj, Some(old)));
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(f, m)| ((*f).to_string(), (*m).to_string()))
            .collect();
        assert_eq!(got, want, "{kind} update: {obj}");
    }

    /// `obj` with the value at a `/`-separated JSON pointer replaced.
    fn with(obj: &Value, pointer: &str, value: Value) -> Value {
        let mut out = obj.clone();
        if let Some(slot) = out.pointer_mut(pointer) {
            *slot = value;
            return out;
        }
        let (parent, last) = pointer.rsplit_once('/').unwrap_or(("", pointer));
        match out.pointer_mut(parent).and_then(Value::as_object_mut) {
            Some(m) => {
                m.insert(last.replace("~1", "/").replace("~0", "~"), value);
            }
            None => panic!("no {parent} in {obj}"),
        }
        out
    }

    const DNS_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const CONFIG_KEY_ERR: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

    #[test]
    fn valid_objects_have_no_errors() {
        for (group, kind, obj) in valid_objects() {
            assert_eq!(validate(group, kind, &obj, None), vec![], "{kind}: {obj}");
            assert_eq!(
                validate(group, kind, &obj, Some(&obj)),
                vec![],
                "{kind} update"
            );
        }
    }

    #[test]
    fn reasons_are_cause_types() {
        let e = validate("", "ConfigMap", &json!({"data": {"a b": "x"}}), None);
        assert_eq!(e[0].reason, "FieldValueInvalid");
        let e = validate("", "Pod", &json!({"spec": {}}), None);
        assert!(e.iter().any(|e| e.reason == "FieldValueRequired"));
        assert!(e.iter().any(|e| e.reason == "FieldValueRequired"));
        let e = validate(RBAC, "RoleBinding", &json!({}), None);
        assert_eq!(e[0].reason, "FieldValueNotSupported");
        let big = "x".repeat(MAX_ANNOTATIONS_SIZE);
        let e = validate(
            "",
            "ConfigMap",
            &json!({"metadata": {"annotations": {"a": big}}}),
            None,
        );
        assert_eq!(e[0].reason, "FieldValueTooLong");
    }

    #[test]
    fn config_map_rules() {
        check(
            "",
            "ConfigMap",
            &json!({"data": {"bad key": "x"}}),
            &[(
                "data[bad key]",
                &format!("Invalid value: \"bad key\": {CONFIG_KEY_ERR}"),
            )],
        );
        check(
            "",
            "ConfigMap",
            &json!({"data": {"..": "x", "..a": "y", ".": "z"}}),
            &[
                ("data[..]", "Invalid value: \"..\": must not be '..'"),
                (
                    "data[..a]",
                    "Invalid value: \"..a\": must not start with '..'",
                ),
                ("data[.]", "Invalid value: \".\": must not be '.'"),
            ],
        );
        check(
            "",
            "ConfigMap",
            &json!({"data": {"k": "x"}, "binaryData": {"k": "eA=="}}),
            &[
                (
                    "data[k]",
                    "Invalid value: \"k\": duplicate of key present in binaryData",
                ),
                (
                    "binaryData[k]",
                    "Invalid value: \"k\": duplicate of key present in data",
                ),
            ],
        );
        let long = "k".repeat(254);
        check(
            "",
            "ConfigMap",
            &json!({"data": {long.clone(): "x"}}),
            &[(
                &format!("data[{long}]"),
                &format!("Invalid value: \"{long}\": must be no more than 253 characters"),
            )],
        );
        let half = "x".repeat(MAX_DATA_SIZE / 2);
        check(
            "",
            "ConfigMap",
            &json!({"data": {"a": half, "b": half}}),
            &[],
        );
        check(
            "",
            "ConfigMap",
            &json!({"data": {"a": half, "b": format!("{half}x")}}),
            &[("[]", "Too long: may not be more than 1048576 bytes")],
        );
    }

    #[test]
    fn config_map_and_secret_immutability() {
        let old = json!({"metadata": meta("c"), "immutable": true, "data": {"a": "1"}});
        check_update("", "ConfigMap", &old, &old, &[]);
        let new = json!({"metadata": meta("c"), "data": {"a": "2"}});
        check_update(
            "",
            "ConfigMap",
            &new,
            &old,
            &[
                (
                    "immutable",
                    "Forbidden: field is immutable when `immutable` is set",
                ),
                (
                    "data",
                    "Forbidden: field is immutable when `immutable` is set",
                ),
            ],
        );
        let old = json!({"metadata": meta("s"), "type": "Opaque", "immutable": true, "data": {"a": "MQ=="}});
        let new = with(&old, "/data/a", json!("Mg=="));
        check_update(
            "",
            "Secret",
            &new,
            &old,
            &[(
                "data",
                "Forbidden: field is immutable when `immutable` is set",
            )],
        );
        let new = json!({"metadata": meta("s"), "type": "kubernetes.io/tls", "immutable": true,
                         "data": {"a": "MQ==", "tls.crt": "", "tls.key": ""}});
        let old =
            json!({"metadata": meta("s"), "data": {"a": "MQ==", "tls.crt": "", "tls.key": ""}});
        check_update(
            "",
            "Secret",
            &new,
            &old,
            &[(
                "type",
                "Invalid value: \"kubernetes.io/tls\": field is immutable",
            )],
        );
    }

    #[test]
    fn secret_rules() {
        check(
            "",
            "Secret",
            &json!({"data": {"a/b": "eA=="}}),
            &[(
                "data[a/b]",
                &format!("Invalid value: \"a/b\": {CONFIG_KEY_ERR}"),
            )],
        );
        check(
            "",
            "Secret",
            &json!({"type": "kubernetes.io/service-account-token"}),
            &[(
                "metadata.annotations[kubernetes.io/service-account.name]",
                "Required value",
            )],
        );
        check(
            "",
            "Secret",
            &json!({"type": "kubernetes.io/basic-auth", "data": {"other": ""}}),
            &[
                ("data[%s][username]", "Required value"),
                ("data[%s][password]", "Required value"),
            ],
        );
        check(
            "",
            "Secret",
            &json!({"type": "kubernetes.io/basic-auth", "data": {"password": ""}}),
            &[],
        );
        check(
            "",
            "Secret",
            &json!({"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": ""}}),
            &[("data[%s][ssh-privatekey]", "Required value")],
        );
        check(
            "",
            "Secret",
            &json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}}),
            &[("data[tls.key]", "Required value")],
        );
        check(
            "",
            "Secret",
            &json!({"type": "kubernetes.io/dockercfg"}),
            &[("data[.dockercfg]", "Required value")],
        );
        let redacted = |m: &str| format!("Invalid value: \"<secret contents redacted>\": {m}");
        for (content, msg) in [
            ("{", "unexpected end of JSON input"),
            ("", "unexpected end of JSON input"),
            (
                "[]",
                "json: cannot unmarshal array into Go value of type map[string]interface {}",
            ),
            (
                "\"s\"",
                "json: cannot unmarshal string into Go value of type map[string]interface {}",
            ),
            ("x", "invalid character 'x' looking for beginning of value"),
            ("{} x", "invalid character 'x' after top-level value"),
        ] {
            check(
                "",
                "Secret",
                &json!({"type": "kubernetes.io/dockerconfigjson", "stringData": {".dockerconfigjson": content}}),
                &[("data[.dockerconfigjson]", &redacted(msg))],
            );
        }
        let big = "x".repeat(MAX_DATA_SIZE + 1);
        check(
            "",
            "Secret",
            &json!({"stringData": {"a": big}}),
            &[("data", "Too long: may not be more than 1048576 bytes")],
        );
    }

    #[test]
    fn object_meta_rules() {
        let qualified_err = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        check(
            "",
            "ConfigMap",
            &json!({"metadata": {"annotations": {"Example.COM/Ok": "", "bad key!": "v"}}}),
            &[(
                "metadata.annotations",
                &format!("Invalid value: \"bad key!\": {qualified_err}"),
            )],
        );
        let mut annotations = Map::new();
        annotations.insert("a".into(), json!("x".repeat(MAX_ANNOTATIONS_SIZE - 1)));
        check(
            "",
            "ConfigMap",
            &json!({"metadata": {"annotations": annotations.clone()}}),
            &[],
        );
        annotations.insert("b".into(), json!(""));
        check(
            "",
            "ConfigMap",
            &json!({"metadata": {"annotations": annotations}}),
            &[(
                "metadata.annotations",
                "Too long: may not be more than 262144 bytes",
            )],
        );
        check(
            "apps",
            "Deployment",
            &with(
                &deployment(),
                "/metadata/finalizers",
                json!(["foo", "example.com/ok", "kubernetes"]),
            ),
            &[(
                "metadata.finalizers[0]",
                "Invalid value: \"foo\": name is neither a standard finalizer name nor is it fully qualified",
            )],
        );
        check(
            "example.com",
            "Widget",
            &json!({"metadata": {"finalizers": ["foo", "bad/"]}}),
            &[
                (
                    "metadata.finalizers",
                    "Invalid value: \"bad/\": name part must be non-empty",
                ),
                (
                    "metadata.finalizers",
                    &format!("Invalid value: \"bad/\": {qualified_err}"),
                ),
            ],
        );
        check(
            "",
            "ConfigMap",
            &json!({"metadata": {"finalizers": ["orphan", "foregroundDeletion"]}}),
            &[(
                "metadata.finalizers",
                "Invalid value: []string{\"orphan\", \"foregroundDeletion\"}: finalizer orphan and foregroundDeletion cannot be both set",
            )],
        );
        check(
            "",
            "ConfigMap",
            &json!({"metadata": {"ownerReferences": [{"apiVersion": "apps/", "kind": "", "name": "", "uid": ""}]}}),
            &[
                (
                    "metadata.ownerReferences.apiVersion",
                    "Invalid value: \"apps/\": version must not be empty",
                ),
                (
                    "metadata.ownerReferences.kind",
                    "Invalid value: \"\": kind must not be empty",
                ),
                (
                    "metadata.ownerReferences.name",
                    "Invalid value: \"\": name must not be empty",
                ),
                (
                    "metadata.ownerReferences.uid",
                    "Invalid value: \"\": uid must not be empty",
                ),
            ],
        );
        let owner = |name: &str| json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": "u", "controller": true});
        let errs = validate(
            "",
            "Pod",
            &json!({"metadata": {"ownerReferences": [owner("a"), owner("b")]}}),
            None,
        );
        assert!(errs.iter().any(|e| e.field == "metadata.ownerReferences"
            && e.message.ends_with("Only one reference can have Controller set to true. Found \"true\" in references for ReplicaSet/a and ReplicaSet/b")));
    }

    #[test]
    fn rbac_role_rules() {
        let role = |rule: Value| json!({"rules": [rule]});
        check(
            RBAC,
            "Role",
            &role(json!({"apiGroups": [""], "resources": ["pods"]})),
            &[(
                "rules[0].verbs",
                "Required value: verbs must contain at least one value",
            )],
        );
        check(
            RBAC,
            "Role",
            &role(json!({"verbs": ["get"]})),
            &[
                (
                    "rules[0].apiGroups",
                    "Required value: resource rules must supply at least one api group",
                ),
                (
                    "rules[0].resources",
                    "Required value: resource rules must supply at least one resource",
                ),
            ],
        );
        check(
            RBAC,
            "Role",
            &role(json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"]})),
            &[(
                "rules[0].nonResourceURLs",
                "Invalid value: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs",
            )],
        );
        check(
            RBAC,
            "ClusterRole",
            &role(
                json!({"verbs": ["get"], "nonResourceURLs": ["/a", "/b"], "resources": ["pods"]}),
            ),
            &[(
                "rules[0].nonResourceURLs",
                "Invalid value: []string{\"/a\", \"/b\"}: rules cannot apply to both regular resources and non-resource URLs",
            )],
        );
        check(
            RBAC,
            "ClusterRole",
            &role(
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods", "secrets"], "resourceNames": ["x"]}),
            ),
            &[(
                "rules[0].resourceNames",
                "Required value: resource names cannot apply to multiple resources",
            )],
        );
        check(
            RBAC,
            "ClusterRole",
            &json!({"aggregationRule": {}}),
            &[(
                "aggregationRule.clusterRoleSelectors",
                "Required value: at least one clusterRoleSelector required if aggregationRule is non-nil",
            )],
        );
    }

    #[test]
    fn cluster_role_aggregation_selector_errors() {
        let cr = json!({"aggregationRule": {"clusterRoleSelectors": [{"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}]}});
        check(
            RBAC,
            "ClusterRole",
            &cr,
            &[
                (
                    "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values",
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ),
                (
                    "aggregationRule.clusterRoleSelectors[0]",
                    "Invalid value: \"null\": invalid label selector.",
                ),
            ],
        );
    }

    #[test]
    fn rbac_binding_rules() {
        let rb =
            |role_ref: Value, subjects: Value| json!({"roleRef": role_ref, "subjects": subjects});
        let good_ref = json!({"apiGroup": RBAC, "kind": "Role", "name": "r"});
        check(
            RBAC,
            "RoleBinding",
            &rb(
                json!({"apiGroup": "rbac", "kind": "Roles", "name": ""}),
                json!([]),
            ),
            &[
                (
                    "roleRef.apiGroup",
                    "Unsupported value: \"rbac\": supported values: \"rbac.authorization.k8s.io\"",
                ),
                (
                    "roleRef.kind",
                    "Unsupported value: \"Roles\": supported values: \"Role\", \"ClusterRole\"",
                ),
                ("roleRef.name", "Required value"),
            ],
        );
        check(
            RBAC,
            "ClusterRoleBinding",
            &rb(good_ref.clone(), json!([])),
            &[(
                "roleRef.kind",
                "Unsupported value: \"Role\": supported values: \"ClusterRole\"",
            )],
        );
        check(
            RBAC,
            "RoleBinding",
            &rb(with(&good_ref, "/name", json!("a/b")), json!([])),
            &[(
                "roleRef.name",
                "Invalid value: \"a/b\": may not contain '/'",
            )],
        );
        check(
            RBAC,
            "RoleBinding",
            &rb(
                good_ref.clone(),
                json!([
                    {"kind": "Robot", "name": "x"},
                    {"kind": "ServiceAccount", "name": "Bad_Name", "apiGroup": RBAC},
                    {"kind": "User", "name": ""},
                    {"kind": "Group", "name": "g", "apiGroup": ""}
                ]),
            ),
            &[
                (
                    "subjects[0].kind",
                    "Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
                ),
                (
                    "subjects[1].name",
                    "Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                ),
                (
                    "subjects[1].apiGroup",
                    "Unsupported value: \"rbac.authorization.k8s.io\": supported values: \"\"",
                ),
                ("subjects[2].name", "Required value"),
                (
                    "subjects[2].name",
                    "Invalid value: \"\": user name cannot be empty",
                ),
                (
                    "subjects[2].apiGroup",
                    "Unsupported value: \"\": supported values: \"rbac.authorization.k8s.io\"",
                ),
                (
                    "subjects[3].apiGroup",
                    "Unsupported value: \"\": supported values: \"rbac.authorization.k8s.io\"",
                ),
            ],
        );
        let crb_ref = json!({"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"});
        check(
            RBAC,
            "ClusterRoleBinding",
            &rb(crb_ref, json!([{"kind": "ServiceAccount", "name": "sa"}])),
            &[("subjects[0].namespace", "Required value")],
        );
        let old = rb(good_ref.clone(), json!([]));
        let new = rb(with(&good_ref, "/name", json!("other")), json!([]));
        check_update(
            RBAC,
            "RoleBinding",
            &new,
            &old,
            &[(
                "roleRef",
                "Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"Role\", Name:\"other\"}: cannot change roleRef",
            )],
        );
    }

    #[test]
    fn network_policy_rules() {
        let np = network_policy();
        let port = |p: Value| with(&np, "/spec/ingress/0/ports", json!([p]));
        let ports = "spec.ingress[0].ports[0]";
        check(
            "networking.k8s.io",
            "NetworkPolicy",
            &port(json!({"protocol": "ICMP", "port": 70000})),
            &[
                (
                    &format!("{ports}.protocol"),
                    "Unsupported value: \"ICMP\": supported values: \"TCP\", \"UDP\", \"SCTP\"",
                ),
                (
                    &format!("{ports}.port"),
                    "Invalid value: 70000: must be between 1 and 65535, inclusive",
                ),
            ],
        );
        check(
            "networking.k8s.io",
            "NetworkPolicy",
            &port(json!({"port": 90, "endPort": 80})),
            &[(
                &format!("{ports}.endPort"),
                "Invalid value: 90: must be greater than or equal to `port`",
            )],
        );
        check(
            "networking.k8s.io",
            "NetworkPolicy",
            &port(json!({"endPort": 80})),
            &[(
                &format!("{ports}.endPort"),
                "Invalid value: 80: may not be specified when `port` is not specified",
            )],
        );
        check(
            "networking.k8s.io",
            "NetworkPolicy",
            &port(json!({"port": "HTTP", "endPort": 80})),
            &[
                (
                    &format!("{ports}.endPort"),
                    "Invalid value: 80: may not be specified when `port` is non-numeric",
                ),
                (
                    &format!("{ports}.port"),
                    "Invalid value: \"HTTP\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                ),
                (
                    &format!("{ports}.port"),
                    "Invalid value: \"HTTP\": must contain at least one letter (a-z)",
                ),
            ],
        );
        let peer = |p: Value| with(&np, "/spec/ingress/0/from", json!([p]));
        let from = "spec.ingress[0].from[0]";
        check(
            "networking.k8s.io",
            "NetworkPolicy",
            &peer(json!({})),
            &[(from, "Required value: must specify a peer")],
        );
        check(
            "networking.k8s.io",
            "NetworkPolicy",
            &peer(json!({"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}})),
            &[(
                from,
                "Forbidden: may not specify both ipBlock and another peer",
            )],
        );
        check(
            "networking.k8s.io",
            "NetworkPolicy",
            &peer(json!({"ipBlock": {}})),
            &[(&format!("{from}.ipBlock.cidr"), "Required value")],
        );
        check(
            "networking.k8s.io",
            "NetworkPolicy",
            &peer(json!({"ipBlock": {"cidr": "10.0.0.0/33"}})),
            &[(
                &format!("{from}.ipBlock.cidr"),
                "Invalid value: \"10.0.0.0/33\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            )],
        );
        check(
            "networking.k8s.io",
            "NetworkPolicy",
            &peer(
                json!({"ipBlock": {"cidr": "10.0.0.0/16", "except": ["192.168.0.0/24", "10.0.0.0/16", "10.0.5.0/24", "nope"]}}),
            ),
            &[
                (
                    &format!("{from}.ipBlock.except[0]"),
                    "Invalid value: \"192.168.0.0/24\": must be a strict subset of `cidr`",
                ),
                (
                    &format!("{from}.ipBlock.except[1]"),
                    "Invalid value: \"10.0.0.0/16\": must be a strict subset of `cidr`",
                ),
                (
                    &format!("{from}.ipBlock.except[3]"),
                    "Invalid value: \"nope\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                ),
            ],
        );
        // Legacy parsing: leading zeros and host bits are accepted.
        check(
            "networking.k8s.io",
            "NetworkPolicy",
            &peer(json!({"ipBlock": {"cidr": "010.0.0.1/8", "except": ["10.2.0.0/016"]}})),
            &[],
        );
        check(
            "networking.k8s.io",
            "NetworkPolicy",
            &with(&np, "/spec/policyTypes", json!(["Ingress", "Foo"])),
            &[(
                "spec.policyTypes[1]",
                "Unsupported value: \"Foo\": supported values: \"Ingress\", \"Egress\"",
            )],
        );
        check(
            "networking.k8s.io",
            "NetworkPolicy",
            &with(
                &np,
                "/spec/policyTypes",
                json!(["Ingress", "Egress", "Ingress"]),
            ),
            &[(
                "spec.policyTypes",
                "Invalid value: []networking.PolicyType{\"Ingress\", \"Egress\", \"Ingress\"}: may not specify more than two policyTypes",
            )],
        );
        check(
            "networking.k8s.io",
            "NetworkPolicy",
            &with(
                &np,
                "/spec/podSelector",
                json!({
                    "matchLabels": {"app": "bad value!"},
                    "matchExpressions": [{"key": "k", "operator": "Foo"}, {"key": "k", "operator": "In"}, {"key": "k", "operator": "Exists", "values": ["x"]}]
                }),
            ),
            &[
                (
                    "spec.podSelector.matchLabels",
                    "Invalid value: \"bad value!\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                ),
                (
                    "spec.podSelector.matchExpressions[0].operator",
                    "Invalid value: \"Foo\": not a valid selector operator",
                ),
                (
                    "spec.podSelector.matchExpressions[1].values",
                    "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                ),
                (
                    "spec.podSelector.matchExpressions[2].values",
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ),
            ],
        );
    }

    #[test]
    fn pod_spec_container_rules() {
        let pod = json!({"metadata": meta("p"), "spec": pod_spec("Always")});
        let c = "spec.containers[0]";
        check(
            "",
            "Pod",
            &with(&pod, "/spec/containers", json!([])),
            &[("spec.containers", "Required value")],
        );
        let mut bad = container();
        bad["name"] = json!("Web");
        bad["image"] = json!("");
        bad["imagePullPolicy"] = json!("Sometimes");
        bad["terminationMessagePolicy"] = json!("Log");
        bad["restartPolicy"] = json!("Always");
        check(
            "",
            "Pod",
            &with(&pod, "/spec/containers", json!([bad])),
            &[
                (
                    &format!("{c}.name"),
                    &format!("Invalid value: \"Web\": {DNS_LABEL_ERR}"),
                ),
                (&format!("{c}.image"), "Required value"),
                (
                    &format!("{c}.terminationMessagePolicy"),
                    "Unsupported value: \"Log\": supported values: \"File\", \"FallbackToLogsOnError\"",
                ),
                (
                    &format!("{c}.imagePullPolicy"),
                    "Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
                ),
                (
                    &format!("{c}.restartPolicy"),
                    "Forbidden: may not be set for non-init containers",
                ),
            ],
        );
        check(
            "",
            "Pod",
            &with(&pod, "/spec/containers/0/image", json!(" nginx")),
            &[(
                &format!("{c}.image"),
                "Invalid value: \" nginx\": must not have leading or trailing whitespace",
            )],
        );
        // Templates tolerate the whitespace (upstream keeps " " as a token).
        check(
            "",
            "PodTemplate",
            &with(
                &json!({"template": template("Always")}),
                "/template/spec/containers/0/image",
                json!(" "),
            ),
            &[],
        );
        check(
            "",
            "Pod",
            &with(&pod, "/spec/containers", json!([container(), container()])),
            &[("spec.containers[1].name", "Duplicate value: \"web\"")],
        );
        check(
            "",
            "Pod",
            &with(&pod, "/spec/initContainers/0/name", json!("web")),
            &[("spec.initContainers[0].name", "Duplicate value: \"web\"")],
        );
        check(
            "",
            "Pod",
            &with(
                &pod,
                "/spec/initContainers/0/livenessProbe",
                json!({"exec": {"command": ["true"]}}),
            ),
            &[(
                "spec.initContainers[0].livenessProbe",
                "Forbidden: may not be set for init containers without restartPolicy=Always",
            )],
        );
        check(
            "",
            "Pod",
            &with(&pod, "/spec/initContainers/0/restartPolicy", json!("Never")),
            &[(
                "spec.initContainers[0].restartPolicy",
                "Unsupported value: \"Never\": supported values: \"Always\"",
            )],
        );
        check(
            "",
            "Pod",
            &with(
                &pod,
                "/spec/containers/0/ports",
                json!([
                    {"containerPort": 70000, "protocol": "ICMP", "name": "http_1"},
                    {"protocol": "TCP", "hostPort": 8080, "containerPort": 1},
                    {"protocol": "TCP", "hostPort": 8080, "containerPort": 2, "name": "a"},
                    {"protocol": "TCP", "containerPort": 3, "name": "a"},
                    {"containerPort": 4}
                ]),
            ),
            &[
                (
                    &format!("{c}.ports[0].name"),
                    "Invalid value: \"http_1\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                ),
                (
                    &format!("{c}.ports[0].containerPort"),
                    "Invalid value: 70000: must be between 1 and 65535, inclusive",
                ),
                (
                    &format!("{c}.ports[0].protocol"),
                    "Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                ),
                (&format!("{c}.ports[3].name"), "Duplicate value: \"a\""),
                (&format!("{c}.ports[4].protocol"), "Required value"),
                (
                    &format!("{c}.ports[2].hostPort"),
                    "Duplicate value: \"TCP//8080\"",
                ),
            ],
        );
        check(
            "",
            "Pod",
            &with(
                &pod,
                "/spec/containers/0/env",
                json!([
                    {"name": ""},
                    {"name": "1ST.name-ok"},
                    {"name": "A=B"},
                    {"name": "é"},
                    {"name": "X", "valueFrom": {}},
                    {"name": "Y", "value": "v", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
                ]),
            ),
            &[
                (&format!("{c}.env[0].name"), "Required value"),
                (
                    &format!("{c}.env[2].name"),
                    "Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
                ),
                (
                    &format!("{c}.env[3].name"),
                    "Invalid value: \"é\": a valid environment variable name must consist only of printable ASCII characters other than '='",
                ),
                (
                    &format!("{c}.env[4].valueFrom"),
                    "Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
                ),
                (
                    &format!("{c}.env[5].valueFrom"),
                    "Invalid value: \"\": may not be specified when `value` is not empty",
                ),
            ],
        );
        check(
            "",
            "Pod",
            &with(
                &pod,
                "/spec/containers/0/envFrom",
                json!([
                    {"prefix": "A=", "configMapRef": {"name": "Bad"}},
                    {},
                    {"configMapRef": {"name": "a"}, "secretRef": {}}
                ]),
            ),
            &[
                (
                    &format!("{c}.envFrom[0].prefix"),
                    "Invalid value: \"A=\": a valid environment variable name must consist only of printable ASCII characters other than '='",
                ),
                (
                    &format!("{c}.envFrom[0].configMapRef.name"),
                    "Invalid value: \"Bad\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                ),
                (
                    &format!("{c}.envFrom"),
                    "Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`",
                ),
                (&format!("{c}.envFrom[2].secretRef.name"), "Required value"),
                (
                    &format!("{c}.envFrom"),
                    "Invalid value: \"\": may not have more than one field specified at a time",
                ),
            ],
        );
        check(
            "",
            "Pod",
            &with(
                &pod,
                "/spec/containers/0/volumeMounts",
                json!([
                    {"name": "missing", "mountPath": "/a"},
                    {"name": "data", "mountPath": "/a"},
                    {"name": "", "mountPath": ""}
                ]),
            ),
            &[
                (
                    &format!("{c}.volumeMounts[0].name"),
                    "Not found: \"missing\"",
                ),
                (
                    &format!("{c}.volumeMounts[1].mountPath"),
                    "Invalid value: \"/a\": must be unique",
                ),
                (&format!("{c}.volumeMounts[2].name"), "Required value"),
                (&format!("{c}.volumeMounts[2].name"), "Not found: \"\""),
                (&format!("{c}.volumeMounts[2].mountPath"), "Required value"),
            ],
        );
    }

    #[test]
    fn pod_spec_volume_and_policy_rules() {
        let pod = json!({"metadata": meta("p"), "spec": pod_spec("Always")});
        let mounts_none = with(&pod, "/spec/containers/0/volumeMounts", json!([]));
        check(
            "",
            "Pod",
            &with(
                &mounts_none,
                "/spec/volumes",
                json!([
                    {"name": "a", "emptyDir": {}, "secret": {"secretName": "s"}, "downwardAPI": {}},
                    {"name": "b"},
                    {"name": "Bad", "emptyDir": {}},
                    {"name": "v", "emptyDir": {}},
                    {"name": "v", "emptyDir": {}},
                    {"name": "", "persistentVolumeClaim": {}},
                    {"name": "c", "cephfs": {}, "configMap": {"name": ""}}
                ]),
            ),
            &[
                (
                    "spec.volumes[0].secret",
                    "Forbidden: may not specify more than 1 volume type",
                ),
                (
                    "spec.volumes[0].downwarAPI",
                    "Forbidden: may not specify more than 1 volume type",
                ),
                (
                    "spec.volumes[1]",
                    "Required value: must specify a volume type",
                ),
                (
                    "spec.volumes[2].name",
                    &format!("Invalid value: \"Bad\": {DNS_LABEL_ERR}"),
                ),
                ("spec.volumes[4].name", "Duplicate value: \"v\""),
                (
                    "spec.volumes[5].persistentVolumeClaim.claimName",
                    "Required value",
                ),
                ("spec.volumes[5].name", "Required value"),
                (
                    "spec.volumes[6].configMap",
                    "Forbidden: may not specify more than 1 volume type",
                ),
            ],
        );
        // A volume with errors cannot be mounted either.
        check(
            "",
            "Pod",
            &with(&pod, "/spec/volumes/0", json!({"name": "data"})),
            &[
                (
                    "spec.volumes[0]",
                    "Required value: must specify a volume type",
                ),
                (
                    "spec.containers[0].volumeMounts[0].name",
                    "Not found: \"data\"",
                ),
            ],
        );
        check(
            "",
            "Pod",
            &with(&pod, "/spec/restartPolicy", json!("Sometimes")),
            &[(
                "spec.restartPolicy",
                "Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
            )],
        );
        check(
            "",
            "Pod",
            &with(&pod, "/spec/dnsPolicy", json!("Cluster")),
            &[(
                "spec.dnsPolicy",
                "Unsupported value: \"Cluster\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"",
            )],
        );
        check(
            "",
            "Pod",
            &with(&pod, "/spec/dnsPolicy", json!("None")),
            &[(
                "spec.dnsConfig",
                "Required value: must provide `dnsConfig` when `dnsPolicy` is None",
            )],
        );
        let mut undefaulted = pod.clone();
        if let Some(spec) = undefaulted["spec"].as_object_mut() {
            spec.remove("restartPolicy");
            spec.remove("dnsPolicy");
        }
        check(
            "",
            "Pod",
            &undefaulted,
            &[
                ("spec.restartPolicy", "Required value"),
                ("spec.dnsPolicy", "Required value"),
            ],
        );
        check(
            "",
            "Pod",
            &with(&pod, "/spec/terminationGracePeriodSeconds", json!(-5)),
            &[],
        );
        check(
            "",
            "Pod",
            &with(&pod, "/spec/activeDeadlineSeconds", json!(0)),
            &[(
                "spec.activeDeadlineSeconds",
                "Invalid value: 0: must be between 1 and 2147483647, inclusive",
            )],
        );
        check(
            "",
            "Pod",
            &with(&pod, "/spec/serviceAccountName", json!("Bad")),
            &[(
                "spec.serviceAccountName",
                "Invalid value: \"Bad\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            )],
        );
    }

    #[test]
    fn workload_selector_rules() {
        let d = deployment();
        let mismatch = "Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`";
        check(
            "apps",
            "Deployment",
            &with(&d, "/spec/selector", json!({"matchLabels": {"app": "db"}})),
            &[("spec.template.metadata.labels", mismatch)],
        );
        let mut no_selector = d.clone();
        if let Some(spec) = no_selector["spec"].as_object_mut() {
            spec.remove("selector");
        }
        check(
            "apps",
            "Deployment",
            &no_selector,
            &[
                ("spec.selector", "Required value"),
                ("spec.template.metadata.labels", mismatch),
            ],
        );
        check(
            "apps",
            "Deployment",
            &with(&d, "/spec/selector", json!({})),
            &[(
                "spec.selector",
                "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment",
            )],
        );
        let mut rs = d.clone();
        if let Some(spec) = rs["spec"].as_object_mut() {
            spec.remove("strategy");
        }
        check(
            "apps",
            "ReplicaSet",
            &with(&rs, "/spec/selector", json!({"matchLabels": {}})),
            &[(
                "spec.selector",
                "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment",
            )],
        );
        check(
            "apps",
            "StatefulSet",
            &with(
                &workload("StatefulSet"),
                "/spec/selector",
                json!({"matchExpressions": []}),
            ),
            &[(
                "spec.selector",
                "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement{}}: empty selector is invalid for statefulset",
            )],
        );
        check(
            "apps",
            "DaemonSet",
            &with(
                &workload("DaemonSet"),
                "/spec/selector",
                json!({"matchLabels": {"app": "x"}}),
            ),
            &[("spec.template.metadata.labels", mismatch)],
        );
        let bad_sel = json!({"matchExpressions": [{"key": "app", "operator": "In"}]});
        check(
            "apps",
            "Deployment",
            &with(&d, "/spec/selector", bad_sel),
            &[
                (
                    "spec.selector.matchExpressions[0].values",
                    "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                ),
                (
                    "spec.selector",
                    "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:\"app\", Operator:\"In\", Values:[]string(nil)}}}: invalid label selector",
                ),
            ],
        );
        check(
            "apps",
            "Deployment",
            &with(&d, "/spec/replicas", json!(-1)),
            &[(
                "spec.replicas",
                "Invalid value: -1: must be greater than or equal to 0",
            )],
        );
        check(
            "apps",
            "Deployment",
            &with(&d, "/spec/template/spec/restartPolicy", json!("Never")),
            &[(
                "spec.template.spec.restartPolicy",
                "Unsupported value: \"Never\": supported values: \"Always\"",
            )],
        );
        check(
            "apps",
            "Deployment",
            &with(&d, "/spec/template/spec/containers/0/name", json!("Web")),
            &[(
                "spec.template.spec.containers[0].name",
                &format!("Invalid value: \"Web\": {DNS_LABEL_ERR}"),
            )],
        );
        check(
            "apps",
            "Deployment",
            &with(
                &d,
                "/spec/template/metadata/labels",
                json!({"app": "web", "bad key!": "x"}),
            ),
            &[(
                "spec.template.labels",
                "Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            )],
        );
        let new = with(&d, "/spec/selector/matchLabels/tier", json!("fe"));
        let new = with(
            &new,
            "/spec/template/metadata/labels",
            json!({"app": "web", "tier": "fe"}),
        );
        check_update(
            "apps",
            "Deployment",
            &new,
            &d,
            &[(
                "spec.selector",
                "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web\", \"tier\":\"fe\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable",
            )],
        );
        let rc = json!({"spec": {"selector": {"app": "x"}, "template": template("Always")}});
        check(
            "",
            "ReplicationController",
            &rc,
            &[("spec.template.metadata.labels", mismatch)],
        );
        check(
            "",
            "ReplicationController",
            &json!({"spec": {"template": template("OnFailure")}}),
            &[
                ("spec.selector", "Required value"),
                (
                    "spec.template.spec.restartPolicy",
                    "Unsupported value: \"OnFailure\": supported values: \"Always\"",
                ),
            ],
        );
    }

    #[test]
    fn deployment_strategy_rules() {
        let d = deployment();
        let ru = "spec.strategy.rollingUpdate";
        check(
            "apps",
            "Deployment",
            &with(
                &d,
                "/spec/strategy/rollingUpdate",
                json!({"maxUnavailable": 0, "maxSurge": "0%"}),
            ),
            &[(
                &format!("{ru}.maxUnavailable"),
                "Invalid value: 0: may not be 0 when `maxSurge` is 0",
            )],
        );
        check(
            "apps",
            "Deployment",
            &with(
                &d,
                "/spec/strategy/rollingUpdate",
                json!({"maxUnavailable": "150%", "maxSurge": "abc"}),
            ),
            &[
                (
                    &format!("{ru}.maxSurge"),
                    "Invalid value: abc: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                ),
                (
                    &format!("{ru}.maxUnavailable"),
                    "Invalid value: 150%: must not be greater than 100%",
                ),
            ],
        );
        check(
            "apps",
            "Deployment",
            &with(
                &d,
                "/spec/strategy/rollingUpdate",
                json!({"maxUnavailable": -1, "maxSurge": 1}),
            ),
            &[(
                &format!("{ru}.maxUnavailable"),
                "Invalid value: -1: must be greater than or equal to 0",
            )],
        );
        check(
            "apps",
            "Deployment",
            &with(&d, "/spec/strategy/type", json!("Recreate")),
            &[(
                ru,
                "Forbidden: may not be specified when strategy `type` is 'Recreate'",
            )],
        );
        check(
            "apps",
            "Deployment",
            &with(&d, "/spec/strategy", json!({"type": "Blue"})),
            &[(
                "spec.strategy",
                "Unsupported value: apps.DeploymentStrategy{Type:\"Blue\", RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}: supported values: \"Recreate\", \"RollingUpdate\"",
            )],
        );
        check(
            "apps",
            "Deployment",
            &with(&d, "/spec/progressDeadlineSeconds", json!(0)),
            &[(
                "spec.progressDeadlineSeconds",
                "Invalid value: 0: must be greater than minReadySeconds",
            )],
        );
    }

    fn workload(kind: &str) -> Value {
        valid_objects()
            .into_iter()
            .find(|(_, k, _)| *k == kind)
            .map(|(_, _, o)| o)
            .unwrap_or_default()
    }

    #[test]
    fn statefulset_rules() {
        let sts = workload("StatefulSet");
        // The pod spec of a StatefulSet template is not validated upstream.
        check(
            "apps",
            "StatefulSet",
            &with(&sts, "/spec/template/spec/containers", json!([])),
            &[],
        );
        check(
            "apps",
            "StatefulSet",
            &with(&sts, "/spec/podManagementPolicy", json!("Random")),
            &[(
                "spec.podManagementPolicy",
                "Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'",
            )],
        );
        check(
            "apps",
            "StatefulSet",
            &with(&sts, "/spec/updateStrategy", json!({"type": "Canary"})),
            &[(
                "spec.updateStrategy",
                "Invalid value: apps.StatefulSetUpdateStrategy{Type:\"Canary\", RollingUpdate:(*apps.RollingUpdateStatefulSetStrategy)(nil)}: must be 'RollingUpdate' or 'OnDelete'",
            )],
        );
        check(
            "apps",
            "StatefulSet",
            &with(
                &sts,
                "/spec/updateStrategy",
                json!({"type": "OnDelete", "rollingUpdate": {"partition": 2}}),
            ),
            &[(
                "spec.updateStrategy.rollingUpdate",
                "Invalid value: apps.RollingUpdateStatefulSetStrategy{Partition:2, MaxUnavailable:(*intstr.IntOrString)(nil)}: only allowed for updateStrategy 'RollingUpdate'",
            )],
        );
        check(
            "apps",
            "StatefulSet",
            &with(
                &sts,
                "/spec/updateStrategy/rollingUpdate",
                json!({"partition": -1, "maxUnavailable": 0}),
            ),
            &[
                (
                    "spec.updateStrategy.rollingUpdate.partition",
                    "Invalid value: -1: must be greater than or equal to 0",
                ),
                (
                    "spec.updateStrategy.rollingUpdate.maxUnavailable",
                    "Invalid value: 0: cannot be 0",
                ),
            ],
        );
        check(
            "apps",
            "StatefulSet",
            &with(
                &sts,
                "/spec/selector",
                json!({"matchLabels": {"app": "bad value!"}}),
            ),
            &[
                (
                    "spec.selector.matchLabels",
                    "Invalid value: \"bad value!\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                ),
                (
                    "spec.selector",
                    "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"bad value!\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}",
                ),
            ],
        );
        let scaled = with(&sts, "/spec/replicas", json!(5));
        let scaled = with(
            &scaled,
            "/spec/template/spec/containers/0/image",
            json!("nginx:1.28"),
        );
        check_update("apps", "StatefulSet", &scaled, &sts, &[]);
        check_update(
            "apps",
            "StatefulSet",
            &with(&sts, "/spec/serviceName", json!("other")),
            &sts,
            &[(
                "spec",
                "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            )],
        );
    }

    #[test]
    fn daemonset_rules() {
        let ds = workload("DaemonSet");
        let ru = "spec.updateStrategy.rollingUpdate";
        check(
            "apps",
            "DaemonSet",
            &with(
                &ds,
                "/spec/updateStrategy/rollingUpdate",
                json!({"maxUnavailable": "10%", "maxSurge": 1}),
            ),
            &[(
                &format!("{ru}.maxSurge"),
                "Invalid value: 1: may not be set when maxUnavailable is non-zero",
            )],
        );
        check(
            "apps",
            "DaemonSet",
            &with(
                &ds,
                "/spec/updateStrategy/rollingUpdate",
                json!({"maxUnavailable": 0, "maxSurge": "200%"}),
            ),
            &[(
                &format!("{ru}.maxSurge"),
                "Invalid value: 200%: must not be greater than 100%",
            )],
        );
        check(
            "apps",
            "DaemonSet",
            &with(
                &ds,
                "/spec/updateStrategy/rollingUpdate",
                json!({"maxUnavailable": 0}),
            ),
            &[(
                &format!("{ru}.maxUnavailable"),
                "Required value: cannot be 0 when maxSurge is 0",
            )],
        );
        check(
            "apps",
            "DaemonSet",
            &with(&ds, "/spec/updateStrategy", json!({"type": "Later"})),
            &[(
                "spec.updateStrategy",
                "Unsupported value: apps.DaemonSetUpdateStrategy{Type:\"Later\", RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}: supported values: \"RollingUpdate\", \"OnDelete\"",
            )],
        );
        check(
            "apps",
            "DaemonSet",
            &with(&ds, "/spec/template/spec/activeDeadlineSeconds", json!(10)),
            &[(
                "spec.template.spec.activeDeadlineSeconds",
                "Forbidden: activeDeadlineSeconds in DaemonSet is not Supported",
            )],
        );
        check(
            "apps",
            "DaemonSet",
            &with(&ds, "/spec/selector", json!({})),
            &[(
                "spec.selector",
                "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for daemonset",
            )],
        );
    }

    #[test]
    fn job_rules() {
        let (_, _, job) = valid_objects()
            .into_iter()
            .find(|(_, k, _)| *k == "Job")
            .unwrap_or_default();
        check(
            "batch",
            "Job",
            &with(&job, "/spec/template/spec/restartPolicy", json!("Always")),
            &[(
                "spec.template.spec.restartPolicy",
                "Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\"",
            )],
        );
        check(
            "batch",
            "Job",
            &with(&job, "/spec/backoffLimit", json!(-1)),
            &[(
                "spec.backoffLimit",
                "Invalid value: -1: must be greater than or equal to 0",
            )],
        );
        let cron = json!({"spec": {"jobTemplate": {"spec": {"template": template("Always")}}}});
        check(
            "batch",
            "CronJob",
            &cron,
            &[(
                "spec.jobTemplate.spec.template.spec.restartPolicy",
                "Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\"",
            )],
        );
    }

    #[test]
    fn summary_formats_like_new_invalid() {
        let one = [required("data[x]", "")];
        assert_eq!(
            summary("ConfigMap", "cfg", &one),
            "ConfigMap \"cfg\" is invalid: data[x]: Required value"
        );
        let two = [
            required("a", ""),
            invalid_str("b", "v", "bad"),
            required("a", ""),
        ];
        assert_eq!(
            summary("Deployment.apps", "web", &two),
            "Deployment.apps \"web\" is invalid: [a: Required value, b: Invalid value: \"v\": bad]"
        );
        assert_eq!(summary("Secret", "s", &[]), "Secret \"s\" is invalid");
        let errs = validate(
            "",
            "ConfigMap",
            &json!({"data": {"a b": "", "c d": ""}}),
            None,
        );
        assert!(summary("ConfigMap", "x", &errs).starts_with(
            "ConfigMap \"x\" is invalid: [data[a b]: Invalid value: \"a b\": a valid config key"
        ));
    }

    #[test]
    fn helpers_parse_like_go() {
        assert_eq!(base64_decode("aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(base64_decode("aGk"), Some(b"hi".to_vec()));
        assert_eq!(base64_decode("!!"), None);
        assert!(parse_cidr("10.0.0.0/8").is_some());
        assert!(parse_cidr("::/0").is_some());
        assert!(parse_cidr("10.0.0.0").is_none());
        assert!(parse_cidr("10.0.0.0/").is_none());
        assert!(parse_cidr("10.0.0.256/8").is_none());
        assert!(parse_cidr("10.0.0.0/-1").is_none());
        assert!(parse_cidr("fe80::/129").is_none());
        assert_eq!(
            is_valid_port_name("-a--"),
            vec![
                "must not contain consecutive hyphens".to_string(),
                "must not begin or end with a hyphen".to_string(),
            ]
        );
        assert_eq!(is_valid_port_name("abcdefghijklmnop").len(), 1);
        assert!(is_relaxed_env_var_name("1 with space.ok").is_empty());
        assert!(is_valid_percent("0%") && !is_valid_percent("%") && !is_valid_percent("5"));
        assert_eq!(go_quote_char('\''), "'\\''");
        assert_eq!(go_quote_char('\u{1}'), "'\\x01'");
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "[a-zA-Z0-9./%:= -]{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(5, 64, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(
                    prop_oneof![
                        Just("metadata".to_string()),
                        Just("spec".to_string()),
                        Just("template".to_string()),
                        Just("selector".to_string()),
                        Just("containers".to_string()),
                        Just("volumes".to_string()),
                        Just("data".to_string()),
                        Just("rules".to_string()),
                        Just("roleRef".to_string()),
                        Just("ports".to_string()),
                        Just("ipBlock".to_string()),
                        Just("matchExpressions".to_string()),
                        Just("rollingUpdate".to_string()),
                        "[a-zA-Z]{1,6}",
                    ],
                    inner,
                    0..5,
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn never_panics_on_random_json(obj in arb_json(), old in arb_json(), which in 0usize..22) {
            let kinds = valid_objects();
            let (group, kind, _) = &kinds[which % kinds.len()];
            let _ = validate(group, kind, &obj, None);
            let _ = validate(group, kind, &obj, Some(&old));
        }

        #[test]
        fn never_panics_on_mutated_valid_objects(
            which in 0usize..22,
            pick in any::<prop::sample::Index>(),
            value in arb_json(),
        ) {
            let kinds = valid_objects();
            let (group, kind, obj) = &kinds[which % kinds.len()];
            // Replace one node of a valid object: reaches the deep rules that
            // random documents rarely get to.
            let mut pointers = Vec::new();
            collect_pointers(obj, String::new(), &mut pointers);
            let pointer = pick.get(&pointers);
            let mutated = if pointer.is_empty() { value } else { with(obj, pointer, value) };
            let errs = validate(group, kind, &mutated, Some(obj));
            let _ = summary(kind, "x", &errs);
            for e in errs {
                prop_assert!(!e.message.is_empty());
            }
        }
    }

    fn collect_pointers(v: &Value, at: String, out: &mut Vec<String>) {
        out.push(at.clone());
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    let k = k.replace('~', "~0").replace('/', "~1");
                    collect_pointers(child, format!("{at}/{k}"), out);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    collect_pointers(child, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }
}
