//! SyncConfigs written for espejo deserialize unchanged, and mean the same.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap: a panic is a test failure.

use crate::common;

use common::{Store, TestNs};
use mirra_mirror::{CompiledConfig, Op, SyncConfig, plan_namespace};
use serde_json::Value;

/// A platform team's typical config: label selector with expressions,
/// name patterns, several kinds, templating, numbers, unknown fields.
const PLATFORM: &str = r#"
apiVersion: sync.appuio.ch/v1alpha1
kind: SyncConfig
metadata:
  name: platform-defaults
  namespace: espejo-system
spec:
  forceRecreate: true
  namespaceSelector:
    labelSelector:
      matchLabels:
        platform.example.com/tenant: "true"
      matchExpressions:
      - key: environment
        operator: In
        values: [dev, prod]
      - key: legacy
        operator: DoesNotExist
    matchNames:
    - customer-.*
    ignoreNames:
    - customer-internal
  syncItems:
  - apiVersion: v1
    kind: ResourceQuota
    metadata:
      name: compute
      labels:
        app.kubernetes.io/part-of: platform
    spec:
      hard:
        requests.cpu: 1.5
        pods: 40
        limits.memory: 8Gi
  - apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata:
      name: allow-from-${PROJECT_NAME}
      annotations:
        description: "only ${PROJECT_NAME} may talk here"
    spec:
      podSelector: {}
      ingress:
      - from:
        - namespaceSelector:
            matchLabels:
              kubernetes.io/metadata.name: ${PROJECT_NAME}
        ports:
        - port: 8443
          protocol: TCP
      policyTypes: [Ingress]
  - apiVersion: example.com/v1alpha1
    kind: Widget
    metadata:
      name: w
    spec:
      ratio: 0.75
      threshold: -3
      counter: 9223372036854775807
      enabled: false
      nothing: null
      futureField:
        nested: [1, 2.5, "three", {deep: true}]
  deleteItems:
  - apiVersion: v1
    kind: ConfigMap
    name: old-${PROJECT_NAME}-settings
"#;

/// A config espejo has already written a status for.
const WITH_STATUS: &str = r#"
apiVersion: sync.appuio.ch/v1alpha1
kind: SyncConfig
metadata:
  name: cleanup
  namespace: espejo-system
  generation: 7
  creationTimestamp: "2021-03-04T05:06:07Z"
  uid: 0b6f3a4e-1111-2222-3333-444455556666
spec:
  namespaceSelector:
    matchNames: [".*"]
  deleteItems:
  - apiVersion: rbac.authorization.k8s.io/v1
    kind: RoleBinding
    name: legacy-admins
status:
  conditions:
  - type: Ready
    status: "True"
    lastTransitionTime: "2021-03-04T05:06:17Z"
    reason: SynchronizationSucceeded
    message: Synchronization completed successfully
  - type: Errored
    status: "True"
    lastTransitionTime: "2021-03-04T05:06:17Z"
    reason: SynchronizationFailedWithError
    message: could not sync or delete any items
  synchronizedItemCount: 0
  deletedItemCount: 3
  failedItemCount: 0
"#;

fn yaml_value(text: &str) -> Value {
    serde_yaml::from_str(text).unwrap()
}

#[test]
fn espejo_configs_deserialize_and_serialize_unchanged() {
    for text in [PLATFORM, WITH_STATUS] {
        let typed: SyncConfig = serde_yaml::from_str(text).unwrap();
        let back = serde_json::to_value(&typed).unwrap();
        assert_eq!(back, yaml_value(text), "round trip changed the object");
        let compiled = CompiledConfig::compile(&typed);
        assert!(compiled.is_valid(), "{:?}", compiled.errors());
        // The lenient JSON path agrees with the typed one.
        assert!(CompiledConfig::from_json(&yaml_value(text)).same_plan_input(&compiled));
    }
    let typed: SyncConfig = serde_yaml::from_str(WITH_STATUS).unwrap();
    let status = typed.status.unwrap();
    assert_eq!(status.deleted_item_count, 3);
    assert_eq!(status.observed_generation, None);
    assert_eq!(status.conditions[1].type_, "Errored");
}

