//! Values of the wrong JSON type in bodies of built-in kinds, refused as
//! the API server's JSON decoder refuses them.
//!
//! The server decodes a body into the kind's Go struct with
//! `sigs.k8s.io/json` (a fork of `encoding/json`, case-sensitive). A value
//! that does not fit its Go type is skipped and the FIRST such mismatch, in
//! the order the decoder meets them, is reported as Go's
//! `UnmarshalTypeError`:
//!
//! ```text
//! json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32
//! ```
//!
//! where the struct is the innermost one whose field was being decoded and
//! the path is every JSON field name from the root (array indexes and map
//! keys are not part of it). Numbers that do not fit an integer (overflow,
//! a fraction) are written with their text: `number 1.5`. Types with their
//! own `UnmarshalJSON` differ: their error ends the decoding at once, so it
//! wins over an earlier mismatch (`resource.Quantity` fails with its parse
//! error, `intstr.IntOrString` and `metav1.Time` decode a non-string with
//! `encoding/json`, whose error gets the same context), and some accept
//! anything (`runtime.RawExtension`, `FieldsV1`, apiextensions' `JSON`).
//!
//! Create and update answer 400 `Deployment in version "v1" cannot be
//! handled as a Deployment: <error>`. A JSON merge patch or JSON patch is
//! applied to the stored object first and the result decoded; a mismatch
//! there is 422 `"" is invalid: patch: Invalid value: "<patched object>":
//! <error>` (the patch handler's `field.Invalid(field.NewPath("patch"), ..)`).
//! The patched object is re-encoded by Go from maps, so its keys are sorted
//! and the first mismatch is the first in sorted key order.
//!
//! Go type names come from the OpenAPI schema (`integer/int32` -> `int32`,
//! a `$ref` to `io.k8s.api.core.v1.PodSpec` -> `v1.PodSpec`, arrays
//! `[]T`, maps `map[string]T`, `format: byte` -> `[]uint8`), except for
//! fields whose Go type is a NAMED type (`v1.Protocol`, `v1.ResourceList`,
//! `types.UID`), which the schema cannot tell: those are listed in
//! [`NAMED`]. A named field missing from that list prints its underlying
//! type; the answer is still a 400.
//!
//! What this module must NOT do: judge custom resources (their schema is
//! the CRD's), or report anything for a body the Go decoder accepts (it is
//! only asked once the typed decode has failed, and answers `None` when it
//! finds no mismatch, leaving the body to the checks after it).

use serde_json::{Map, Value};

use crate::registry::Resource;
use crate::status::{ApiError, Cause};
use crate::store::PatchKind;

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";
const MICRO_TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime";

/// Definitions whose Go type has an `UnmarshalJSON` that takes any JSON
/// (raw extensions, managed-field sets, CRD schema values) or whose own
/// errors are not type mismatches (the CRD schema's either-or types).
const ANYTHING: &[&str] = &[
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
];

