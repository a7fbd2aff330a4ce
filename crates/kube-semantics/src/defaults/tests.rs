use super::*;
use proptest::prelude::*;

fn defaulted(group: &str, version: &str, kind: &str, mut obj: Value) -> Value {
    apply_defaults(group, version, kind, &mut obj);
    let once = obj.clone();
    apply_defaults(group, version, kind, &mut obj);
    assert_eq!(obj, once, "defaulting {kind} twice changed it");
    obj
}

/// The container every template test uses, and its defaulted form.
fn web() -> Value {
    json!({"name": "web", "image": "nginx:1.27"})
}
fn web_defaulted() -> Value {
    json!({
        "name": "web", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
        "resources": {}, "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File"
    })
}
fn template_spec_defaulted(containers: Value) -> Value {
    json!({
        "containers": containers, "dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
        "schedulerName": "default-scheduler", "securityContext": {},
        "terminationGracePeriodSeconds": 30
    })
}

// Upstream counterpart: pkg/apis/core/v1/defaults_test.go; expectations
// from SetDefaults_PodSpec, SetDefaults_Container and SetDefaults_Pod.
#[test]
fn minimal_pod() {
    let pod = defaulted(
        "",
        "v1",
        "Pod",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
    );
    assert_eq!(
        pod,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
            "containers": [{
                "name": "c", "image": "nginx", "imagePullPolicy": "Always", "resources": {},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File"
            }],
            "dnsPolicy": "ClusterFirst", "enableServiceLinks": true, "restartPolicy": "Always",
            "schedulerName": "default-scheduler", "securityContext": {},
            "terminationGracePeriodSeconds": 30
        }})
    );
}

#[test]
fn pod_containers_probes_env_and_host_network() {
    let pod = defaulted(
        "",
        "v1",
        "Pod",
        json!({"spec": {
            "hostNetwork": true,
            "restartPolicy": "Never",
            "serviceAccount": "builder",
            "initContainers": [{"name": "init", "image": "busybox", "imagePullPolicy": "Never"}],
            "containers": [{
                "name": "c", "image": "nginx:1.27",
                "ports": [{"containerPort": 8080}, {"containerPort": 53, "protocol": "UDP", "hostPort": 1053}],
                "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                        {"name": "PLAIN", "value": "x"}],
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}},
                "livenessProbe": {"httpGet": {"port": 8080}},
                "readinessProbe": {"grpc": {"port": 9000}, "periodSeconds": 5, "timeoutSeconds": 0},
                "startupProbe": {"exec": {"command": ["true"]}, "failureThreshold": 30},
                "lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/stop"}}}
            }]
        }}),
    );
    let spec = &pod["spec"];
    assert_eq!(spec["restartPolicy"], "Never");
    assert_eq!(spec["serviceAccountName"], "builder");
    assert_eq!(spec["serviceAccount"], "builder");
    assert_eq!(
        spec["initContainers"][0],
        json!({"name": "init", "image": "busybox", "imagePullPolicy": "Never", "resources": {},
               "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"})
    );
    let c = &spec["containers"][0];
    assert_eq!(
        c["ports"],
        json!([{"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"},
               {"containerPort": 53, "protocol": "UDP", "hostPort": 1053}])
    );
    assert_eq!(
        c["env"],
        json!([{"name": "NODE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
               {"name": "PLAIN", "value": "x"}])
    );
    assert_eq!(
        c["resources"],
        json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}})
    );
    assert_eq!(
        c["livenessProbe"],
        json!({"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
               "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
    );
    assert_eq!(
        c["readinessProbe"],
        json!({"grpc": {"port": 9000, "service": ""}, "timeoutSeconds": 1,
               "periodSeconds": 5, "successThreshold": 1, "failureThreshold": 3})
    );
    assert_eq!(c["startupProbe"]["failureThreshold"], 30);
    assert_eq!(
        c["lifecycle"]["preStop"]["httpGet"],
        json!({"port": 80, "path": "/stop", "scheme": "HTTP"})
    );
}

#[test]
fn pod_volumes() {
    let pod = defaulted(
        "",
        "v1",
        "Pod",
        json!({"spec": {"containers": [], "volumes": [
            {"name": "scratch"},
            {"name": "s", "secret": {"secretName": "x"}},
            {"name": "cm", "configMap": {"name": "x", "defaultMode": 256}},
            {"name": "h", "hostPath": {"path": "/var"}},
            {"name": "d", "downwardAPI": {"items": [{"path": "l", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
            {"name": "p", "projected": {"sources": [
                {"serviceAccountToken": {"path": "token"}},
                {"downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}},
                {"configMap": {"name": "kube-root-ca.crt"}}
            ]}},
            {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}},
            {"name": "r", "rbd": {"monitors": ["m"], "image": "i"}},
            {"name": "a", "azureDisk": {"diskName": "d", "diskURI": "u"}}
        ]}}),
    );
    assert_eq!(
        pod["spec"]["volumes"],
        json!([
            {"name": "scratch", "emptyDir": {}},
            {"name": "s", "secret": {"secretName": "x", "defaultMode": 420}},
            {"name": "cm", "configMap": {"name": "x", "defaultMode": 256}},
            {"name": "h", "hostPath": {"path": "/var", "type": ""}},
            {"name": "d", "downwardAPI": {"defaultMode": 420, "items": [
                {"path": "l", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}}]}},
            {"name": "p", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}},
                {"downwardAPI": {"items": [{"path": "n", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}]}},
                {"configMap": {"name": "kube-root-ca.crt"}}
            ]}},
            {"name": "e", "ephemeral": {"volumeClaimTemplate": {
                "metadata": {"creationTimestamp": null},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {}, "volumeMode": "Filesystem"}}}},
            {"name": "r", "rbd": {"monitors": ["m"], "image": "i", "pool": "rbd", "user": "admin",
                                  "keyring": "/etc/ceph/keyring"}},
            {"name": "a", "azureDisk": {"diskName": "d", "diskURI": "u", "cachingMode": "ReadWrite",
                                        "fsType": "ext4", "readOnly": false, "kind": "Shared"}}
        ])
    );
}

