//! The CRD is generated from the Rust types; the committed file must match.
//! `MIRRA_BLESS=1 cargo test -p mirra-mirror --test it crd::` rewrites it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap: a panic is a test failure.

use std::path::PathBuf;

use mirra_mirror::{crd, crd_yaml};

fn crd_path() -> PathBuf {
    // Canonicalized so the path is right even when the crate is reached
    // through a symlink.
    let manifest = std::fs::canonicalize(env!("CARGO_MANIFEST_DIR")).unwrap();
    manifest.join("../../deploy/crd/syncconfig.yaml")
}

#[test]
fn committed_crd_matches_the_types() {
    let path = crd_path();
    let generated = crd_yaml();
    if std::env::var_os("MIRRA_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run with MIRRA_BLESS=1", path.display()));
    assert!(
        committed == generated,
        "{} is stale; regenerate with MIRRA_BLESS=1 cargo test -p mirra-mirror --test it crd::",
        path.display()
    );
}

#[test]
fn crd_has_espejo_names_columns_and_subresource() {
    let crd = crd();
    assert_eq!(
        crd.metadata.name.as_deref(),
        Some("syncconfigs.sync.appuio.ch")
    );
    assert_eq!(crd.spec.group, "sync.appuio.ch");
    assert_eq!(crd.spec.names.kind, "SyncConfig");
    assert_eq!(crd.spec.names.plural, "syncconfigs");
    assert_eq!(crd.spec.scope, "Namespaced");
    let v = &crd.spec.versions[0];
    assert_eq!(v.name, "v1alpha1");
    assert!(v.served && v.storage);
    assert!(v.subresources.as_ref().unwrap().status.is_some());
    let columns: Vec<(&str, &str, &str)> = v
        .additional_printer_columns
        .as_ref()
        .unwrap()
        .iter()
        .map(|c| (c.name.as_str(), c.type_.as_str(), c.json_path.as_str()))
        .collect();
    assert_eq!(
        columns,
        [
            ("Synced", "integer", ".status.synchronizedItemCount"),
            ("Deleted", "integer", ".status.deletedItemCount"),
            ("Failed", "integer", ".status.failedItemCount"),
            ("Age", "date", ".metadata.creationTimestamp"),
        ]
    );
}

#[test]
fn sync_items_are_embedded_resources_with_unknown_fields_kept() {
    let crd = crd();
    let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
    let spec = &schema["openAPIV3Schema"]["properties"]["spec"]["properties"];
    let items = &spec["syncItems"]["items"];
    assert_eq!(items["type"], "object");
    assert_eq!(items["x-kubernetes-embedded-resource"], true);
    assert_eq!(items["x-kubernetes-preserve-unknown-fields"], true);
    for field in ["deleteItems", "forceRecreate", "namespaceSelector"] {
        assert!(spec.get(field).is_some(), "{field}");
    }
    let status = &schema["openAPIV3Schema"]["properties"]["status"]["properties"];
    for field in [
        "conditions",
        "synchronizedItemCount",
        "deletedItemCount",
        "failedItemCount",
        "observedGeneration",
    ] {
        assert!(status.get(field).is_some(), "{field}");
    }
}