/// Fields whose Go type is a named type, as `reflect.Type.String()` prints
/// it: (definition, field, type). A slice or map of a named element is
/// written whole (`[]v1.Capability`); its elements take the part after
/// `[]`.
#[rustfmt::skip]
pub const NAMED: &[(&str, &str, &str)] = &[
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "uid", "types.UID"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference", "uid", "types.UID"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry", "operation", "v1.ManagedFieldsOperationType"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement", "operator", "v1.LabelSelectorOperator"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.Condition", "status", "v1.ConditionStatus"),
    ("io.k8s.api.core.v1.Container", "imagePullPolicy", "v1.PullPolicy"),
    ("io.k8s.api.core.v1.Container", "terminationMessagePolicy", "v1.TerminationMessagePolicy"),
    ("io.k8s.api.core.v1.Container", "restartPolicy", "v1.ContainerRestartPolicy"),
    ("io.k8s.api.core.v1.EphemeralContainer", "imagePullPolicy", "v1.PullPolicy"),
    ("io.k8s.api.core.v1.EphemeralContainer", "terminationMessagePolicy", "v1.TerminationMessagePolicy"),
    ("io.k8s.api.core.v1.ContainerPort", "protocol", "v1.Protocol"),
    ("io.k8s.api.core.v1.ServicePort", "protocol", "v1.Protocol"),
    ("io.k8s.api.core.v1.EndpointPort", "protocol", "v1.Protocol"),
    ("io.k8s.api.core.v1.ResourceRequirements", "limits", "v1.ResourceList"),
    ("io.k8s.api.core.v1.ResourceRequirements", "requests", "v1.ResourceList"),
    ("io.k8s.api.core.v1.VolumeResourceRequirements", "limits", "v1.ResourceList"),
    ("io.k8s.api.core.v1.VolumeResourceRequirements", "requests", "v1.ResourceList"),
    ("io.k8s.api.core.v1.Capabilities", "add", "[]v1.Capability"),
    ("io.k8s.api.core.v1.Capabilities", "drop", "[]v1.Capability"),
    ("io.k8s.api.core.v1.PodSpec", "restartPolicy", "v1.RestartPolicy"),
    ("io.k8s.api.core.v1.PodSpec", "dnsPolicy", "v1.DNSPolicy"),
    ("io.k8s.api.core.v1.PodSpec", "preemptionPolicy", "v1.PreemptionPolicy"),
    ("io.k8s.api.core.v1.PodSpec", "overhead", "v1.ResourceList"),
    ("io.k8s.api.core.v1.PodOS", "name", "v1.OSName"),
    ("io.k8s.api.core.v1.PodStatus", "phase", "v1.PodPhase"),
    ("io.k8s.api.core.v1.PodStatus", "qosClass", "v1.PodQOSClass"),
    ("io.k8s.api.core.v1.PodCondition", "type", "v1.PodConditionType"),
    ("io.k8s.api.core.v1.PodCondition", "status", "v1.ConditionStatus"),
    ("io.k8s.api.core.v1.Toleration", "operator", "v1.TolerationOperator"),
    ("io.k8s.api.core.v1.Toleration", "effect", "v1.TaintEffect"),
    ("io.k8s.api.core.v1.Taint", "effect", "v1.TaintEffect"),
    ("io.k8s.api.core.v1.NodeSelectorRequirement", "operator", "v1.NodeSelectorOperator"),
    ("io.k8s.api.core.v1.ServiceSpec", "type", "v1.ServiceType"),
    ("io.k8s.api.core.v1.ServiceSpec", "sessionAffinity", "v1.ServiceAffinity"),
    ("io.k8s.api.core.v1.ServiceSpec", "externalTrafficPolicy", "v1.ServiceExternalTrafficPolicy"),
    ("io.k8s.api.core.v1.ServiceSpec", "internalTrafficPolicy", "v1.ServiceInternalTrafficPolicy"),
    ("io.k8s.api.core.v1.ServiceSpec", "ipFamilies", "[]v1.IPFamily"),
    ("io.k8s.api.core.v1.ServiceSpec", "ipFamilyPolicy", "v1.IPFamilyPolicy"),
    ("io.k8s.api.core.v1.Secret", "type", "v1.SecretType"),
    ("io.k8s.api.core.v1.NamespaceSpec", "finalizers", "[]v1.FinalizerName"),
    ("io.k8s.api.core.v1.NamespaceStatus", "phase", "v1.NamespacePhase"),
    ("io.k8s.api.core.v1.PersistentVolumeClaimSpec", "accessModes", "[]v1.PersistentVolumeAccessMode"),
    ("io.k8s.api.core.v1.PersistentVolumeClaimSpec", "volumeMode", "v1.PersistentVolumeMode"),
    ("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "phase", "v1.PersistentVolumeClaimPhase"),
    ("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "capacity", "v1.ResourceList"),
    ("io.k8s.api.core.v1.PersistentVolumeSpec", "accessModes", "[]v1.PersistentVolumeAccessMode"),
    ("io.k8s.api.core.v1.PersistentVolumeSpec", "capacity", "v1.ResourceList"),
    ("io.k8s.api.core.v1.PersistentVolumeSpec", "persistentVolumeReclaimPolicy", "v1.PersistentVolumeReclaimPolicy"),
    ("io.k8s.api.core.v1.PersistentVolumeSpec", "volumeMode", "v1.PersistentVolumeMode"),
    ("io.k8s.api.core.v1.PersistentVolumeStatus", "phase", "v1.PersistentVolumePhase"),
    ("io.k8s.api.core.v1.NodeStatus", "capacity", "v1.ResourceList"),
    ("io.k8s.api.core.v1.NodeStatus", "allocatable", "v1.ResourceList"),
    ("io.k8s.api.core.v1.NodeStatus", "phase", "v1.NodePhase"),
    ("io.k8s.api.core.v1.NodeCondition", "type", "v1.NodeConditionType"),
    ("io.k8s.api.core.v1.NodeCondition", "status", "v1.ConditionStatus"),
    ("io.k8s.api.core.v1.NodeAddress", "type", "v1.NodeAddressType"),
    ("io.k8s.api.core.v1.ResourceQuotaSpec", "hard", "v1.ResourceList"),
    ("io.k8s.api.core.v1.ResourceQuotaSpec", "scopes", "[]v1.ResourceQuotaScope"),
    ("io.k8s.api.core.v1.ResourceQuotaStatus", "hard", "v1.ResourceList"),
    ("io.k8s.api.core.v1.ResourceQuotaStatus", "used", "v1.ResourceList"),
    ("io.k8s.api.core.v1.LimitRangeItem", "type", "v1.LimitType"),
    ("io.k8s.api.core.v1.LimitRangeItem", "max", "v1.ResourceList"),
    ("io.k8s.api.core.v1.LimitRangeItem", "min", "v1.ResourceList"),
    ("io.k8s.api.core.v1.LimitRangeItem", "default", "v1.ResourceList"),
    ("io.k8s.api.core.v1.LimitRangeItem", "defaultRequest", "v1.ResourceList"),
    ("io.k8s.api.core.v1.LimitRangeItem", "maxLimitRequestRatio", "v1.ResourceList"),
    ("io.k8s.api.core.v1.HostPathVolumeSource", "type", "v1.HostPathType"),
    ("io.k8s.api.core.v1.EmptyDirVolumeSource", "medium", "v1.StorageMedium"),
    ("io.k8s.api.core.v1.HTTPGetAction", "scheme", "v1.URIScheme"),
    ("io.k8s.api.core.v1.SecurityContext", "procMount", "v1.ProcMountType"),
    ("io.k8s.api.core.v1.SeccompProfile", "type", "v1.SeccompProfileType"),
    ("io.k8s.api.core.v1.AppArmorProfile", "type", "v1.AppArmorProfileType"),
    ("io.k8s.api.core.v1.PodSecurityContext", "fsGroupChangePolicy", "v1.PodFSGroupChangePolicy"),
    ("io.k8s.api.core.v1.TopologySpreadConstraint", "whenUnsatisfiable", "v1.UnsatisfiableConstraintAction"),
    ("io.k8s.api.apps.v1.DeploymentStrategy", "type", "v1.DeploymentStrategyType"),
    ("io.k8s.api.apps.v1.DeploymentCondition", "type", "v1.DeploymentConditionType"),
    ("io.k8s.api.apps.v1.DeploymentCondition", "status", "v1.ConditionStatus"),
    ("io.k8s.api.apps.v1.StatefulSetSpec", "podManagementPolicy", "v1.PodManagementPolicyType"),
    ("io.k8s.api.apps.v1.StatefulSetUpdateStrategy", "type", "v1.StatefulSetUpdateStrategyType"),
    ("io.k8s.api.apps.v1.DaemonSetUpdateStrategy", "type", "v1.DaemonSetUpdateStrategyType"),
    ("io.k8s.api.batch.v1.JobSpec", "completionMode", "v1.CompletionMode"),
    ("io.k8s.api.batch.v1.JobSpec", "podReplacementPolicy", "v1.PodReplacementPolicy"),
    ("io.k8s.api.batch.v1.CronJobSpec", "concurrencyPolicy", "v1.ConcurrencyPolicy"),
    ("io.k8s.api.batch.v1.JobCondition", "type", "v1.JobConditionType"),
    ("io.k8s.api.batch.v1.JobCondition", "status", "v1.ConditionStatus"),
    ("io.k8s.api.networking.v1.NetworkPolicySpec", "policyTypes", "[]v1.PolicyType"),
    ("io.k8s.api.networking.v1.NetworkPolicyPort", "protocol", "v1.Protocol"),
    ("io.k8s.api.networking.v1.HTTPIngressPath", "pathType", "v1.PathType"),
    ("io.k8s.api.core.v1.ObjectReference", "uid", "types.UID"),
    ("io.k8s.api.core.v1.EphemeralContainer", "restartPolicy", "v1.ContainerRestartPolicy"),
    ("io.k8s.api.core.v1.ContainerResizePolicy", "resourceName", "v1.ResourceName"),
    ("io.k8s.api.core.v1.ContainerResizePolicy", "restartPolicy", "v1.ResourceResizeRestartPolicy"),
    ("io.k8s.api.core.v1.PodSecurityContext", "supplementalGroupsPolicy", "v1.SupplementalGroupsPolicy"),
    ("io.k8s.api.core.v1.TopologySpreadConstraint", "nodeAffinityPolicy", "v1.NodeInclusionPolicy"),
    ("io.k8s.api.core.v1.TopologySpreadConstraint", "nodeTaintsPolicy", "v1.NodeInclusionPolicy"),
    ("io.k8s.api.core.v1.ScopedResourceSelectorRequirement", "scopeName", "v1.ResourceQuotaScope"),
    ("io.k8s.api.core.v1.ScopedResourceSelectorRequirement", "operator", "v1.ScopeSelectorOperator"),
    ("io.k8s.api.batch.v1.PodFailurePolicyRule", "action", "v1.PodFailurePolicyAction"),
    ("io.k8s.api.batch.v1.PodFailurePolicyOnExitCodesRequirement", "operator", "v1.PodFailurePolicyOnExitCodesOperator"),
    ("io.k8s.api.batch.v1.PodFailurePolicyOnPodConditionsPattern", "type", "v1.PodConditionType"),
    ("io.k8s.api.batch.v1.PodFailurePolicyOnPodConditionsPattern", "status", "v1.ConditionStatus"),
    ("io.k8s.api.discovery.v1.EndpointSlice", "addressType", "v1.AddressType"),
    ("io.k8s.api.discovery.v1.EndpointPort", "protocol", "v1.Protocol"),
    ("io.k8s.api.policy.v1.PodDisruptionBudgetSpec", "unhealthyPodEvictionPolicy", "v1.UnhealthyPodEvictionPolicyType"),
    ("io.k8s.api.scheduling.v1.PriorityClass", "preemptionPolicy", "v1.PreemptionPolicy"),
    ("io.k8s.api.storage.v1.StorageClass", "reclaimPolicy", "v1.PersistentVolumeReclaimPolicy"),
    ("io.k8s.api.storage.v1.StorageClass", "volumeBindingMode", "v1.VolumeBindingMode"),
    ("io.k8s.api.storage.v1.CSIDriverSpec", "fsGroupPolicy", "v1.FSGroupPolicy"),
    ("io.k8s.api.storage.v1.CSIDriverSpec", "volumeLifecycleModes", "[]v1.VolumeLifecycleMode"),
    ("io.k8s.api.autoscaling.v2.MetricSpec", "type", "v2.MetricSourceType"),
    ("io.k8s.api.autoscaling.v2.MetricTarget", "type", "v2.MetricTargetType"),
    ("io.k8s.api.autoscaling.v2.HPAScalingRules", "selectPolicy", "v2.ScalingPolicySelect"),
    ("io.k8s.api.autoscaling.v2.HPAScalingPolicy", "type", "v2.HPAScalingPolicyType"),
    ("io.k8s.api.certificates.v1.CertificateSigningRequestSpec", "usages", "[]v1.KeyUsage"),
    ("io.k8s.api.admissionregistration.v1.MutatingWebhook", "failurePolicy", "v1.FailurePolicyType"),
    ("io.k8s.api.admissionregistration.v1.MutatingWebhook", "sideEffects", "v1.SideEffectClass"),
    ("io.k8s.api.admissionregistration.v1.MutatingWebhook", "matchPolicy", "v1.MatchPolicyType"),
    ("io.k8s.api.admissionregistration.v1.MutatingWebhook", "reinvocationPolicy", "v1.ReinvocationPolicyType"),
    ("io.k8s.api.admissionregistration.v1.ValidatingWebhook", "failurePolicy", "v1.FailurePolicyType"),
    ("io.k8s.api.admissionregistration.v1.ValidatingWebhook", "sideEffects", "v1.SideEffectClass"),
    ("io.k8s.api.admissionregistration.v1.ValidatingWebhook", "matchPolicy", "v1.MatchPolicyType"),
    ("io.k8s.api.admissionregistration.v1.RuleWithOperations", "operations", "[]v1.OperationType"),
    ("io.k8s.api.admissionregistration.v1.RuleWithOperations", "scope", "v1.ScopeType"),
    ("io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec", "failurePolicy", "v1.FailurePolicyType"),
    ("io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBindingSpec", "validationActions", "[]v1.ValidationAction"),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec", "scope", "v1.ResourceScope"),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceConversion", "strategy", "v1.ConversionStrategyType"),
];