#[test]
fn the_platform_config_selects_and_templates_like_espejo() {
    let typed: SyncConfig = serde_yaml::from_str(PLATFORM).unwrap();
    let c = CompiledConfig::compile(&typed);
    let store = Store::default();
    let tenant = TestNs::new("shop")
        .label("platform.example.com/tenant", "true")
        .label("environment", "prod");
    let legacy = tenant.clone().label("legacy", "1");
    let cases = [
        (tenant, true),
        (legacy, false),
        (TestNs::new("customer-a"), true),
        (TestNs::new("customer-internal"), false),
        (TestNs::new("xcustomer-a"), false),
    ];
    for (ns, selected) in cases {
        let p = plan_namespace(
            Some(&ns.view()),
            std::slice::from_ref(&c),
            &store.view(&ns.name),
            &|_| false,
        );
        assert_eq!(!p.ops.is_empty(), selected, "{}", ns.name);
    }
    let ns = TestNs::new("customer-a");
    let p = plan_namespace(
        Some(&ns.view()),
        std::slice::from_ref(&c),
        &store.view("customer-a"),
        &|_| false,
    );
    let bodies: Vec<&Value> = p
        .ops
        .iter()
        .map(|op| match op {
            Op::Apply {
                body,
                force_recreate,
                ..
            } => {
                assert!(force_recreate);
                body
            }
            Op::Delete { .. } | Op::Release { .. } => panic!("nothing to delete or release"),
        })
        .collect();
    let policy = bodies
        .iter()
        .find(|b| b["kind"] == "NetworkPolicy")
        .unwrap();
    assert_eq!(policy["metadata"]["name"], "allow-from-customer-a");
    assert_eq!(
        policy["metadata"]["annotations"]["description"],
        "only customer-a may talk here"
    );
    assert_eq!(
        policy["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
        "customer-a"
    );
    let widget = bodies.iter().find(|b| b["kind"] == "Widget").unwrap();
    assert_eq!(
        serde_json::to_string(&widget["spec"]).unwrap(),
        r#"{"ratio":0.75,"threshold":-3,"counter":9223372036854775807,"enabled":false,"nothing":null,"futureField":{"nested":[1,2.5,"three",{"deep":true}]}}"#
    );
    let quota = bodies
        .iter()
        .find(|b| b["kind"] == "ResourceQuota")
        .unwrap();
    assert_eq!(quota["spec"]["hard"]["requests.cpu"].as_f64(), Some(1.5));
}

#[test]
fn malformed_espejo_documents_are_reported_not_fatal() {
    let cases = [
        // matchNames as a string instead of a list.
        (
            "spec:\n  namespaceSelector:\n    matchNames: team-a\n  syncItems: []\n",
            "spec.namespaceSelector.matchNames",
        ),
        // An item that is a list.
        (
            "spec:\n  namespaceSelector: {matchNames: [a]}\n  syncItems: [[1, 2]]\n",
            "spec.syncItems[0]",
        ),
        // An item without kind.
        (
            "spec:\n  namespaceSelector: {matchNames: [a]}\n  syncItems: [{apiVersion: v1, metadata: {name: x}}]\n",
            "spec.syncItems[0].kind",
        ),
        // A deleteItem name of the wrong type.
        (
            "spec:\n  namespaceSelector: {matchNames: [a]}\n  deleteItems: [{apiVersion: v1, kind: ConfigMap, name: [x]}]\n",
            "spec.deleteItems[0].name",
        ),
        // A label selector operator espejo would also refuse.
        (
            "spec:\n  namespaceSelector: {labelSelector: {matchExpressions: [{key: a, operator: Is}]}}\n  syncItems: [{apiVersion: v1, kind: ConfigMap, metadata: {name: x}}]\n",
            "spec.namespaceSelector.labelSelector.matchExpressions[0].operator",
        ),
    ];
    for (spec, path) in cases {
        let text = format!(
            "apiVersion: sync.appuio.ch/v1alpha1\nkind: SyncConfig\nmetadata: {{name: c, namespace: ops}}\n{spec}"
        );
        let c = CompiledConfig::from_json(&yaml_value(&text));
        assert!(!c.is_valid(), "{text}");
        assert!(
            c.errors().iter().any(|e| e.path() == path),
            "{path}: {:?}",
            c.errors()
        );
    }
}
