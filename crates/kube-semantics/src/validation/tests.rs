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
    let system = json!({"metadata": {"name": "system-cluster-critical"}, "value": 2_000_000_000});
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

/// The expected (field, message) pairs, owned.
fn owned(want: &[(&str, &str)]) -> Vec<(String, String)> {
    want.iter()
        .map(|(f, m)| ((*f).to_string(), (*m).to_string()))
        .collect()
}

fn check(group: &str, kind: &str, obj: &Value, want: &[(&str, &str)]) {
    let got = pairs(&validate(group, kind, obj, None));
    assert_eq!(got, owned(want), "{kind}: {obj}");
}

fn check_update(group: &str, kind: &str, obj: &Value, old: &Value, want: &[(&str, &str)]) {
    let got = pairs(&validate(group, kind, obj, Some(old)));
    assert_eq!(got, owned(want), "{kind} update: {obj}");
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
    let immutable = "Forbidden: field is immutable when `immutable` is set";
    let old = json!({"metadata": meta("c"), "immutable": true, "data": {"a": "1"}});
    check_update("", "ConfigMap", &old, &old, &[]);
    let new = json!({"metadata": meta("c"), "data": {"a": "2"}});
    let both = [("immutable", immutable), ("data", immutable)];
    check_update("", "ConfigMap", &new, &old, &both);
    let old =
        json!({"metadata": meta("s"), "type": "Opaque", "immutable": true, "data": {"a": "MQ=="}});
    let new = with(&old, "/data/a", json!("Mg=="));
    check_update("", "Secret", &new, &old, &[("data", immutable)]);
    let new = json!({"metadata": meta("s"), "type": "kubernetes.io/tls", "immutable": true,
                     "data": {"a": "MQ==", "tls.crt": "", "tls.key": ""}});
    let old = json!({"metadata": meta("s"), "data": {"a": "MQ==", "tls.crt": "", "tls.key": ""}});
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
        &role(json!({"verbs": ["get"], "nonResourceURLs": ["/a", "/b"], "resources": ["pods"]})),
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
    let rb = |role_ref: Value, subjects: Value| json!({"roleRef": role_ref, "subjects": subjects});
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
    let rolling_update = |update: Value| with(&d, "/spec/strategy/rollingUpdate", update);
    check(
        "apps",
        "Deployment",
        &rolling_update(json!({"maxUnavailable": 0, "maxSurge": "0%"})),
        &[(
            &format!("{ru}.maxUnavailable"),
            "Invalid value: 0: may not be 0 when `maxSurge` is 0",
        )],
    );
    check(
        "apps",
        "Deployment",
        &rolling_update(json!({"maxUnavailable": "150%", "maxSurge": "abc"})),
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
        &rolling_update(json!({"maxUnavailable": -1, "maxSurge": 1})),
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
    let rolling_update = |update: Value| with(&ds, "/spec/updateStrategy/rollingUpdate", update);
    check(
        "apps",
        "DaemonSet",
        &rolling_update(json!({"maxUnavailable": "10%", "maxSurge": 1})),
        &[(
            &format!("{ru}.maxSurge"),
            "Invalid value: 1: may not be set when maxUnavailable is non-zero",
        )],
    );
    check(
        "apps",
        "DaemonSet",
        &rolling_update(json!({"maxUnavailable": 0, "maxSurge": "200%"})),
        &[(
            &format!("{ru}.maxSurge"),
            "Invalid value: 200%: must not be greater than 100%",
        )],
    );
    check(
        "apps",
        "DaemonSet",
        &rolling_update(json!({"maxUnavailable": 0})),
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