/// The Go decoder's error for the first value of `body` that does not fit
/// the kind's types, in document order; `None` when every value fits (or
/// the kind is not built in).
#[cfg(test)]
pub fn find(group: &str, kind: &str, body: &Value) -> Option<String> {
    let version = crate::builtin::find(group, kind)?.version;
    find_in(group, version, kind, body, false)
}

/// The 400 message of a create or update whose body does not decode.
pub fn message(res: &Resource, body: &Value) -> Option<String> {
    if !res.builtin {
        return None;
    }
    let error = find_in(&res.group, &res.version, &res.kind, body, false)?;
    Some(format!(
        "{kind} in version {version:?} cannot be handled as a {kind}: {error}",
        kind = res.kind,
        version = res.version
    ))
}

/// The 422 of a JSON merge patch or JSON patch whose result, the patch
/// applied to `old`, does not decode; `None` for the other patch kinds,
/// patches that do not apply (the store answers those) and results that
/// decode.
pub fn patch_error(res: &Resource, old: &Value, kind: PatchKind, patch: &[u8]) -> Option<ApiError> {
    if !res.builtin {
        return None;
    }
    let builtin = crate::builtin::find_version(&res.group, &res.version, &res.kind)?;
    let patched = match kind {
        PatchKind::Merge => crate::semantics::merge_patch(old, patch).ok()?,
        PatchKind::Json => crate::semantics::json_patch(old, patch).ok()?,
        PatchKind::Strategic | PatchKind::Apply => return None,
    };
    // Most patches decode; only then is the slower walk worth it.
    if (builtin.typed)(&patched).is_some() {
        return None;
    }
    let error = find_in(&res.group, &res.version, &res.kind, &patched, true)?;
    let mut text = String::new();
    go_json(&patched, &mut text);
    let detail = format!("Invalid value: {}: {error}", go_quote(&text));
    let mut e = ApiError::bad_request(format!(" \"\" is invalid: patch: {detail}"));
    e.code = 422;
    e.reason = "Invalid";
    e.causes = vec![Cause {
        reason: "FieldValueInvalid".into(),
        field: "patch".into(),
        message: detail,
    }];
    Some(e)
}