#[test]
fn image_pull_policy_follows_the_tag() {
    let digest = format!("sha256:{}", "a".repeat(64));
    let cases = [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.27", "IfNotPresent"),
        ("docker.io/library/nginx", "Always"),
        ("registry.example.com/team/app", "Always"),
        ("registry.example.com:5000/team/app:v2", "IfNotPresent"),
        ("localhost:5000/app", "Always"),
        ("localhost:5000", "IfNotPresent"),
        ("[::1]:5000/app:latest", "Always"),
        (&*format!("nginx@{digest}"), "IfNotPresent"),
        (&*format!("nginx:latest@{digest}"), "Always"),
        // Unparsable references fall back to IfNotPresent.
        ("Nginx", "IfNotPresent"),
        ("", "IfNotPresent"),
        ("nginx:", "IfNotPresent"),
        ("nginx@sha256:abc", "IfNotPresent"),
        ("a//b", "IfNotPresent"),
        (&*"f".repeat(64), "IfNotPresent"),
        (&*format!("{}:latest", "a".repeat(250)), "IfNotPresent"),
    ];
    for (image, want) in cases {
        let mut c = json!({"name": "c", "image": image});
        if let Some(o) = c.as_object_mut() {
            container(o);
        }
        assert_eq!(c["imagePullPolicy"], want, "{image}");
    }
}

// Upstream counterpart: pkg/apis/apps/v1/defaults_test.go (expectations from the defaulter).
#[test]
fn deployment() {
    let d = defaulted(
        "apps",
        "v1",
        "Deployment",
        json!({"spec": {"selector": {"matchLabels": {"app": "a"}},
               "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [web()]}}}}),
    );
    assert_eq!(
        d,
        json!({"spec": {
            "replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app": "a"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "template": {"metadata": {"labels": {"app": "a"}, "creationTimestamp": null},
                         "spec": template_spec_defaulted(json!([web_defaulted()]))}
        }})
    );
    let recreate = defaulted(
        "apps",
        "v1",
        "Deployment",
        json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}}}),
    );
    assert_eq!(recreate["spec"]["strategy"], json!({"type": "Recreate"}));
    assert_eq!(recreate["spec"]["replicas"], 0);
    let partial = defaulted(
        "apps",
        "v1",
        "Deployment",
        json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 2}}}}),
    );
    assert_eq!(
        partial["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2, "maxUnavailable": "25%"}})
    );
}

// Upstream counterpart: pkg/apis/apps/v1/defaults_test.go (expectations from the defaulter).
#[test]
fn stateful_set() {
    let s = defaulted(
        "apps",
        "v1",
        "StatefulSet",
        json!({"spec": {"serviceName": "db", "template": {"spec": {"containers": [web()]}},
               "volumeClaimTemplates": [{"metadata": {"name": "data"},
                   "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}),
    );
    assert_eq!(
        s,
        json!({"spec": {
            "serviceName": "db", "replicas": 1, "revisionHistoryLimit": 10,
            "podManagementPolicy": "OrderedReady",
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
            "template": {"metadata": {"creationTimestamp": null},
                         "spec": template_spec_defaulted(json!([web_defaulted()]))},
            "volumeClaimTemplates": [{
                "metadata": {"name": "data", "creationTimestamp": null},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                         "volumeMode": "Filesystem"},
                "status": {"phase": "Pending"}
            }]
        }})
    );
    let explicit = defaulted(
        "apps",
        "v1",
        "StatefulSet",
        json!({"spec": {"updateStrategy": {"type": "RollingUpdate"}}}),
    );
    assert_eq!(
        explicit["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate"})
    );
    let on_delete = defaulted(
        "apps",
        "v1",
        "StatefulSet",
        json!({"spec": {"updateStrategy": {"type": "OnDelete"}}}),
    );
    assert_eq!(
        on_delete["spec"]["updateStrategy"],
        json!({"type": "OnDelete"})
    );
}

// Upstream counterpart: pkg/apis/apps/v1/defaults_test.go (expectations from the defaulter).
#[test]
fn daemon_set_and_replica_set() {
    let d = defaulted(
        "apps",
        "v1",
        "DaemonSet",
        json!({"spec": {"template": {"spec": {"containers": [web()]}}}}),
    );
    assert_eq!(
        d["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    );
    assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(
        d["spec"]["template"]["spec"],
        template_spec_defaulted(json!([web_defaulted()]))
    );
    let r = defaulted("apps", "v1", "ReplicaSet", json!({"spec": {}}));
    assert_eq!(
        r,
        json!({"spec": {"replicas": 1, "template": {"metadata": {"creationTimestamp": null},
               "spec": {"dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
                        "schedulerName": "default-scheduler", "securityContext": {},
                        "terminationGracePeriodSeconds": 30}}}})
    );
}

#[test]
fn daemon_set_template_generation_follows_the_template() {
    let mut ds =
        json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [web()]}}}});
    daemon_set_template_generation(None, &mut ds);
    assert_eq!(
        ds["metadata"]["annotations"],
        json!({DAEMON_SET_TEMPLATE_GENERATION: "1"})
    );
    let old = ds.clone();
    let mut same = ds.clone();
    same["spec"]["minReadySeconds"] = json!(5);
    daemon_set_template_generation(Some(&old), &mut same);
    assert_eq!(
        same["metadata"]["annotations"][DAEMON_SET_TEMPLATE_GENERATION],
        "1"
    );
    let mut changed = ds.clone();
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.28");
    // A client cannot move the generation itself.
    changed["metadata"]["annotations"][DAEMON_SET_TEMPLATE_GENERATION] = json!("9");
    daemon_set_template_generation(Some(&old), &mut changed);
    assert_eq!(
        changed["metadata"]["annotations"][DAEMON_SET_TEMPLATE_GENERATION],
        "2"
    );
    let mut given = json!({"metadata": {"annotations": {DAEMON_SET_TEMPLATE_GENERATION: "4"}}});
    daemon_set_template_generation(None, &mut given);
    assert_eq!(
        given["metadata"]["annotations"][DAEMON_SET_TEMPLATE_GENERATION],
        "4"
    );
    let mut bad = json!({"metadata": {"annotations": {DAEMON_SET_TEMPLATE_GENERATION: "x"}}});
    let before = bad.clone();
    daemon_set_template_generation(None, &mut bad);
    assert_eq!(bad, before);
}

