//! `spec.serviceAccountName` in the pure crate: its validation, the
//! requirement in tenant namespaces, a missing account holding the spec
//! back (and giving it back once it exists), and the mark on the copies.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap: a panic is a test failure.

use crate::common;

use common::{Store, TestNs, config};
use mirra_mirror::{ObjectRef, Op, SERVICE_ACCOUNT_ANNOTATION, SourceState, plan_namespace};
use serde_json::{Value, json};

fn spec(sa: Option<&str>) -> Value {
    let mut s = json!({"namespaceSelector": {"matchNames": ["a"]},
        "syncItems": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "info"}}]});
    if let Some(sa) = sa {
        s["serviceAccountName"] = json!(sa);
    }
    s
}

fn errors(c: &mirra_mirror::CompiledConfig) -> Vec<String> {
    c.errors().iter().map(ToString::to_string).collect()
}

#[test]
fn a_service_account_is_a_name_of_the_syncconfigs_own_namespace() {
    let c = config("t", 1, spec(Some("syncer")));
    assert!(c.is_valid(), "{:?}", errors(&c));
    assert_eq!(
        c.impersonated_user().as_deref(),
        Some("system:serviceaccount:ops:syncer")
    );
    assert_eq!(c.identity().unwrap().name, "syncer");
    for bad in ["other:syncer", "system:serviceaccount:x:y", "x/y"] {
        let e = errors(&config("t", 1, spec(Some(bad))));
        assert!(
            e.iter().any(|m| m.starts_with("spec.serviceAccountName: ")
                && m.contains("of the SyncConfig's own namespace")),
            "{bad}: {e:?}"
        );
    }
    for bad in ["", "Upper", "-x"] {
        let e = errors(&config("t", 1, spec(Some(bad))));
        assert!(
            e.iter().any(|m| m.starts_with("spec.serviceAccountName")),
            "{bad:?}: {e:?}"
        );
    }
    assert!(config("t", 1, spec(None)).impersonated_user().is_none());
}

#[test]
fn a_tenant_syncconfig_without_an_account_is_invalid() {
    let mut c = config("t", 1, spec(None));
    c.require_service_account("namespace ops is open to tenants");
    assert_eq!(
        errors(&c),
        ["spec.serviceAccountName: is required: namespace ops is open to tenants"]
    );
    let mut with = config("t", 1, spec(Some("syncer")));
    with.require_service_account("unused");
    assert!(with.is_valid());
}

#[test]
fn a_missing_account_holds_the_spec_back_until_it_exists() {
    let mut c = config("t", 1, spec(Some("syncer")));
    let before = c.clone();
    c.resolve_sources(&|_: &ObjectRef| SourceState::Missing);
    assert_eq!(
        errors(&c),
        [
            "spec.serviceAccountName: ServiceAccount ops/syncer does not exist: every write for \
          this SyncConfig is made as that account, so nothing is written until it exists (its \
          copies are kept)"
        ]
    );
    assert!(!c.same_plan_input(&before));
    let p = plan_namespace(
        Some(&TestNs::new("a").view()),
        &[c.clone()],
        &Store::default().view("a"),
        &|_| false,
    );
    assert!(p.ops.is_empty(), "{:?}", p.ops);

    let account = json!({"metadata": {"name": "syncer", "namespace": "ops"}});
    c.resolve_sources(&|_: &ObjectRef| SourceState::Found(&account));
    assert!(c.is_valid(), "{:?}", errors(&c));
    // Not read yet: assumed to exist (the server refuses what it may not do).
    let mut unread = config("t", 1, spec(Some("syncer")));
    unread.resolve_sources(&|_: &ObjectRef| SourceState::Unknown);
    assert!(unread.is_valid());

    let p = plan_namespace(
        Some(&TestNs::new("a").view()),
        &[c],
        &Store::default().view("a"),
        &|_| false,
    );
    let [Op::Apply { body, .. }] = p.ops.as_slice() else {
        panic!("{:?}", p.ops);
    };
    assert_eq!(
        body["metadata"]["annotations"][SERVICE_ACCOUNT_ANNOTATION],
        "syncer"
    );
}