fn find_in(group: &str, version: &str, kind: &str, body: &Value, sorted: bool) -> Option<String> {
    let name = crate::builtin::schema_name(group, version, kind)?;
    let defs = crate::builtin::schemas();
    let name = name.as_str();
    let root = body.as_object()?;
    // `apiVersion` and `kind` are read first, on their own, to find the
    // type; if they are not strings that read fails with another message.
    for k in ["apiVersion", "kind"] {
        if root.get(k).is_some_and(|v| !v.is_string() && !v.is_null()) {
            return None;
        }
    }
    let mut w = Walker {
        defs,
        sorted,
        structure: None,
        stack: Vec::new(),
        saved: None,
    };
    let ty = Ty::Def(name);
    match w.value(&ty, body) {
        Err(fatal) => Some(fatal),
        Ok(()) => w.saved,
    }
}

/// Replaces each `null` element of a map or slice in `body` with the zero
/// value of the element's Go type, as the server's decoder leaves it
/// (`"data": {"k": null}` is stored and answered as `"k": ""`). Struct
/// fields keep their `null`: the decoder leaves the field unset, which the
/// typed form reads as absent.
pub fn zero_null_elements(res: &Resource, body: &mut Value) {
    // Every write of a built-in kind comes here; most bodies hold no null,
    // and a plain scan is cheaper than the walk with the schema.
    if !res.builtin || !has_null(body) {
        return;
    }
    let Some(name) = crate::builtin::schema_name(&res.group, &res.version, &res.kind) else {
        return;
    };
    let defs = crate::builtin::schemas();
    let Some((name, _)) = defs.get_key_value(name.as_str()) else {
        return;
    };
    let w = Walker {
        defs,
        sorted: false,
        structure: None,
        stack: Vec::new(),
        saved: None,
    };
    w.zero_nulls_in(&Ty::Def(name.as_str()), body);
}

