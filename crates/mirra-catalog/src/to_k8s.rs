//! The Consul -> Kubernetes direction: every Consul service not tagged with
//! the k8s tag becomes an ExternalName Service `<k8s-prefix><name>` pointing
//! at `<name>.service.<consul-domain>` in the write namespace.
//!
//! Ownership is the label `consul=true` (what consul-k8s puts on the
//! Services it creates, so they are adopted as they are). Only labelled
//! Services are ever updated or deleted; an unlabelled Service with the same
//! name is left alone and reported. This module must NOT talk to either
//! system; it plans, the controller writes.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Service, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::annotations::ANNOTATION_SERVICE_SYNC;
use crate::settings::SyncSettings;

/// The label marking Services created from Consul.
pub const LABEL_CONSUL: &str = "consul";
/// Its value.
pub const LABEL_CONSUL_VALUE: &str = "true";

/// Kubernetes limits Service names (DNS-1035 labels) to 63 bytes.
const MAX_SERVICE_NAME_BYTES: usize = 63;
/// Kubernetes limits an ExternalName (a DNS-1123 subdomain) to 253 bytes.
const MAX_EXTERNAL_NAME_BYTES: usize = 253;

/// A Consul service that cannot become a Kubernetes Service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct K8sWarning {
    /// The Consul service name.
    pub consul_service: String,
    /// Why it was skipped.
    pub message: String,
}

/// The desired Services of the write namespace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToK8sOutcome {
    /// Desired Services by name.
    pub services: BTreeMap<String, Service>,
    /// Consul services that were skipped.
    pub warnings: Vec<K8sWarning>,
}

/// One write to Kubernetes.
#[derive(Clone, Debug, PartialEq)]
pub enum K8sOp {
    /// Create this Service.
    Create(Service),
    /// Bring a labelled Service back to this shape (spec, label, annotation).
    Update(Service),
    /// Delete a labelled Service whose Consul service is gone.
    Delete {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
}

/// The result of [`plan_k8s`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct K8sPlan {
    /// Deletes, then updates, then creates, each in name order.
    pub ops: Vec<K8sOp>,
    /// Names wanted from Consul but held by an unlabelled Service.
    pub conflicts: Vec<String>,
}

fn is_dns1035_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_SERVICE_NAME_BYTES
        && b.first().is_some_and(|c| c.is_ascii_lowercase())
        && b.last()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_EXTERNAL_NAME_BYTES
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b.first().is_some_and(|c| c.is_ascii_alphanumeric())
                && b.last().is_some_and(|c| c.is_ascii_alphanumeric())
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

/// Whether a Service was created from Consul (labelled `consul=true`).
pub fn is_consul_owned(svc: &Service) -> bool {
    svc.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_CONSUL))
        .is_some_and(|v| v == LABEL_CONSUL_VALUE)
}

/// The desired ExternalName Services for a Consul service list (as
/// `/v1/catalog/services` returns it: name -> tags). Names are lowercased
/// as consul-k8s does; Consul names are case-insensitive, so this does not
/// merge distinct services.
pub fn desired_k8s_services(
    consul_services: &BTreeMap<String, Vec<String>>,
    settings: &SyncSettings,
) -> ToK8sOutcome {
    let mut out = ToK8sOutcome::default();
    if !settings.to_k8s {
        return out;
    }
    for (name, tags) in consul_services {
        if tags.contains(&settings.consul_k8s_tag) {
            continue;
        }
        let k8s_name = format!("{}{}", settings.k8s_service_prefix, name).to_lowercase();
        let target = format!("{name}.service.{}", settings.consul_domain).to_lowercase();
        if !is_dns1035_label(&k8s_name) {
            out.warnings.push(K8sWarning {
                consul_service: name.clone(),
                message: format!("{k8s_name:?} is not a valid Kubernetes Service name; skipped"),
            });
            continue;
        }
        // One trailing dot makes the name fully qualified; Kubernetes
        // accepts it in an ExternalName (its validation strips it), and
        // consul-k8s writes the target as given.
        if !is_dns1123_subdomain(target.strip_suffix('.').unwrap_or(&target)) {
            out.warnings.push(K8sWarning {
                consul_service: name.clone(),
                message: format!("{target:?} is not a valid DNS name; skipped"),
            });
            continue;
        }
        if out.services.contains_key(&k8s_name) {
            out.warnings.push(K8sWarning {
                consul_service: name.clone(),
                message: format!(
                    "{k8s_name:?} is already taken by another Consul service; skipped"
                ),
            });
            continue;
        }
        out.services.insert(
            k8s_name.clone(),
            external_name_service(&k8s_name, &target, settings),
        );
    }
    out
}