// Upstream counterpart: pkg/apis/core/v1/defaults_test.go (expectations from the defaulter).
#[test]
fn replication_controller_and_pod_template() {
    let rc = defaulted(
        "",
        "v1",
        "ReplicationController",
        json!({"metadata": {"name": "rc"},
               "spec": {"template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [web()]}}}}),
    );
    assert_eq!(rc["metadata"]["labels"], json!({"app": "a"}));
    assert_eq!(rc["spec"]["selector"], json!({"app": "a"}));
    assert_eq!(rc["spec"]["replicas"], 1);
    let kept = defaulted(
        "",
        "v1",
        "ReplicationController",
        json!({"metadata": {"labels": {"x": "y"}},
               "spec": {"selector": {"app": "b"}, "template": {"metadata": {"labels": {"app": "a"}}}}}),
    );
    assert_eq!(kept["metadata"]["labels"], json!({"x": "y"}));
    assert_eq!(kept["spec"]["selector"], json!({"app": "b"}));
    let pt = defaulted(
        "",
        "v1",
        "PodTemplate",
        json!({"template": {"spec": {"containers": [web()]}}}),
    );
    assert_eq!(
        pt,
        json!({"template": {"metadata": {"creationTimestamp": null},
               "spec": template_spec_defaulted(json!([web_defaulted()]))}})
    );
}

// Upstream counterpart: pkg/apis/batch/v1/defaults_test.go (expectations from the defaulter).
#[test]
fn job() {
    let j = defaulted(
        "batch",
        "v1",
        "Job",
        json!({"metadata": {"name": "pi"},
               "spec": {"template": {"spec": {"containers": [web()], "restartPolicy": "Never"}}}}),
    );
    let mut pod_spec = template_spec_defaulted(json!([web_defaulted()]));
    pod_spec["restartPolicy"] = json!("Never");
    assert_eq!(
        j,
        json!({"metadata": {"name": "pi"}, "spec": {
            "backoffLimit": 6, "completionMode": "NonIndexed", "completions": 1,
            "manualSelector": false, "parallelism": 1,
            "podReplacementPolicy": "TerminatingOrFailed", "suspend": false,
            "template": {"metadata": {"creationTimestamp": null}, "spec": pod_spec}
        }})
    );
    let indexed = defaulted(
        "batch",
        "v1",
        "Job",
        json!({"spec": {"parallelism": 3, "backoffLimitPerIndex": 1,
               "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}}),
    );
    let spec = &indexed["spec"];
    assert!(spec.get("completions").is_none());
    assert_eq!(spec["parallelism"], 3);
    assert_eq!(spec["backoffLimit"], 2_147_483_647);
    assert_eq!(spec["podReplacementPolicy"], "Failed");
    assert_eq!(
        spec["podFailurePolicy"]["rules"][0]["onPodConditions"][0],
        json!({"type": "DisruptionTarget", "status": "True"})
    );
    let completions_only = defaulted("batch", "v1", "Job", json!({"spec": {"completions": 5}}));
    assert_eq!(completions_only["spec"]["parallelism"], 1);
    assert_eq!(completions_only["spec"]["completions"], 5);
}

#[test]
fn job_selector_generation() {
    let uid = "0d5a2c1e-7f5b-4e1a-9a43-6f0c2f6b1c11";
    // No labels anywhere: everything ends up with the generated labels.
    let mut j = json!({"metadata": {"name": "pi"}, "spec": {"template": {"spec": {}}}});
    job_generated_selector(&mut j, uid);
    apply_defaults("batch", "v1", "Job", &mut j);
    let generated = json!({
        "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "pi",
        "controller-uid": uid, "job-name": "pi"
    });
    assert_eq!(j["spec"]["template"]["metadata"]["labels"], generated);
    assert_eq!(j["metadata"]["labels"], generated);
    assert_eq!(
        j["spec"]["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
    );
    // After defaulting: template labels copied to the Job are shared.
    let mut j = json!({"metadata": {"name": "pi"},
                       "spec": {"template": {"metadata": {"labels": {"app": "pi"}}}}});
    apply_defaults("batch", "v1", "Job", &mut j);
    job_generated_selector(&mut j, uid);
    assert_eq!(j["metadata"]["labels"]["app"], "pi");
    assert_eq!(j["metadata"]["labels"]["job-name"], "pi");
    // The Job's own, different labels stay; user-set template labels win.
    let mut j = json!({"metadata": {"name": "pi", "labels": {"team": "x"}},
                       "spec": {"template": {"metadata": {"labels": {"job-name": "other"}}}}});
    job_generated_selector(&mut j, uid);
    assert_eq!(j["metadata"]["labels"], json!({"team": "x"}));
    assert_eq!(
        j["spec"]["template"]["metadata"]["labels"]["job-name"],
        "other"
    );
    // A manual selector is left alone.
    let mut manual =
        json!({"spec": {"manualSelector": true, "selector": {"matchLabels": {"a": "b"}}}});
    let before = manual.clone();
    job_generated_selector(&mut manual, uid);
    assert_eq!(manual, before);
}

// Upstream counterpart: pkg/apis/batch/v1/defaults_test.go (expectations from the defaulter).
#[test]
fn cron_job() {
    let c = defaulted(
        "batch",
        "v1",
        "CronJob",
        json!({"spec": {"schedule": "*/1 * * * *",
               "jobTemplate": {"spec": {"template": {"spec": {"containers": [web()], "restartPolicy": "OnFailure"}}}}}}),
    );
    let mut pod_spec = template_spec_defaulted(json!([web_defaulted()]));
    pod_spec["restartPolicy"] = json!("OnFailure");
    assert_eq!(
        c,
        json!({"spec": {
            "schedule": "*/1 * * * *", "concurrencyPolicy": "Allow", "suspend": false,
            "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
            "jobTemplate": {"metadata": {"creationTimestamp": null}, "spec": {
                "template": {"metadata": {"creationTimestamp": null}, "spec": pod_spec}}}
        }})
    );
}

#[test]
fn core_storage_kinds() {
    let pvc = defaulted(
        "",
        "v1",
        "PersistentVolumeClaim",
        json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    );
    assert_eq!(
        pvc,
        json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                        "volumeMode": "Filesystem"},
               "status": {"phase": "Pending"}})
    );
    let pv = defaulted(
        "",
        "v1",
        "PersistentVolume",
        json!({"spec": {"capacity": {"storage": "1Gi"}, "hostPath": {"path": "/data"},
                        "iscsi": {"targetPortal": "t", "iqn": "i", "lun": 0}}}),
    );
    assert_eq!(
        pv,
        json!({"spec": {"capacity": {"storage": "1Gi"}, "hostPath": {"path": "/data", "type": ""},
                        "iscsi": {"targetPortal": "t", "iqn": "i", "lun": 0, "iscsiInterface": "default"},
                        "persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem"},
               "status": {"phase": "Pending"}})
    );
    let block = defaulted(
        "",
        "v1",
        "PersistentVolumeClaim",
        json!({"spec": {"volumeMode": "Block"}, "status": {"phase": "Bound"}}),
    );
    assert_eq!(block["spec"]["volumeMode"], "Block");
    assert_eq!(block["status"]["phase"], "Bound");
}

// Upstream: TestSetDefaultLimitRangeItem in pkg/apis/core/v1/defaults_test.go.
#[test]
fn limit_range() {
    let lr = defaulted(
        "",
        "v1",
        "LimitRange",
        json!({"spec": {"limits": [
            {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "100m", "ephemeral-storage": "1Mi"},
             "default": {"memory": "512Mi"}},
            {"type": "Pod", "max": {"cpu": "4"}},
            {"type": "Container"}
        ]}}),
    );
    assert_eq!(
        lr["spec"]["limits"],
        json!([
            {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "100m", "ephemeral-storage": "1Mi"},
             "default": {"memory": "512Mi", "cpu": "2"},
             "defaultRequest": {"memory": "512Mi", "cpu": "2", "ephemeral-storage": "1Mi"}},
            {"type": "Pod", "max": {"cpu": "4"}},
            {"type": "Container"}
        ])
    );
}

#[test]
fn small_core_kinds() {
    let ep = defaulted(
        "",
        "v1",
        "Endpoints",
        json!({"subsets": [{"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}]}),
    );
    assert_eq!(
        ep["subsets"][0]["ports"],
        json!([{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}])
    );
    assert_eq!(defaulted("", "v1", "Secret", json!({}))["type"], "Opaque");
    assert_eq!(
        defaulted("", "v1", "Secret", json!({"type": "kubernetes.io/tls"}))["type"],
        "kubernetes.io/tls"
    );
    let node = defaulted(
        "",
        "v1",
        "Node",
        json!({"status": {"capacity": {"cpu": "4", "pods": "110"}}}),
    );
    assert_eq!(
        node["status"],
        json!({"capacity": {"cpu": "4", "pods": "110"}, "allocatable": {"cpu": "4", "pods": "110"},
               "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
               "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
                            "osImage": "", "containerRuntimeVersion": "", "kubeletVersion": "",
                            "kubeProxyVersion": "", "operatingSystem": "", "architecture": ""}})
    );
    // Kinds handled elsewhere or without defaults are untouched.
    for (g, k) in [
        ("", "Service"),
        ("", "Namespace"),
        ("", "ConfigMap"),
        ("apps", "ControllerRevision"),
    ] {
        let obj = json!({"spec": {"type": ""}, "metadata": {"name": "n"}});
        assert_eq!(defaulted(g, "v1", k, obj.clone()), obj, "{k}");
    }
    // An unknown version is untouched.
    assert_eq!(
        defaulted("apps", "v1beta2", "Deployment", json!({})),
        json!({})
    );
}

// Upstream counterpart: pkg/apis/networking/v1/defaults_test.go (expectations from the defaulter).
#[test]
fn network_kinds() {
    let np = defaulted(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        json!({"spec": {"ingress": [{"ports": [{"port": 80}]}], "egress": [{"ports": [{"protocol": "UDP", "port": 53}]}]}}),
    );
    assert_eq!(
        np,
        json!({"spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"],
                        "ingress": [{"ports": [{"port": 80, "protocol": "TCP"}]}],
                        "egress": [{"ports": [{"protocol": "UDP", "port": 53}]}]}})
    );
    let ingress_only = defaulted("networking.k8s.io", "v1", "NetworkPolicy", json!({}));
    assert_eq!(
        ingress_only,
        json!({"spec": {"podSelector": {}, "policyTypes": ["Ingress"]}})
    );
    let kept = defaulted(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        json!({"spec": {"policyTypes": ["Egress"]}}),
    );
    assert_eq!(kept["spec"]["policyTypes"], json!(["Egress"]));
    let ic = defaulted(
        "networking.k8s.io",
        "v1",
        "IngressClass",
        json!({"spec": {"controller": "x/y", "parameters": {"kind": "K", "name": "n"}}}),
    );
    assert_eq!(ic["spec"]["parameters"]["scope"], "Cluster");
    let slice = defaulted(
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        json!({"addressType": "IPv4", "ports": [{"port": 80}], "endpoints": [{"addresses": ["10.0.0.1"]}]}),
    );
    assert_eq!(
        slice,
        json!({"addressType": "IPv4", "ports": [{"port": 80, "name": "", "protocol": "TCP"}],
               "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {}}]})
    );
    let empty = defaulted(
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        json!({"addressType": "IPv4"}),
    );
    assert_eq!(
        empty,
        json!({"addressType": "IPv4", "endpoints": null, "ports": null})
    );
}

// No upstream test consulted; expectations derived from pkg/apis/rbac/v1/defaults.go.
#[test]
fn rbac_bindings() {
    for kind in ["RoleBinding", "ClusterRoleBinding"] {
        let b = defaulted(
            "rbac.authorization.k8s.io",
            "v1",
            kind,
            json!({"roleRef": {"kind": "ClusterRole", "name": "view"}, "subjects": [
                {"kind": "User", "name": "u"}, {"kind": "Group", "name": "g"},
                {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"},
                {"kind": "User", "name": "v", "apiGroup": "other"}
            ]}),
        );
        assert_eq!(
            b,
            json!({"roleRef": {"kind": "ClusterRole", "name": "view", "apiGroup": "rbac.authorization.k8s.io"},
                   "subjects": [
                {"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"},
                {"kind": "Group", "name": "g", "apiGroup": "rbac.authorization.k8s.io"},
                {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"},
                {"kind": "User", "name": "v", "apiGroup": "other"}
            ]})
        );
    }
}

// Upstream: TestGenerateScaleUpRules and its scale-down twin in
// pkg/apis/autoscaling/v2/defaults_test.go; expectations derived from the defaulter.
#[test]
fn horizontal_pod_autoscalers() {
    let target = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"});
    let h = defaulted(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        json!({"spec": {"scaleTargetRef": target, "maxReplicas": 5}}),
    );
    assert_eq!(
        h,
        json!({"spec": {"scaleTargetRef": target, "maxReplicas": 5, "minReplicas": 1, "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}
        ]}})
    );
    let b = defaulted(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        json!({"spec": {"minReplicas": 2, "maxReplicas": 5,
               "metrics": [{"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}],
               "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}),
    );
    assert_eq!(b["spec"]["minReplicas"], 2);
    assert_eq!(b["spec"]["metrics"][0]["type"], "Pods");
    assert_eq!(
        b["spec"]["behavior"],
        json!({
            "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15}]},
            "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
                {"type": "Percent", "value": 100, "periodSeconds": 15}]}
        })
    );
    let v1 = defaulted(
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        json!({"spec": {"maxReplicas": 3}}),
    );
    assert_eq!(
        v1,
        json!({"spec": {"maxReplicas": 3, "minReplicas": 1, "targetCPUUtilizationPercentage": 80}})
    );
}

#[test]
fn scheduling_and_storage_kinds() {
    assert_eq!(
        defaulted(
            "scheduling.k8s.io",
            "v1",
            "PriorityClass",
            json!({"value": 1000})
        ),
        json!({"value": 1000, "preemptionPolicy": "PreemptLowerPriority"})
    );
    assert_eq!(
        defaulted(
            "storage.k8s.io",
            "v1",
            "StorageClass",
            json!({"provisioner": "p"})
        ),
        json!({"provisioner": "p", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"})
    );
    assert_eq!(
        defaulted("storage.k8s.io", "v1", "CSIDriver", json!({})),
        json!({"spec": {"attachRequired": true, "podInfoOnMount": false, "storageCapacity": false,
                        "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"],
                        "requiresRepublish": false, "seLinuxMount": false}})
    );
}

// Upstream counterpart: pkg/apis/admissionregistration/v1/defaults_test.go (expectations
// derived from the v1 defaulter).
#[test]
fn admission_kinds() {
    let rules = json!([{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]);
    let mut scoped = rules.clone();
    scoped[0]["scope"] = json!("*");
    let w = defaulted(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        json!({"webhooks": [{"name": "w.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                             "clientConfig": {"service": {"namespace": "ns", "name": "svc"}}, "rules": rules}]}),
    );
    assert_eq!(
        w["webhooks"][0],
        json!({"name": "w.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
               "clientConfig": {"service": {"namespace": "ns", "name": "svc", "port": 443}}, "rules": scoped,
               "failurePolicy": "Fail", "matchPolicy": "Equivalent", "namespaceSelector": {},
               "objectSelector": {}, "timeoutSeconds": 10, "reinvocationPolicy": "Never"})
    );
    let v = defaulted(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        json!({"webhooks": [{"name": "v", "clientConfig": {"url": "https://x"}}]}),
    );
    assert!(v["webhooks"][0].get("reinvocationPolicy").is_none());
    assert_eq!(v["webhooks"][0]["timeoutSeconds"], 10);
    let vap = defaulted(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        json!({"spec": {"matchConstraints": {"resourceRules": rules}, "validations": [{"expression": "true"}]}}),
    );
    assert_eq!(
        vap["spec"],
        json!({"failurePolicy": "Fail", "validations": [{"expression": "true"}],
               "matchConstraints": {"resourceRules": scoped, "matchPolicy": "Equivalent",
                                    "namespaceSelector": {}, "objectSelector": {}}})
    );
    let binding = defaulted(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        json!({"spec": {"policyName": "p", "validationActions": ["Deny"], "matchResources": {}}}),
    );
    assert_eq!(
        binding["spec"]["matchResources"],
        json!({"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}})
    );
}

#[test]
fn flow_control_kinds() {
    let fs = defaulted(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "FlowSchema",
        json!({"spec": {"priorityLevelConfiguration": {"name": "x"}}}),
    );
    assert_eq!(fs["spec"]["matchingPrecedence"], 1000);
    let pl = defaulted(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "PriorityLevelConfiguration",
        json!({"spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}}),
    );
    assert_eq!(
        pl["spec"]["limited"],
        json!({"nominalConcurrencyShares": 30, "lendablePercent": 0, "limitResponse": {
            "type": "Queue", "queuing": {"handSize": 8, "queues": 64, "queueLengthLimit": 50}}})
    );
    let zero = defaulted(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "PriorityLevelConfiguration",
        json!({"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 0, "limitResponse": {"type": "Reject"}}}}),
    );
    assert_eq!(zero["spec"]["limited"]["nominalConcurrencyShares"], 0);
}

fn pod_with(containers: Value) -> Value {
    json!({"spec": {"containers": containers}})
}

// Upstream counterpart: pkg/apis/core/helper/qos/qos_test.go (cases derived from GetPodQOS).
#[test]
fn qos_classes() {
    let res = |r: Value| json!({"name": "c", "resources": r});
    let cases = [
        (pod_with(json!([{"name": "c"}])), "BestEffort"),
        (
            pod_with(json!([res(json!({"requests": {"cpu": "0"}}))])),
            "BestEffort",
        ),
        (
            pod_with(json!([res(json!({"requests": {"nvidia.com/gpu": "1"}}))])),
            "BestEffort",
        ),
        (
            pod_with(json!([res(json!({"requests": {"cpu": "100m"}}))])),
            "Burstable",
        ),
        (
            pod_with(json!([res(
                json!({"limits": {"cpu": "1", "memory": "1Gi"}})
            )])),
            "Guaranteed",
        ),
        (
            pod_with(json!([res(
                json!({"limits": {"cpu": "0.5", "memory": "1Gi"},
                                       "requests": {"cpu": "500m", "memory": "1024Mi"}})
            )])),
            "Guaranteed",
        ),
        (
            pod_with(json!([res(
                json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}})
            )])),
            "Burstable",
        ),
        (
            pod_with(json!([res(json!({"limits": {"cpu": "1"}}))])),
            "Burstable",
        ),
        (
            json!({"spec": {"containers": [res(json!({"limits": {"cpu": "1", "memory": "1Gi"}}))],
                            "initContainers": [{"name": "i"}]}}),
            "Burstable",
        ),
        (
            pod_with(json!([
                res(json!({"limits": {"cpu": 2, "memory": "2G"}})),
                res(json!({"limits": {"cpu": "1", "memory": "1e9"}}))
            ])),
            "Guaranteed",
        ),
        (
            pod_with(json!([res(json!({"limits": "bogus"}))])),
            "BestEffort",
        ),
        (json!("not a pod"), "BestEffort"),
    ];
    for (pod, want) in cases {
        assert_eq!(pod_qos(&pod), want, "{pod}");
    }
}

#[test]
fn initial_statuses() {
    let pod =
        pod_with(json!([{"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]));
    assert_eq!(
        initial_status("", "Pod", &pod),
        Some(json!({"phase": "Pending", "qosClass": "Guaranteed"}))
    );
    let gated =
        json!({"spec": {"containers": [{"name": "c"}], "schedulingGates": [{"name": "g"}]}});
    let cond = json!({"type": "PodScheduled", "status": "False", "lastProbeTime": null,
                      "lastTransitionTime": "2025-01-01T00:00:00Z", "reason": "SchedulingGated",
                      "message": "Scheduling is blocked due to non-empty scheduling gates"});
    assert_eq!(
        initial_status_at("", "Pod", &gated, "2025-01-01T00:00:00Z"),
        Some(json!({"phase": "Pending", "qosClass": "BestEffort", "conditions": [cond]}))
    );
    let none = json!({});
    let cases = [
        ("", "PersistentVolumeClaim", json!({"phase": "Pending"})),
        ("", "PersistentVolume", json!({"phase": "Pending"})),
        ("", "ReplicationController", json!({"replicas": 0})),
        ("apps", "Deployment", json!({})),
        ("apps", "ReplicaSet", json!({"replicas": 0})),
        (
            "apps",
            "StatefulSet",
            json!({"replicas": 0, "availableReplicas": 0}),
        ),
        (
            "apps",
            "DaemonSet",
            json!({"currentNumberScheduled": 0, "numberMisscheduled": 0,
                   "desiredNumberScheduled": 0, "numberReady": 0}),
        ),
        ("batch", "Job", json!({})),
        ("batch", "CronJob", json!({})),
        (
            "autoscaling",
            "HorizontalPodAutoscaler",
            json!({"currentMetrics": null, "desiredReplicas": 0}),
        ),
        (
            "policy",
            "PodDisruptionBudget",
            json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}),
        ),
        ("networking.k8s.io", "Ingress", json!({"loadBalancer": {}})),
    ];
    for (g, k, want) in cases {
        assert_eq!(initial_status(g, k, &none), Some(want), "{k}");
    }
    assert_eq!(
        initial_status_at("", "PersistentVolume", &none, "2025-01-01T00:00:00Z"),
        Some(json!({"phase": "Pending", "lastPhaseTransitionTime": "2025-01-01T00:00:00Z"}))
    );
    assert_eq!(
        initial_status(
            "autoscaling",
            "HorizontalPodAutoscaler",
            &json!({"apiVersion": "autoscaling/v1"})
        ),
        Some(json!({"currentReplicas": 0, "desiredReplicas": 0}))
    );
    for (g, k) in [
        ("", "Namespace"),
        ("", "Service"),
        ("", "ConfigMap"),
        ("", "Node"),
        ("rbac.authorization.k8s.io", "Role"),
    ] {
        assert_eq!(initial_status(g, k, &none), None, "{k}");
    }
}

#[test]
fn quantities_parse_to_rounded_milli_units() {
    let cases = [
        ("1", Some(1000)),
        ("100m", Some(100)),
        ("0.5", Some(500)),
        ("1.5Gi", Some(1536 * 1024 * 1024 * 1000)),
        ("1Ki", Some(1_024_000)),
        ("1k", Some(1_000_000)),
        ("1e3", Some(1_000_000)),
        ("1E", Some(1_000_000_000_000_000_000_000)),
        ("1n", Some(1)),
        ("0.0001", Some(1)),
        ("+2", Some(2000)),
        ("-1", Some(-1000)),
        (".5", Some(500)),
        ("0", Some(0)),
        ("1e-3", Some(1)),
        ("", None),
        (".", None),
        ("abc", None),
        ("1.5.5", None),
        ("1e", None),
        ("1x", None),
        ("1 Gi", None),
        ("--1", None),
    ];
    for (s, want) in cases {
        assert_eq!(parse_quantity_milli(s), want, "{s}");
    }
    assert_eq!(
        parse_quantity_milli("9Ei9999999999999999999999999999999"),
        None
    );
    assert_eq!(parse_quantity_milli("1e999"), Some(i128::MAX));
    assert_eq!(parse_quantity_milli(&"9".repeat(60)), Some(i128::MAX));
    assert_eq!(quantity_milli(&json!(2)), Some(2000));
    assert_eq!(quantity_milli(&json!(null)), None);
}

#[test]
fn pod_admission() {
    let mut pod = json!({"spec": {"containers": [{"name": "c"}]}});
    assert_eq!(admit_pod_create(&mut pod), Ok(()));
    assert_eq!(
        pod["spec"],
        json!({"containers": [{"name": "c"}], "serviceAccountName": "default", "serviceAccount": "default",
               "priority": 0, "preemptionPolicy": "PreemptLowerPriority", "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        ]})
    );
    let again = pod.clone();
    assert_eq!(admit_pod_create(&mut pod), Ok(()));
    assert_eq!(pod, again);

    let mut tolerant =
        json!({"spec": {"tolerations": [{"operator": "Exists"}], "serviceAccountName": "sa"}});
    assert_eq!(admit_pod_create(&mut tolerant), Ok(()));
    assert_eq!(
        tolerant["spec"]["tolerations"],
        json!([{"operator": "Exists"}])
    );
    assert_eq!(tolerant["spec"]["serviceAccount"], "sa");

    let mut partial = json!({"spec": {"tolerations": [
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]}});
    assert_eq!(admit_pod_create(&mut partial), Ok(()));
    assert_eq!(
        partial["spec"]["tolerations"][1]["key"],
        "node.kubernetes.io/not-ready"
    );
    assert_eq!(
        partial["spec"]["tolerations"].as_array().map(Vec::len),
        Some(2)
    );

    let mut bad = json!({"spec": {"priority": 2}});
    assert_eq!(
        admit_pod_create(&mut bad),
        Err("the integer value of priority (2) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name".to_string())
    );
    let mut bad = json!({"spec": {"preemptionPolicy": "Never"}});
    assert_eq!(
        admit_pod_create(&mut bad),
        Err("the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name".to_string())
    );
    let mut classed = json!({"spec": {"priorityClassName": "high"}});
    assert_eq!(admit_pod_create(&mut classed), Ok(()));
    assert!(classed["spec"].get("priority").is_none());
}

#[test]
fn wrong_types_are_skipped() {
    let odd = json!({"spec": {
        "dnsPolicy": 3, "securityContext": "x", "terminationGracePeriodSeconds": "30",
        "containers": [7, {"name": "c", "image": 5, "ports": "80", "resources": [], "livenessProbe": {"timeoutSeconds": 0.0}}],
        "volumes": {"name": "v"}
    }});
    let pod = defaulted("", "v1", "Pod", odd);
    assert_eq!(pod["spec"]["dnsPolicy"], 3);
    assert_eq!(pod["spec"]["securityContext"], "x");
    assert_eq!(pod["spec"]["terminationGracePeriodSeconds"], "30");
    assert_eq!(pod["spec"]["containers"][0], 7);
    assert_eq!(pod["spec"]["containers"][1]["resources"], json!([]));
    assert_eq!(
        pod["spec"]["containers"][1]["imagePullPolicy"],
        "IfNotPresent"
    );
    assert_eq!(
        pod["spec"]["containers"][1]["livenessProbe"]["timeoutSeconds"],
        0.0
    );
    for kind in ["Deployment", "StatefulSet"] {
        assert_eq!(
            defaulted("apps", "v1", kind, json!({"spec": 1})),
            json!({"spec": 1})
        );
    }
    let mut not_object = json!([1, 2]);
    apply_defaults("", "v1", "Pod", &mut not_object);
    assert_eq!(not_object, json!([1, 2]));
}

/// Every (group, version, kind) the module defaults, plus a few it
/// must leave alone.
const KINDS: &[(&str, &str, &str)] = &[
    ("", "v1", "Pod"),
    ("", "v1", "PodTemplate"),
    ("", "v1", "ReplicationController"),
    ("", "v1", "PersistentVolumeClaim"),
    ("", "v1", "PersistentVolume"),
    ("", "v1", "Endpoints"),
    ("", "v1", "LimitRange"),
    ("", "v1", "Secret"),
    ("", "v1", "Node"),
    ("", "v1", "Service"),
    ("apps", "v1", "Deployment"),
    ("apps", "v1", "StatefulSet"),
    ("apps", "v1", "DaemonSet"),
    ("apps", "v1", "ReplicaSet"),
    ("batch", "v1", "Job"),
    ("batch", "v1", "CronJob"),
    ("autoscaling", "v2", "HorizontalPodAutoscaler"),
    ("autoscaling", "v1", "HorizontalPodAutoscaler"),
    ("networking.k8s.io", "v1", "NetworkPolicy"),
    ("networking.k8s.io", "v1", "IngressClass"),
    ("discovery.k8s.io", "v1", "EndpointSlice"),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
    ("scheduling.k8s.io", "v1", "PriorityClass"),
    ("storage.k8s.io", "v1", "StorageClass"),
    ("storage.k8s.io", "v1", "CSIDriver"),
    (
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
    ),
    ("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema"),
    (
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "PriorityLevelConfiguration",
    ),
    ("policy", "v1", "PodDisruptionBudget"),
];

/// Random JSON whose keys are the field names the defaulters look at,
/// so random documents reach deep into the walk.
fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-2i64..3).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop_oneof![
            Just("".to_string()),
            Just("RollingUpdate".to_string()),
            Just("Container".to_string()),
            Just("User".to_string()),
            Just("nginx:latest".to_string()),
            Just("1Gi".to_string()),
            Just("500m".to_string()),
            "[a-z0-9:./@-]{0,8}",
        ]
        .prop_map(Value::from),
    ];
    let keys = prop_oneof![
        Just("spec"),
        Just("metadata"),
        Just("labels"),
        Just("template"),
        Just("containers"),
        Just("initContainers"),
        Just("ephemeralContainers"),
        Just("volumes"),
        Just("resources"),
        Just("limits"),
        Just("requests"),
        Just("ports"),
        Just("env"),
        Just("valueFrom"),
        Just("fieldRef"),
        Just("livenessProbe"),
        Just("httpGet"),
        Just("grpc"),
        Just("lifecycle"),
        Just("preStop"),
        Just("hostNetwork"),
        Just("strategy"),
        Just("updateStrategy"),
        Just("rollingUpdate"),
        Just("type"),
        Just("selector"),
        Just("volumeClaimTemplates"),
        Just("status"),
        Just("capacity"),
        Just("allocatable"),
        Just("projected"),
        Just("sources"),
        Just("downwardAPI"),
        Just("items"),
        Just("secret"),
        Just("ephemeral"),
        Just("volumeClaimTemplate"),
        Just("limits"),
        Just("max"),
        Just("min"),
        Just("default"),
        Just("defaultRequest"),
        Just("subsets"),
        Just("behavior"),
        Just("scaleUp"),
        Just("scaleDown"),
        Just("policies"),
        Just("metrics"),
        Just("egress"),
        Just("ingress"),
        Just("endpoints"),
        Just("subjects"),
        Just("roleRef"),
        Just("webhooks"),
        Just("rules"),
        Just("clientConfig"),
        Just("service"),
        Just("jobTemplate"),
        Just("podFailurePolicy"),
        Just("onPodConditions"),
        Just("limited"),
        Just("limitResponse"),
        Just("queuing"),
        Just("matchConstraints"),
        Just("resourceRules"),
        Just("tolerations"),
        Just("image"),
        Just("schedulingGates"),
        Just("priority"),
        Just("name"),
        Just("kind"),
        Just("serviceAccount"),
        Just("serviceAccountName"),
        Just("completions"),
        Just("manualSelector"),
        Just("persistentVolumeClaimRetentionPolicy"),
    ]
    .prop_map(str::to_string);
    leaf.prop_recursive(6, 80, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(keys.clone(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Well-formed objects of the defaulted kinds, which the shaped
/// property test damages at random places: purely random documents
/// rarely reach a container inside a template.
fn skeletons() -> Vec<(usize, Value)> {
    let pod_spec = json!({
        "hostNetwork": true,
        "containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}],
                        "env": [{"name": "e", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}],
                        "resources": {"limits": {"cpu": "1"}, "requests": {"memory": "1Gi"}},
                        "livenessProbe": {"httpGet": {"port": 80}, "grpc": {"port": 1}},
                        "lifecycle": {"postStart": {"httpGet": {"port": 1}}}}],
        "initContainers": [{"name": "i", "image": "busybox"}],
        "volumes": [{"name": "a"}, {"name": "b", "projected": {"sources": [
            {"serviceAccountToken": {"path": "t"}}, {"downwardAPI": {"items": [{"fieldRef": {}}]}}]}},
            {"name": "c", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}, {"name": "d", "scaleIO": {}}],
        "tolerations": [{"key": "k"}], "schedulingGates": [{"name": "g"}], "serviceAccount": "s"
    });
    let template = json!({"metadata": {"labels": {"app": "a"}}, "spec": pod_spec});
    let index = |kind: &str| KINDS.iter().position(|(_, _, k)| *k == kind).unwrap_or(0);
    vec![
        (
            index("Pod"),
            json!({"metadata": {"name": "p"}, "spec": pod_spec}),
        ),
        (
            index("Deployment"),
            json!({"spec": {"strategy": {"rollingUpdate": {}}, "template": template}}),
        ),
        (
            index("DaemonSet"),
            json!({"spec": {"updateStrategy": {}, "template": template}}),
        ),
        (
            index("StatefulSet"),
            json!({"spec": {"updateStrategy": {}, "template": template,
                   "volumeClaimTemplates": [{"metadata": {"name": "d"}, "spec": {}}]}}),
        ),
        (
            index("ReplicationController"),
            json!({"spec": {"template": template}}),
        ),
        (
            index("Job"),
            json!({"metadata": {"name": "j"}, "spec": {"template": template,
                   "podFailurePolicy": {"rules": [{"onPodConditions": [{"type": "x"}]}]}}}),
        ),
        (
            index("CronJob"),
            json!({"spec": {"jobTemplate": {"spec": {"template": template}}}}),
        ),
        (
            index("LimitRange"),
            json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}, "min": {"memory": "1"}}]}}),
        ),
        (
            index("HorizontalPodAutoscaler"),
            json!({"spec": {"behavior": {"scaleUp": {"policies": []}, "scaleDown": {}}}}),
        ),
        (
            index("NetworkPolicy"),
            json!({"spec": {"ingress": [{"ports": [{}]}], "egress": [{"ports": [{}]}]}}),
        ),
        (
            index("EndpointSlice"),
            json!({"ports": [{}], "endpoints": [{}]}),
        ),
        (
            index("MutatingWebhookConfiguration"),
            json!({"webhooks": [{"rules": [{}], "clientConfig": {"service": {}}}]}),
        ),
        (
            index("PriorityLevelConfiguration"),
            json!({"spec": {"limited": {"limitResponse": {"queuing": {}}}, "exempt": {}}}),
        ),
        (index("Node"), json!({"status": {"capacity": {"cpu": "1"}}})),
        (
            index("PersistentVolume"),
            json!({"spec": {"rbd": {}, "azureDisk": {}, "hostPath": {}}}),
        ),
    ]
}

/// Replaces the node `sel` leads to with `val`: each step either stops
/// (one time in four) or descends into the child `sel` picks.
fn damage(v: &mut Value, mut sel: u64, val: Value) {
    let mut cur = v;
    loop {
        let n = match &*cur {
            Value::Object(m) => m.len(),
            Value::Array(a) => a.len(),
            _ => 0,
        };
        if n == 0 || sel.is_multiple_of(4) {
            *cur = val;
            return;
        }
        sel /= 4;
        let i = (sel % n as u64) as usize;
        sel /= n as u64;
        let next = match cur {
            Value::Object(m) => m.values_mut().nth(i),
            Value::Array(a) => a.get_mut(i),
            _ => None,
        };
        let Some(next) = next else {
            return;
        };
        cur = next;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn damaged_objects_default_idempotently(
        which in 0..15usize,
        hits in proptest::collection::vec((any::<u64>(), arb_json()), 0..4),
    ) {
        let all = skeletons();
        let Some((kind, skeleton)) = all.get(which % all.len()) else {
            return Ok(());
        };
        let (g, v, k) = KINDS[*kind];
        let mut obj = skeleton.clone();
        for (sel, val) in hits {
            damage(&mut obj, sel, val);
        }
        let _ = initial_status(g, k, &obj);
        let mut once = obj;
        apply_defaults(g, v, k, &mut once);
        let mut twice = once.clone();
        apply_defaults(g, v, k, &mut twice);
        prop_assert_eq!(&once, &twice);
        let mut admitted = once.clone();
        let _ = admit_pod_create(&mut admitted);
    }

    #[test]
    fn defaulting_never_panics_and_is_idempotent(obj in arb_json(), which in 0..KINDS.len()) {
        let (g, v, k) = KINDS[which];
        let mut once = obj;
        apply_defaults(g, v, k, &mut once);
        let mut twice = once.clone();
        apply_defaults(g, v, k, &mut twice);
        prop_assert_eq!(once, twice);
    }

    #[test]
    fn status_selector_and_admission_never_panic(obj in arb_json(), which in 0..KINDS.len()) {
        let (g, _, k) = KINDS[which];
        let _ = initial_status(g, k, &obj);
        let _ = initial_status_at(g, k, &obj, "2025-01-01T00:00:00Z");
        let _ = pod_qos(&obj);
        let mut job = obj.clone();
        job_generated_selector(&mut job, "uid");
        let once = job.clone();
        job_generated_selector(&mut job, "uid");
        prop_assert_eq!(once, job);
        let mut ds = obj.clone();
        daemon_set_template_generation(Some(&obj), &mut ds);
        daemon_set_template_generation(None, &mut ds);
        let mut pod = obj;
        if admit_pod_create(&mut pod).is_ok() {
            let once = pod.clone();
            prop_assert!(admit_pod_create(&mut pod).is_ok());
            prop_assert_eq!(once, pod);
        }
    }

    #[test]
    fn quantity_and_image_parsers_never_panic(s in any::<String>(), t in "[0-9.+-]{0,6}[a-zA-Z]{0,3}[0-9+-]{0,4}") {
        let _ = parse_quantity_milli(&s);
        let _ = parse_quantity_milli(&t);
        let _ = image_tag(&s);
    }
}