fn has_null(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.values().any(has_null),
        Value::Array(a) => a.iter().any(has_null),
        _ => false,
    }
}

/// A Go type as the decoder sees it.
#[derive(Clone, Debug)]
enum Ty<'a> {
    /// A definition: a struct or one of the special types.
    Def(&'a str),
    /// An inline schema, with the named type that overrides its printed
    /// name (if any).
    Schema(&'a Value, Option<&'static str>),
}

struct Walker<'a> {
    defs: &'a Map<String, Value>,
    sorted: bool,
    /// The struct whose field is being decoded (`errorContext.Struct`).
    structure: Option<&'a str>,
    /// The JSON field names from the root (`errorContext.FieldStack`).
    stack: Vec<&'a str>,
    /// The first mismatch; decoding goes on after it.
    saved: Option<String>,
}

/// What a schema decodes as.
enum Shape<'a> {
    Anything,
    Struct(&'a str, &'a Map<String, Value>),
    Slice(Ty<'a>),
    Map(Ty<'a>),
    String,
    Bytes,
    Bool,
    Int(u32),
    Float,
    Quantity,
    IntOrString,
    Time,
}

fn ref_name(s: &Value) -> Option<&str> {
    let r = s.get("$ref").and_then(Value::as_str).or_else(|| {
        // `allOf: [{$ref}]` is how a ref with siblings may be written.
        s.get("allOf")?.get(0)?.get("$ref")?.as_str()
    })?;
    r.rsplit('/').next()
}

/// `v1.PodSpec` for `io.k8s.api.core.v1.PodSpec`: Go prints a struct type
/// with its package's name, the definition's second-to-last segment.
fn def_go_name(def: &str) -> String {
    let mut parts = def.rsplit('.');
    let name = parts.next().unwrap_or_default();
    match parts.next() {
        Some(pkg) => format!("{pkg}.{name}"),
        None => name.to_string(),
    }
}

fn short_name(def: &str) -> &str {
    def.rsplit('.').next().unwrap_or(def)
}

fn named(def: &str, field: &str) -> Option<&'static str> {
    NAMED
        .iter()
        .find(|(d, f, _)| *d == def && *f == field)
        .map(|(_, _, t)| *t)
}

