use super::*;

#[test]
fn every_row_is_a_distinct_resource() {
    let mut seen = std::collections::BTreeSet::new();
    for b in table() {
        assert!(
            seen.insert((b.group, b.version, b.plural)),
            "{} twice",
            b.plural
        );
        if let Some(storage) = b.stored_as {
            // A view follows the row of the version it is stored at.
            assert!(find_version(b.group, storage, b.kind).is_some());
            assert_ne!(storage, b.version);
        }
        assert!(!b.plural.is_empty() && !b.kind.is_empty());
    }
    assert!(table().len() >= 50, "{}", table().len());
    assert!(find("", "LimitRange").is_some_and(|b| b.namespaced));
    assert!(find("scheduling.k8s.io", "PriorityClass").is_some_and(|b| !b.namespaced));
}

#[test]
fn zero_status_keeps_the_fields_the_server_always_writes() {
    let sts = find("apps", "StatefulSet").unwrap();
    assert_eq!((sts.zero_status)().unwrap()["replicas"], 0);
    let dep = find("apps", "Deployment").unwrap();
    assert_eq!((dep.zero_status)(), Some(serde_json::json!({})));
    let cm = find("", "ConfigMap").unwrap();
    assert_eq!((cm.zero_status)(), None);
}

#[test]
fn every_kind_has_a_schema_with_its_gvk() {
    for b in table() {
        let name = schema_name(b.group, b.version, b.kind);
        assert!(name.is_some(), "{}/{}", b.group, b.kind);
    }
    let cm = &schemas()["io.k8s.api.core.v1.ConfigMap"];
    assert!(cm["properties"]["data"].is_object(), "{cm}");
}

#[test]
fn the_quantity_table_is_what_the_schemas_say() {
    let walked = walked_quantity_paths();
    for (i, b) in table().iter().enumerate() {
        if b.stored_as.is_some() {
            // A view is converted before the store decodes it, so
            // only its storage version's quantities are
            // canonicalised; a view that held quantities of its own
            // would need them handled in `convert`.
            assert!(walked[i].is_empty(), "{}/{}", b.group, b.kind);
            continue;
        }
        assert_eq!(
            quantity_paths(b.group, b.kind),
            walked[i].as_slice(),
            "{}/{}: update quantity_table.rs",
            b.group,
            b.kind
        );
    }
}

#[test]
fn quantities_are_found_where_kinds_store_them() {
    use PathSeg::{AnyIndex, AnyKey, Key};
    let k = |s: &str| Key(s.to_string());
    let lr = quantity_paths("", "LimitRange");
    assert!(
        lr.contains(&vec![k("spec"), k("limits"), AnyIndex, k("max"), AnyKey]),
        "{lr:?}"
    );
    let rq = quantity_paths("", "ResourceQuota");
    assert!(rq.contains(&vec![k("spec"), k("hard"), AnyKey]), "{rq:?}");
    let dep = quantity_paths("apps", "Deployment");
    assert!(
        dep.contains(&vec![
            k("spec"),
            k("template"),
            k("spec"),
            k("containers"),
            AnyIndex,
            k("resources"),
            k("limits"),
            AnyKey
        ]),
        "{dep:?}"
    );
    assert!(quantity_paths("", "ConfigMap").is_empty());
    assert!(quantity_paths("apiextensions.k8s.io", "CustomResourceDefinition").is_empty());
}