fn external_name_service(name: &str, target: &str, settings: &SyncSettings) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(settings.k8s_write_namespace.clone()),
            labels: Some(BTreeMap::from([(
                LABEL_CONSUL.to_owned(),
                LABEL_CONSUL_VALUE.to_owned(),
            )])),
            annotations: Some(BTreeMap::from([(
                ANNOTATION_SERVICE_SYNC.to_owned(),
                "false".to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            type_: Some("ExternalName".to_owned()),
            external_name: Some(target.to_owned()),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

/// Whether an existing labelled Service already has the desired shape: type
/// ExternalName, the same target, and the annotation that keeps it from
/// being synced back to Consul.
fn in_shape(existing: &Service, desired: &Service) -> bool {
    let spec = |s: &Service| {
        let sp = s.spec.as_ref();
        (
            sp.and_then(|x| x.type_.clone()),
            sp.and_then(|x| x.external_name.clone()),
        )
    };
    let no_sync_back = existing
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_SERVICE_SYNC))
        .is_some_and(|v| v == "false");
    spec(existing) == spec(desired) && no_sync_back
}

/// The writes that bring the write namespace's Services (`existing`, by
/// name) to `desired`. Unlabelled Services are never in a plan.
pub fn plan_k8s(
    desired: &BTreeMap<String, Service>,
    existing: &BTreeMap<String, Service>,
    settings: &SyncSettings,
) -> K8sPlan {
    let mut plan = K8sPlan::default();
    let mut updates = Vec::new();
    let mut creates = Vec::new();
    for (name, svc) in existing {
        if is_consul_owned(svc) && !desired.contains_key(name) {
            plan.ops.push(K8sOp::Delete {
                namespace: svc
                    .metadata
                    .namespace
                    .clone()
                    .unwrap_or_else(|| settings.k8s_write_namespace.clone()),
                name: name.clone(),
            });
        }
    }
    for (name, want) in desired {
        match existing.get(name) {
            None => creates.push(K8sOp::Create(want.clone())),
            Some(have) if !is_consul_owned(have) => plan.conflicts.push(name.clone()),
            Some(have) if in_shape(have, want) => {}
            Some(_) => updates.push(K8sOp::Update(want.clone())),
        }
    }
    plan.ops.extend(updates);
    plan.ops.extend(creates);
    plan
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn services(pairs: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
        pairs
            .iter()
            .map(|(n, t)| ((*n).to_owned(), t.iter().map(|s| (*s).to_owned()).collect()))
            .collect()
    }

    fn settings() -> SyncSettings {
        SyncSettings {
            k8s_service_prefix: "consul-".into(),
            ..SyncSettings::default()
        }
    }

    #[test]
    fn consul_services_become_external_name_services() {
        let out = desired_k8s_services(
            &services(&[("Web", &["v1"]), ("db", &[]), ("synced", &["k8s"])]),
            &settings(),
        );
        assert!(out.warnings.is_empty());
        assert_eq!(
            out.services.keys().collect::<Vec<_>>(),
            vec!["consul-db", "consul-web"]
        );
        let web = &out.services["consul-web"];
        assert_eq!(web.metadata.namespace.as_deref(), Some("default"));
        let spec = web.spec.as_ref().unwrap();
        assert_eq!(spec.type_.as_deref(), Some("ExternalName"));
        assert_eq!(spec.external_name.as_deref(), Some("web.service.consul"));
        assert!(is_consul_owned(web));
        assert_eq!(
            web.metadata.annotations.as_ref().unwrap()[ANNOTATION_SERVICE_SYNC],
            "false"
        );
    }

    #[test]
    fn invalid_names_are_skipped_with_a_warning() {
        let out = desired_k8s_services(
            &services(&[("under_score", &[]), ("9lives", &[]), ("ok", &[])]),
            &SyncSettings::default(),
        );
        assert_eq!(out.services.keys().collect::<Vec<_>>(), vec!["ok"]);
        assert_eq!(out.warnings.len(), 2);
    }

    /// consul-k8s writes `<name>.service.<domain>` as given; Kubernetes
    /// accepts one trailing dot in an ExternalName.
    #[test]
    fn a_fully_qualified_domain_with_one_trailing_dot_is_accepted() {
        let s = SyncSettings {
            consul_domain: "consul.".into(),
            ..SyncSettings::default()
        };
        let out = desired_k8s_services(&services(&[("web", &[]), ("db", &[])]), &s);
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
        let spec = out.services["web"].spec.as_ref().unwrap();
        assert_eq!(spec.external_name.as_deref(), Some("web.service.consul."));
        for bad in ["consul..", ".", "con sul"] {
            let s = SyncSettings {
                consul_domain: bad.into(),
                ..SyncSettings::default()
            };
            let out = desired_k8s_services(&services(&[("web", &[])]), &s);
            assert!(out.services.is_empty(), "{bad:?}");
            assert_eq!(out.warnings.len(), 1, "{bad:?}");
        }
    }

    proptest::proptest! {
        /// With or without one trailing dot, a domain is accepted or
        /// refused alike, and the target keeps the dot as given.
        #[test]
        fn one_trailing_dot_never_changes_the_decision(
            domain in "[a-z0-9.-]{1,20}",
            name in "[a-z][a-z0-9-]{0,10}",
        ) {
            let with = |d: &str| desired_k8s_services(
                &services(&[(name.as_str(), &[])]),
                &SyncSettings { consul_domain: d.into(), ..SyncSettings::default() },
            );
            let plain = domain.trim_end_matches('.').to_owned();
            if plain.is_empty() {
                return Ok(());
            }
            let dotted = format!("{plain}.");
            let (a, b) = (with(&plain), with(&dotted));
            proptest::prop_assert_eq!(a.services.len(), b.services.len());
            if let Some(svc) = b.services.values().next() {
                let target = svc.spec.as_ref().and_then(|s| s.external_name.clone()).unwrap_or_default();
                proptest::prop_assert!(target.ends_with('.'));
                proptest::prop_assert_eq!(target.trim_end_matches('.'), format!("{name}.service.{plain}"));
            }
        }
    }

    #[test]
    fn to_k8s_off_wants_nothing() {
        let s = SyncSettings {
            to_k8s: false,
            ..SyncSettings::default()
        };
        assert!(
            desired_k8s_services(&services(&[("a", &[])]), &s)
                .services
                .is_empty()
        );
    }

    #[test]
    fn plan_creates_updates_deletes_only_labelled() {
        let s = settings();
        let desired = desired_k8s_services(
            &services(&[("a", &[]), ("b", &[]), ("c", &[]), ("taken", &[])]),
            &s,
        )
        .services;
        let mut existing = BTreeMap::new();
        // in shape: no op
        existing.insert("consul-a".to_owned(), desired["consul-a"].clone());
        // edited in Kubernetes: reverted
        let mut edited = desired["consul-b"].clone();
        edited.spec.as_mut().unwrap().external_name = Some("elsewhere.example".into());
        existing.insert("consul-b".to_owned(), edited);
        // labelled but gone from Consul: deleted
        let mut gone = desired["consul-a"].clone();
        gone.metadata.name = Some("consul-gone".into());
        existing.insert("consul-gone".to_owned(), gone);
        // unlabelled with a wanted name: conflict, untouched
        let mut foreign = desired["consul-taken"].clone();
        foreign.metadata.labels = None;
        existing.insert("consul-taken".to_owned(), foreign);
        // unlabelled and unrelated: untouched
        let mut other = desired["consul-a"].clone();
        other.metadata.labels = None;
        existing.insert("user-svc".to_owned(), other);

        let plan = plan_k8s(&desired, &existing, &s);
        assert_eq!(plan.conflicts, vec!["consul-taken".to_owned()]);
        assert_eq!(plan.ops.len(), 3);
        assert!(matches!(&plan.ops[0], K8sOp::Delete { name, .. } if name == "consul-gone"));
        assert!(
            matches!(&plan.ops[1], K8sOp::Update(svc) if svc.metadata.name.as_deref() == Some("consul-b"))
        );
        assert!(
            matches!(&plan.ops[2], K8sOp::Create(svc) if svc.metadata.name.as_deref() == Some("consul-c"))
        );
    }

    #[test]
    fn removed_annotation_is_restored() {
        let s = settings();
        let desired = desired_k8s_services(&services(&[("a", &[])]), &s).services;
        let mut have = desired["consul-a"].clone();
        have.metadata.annotations = None;
        let existing = BTreeMap::from([("consul-a".to_owned(), have)]);
        let plan = plan_k8s(&desired, &existing, &s);
        assert!(matches!(plan.ops.as_slice(), [K8sOp::Update(_)]));
    }
}