/// The element type name of a named slice or map (`[]v1.Capability` ->
/// `v1.Capability`); `None` for named types whose elements print from the
/// schema (`v1.ResourceList`).
fn element_name(named: Option<&'static str>) -> Option<&'static str> {
    let n = named?;
    n.strip_prefix("[]")
        .or_else(|| n.strip_prefix("map[string]"))
}

impl<'a> Walker<'a> {
    fn shape(&self, ty: &Ty<'a>) -> Shape<'a> {
        let (schema, override_name) = match ty {
            Ty::Def(d) => return self.def_shape(d),
            Ty::Schema(s, n) => (*s, *n),
        };
        if let Some(r) = ref_name(schema) {
            return self.def_shape(r);
        }
        let elem = element_name(override_name);
        match schema.get("type").and_then(Value::as_str) {
            Some("string") if schema.get("format").and_then(Value::as_str) == Some("byte") => {
                Shape::Bytes
            }
            Some("string") => Shape::String,
            Some("boolean") => Shape::Bool,
            Some("integer") => match schema.get("format").and_then(Value::as_str) {
                Some("int32") => Shape::Int(32),
                _ => Shape::Int(64),
            },
            Some("number") => Shape::Float,
            Some("array") => match schema.get("items") {
                Some(items) => Shape::Slice(Ty::Schema(items, elem)),
                None => Shape::Anything,
            },
            Some("object") => match schema.get("additionalProperties") {
                Some(add) if add.is_object() => Shape::Map(Ty::Schema(add, elem)),
                _ => Shape::Anything,
            },
            _ => Shape::Anything,
        }
    }

    fn def_shape(&self, def: &'a str) -> Shape<'a> {
        match def {
            QUANTITY => return Shape::Quantity,
            INT_OR_STRING => return Shape::IntOrString,
            TIME | MICRO_TIME => return Shape::Time,
            d if ANYTHING.contains(&d) => return Shape::Anything,
            _ => {}
        }
        static NO_FIELDS: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        match self.defs.get(def) {
            Some(s) => match s.get("properties").and_then(Value::as_object) {
                Some(props) => Shape::Struct(def, props),
                // An object without properties that takes no raw JSON is
                // a struct without fields (`CustomResourceSubresourceStatus`):
                // it still wants an object.
                None if s.get("type").and_then(Value::as_str) == Some("object") => {
                    Shape::Struct(def, NO_FIELDS.get_or_init(Map::new))
                }
                None => self.shape(&Ty::Schema(s, None)),
            },
            None => Shape::Anything,
        }
    }

    fn zero_nulls_in(&self, ty: &Ty<'a>, v: &mut Value) {
        match (self.shape(ty), v) {
            (Shape::Struct(_, props), Value::Object(m)) => {
                for (k, fv) in m.iter_mut() {
                    if let Some(fs) = props.get(k) {
                        self.zero_nulls_in(&Ty::Schema(fs, None), fv);
                    }
                }
            }
            (Shape::Map(elem), Value::Object(m)) => {
                for ev in m.values_mut() {
                    self.zero_element(&elem, ev);
                }
            }
            (Shape::Slice(elem), Value::Array(a)) => {
                for ev in a.iter_mut() {
                    self.zero_element(&elem, ev);
                }
            }
            _ => {}
        }
    }

    fn zero_element(&self, elem: &Ty<'a>, v: &mut Value) {
        if !v.is_null() {
            self.zero_nulls_in(elem, v);
            return;
        }
        *v = match self.shape(elem) {
            Shape::String | Shape::Bytes => Value::from(""),
            Shape::Bool => Value::from(false),
            Shape::Int(_) | Shape::IntOrString | Shape::Float => Value::from(0),
            Shape::Quantity => Value::from("0"),
            Shape::Struct(..) => Value::Object(Map::new()),
            // Nil maps, slices and times encode as null again.
            Shape::Map(_) | Shape::Slice(_) | Shape::Time | Shape::Anything => return,
        };
    }

    /// How Go prints the type (`reflect.Type.String()`).
    fn go_name(&self, ty: &Ty<'a>) -> String {
        let (schema, override_name) = match ty {
            Ty::Def(d) => return def_go_name(d),
            Ty::Schema(s, n) => (*s, *n),
        };
        if let Some(n) = override_name {
            return n.to_string();
        }
        if let Some(r) = ref_name(schema) {
            return def_go_name(r);
        }
        match self.shape(ty) {
            Shape::Bytes => "[]uint8".into(),
            Shape::String => "string".into(),
            Shape::Bool => "bool".into(),
            Shape::Int(bits) => format!("int{bits}"),
            Shape::Float => "float64".into(),
            Shape::Slice(e) => format!("[]{}", self.go_name(&e)),
            Shape::Map(e) => format!("map[string]{}", self.go_name(&e)),
            _ => "interface {}".into(),
        }
    }

    fn mismatch(&mut self, value: String, go_type: String) {
        if self.saved.is_none() {
            self.saved = Some(self.type_error(value, &go_type));
        }
    }

    /// Go's `UnmarshalTypeError` text with the decoder's context.
    fn type_error(&self, value: String, go_type: &str) -> String {
        match self.structure {
            Some(s) => format!(
                "json: cannot unmarshal {value} into Go struct field {s}.{} of type {go_type}",
                self.stack.join(".")
            ),
            None => format!("json: cannot unmarshal {value} into Go value of type {go_type}"),
        }
    }

    /// Decodes `v` as `ty`: `Err` for an error that ends the decoding.
    fn value(&mut self, ty: &Ty<'a>, v: &'a Value) -> Result<(), String> {
        let shape = self.shape(ty);
        match (shape, v) {
            // null leaves a value as it is, or zeroes a pointer, map or
            // slice; the special types accept it too.
            (_, Value::Null) | (Shape::Anything, _) => Ok(()),
            (Shape::Quantity, v) => match kube_semantics::quantity::parse_json(v) {
                Ok(_) => Ok(()),
                Err(e) => Err(e.to_string()),
            },
            (Shape::IntOrString, Value::String(_)) => Ok(()),
            (Shape::IntOrString, v) => match int_fits(v, 32) {
                Some(()) => Ok(()),
                None => Err(self.type_error(json_kind(v, true), "int32")),
            },
            (Shape::Time, Value::String(_)) => Ok(()),
            (Shape::Time, v) => Err(self.type_error(json_kind(v, false), "string")),
            (Shape::Struct(def, props), Value::Object(m)) => {
                let saved_struct = self.structure;
                for (k, fv) in self.entries(m) {
                    // Unknown fields are skipped (or reported by the
                    // strict pass, which comes after type errors).
                    let Some((key, fs)) = props.get_key_value(k) else {
                        continue;
                    };
                    self.stack.push(key.as_str());
                    self.structure = Some(short_name(def));
                    let fty = Ty::Schema(fs, named(def, k));
                    let r = self.value(&fty, fv);
                    self.stack.pop();
                    self.structure = saved_struct;
                    r?;
                }
                Ok(())
            }
            (Shape::Map(elem), Value::Object(m)) => {
                for (_, ev) in self.entries(m) {
                    self.value(&elem, ev)?;
                }
                Ok(())
            }
            (Shape::Slice(elem), Value::Array(a)) => {
                for ev in a {
                    self.value(&elem, ev)?;
                }
                Ok(())
            }
            (Shape::Bytes, Value::String(s)) => {
                if let Some(e) = base64_error(s)
                    && self.saved.is_none()
                {
                    // Not a type error: no field context.
                    self.saved = Some(e);
                }
                Ok(())
            }
            // A JSON array decodes into a []byte element by element.
            (Shape::Bytes, Value::Array(a)) => {
                for ev in a {
                    match ev {
                        Value::Null => {}
                        Value::Number(_) if int_fits_u8(ev) => {}
                        other => self.mismatch(json_kind(other, true), "uint8".into()),
                    }
                }
                Ok(())
            }
            (Shape::String, Value::String(_)) | (Shape::Bool, Value::Bool(_)) => Ok(()),
            (Shape::Float, Value::Number(_)) => Ok(()),
            (Shape::Int(bits), Value::Number(_)) => {
                if int_fits(v, bits).is_none() {
                    let name = self.go_name(ty);
                    self.mismatch(json_kind(v, true), name);
                }
                Ok(())
            }
            (_, v) => {
                let name = self.go_name(ty);
                self.mismatch(json_kind(v, false), name);
                Ok(())
            }
        }
    }

    /// An object's members in the order the decoder meets them.
    fn entries(&self, m: &'a Map<String, Value>) -> Vec<(&'a str, &'a Value)> {
        let mut out: Vec<(&str, &Value)> = m.iter().map(|(k, v)| (k.as_str(), v)).collect();
        if self.sorted {
            out.sort_by(|a, b| a.0.cmp(b.0));
        }
        out
    }
}

/// How Go's decoder names a JSON value in its error; numbers that reached
/// an integer type carry their text.
pub(crate) fn json_kind(v: &Value, with_number: bool) -> String {
    match v {
        Value::String(_) => "string".into(),
        Value::Number(n) if with_number => format!("number {n}"),
        Value::Number(_) => "number".into(),
        Value::Bool(_) => "bool".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
        Value::Null => "null".into(),
    }
}

/// `Some` when `v` is a number Go's `strconv.ParseInt` reads and that fits
/// `bits`: a fraction or exponent (`1.5`, `3.0`) does not. Go sees the
/// number's text and this function its parsed value, so a number written
/// with an exponent prints as serde_json renders it (`1e3` as `1000.0`).
fn int_fits(v: &Value, bits: u32) -> Option<()> {
    let Value::Number(n) = v else {
        return None;
    };
    // serde_json reads the integer `-0` as the float -0.0 (so does the
    // rarer `-0.0`, which Go refuses); the likelier text is taken.
    if n.as_f64().is_some_and(|f| f == 0.0 && f.is_sign_negative()) {
        return Some(());
    }
    let i = n.as_i64()?;
    let fits = match bits {
        32 => i32::try_from(i).is_ok(),
        _ => true,
    };
    fits.then_some(())
}

fn int_fits_u8(v: &Value) -> bool {
    v.as_u64().is_some_and(|n| n <= u64::from(u8::MAX))
}

/// Go's `encoding/base64` error for a `[]byte` string that does not decode.
/// Go skips `\r` and `\n` anywhere in the input and counts offsets in the
/// input as written.
fn base64_error(s: &str) -> Option<String> {
    use base64::Engine as _;
    let kept: Vec<(usize, u8)> = s
        .bytes()
        .enumerate()
        .filter(|(_, b)| *b != b'\r' && *b != b'\n')
        .collect();
    let bytes: Vec<u8> = kept.iter().map(|(_, b)| *b).collect();
    let e = base64::engine::general_purpose::STANDARD
        .decode(&bytes)
        .err()?;
    let at = match e {
        base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _) => {
            at
        }
        // Go reports the offset where the final group falls short.
        base64::DecodeError::InvalidLength(len) => len - len % 4,
        base64::DecodeError::InvalidPadding => 0,
    };
    let at = kept.get(at).map_or(s.len(), |(i, _)| *i);
    Some(format!("illegal base64 data at input byte {at}"))
}

/// Compact JSON as Go's `encoding/json` writes a map: keys sorted, `<`,
/// `>`, `&`, U+2028 and U+2029 escaped.
fn go_json(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json(&Value::String(k.clone()), out);
                out.push(':');
                if let Some(x) = m.get(k) {
                    go_json(x, out);
                }
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json(x, out);
            }
            out.push(']');
        }
        Value::String(s) => {
            let text = Value::String(s.clone()).to_string();
            out.push_str(
                &text
                    .replace('<', "\\u003c")
                    .replace('>', "\\u003e")
                    .replace('&', "\\u0026")
                    .replace('\u{2028}', "\\u2028")
                    .replace('\u{2029}', "\\u2029"),
            );
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Go's `%q` of a string: double quotes, with `"` and `\` escaped and
/// control characters written as escapes.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests;
