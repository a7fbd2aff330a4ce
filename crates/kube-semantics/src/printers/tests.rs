use super::*;
use proptest::prelude::*;
use serde_json::json;

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2024-05-01T12:00:00Z")
        .map(|t| t.with_timezone(&Utc))
        .expect("valid time")
}

/// The RFC 3339 time `secs` seconds before `now()`.
fn ago(secs: i64) -> String {
    (now() - chrono::TimeDelta::seconds(secs))
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn row(group: &str, kind: &str, obj: Value) -> Vec<Value> {
    let cells = cells(group, kind, &obj, now());
    let columns = columns(group, kind).expect("a printer");
    assert_eq!(cells.len(), columns.len(), "{group}/{kind}");
    cells
}

fn head(group: &str, kind: &str, obj: Value, n: usize) -> Value {
    Value::Array(row(group, kind, obj)[..n].to_vec())
}

fn names(group: &str, kind: &str) -> Vec<(&'static str, u8)> {
    columns(group, kind)
        .expect("a printer")
        .iter()
        .map(|c| (c.name, c.priority))
        .collect()
}

// ---- age / HumanDuration (apimachinery duration_test.go boundaries)

#[test]
fn age_boundaries() {
    let cases: &[(i64, &str)] = &[
        (0, "0s"),
        (-1, "0s"),
        (-2, "<invalid>"),
        (1, "1s"),
        (119, "119s"),
        (120, "2m"),
        (121, "2m1s"),
        (9 * 60 + 59, "9m59s"),
        (10 * 60, "10m"),
        (179 * 60 + 59, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 5 * 60, "3h5m"),
        (7 * 3600 + 59 * 60 + 59, "7h59m"),
        (8 * 3600, "8h"),
        (47 * 3600 + 3599, "47h"),
        (48 * 3600, "2d"),
        (2 * 86400 + 5 * 3600, "2d5h"),
        (7 * 86400 + 23 * 3600, "7d23h"),
        (8 * 86400, "8d"),
        (729 * 86400, "729d"),
        (730 * 86400, "2y"),
        ((3 * 365 + 45) * 86400, "3y45d"),
        (8 * 365 * 86400 - 1, "7y364d"),
        (8 * 365 * 86400, "8y"),
    ];
    for (secs, want) in cases {
        assert_eq!(age(Some(&ago(*secs)), now()), *want, "{secs}s");
    }
}

#[test]
fn age_of_missing_zero_and_malformed_timestamps() {
    assert_eq!(age(None, now()), "<unknown>");
    assert_eq!(age(Some(""), now()), "<unknown>");
    assert_eq!(age(Some("0001-01-01T00:00:00Z"), now()), "<unknown>");
    assert_eq!(age(Some("yesterday"), now()), "<unknown>");
    assert_eq!(age(Some("2024-05-01"), now()), "<unknown>");
    // Offsets and fractions are read as RFC 3339 allows.
    assert_eq!(age(Some("2024-05-01T13:59:00+02:00"), now()), "60s");
    assert_eq!(age(Some("2024-05-01T11:59:59.9Z"), now()), "0s");
    // Go's Duration saturates at about 292 years.
    assert_eq!(age(Some("0001-01-02T00:00:00Z"), now()), "292y");
    assert_eq!(human_duration(i64::MIN), "<invalid>");
    assert_eq!(human_duration(i64::MAX), "292y");
}

// ---- Pod (printers_test.go TestPrintPod, TestPrintPodWithRestartableInitContainer,
// TestPrintPodwide)

fn pod(containers: usize, status: Value) -> Value {
    json!({
        "metadata": {"name": "test", "creationTimestamp": ago(3600)},
        "spec": {"containers": vec![json!({"name": "c"}); containers]},
        "status": status,
    })
}

#[test]
fn pod_columns() {
    assert_eq!(
        names("", "Pod"),
        [
            ("Name", 0),
            ("Ready", 0),
            ("Status", 0),
            ("Restarts", 0),
            ("Age", 0),
            ("IP", 1),
            ("Node", 1),
            ("Nominated Node", 1),
            ("Readiness Gates", 1)
        ]
    );
    let cols = columns("", "Pod").expect("pod");
    assert_eq!(cols[0].format, "name");
    assert_eq!(cols[3].type_, "string");
}

#[test]
fn pod_status_from_containers() {
    let running = json!({"ready": true, "restartCount": 3, "state": {"running": {}}});
    // test1: phase shows through.
    let p = pod(
        2,
        json!({"phase": "podPhase", "containerStatuses": [running, {"restartCount": 3}]}),
    );
    assert_eq!(
        head("", "Pod", p, 5),
        json!(["test", "1/2", "podPhase", "6", "60m"])
    );
    // test2: a waiting reason overrides the phase.
    let p = pod(
        2,
        json!({"phase": "podPhase", "containerStatuses": [running,
            {"restartCount": 3, "state": {"waiting": {"reason": "ContainerWaitingReason"}}}]}),
    );
    assert_eq!(head("", "Pod", p, 3)[2], "ContainerWaitingReason");
    // test3: the first container's state wins.
    let p = pod(
        2,
        json!({"phase": "podPhase", "containerStatuses": [
            {"state": {"waiting": {"reason": "ContainerWaitingReason"}}},
            {"state": {"terminated": {"reason": "ContainerTerminatedReason"}}}]}),
    );
    assert_eq!(
        head("", "Pod", p, 3),
        json!(["test", "0/2", "ContainerWaitingReason"])
    );
    // test5: status.reason replaces the phase.
    let p = pod(2, json!({"reason": "podReason", "phase": "podPhase"}));
    assert_eq!(head("", "Pod", p, 3)[2], "podReason");
    // Terminated without a reason: the signal, else the exit code.
    let p = pod(
        1,
        json!({"containerStatuses": [{"state": {"terminated": {"exitCode": 2}}}]}),
    );
    assert_eq!(head("", "Pod", p, 3)[2], "ExitCode:2");
    let p = pod(
        1,
        json!({"containerStatuses": [{"state": {"terminated": {"exitCode": 137, "signal": 9}}}]}),
    );
    assert_eq!(head("", "Pod", p, 3)[2], "Signal:9");
}

#[test]
fn pod_completed_with_a_running_container() {
    let statuses = json!([
        {"ready": true, "restartCount": 3, "state": {"terminated": {"reason": "Completed"}}},
        {"ready": true, "restartCount": 3, "state": {"running": {}}}
    ]);
    let p = pod(
        2,
        json!({"phase": "Running", "containerStatuses": statuses}),
    );
    assert_eq!(head("", "Pod", p, 3)[2], "NotReady");
    let p = pod(
        2,
        json!({"phase": "Running", "containerStatuses": statuses,
            "conditions": [{"type": "Ready", "status": "True"}]}),
    );
    assert_eq!(
        head("", "Pod", p, 4),
        json!(["test", "1/2", "Running", "6"])
    );
}

#[test]
fn pod_init_containers() {
    let mut p = pod(
        1,
        json!({"phase": "podPhase",
            "initContainerStatuses": [{"restartCount": 3, "state": {"running": {}},
                "lastState": {"terminated": {"finishedAt": ago(10)}}}],
            "containerStatuses": [{"state": {"waiting": {}}}]}),
    );
    p["spec"]["initContainers"] = json!([{"name": "i"}]);
    // test7
    assert_eq!(
        head("", "Pod", p, 4),
        json!(["test", "0/1", "Init:0/1", "3 (10s ago)"])
    );

    // test10: restarts of all init containers add up; the latest restart shows.
    let mut p = pod(
        1,
        json!({"phase": "podPhase", "initContainerStatuses": [
            {"restartCount": 2, "state": {"terminated": {}},
                "lastState": {"terminated": {"finishedAt": ago(120)}}},
            {"restartCount": 3, "state": {"running": {}},
                "lastState": {"terminated": {"finishedAt": ago(10)}}}]}),
    );
    p["spec"]["initContainers"] = json!([{"name": "a"}, {"name": "b"}]);
    assert_eq!(
        head("", "Pod", p, 4),
        json!(["test", "0/1", "Init:1/2", "5 (10s ago)"])
    );

    let failed = |term: Value| {
        let mut p = pod(
            1,
            json!({"initContainerStatuses": [{"state": {"terminated": term}}]}),
        );
        p["spec"]["initContainers"] = json!([{"name": "a"}]);
        row("", "Pod", p)[2].clone()
    };
    assert_eq!(failed(json!({"exitCode": 1})), "Init:ExitCode:1");
    assert_eq!(
        failed(json!({"exitCode": 1, "signal": 15})),
        "Init:Signal:15"
    );
    assert_eq!(
        failed(json!({"exitCode": 1, "reason": "Error"})),
        "Init:Error"
    );
    let mut p = pod(
        1,
        json!({"initContainerStatuses": [{"state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}),
    );
    p["spec"]["initContainers"] = json!([{"name": "a"}]);
    assert_eq!(row("", "Pod", p)[2], "Init:CrashLoopBackOff");

    // test11: initialized; only the app containers' restarts count.
    let mut p = pod(
        1,
        json!({"phase": "Running",
            "initContainerStatuses": [{"restartCount": 2, "state": {"terminated": {}},
                "lastState": {"terminated": {"finishedAt": ago(120)}}}],
            "containerStatuses": [{"restartCount": 4, "state": {"running": {}},
                "lastState": {"terminated": {"finishedAt": ago(20)}}}]}),
    );
    p["spec"]["initContainers"] = json!([{"name": "a"}]);
    assert_eq!(
        head("", "Pod", p, 4),
        json!(["test", "0/1", "Running", "4 (20s ago)"])
    );
}

#[test]
fn pod_sidecars() {
    let spec_init = json!([
        {"name": "restartable-init-1", "restartPolicy": "Always"},
        {"name": "restartable-init-2", "restartPolicy": "Always"}
    ]);
    // test2 of TestPrintPodWithRestartableInitContainer.
    let mut p = pod(
        1,
        json!({"phase": "Running",
            "initContainerStatuses": [
                {"name": "restartable-init-1", "restartCount": 3, "started": true,
                    "state": {"running": {}},
                    "lastState": {"terminated": {"finishedAt": ago(10)}}},
                {"name": "restartable-init-2", "started": true, "state": {"running": {}}}],
            "containerStatuses": [{"ready": true, "restartCount": 4, "state": {"running": {}},
                "lastState": {"terminated": {"finishedAt": ago(20)}}}],
            "conditions": [{"type": "Initialized", "status": "True"}]}),
    );
    p["spec"]["initContainers"] = spec_init.clone();
    assert_eq!(
        head("", "Pod", p, 4),
        json!(["test", "1/3", "Running", "7 (10s ago)"])
    );

    // test4: statuses of containers the spec does not have.
    let mut p = pod(
        1,
        json!({"phase": "Running",
            "initContainerStatuses": [{"name": "initinvalid"}, {"name": "init1"}, {"name": "sidecar1"}],
            "containerStatuses": [{"name": "containerinvalid"}, {"name": "c"}]}),
    );
    p["spec"]["initContainers"] =
        json!([{"name": "init1"}, {"name": "sidecar1", "restartPolicy": "Always"}]);
    assert_eq!(
        head("", "Pod", p, 4),
        json!(["test", "0/2", "Init:0/2", "0"])
    );
}

#[test]
fn pod_scheduling_gated_and_terminating() {
    let p = pod(
        2,
        json!({"phase": "podPhase", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}),
    );
    assert_eq!(
        head("", "Pod", p, 4),
        json!(["test", "0/2", "SchedulingGated", "0"])
    );

    let mut p = pod(
        1,
        json!({"phase": "Running", "containerStatuses": [{"state": {"running": {}}}]}),
    );
    p["metadata"]["deletionTimestamp"] = json!(ago(10));
    assert_eq!(row("", "Pod", p.clone())[2], "Terminating");
    p["status"]["phase"] = json!("Succeeded");
    p["status"]["containerStatuses"] = json!([{"state": {"terminated": {"reason": "Completed"}}}]);
    assert_eq!(row("", "Pod", p.clone())[2], "Completed");
    p["status"]["reason"] = json!("NodeLost");
    assert_eq!(row("", "Pod", p)[2], "Unknown");
}

#[test]
fn pod_row_conditions() {
    // TestPrintPodConditions
    let finished = |phase: &str| row_conditions("", "Pod", &pod(1, json!({"phase": phase})));
    assert_eq!(
        finished("Succeeded"),
        [
            json!({"type": "Completed", "status": "True", "reason": "Succeeded",
            "message": "The pod has completed successfully."})
        ]
    );
    assert_eq!(
        finished("Failed"),
        [
            json!({"type": "Completed", "status": "True", "reason": "Failed",
            "message": "The pod failed."})
        ]
    );
    assert!(finished("Running").is_empty());
    assert!(row_conditions("batch", "Job", &json!({"status": {"phase": "Failed"}})).is_empty());
}

#[test]
fn pod_wide() {
    let mut p = pod(
        2,
        json!({"phase": "podPhase", "podIPs": [{"ip": "1.1.1.1"}, {"ip": "2001:db8::"}],
            "nominatedNodeName": "node1",
            "conditions": [{"type": "condition1", "status": "False"},
                {"type": "condition2", "status": "True"}],
            "containerStatuses": [{"ready": true, "restartCount": 3, "state": {"running": {}}},
                {"restartCount": 3}]}),
    );
    p["spec"]["nodeName"] = json!("test1");
    p["spec"]["readinessGates"] = json!([{"conditionType": "condition1"},
        {"conditionType": "condition2"}, {"conditionType": "condition3"}]);
    assert_eq!(
        row("", "Pod", p),
        json!([
            "test", "1/2", "podPhase", "6", "60m", "1.1.1.1", "test1", "node1", "1/3"
        ])
        .as_array()
        .cloned()
        .unwrap_or_default()
    );
    let p = pod(
        1,
        json!({"podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.9"}]}),
    );
    assert_eq!(
        row("", "Pod", p)[5..],
        [
            json!("10.0.0.1"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>")
        ]
    );
}

/// Headers as `kubectl get` prints them (priority-0 columns) and the
/// extra ones of `-o wide`, per the column definitions of AddHandlers.
#[test]
fn headers_of_the_common_kinds() {
    let headers = |group: &str, kind: &str, wide: u8| {
        columns(group, kind)
            .expect("a printer")
            .iter()
            .filter(|c| c.priority == wide)
            .map(|c| c.name.to_uppercase())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "",
            "Service",
            "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE",
            "SELECTOR",
        ),
        (
            "",
            "Node",
            "NAME STATUS ROLES AGE VERSION",
            "INTERNAL-IP EXTERNAL-IP OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME",
        ),
        (
            "",
            "Event",
            "LAST SEEN TYPE REASON OBJECT MESSAGE",
            "SUBOBJECT SOURCE FIRST SEEN COUNT NAME",
        ),
        (
            "",
            "PersistentVolume",
            "NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS VOLUMEATTRIBUTESCLASS REASON AGE",
            "VOLUMEMODE",
        ),
        (
            "",
            "PersistentVolumeClaim",
            "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE",
            "VOLUMEMODE",
        ),
        ("", "Secret", "NAME TYPE DATA AGE", ""),
        ("", "ConfigMap", "NAME DATA AGE", ""),
        ("", "ResourceQuota", "NAME AGE REQUEST LIMIT", ""),
        (
            "batch",
            "Job",
            "NAME STATUS COMPLETIONS DURATION AGE",
            "CONTAINERS IMAGES SELECTOR",
        ),
        (
            "batch",
            "CronJob",
            "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE",
            "CONTAINERS IMAGES SELECTOR",
        ),
        ("apps", "StatefulSet", "NAME READY AGE", "CONTAINERS IMAGES"),
        (
            "apps",
            "DaemonSet",
            "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE",
            "CONTAINERS IMAGES SELECTOR",
        ),
        (
            "networking.k8s.io",
            "Ingress",
            "NAME CLASS HOSTS ADDRESS PORTS AGE",
            "",
        ),
        (
            "discovery.k8s.io",
            "EndpointSlice",
            "NAME ADDRESSTYPE PORTS ENDPOINTS AGE",
            "",
        ),
        (
            "storage.k8s.io",
            "CSIDriver",
            "NAME ATTACHREQUIRED PODINFOONMOUNT STORAGECAPACITY TOKENREQUESTS REQUIRESREPUBLISH MODES AGE",
            "",
        ),
        (
            "storage.k8s.io",
            "StorageClass",
            "NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE",
            "",
        ),
        (
            "autoscaling",
            "HorizontalPodAutoscaler",
            "NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE",
            "",
        ),
        (
            "certificates.k8s.io",
            "CertificateSigningRequest",
            "NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION",
            "",
        ),
        (
            "flowcontrol.apiserver.k8s.io",
            "FlowSchema",
            "NAME PRIORITYLEVEL MATCHINGPRECEDENCE DISTINGUISHERMETHOD AGE MISSINGPL",
            "",
        ),
    ];
    for (group, kind, normal, wide) in cases {
        assert_eq!(headers(group, kind, 0), *normal, "{kind}");
        assert_eq!(headers(group, kind, 1), *wide, "{kind} wide");
    }
    // Only the Name column is marked as the name, except where upstream
    // marks another (VolumeAttachment's Attacher) or none (Scale).
    for (group, kind) in KINDS {
        let Some(cols) = columns(group, kind) else {
            continue;
        };
        let marked: Vec<&str> = cols
            .iter()
            .filter(|c| c.format == "name")
            .map(|c| c.name)
            .collect();
        match *kind {
            "VolumeAttachment" => assert_eq!(marked, ["Name", "Attacher"]),
            "Scale" | "StorageVersionMigration" => assert!(marked.is_empty()),
            _ => assert_eq!(marked, ["Name"], "{kind}"),
        }
    }
}

// ---- workloads

fn workload(spec: Value, status: Value) -> Value {
    json!({"metadata": {"name": "web", "creationTimestamp": ago(300)},
        "spec": spec, "status": status})
}

fn template() -> Value {
    json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
        {"name": "fake-container1", "image": "fake-image1"},
        {"name": "fake-container2", "image": "fake-image2"}]}})
}

#[test]
fn deployment() {
    // TestPrintDeployment
    let d = workload(
        json!({"replicas": 5, "template": template(),
            "selector": {"matchLabels": {"foo": "bar"}}}),
        json!({"replicas": 10, "updatedReplicas": 2, "availableReplicas": 1, "readyReplicas": 1}),
    );
    assert_eq!(
        Value::Array(row("apps", "Deployment", d)),
        json!([
            "web",
            "1/5",
            2,
            1,
            "5m",
            "fake-container1,fake-container2",
            "fake-image1,fake-image2",
            "foo=bar"
        ])
    );
    assert_eq!(
        names("apps", "Deployment"),
        [
            ("Name", 0),
            ("Ready", 0),
            ("Up-to-date", 0),
            ("Available", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
            ("Selector", 1)
        ]
    );
    // Defaulted replicas; an empty selector prints nothing, a broken one <invalid>.
    let d = workload(json!({"selector": {}}), json!({}));
    let cells = row("apps", "Deployment", d);
    assert_eq!(cells[1], "0/1");
    assert_eq!(cells[7], "");
    let d = workload(
        json!({"selector": {"matchExpressions": [{"key": "a", "operator": "Bad"}]}}),
        json!({}),
    );
    assert_eq!(row("apps", "Deployment", d)[7], "<invalid>");
}

#[test]
fn replica_set_and_replication_controller() {
    let rs = workload(
        json!({"replicas": 3, "template": template(), "selector": {"matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]},
                {"key": "env", "operator": "DoesNotExist"}]}}),
        json!({"replicas": 3, "readyReplicas": 2}),
    );
    assert_eq!(
        Value::Array(row("apps", "ReplicaSet", rs)),
        json!([
            "web",
            3,
            3,
            2,
            "5m",
            "fake-container1,fake-container2",
            "fake-image1,fake-image2",
            "app=web,!env,tier in (a,b)"
        ])
    );
    let rc = workload(
        json!({"template": template(), "selector": {"b": "2", "a": "1"}}),
        json!({"replicas": 1}),
    );
    assert_eq!(
        Value::Array(row("", "ReplicationController", rc)),
        json!([
            "web",
            1,
            1,
            0,
            "5m",
            "fake-container1,fake-container2",
            "fake-image1,fake-image2",
            "a=1,b=2"
        ])
    );
}

#[test]
fn daemon_set_and_stateful_set() {
    // TestPrintDaemonSet
    let ds = workload(
        json!({"template": {"spec": {"containers": [{"name": "c", "image": "i"}],
            "nodeSelector": {"disk": "ssd"}}}, "selector": {"matchLabels": {"app": "d"}}}),
        json!({"currentNumberScheduled": 2, "desiredNumberScheduled": 3, "numberReady": 1,
            "updatedNumberScheduled": 2, "numberAvailable": 0}),
    );
    assert_eq!(
        Value::Array(row("apps", "DaemonSet", ds)),
        json!(["web", 3, 2, 1, 2, 0, "disk=ssd", "5m", "c", "i", "app=d"])
    );
    let ds = workload(json!({}), json!({}));
    assert_eq!(row("apps", "DaemonSet", ds)[6], "<none>");
    assert_eq!(
        row("apps", "DaemonSet", workload(json!({}), json!({})))[10],
        "<none>"
    );

    let sts = workload(
        json!({"replicas": 5, "template": template()}),
        json!({"readyReplicas": 2}),
    );
    assert_eq!(
        Value::Array(row("apps", "StatefulSet", sts)),
        json!([
            "web",
            "2/5",
            "5m",
            "fake-container1,fake-container2",
            "fake-image1,fake-image2"
        ])
    );
}

#[test]
fn job() {
    let j = |spec: Value, status: Value| row("batch", "Job", workload(spec, status));
    // TestPrintJob: completions, parallelism and the duration.
    let cells = j(
        json!({"completions": 2, "template": template(), "selector": {"matchLabels": {"a": "b"}}}),
        json!({"succeeded": 1, "startTime": ago(600), "completionTime": ago(290)}),
    );
    assert_eq!(
        Value::Array(cells),
        json!([
            "web",
            "Running",
            "1/2",
            "5m10s",
            "5m",
            "fake-container1,fake-container2",
            "fake-image1,fake-image2",
            "a=b"
        ])
    );
    assert_eq!(j(json!({"parallelism": 3}), json!({}))[2], "0/1 of 3");
    assert_eq!(j(json!({"parallelism": 1}), json!({}))[2], "0/1");
    assert_eq!(j(json!({}), json!({"succeeded": 1}))[2], "1/1");
    assert_eq!(j(json!({}), json!({"startTime": ago(65)}))[3], "65s");
    assert_eq!(j(json!({}), json!({}))[3], "");
    let cond = |t: &str, s: &str| json!({"conditions": [{"type": t, "status": s}]});
    assert_eq!(j(json!({}), cond("Complete", "True"))[1], "Complete");
    assert_eq!(j(json!({}), cond("Complete", "False"))[1], "Running");
    assert_eq!(j(json!({}), cond("Failed", "True"))[1], "Failed");
    assert_eq!(j(json!({}), cond("Suspended", "True"))[1], "Suspended");
    assert_eq!(
        j(json!({}), cond("FailureTarget", "True"))[1],
        "FailureTarget"
    );
    let mut deleted = workload(json!({}), cond("Suspended", "True"));
    deleted["metadata"]["deletionTimestamp"] = json!(ago(1));
    assert_eq!(row("batch", "Job", deleted)[1], "Terminating");
}

#[test]
fn cron_job() {
    let cj = workload(
        json!({"schedule": "0/5 * * * ?", "suspend": false, "jobTemplate": {"spec": {
            "template": template(), "selector": {"matchLabels": {"a": "b"}}}}}),
        json!({"lastScheduleTime": ago(10), "active": [{"name": "x"}]}),
    );
    assert_eq!(
        Value::Array(row("batch", "CronJob", cj)),
        json!([
            "web",
            "0/5 * * * ?",
            "<none>",
            "False",
            1,
            "10s",
            "5m",
            "fake-container1,fake-container2",
            "fake-image1,fake-image2",
            "a=b"
        ])
    );
    let cj = workload(
        json!({"schedule": "@daily", "timeZone": "Etc/UTC", "suspend": true}),
        json!({}),
    );
    let cells = row("batch", "CronJob", cj);
    assert_eq!(
        cells[2..6],
        [json!("Etc/UTC"), json!("True"), json!(0), json!("<none>")]
    );
    assert_eq!(cells[9], "<none>");
}

#[test]
fn pod_disruption_budget_and_template() {
    let pdb = workload(
        json!({"minAvailable": "22%"}),
        json!({"disruptionsAllowed": 5}),
    );
    assert_eq!(
        Value::Array(row("policy", "PodDisruptionBudget", pdb)),
        json!(["web", "22%", "N/A", 5, "5m"])
    );
    let pdb = workload(json!({"maxUnavailable": 1}), json!({}));
    assert_eq!(
        row("policy", "PodDisruptionBudget", pdb)[1..3],
        [json!("N/A"), json!("1")]
    );
    let pt = json!({"metadata": {"name": "t"}, "template": template()});
    assert_eq!(
        Value::Array(row("", "PodTemplate", pt)),
        json!([
            "t",
            "fake-container1,fake-container2",
            "fake-image1,fake-image2",
            "app=web"
        ])
    );
    assert_eq!(
        row("", "PodTemplate", json!({"metadata": {"name": "t"}}))[3],
        "<none>"
    );
}

#[test]
fn controller_revision() {
    let mut cr = json!({"metadata": {"name": "web-6d4", "creationTimestamp": ago(5),
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web",
            "controller": true}]}, "revision": 3});
    assert_eq!(
        Value::Array(row("apps", "ControllerRevision", cr.clone())),
        json!(["web-6d4", "statefulset.apps/web", 3, "5s"])
    );
    cr["metadata"]["ownerReferences"][0]["apiVersion"] = json!("v1");
    assert_eq!(
        row("apps", "ControllerRevision", cr.clone())[1],
        "statefulset/web"
    );
    cr["metadata"]["ownerReferences"][0]["controller"] = json!(false);
    assert_eq!(row("apps", "ControllerRevision", cr)[1], "<none>");
}

// ---- core networking

fn svc(spec: Value, status: Value) -> Vec<Value> {
    row(
        "",
        "Service",
        json!({"metadata": {"name": "svc", "creationTimestamp": ago(60)},
        "spec": spec, "status": status}),
    )
}

#[test]
fn service() {
    // TestPrintService
    assert_eq!(
        Value::Array(svc(
            json!({"type": "ClusterIP", "clusterIP": "10.9.8.7", "clusterIPs": ["10.9.8.7"],
                "ports": [{"protocol": "TCP", "port": 2233}], "selector": {"app": "x"}}),
            json!({}),
        )),
        json!([
            "svc",
            "ClusterIP",
            "10.9.8.7",
            "<none>",
            "2233/TCP",
            "60s",
            "app=x"
        ])
    );
    let cells = svc(
        json!({"type": "NodePort", "clusterIPs": ["10.9.8.7"],
            "ports": [{"port": 80, "nodePort": 30000}, {"protocol": "UDP", "port": 53}]}),
        json!({}),
    );
    assert_eq!(cells[3..5], [json!("<none>"), json!("80:30000/TCP,53/UDP")]);
    assert_eq!(cells[6], "<none>");
    let cells = svc(
        json!({"type": "LoadBalancer", "clusterIPs": ["10.0.0.1"]}),
        json!({}),
    );
    assert_eq!(cells[3..5], [json!("<pending>"), json!("<none>")]);
    let cells = svc(
        json!({"type": "LoadBalancer", "externalIPs": ["3.3.3.3"]}),
        json!({"loadBalancer": {"ingress": [{"ip": "2.2.2.2"}, {"hostname": "lb.example.com"},
            {"ip": "1.1.1.1"}]}}),
    );
    assert_eq!(
        cells[2..4],
        [
            json!("<none>"),
            json!("1.1.1.1,2.2.2.2,lb.example.com,3.3.3.3")
        ]
    );
    let cells = svc(
        json!({"type": "ExternalName", "externalName": "db.example.com"}),
        json!({}),
    );
    assert_eq!(cells[3], "db.example.com");
    let cells = svc(
        json!({"clusterIP": "None", "externalIPs": ["5.5.5.5", "6.6.6.6"]}),
        json!({}),
    );
    assert_eq!(
        cells[1..4],
        [json!("ClusterIP"), json!("None"), json!("5.5.5.5,6.6.6.6")]
    );
    assert_eq!(svc(json!({"type": "Weird"}), json!({}))[3], "<unknown>");
}

#[test]
fn endpoints_and_slices() {
    // TestPrintEndpoint
    let ep = |subsets: Value| {
        row(
            "",
            "Endpoints",
            json!({"metadata": {"name": "e"}, "subsets": subsets}),
        )[1]
        .clone()
    };
    assert_eq!(ep(json!([])), "<none>");
    assert_eq!(
        ep(json!([{"addresses": [{"ip": "127.0.0.1"}, {"ip": "::1"}], "ports": [{"port": 8080}]}])),
        "127.0.0.1:8080,[::1]:8080"
    );
    assert_eq!(
        ep(json!([{"addresses": [{"ip": "1.1.1.1"}, {"ip": "2.2.2.2"}],
            "ports": [{"port": 80}, {"port": 443}, {"port": 8080}]}])),
        "1.1.1.1:80,2.2.2.2:80,1.1.1.1:443 + 3 more..."
    );
    assert_eq!(ep(json!([{"addresses": [{"ip": "10.0.0.1"}]}])), "10.0.0.1");

    let slice = json!({"metadata": {"name": "s", "creationTimestamp": ago(30)},
        "addressType": "IPv4",
        "ports": [{"port": 80}, {"name": "https"}, {}, {"port": 9}],
        "endpoints": [{"addresses": ["10.1.2.3"]}, {"addresses": ["2001:db8::1", "10.1.2.4"]}]});
    assert_eq!(
        Value::Array(row("discovery.k8s.io", "EndpointSlice", slice)),
        json!([
            "s",
            "IPv4",
            "80,https,* + 1 more...",
            "10.1.2.3,2001:db8::1,10.1.2.4",
            "30s"
        ])
    );
    let empty = json!({"metadata": {"name": "s"}, "addressType": "FQDN"});
    assert_eq!(
        row("discovery.k8s.io", "EndpointSlice", empty)[2..4],
        [json!("<unset>"), json!("<unset>")]
    );
}

#[test]
fn ingress_and_class() {
    let ing = json!({"metadata": {"name": "test1", "creationTimestamp": ago(10)},
        "spec": {"ingressClassName": "foo", "rules": [{"host": "a"}, {"host": "b"}, {},
            {"host": "c"}, {"host": "d"}], "tls": [{"hosts": ["a"]}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "2.3.4.5"}, {"hostname": "lb.example"}]}}});
    assert_eq!(
        Value::Array(row("networking.k8s.io", "Ingress", ing)),
        json!([
            "test1",
            "foo",
            "a,b,c + 2 more...",
            "2.3.4.5,lb.example",
            "80, 443",
            "10s"
        ])
    );
    let ing = json!({"metadata": {"name": "x"}, "spec": {"rules": [{}]}});
    assert_eq!(
        row("networking.k8s.io", "Ingress", ing)[1..5],
        [json!("<none>"), json!("*"), json!(""), json!("80")]
    );
    let class = json!({"metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx",
        "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "p"}}});
    assert_eq!(
        row("networking.k8s.io", "IngressClass", class)[1..3],
        [
            json!("k8s.io/ingress-nginx"),
            json!("IngressParameters.k8s.example.com/p")
        ]
    );
    let class = json!({"metadata": {"name": "c"}, "spec": {"controller": "x"}});
    assert_eq!(row("networking.k8s.io", "IngressClass", class)[2], "<none>");
}

#[test]
fn network_policy_and_selectors() {
    let np = |sel: Value| {
        row(
            "networking.k8s.io",
            "NetworkPolicy",
            json!({"metadata": {"name": "np"}, "spec": {"podSelector": sel}}),
        )[1]
        .clone()
    };
    assert_eq!(np(json!({})), "<none>");
    assert_eq!(
        np(json!({"matchLabels": {"app": "db", "tier": "x"}})),
        "app=db,tier=x"
    );
    assert_eq!(
        np(
            json!({"matchExpressions": [{"key": "b", "operator": "NotIn", "values": ["z", "y"]},
            {"key": "a", "operator": "Exists"}]})
        ),
        "a,b notin (y,z)"
    );
    assert_eq!(
        np(json!({"matchExpressions": [{"key": "a", "operator": "In"}]})),
        "<error>"
    );
    assert_eq!(
        np(json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["v"]}]})),
        "<error>"
    );
    assert_eq!(np(json!({"matchLabels": {"bad key": "v"}})), "<error>");
    assert_eq!(np(json!({"matchLabels": {"k": "bad value!"}})), "<error>");
    let np = json!({"metadata": {"name": "np"}});
    assert_eq!(row("networking.k8s.io", "NetworkPolicy", np)[1], "<none>");
}

#[test]
fn node() {
    // TestPrintNodeStatus, TestPrintNodeRole, TestPrintNodeOSImage...
    let n = json!({"metadata": {"name": "n1", "creationTimestamp": ago(86400 * 3),
            "labels": {"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/": "x",
                "kubernetes.io/role": "worker", "other": "y"}},
        "spec": {"unschedulable": true},
        "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": "True"}],
            "addresses": [{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "10.0.0.5"}],
            "nodeInfo": {"kubeletVersion": "v1.33.0", "osImage": "Debian"}}});
    assert_eq!(
        Value::Array(row("", "Node", n)),
        json!([
            "n1",
            "Ready,SchedulingDisabled",
            "control-plane,worker",
            "3d",
            "v1.33.0",
            "10.0.0.5",
            "<none>",
            "Debian",
            "<unknown>",
            "<unknown>"
        ])
    );
    let n = json!({"metadata": {"name": "n2"}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}});
    assert_eq!(
        row("", "Node", n)[1..3],
        [json!("NotReady"), json!("<none>")]
    );
    assert_eq!(
        row("", "Node", json!({"metadata": {"name": "n3"}}))[1],
        "Unknown"
    );
}

// ---- events

#[test]
fn core_event() {
    // TestPrintEvent
    let e = json!({"metadata": {"name": "event1"},
        "involvedObject": {"kind": "Deployment", "name": "foo", "namespace": "default",
            "fieldPath": "spec.containers{foo}"},
        "source": {"component": "kubelet", "host": "Node1"},
        "reason": "Event Reason", "message": " Message Data \n", "type": "Normal",
        "firstTimestamp": ago(3 * 86400), "lastTimestamp": ago(2 * 86400), "count": 6});
    assert_eq!(
        Value::Array(row("", "Event", e)),
        json!([
            "2d",
            "Normal",
            "Event Reason",
            "deployment/foo",
            "spec.containers{foo}",
            "kubelet, Node1",
            "Message Data",
            "3d",
            6,
            "event1"
        ])
    );
    // No timestamps but the event time, no count, reporting fields as source.
    let e = json!({"metadata": {"name": "event2"}, "involvedObject": {"kind": "Node"},
        "eventTime": "2024-05-01T11:59:30.000000Z", "reportingComponent": "ctrl",
        "type": "Warning"});
    let cells = row("", "Event", e);
    assert_eq!(
        cells[..4],
        [json!("30s"), json!("Warning"), json!(""), json!("node")]
    );
    assert_eq!(cells[5], "ctrl");
    assert_eq!(cells[7..9], [json!("30s"), json!(1)]);
    // A series overrides the last time and the count.
    let e = json!({"metadata": {"name": "e"}, "count": 3, "firstTimestamp": ago(600),
        "series": {"count": 9, "lastObservedTime": "2024-05-01T11:59:00.000000Z"}});
    let cells = row("", "Event", e);
    assert_eq!(cells[0], "60s");
    assert_eq!(cells[7..9], [json!("10m"), json!(9)]);
    assert_eq!(row("", "Event", json!({}))[0], "<unknown>");
}

#[test]
fn events_api_event() {
    let e = json!({"metadata": {"name": "ev", "namespace": "default"},
        "regarding": {"kind": "Pod", "name": "web-0", "fieldPath": "spec.containers{app}"},
        "reason": "Pulled", "note": "Image pulled", "type": "Normal",
        "eventTime": ago(90), "reportingController": "kubelet", "reportingInstance": "node-1",
        "deprecatedCount": 2, "deprecatedFirstTimestamp": ago(120),
        "deprecatedLastTimestamp": ago(90)});
    assert_eq!(
        Value::Array(row("events.k8s.io", "Event", e)),
        json!([
            "90s",
            "Normal",
            "Pulled",
            "pod/web-0",
            "spec.containers{app}",
            "kubelet, node-1",
            "Image pulled",
            "2m",
            2,
            "ev"
        ])
    );
    assert_eq!(columns("events.k8s.io", "Event"), columns("", "Event"));
}

// ---- config and storage

#[test]
fn namespace_secret_config_map_service_account() {
    let ns = json!({"metadata": {"name": "ns1", "creationTimestamp": ago(45)},
        "status": {"phase": "Terminating"}});
    assert_eq!(
        Value::Array(row("", "Namespace", ns)),
        json!(["ns1", "Terminating", "45s"])
    );
    assert_eq!(
        row("", "Namespace", json!({"metadata": {"name": "x"}}))[1],
        "Active"
    );

    let secret = json!({"metadata": {"name": "s"}, "type": "kubernetes.io/tls",
        "data": {"tls.crt": "", "tls.key": ""}});
    assert_eq!(
        Value::Array(row("", "Secret", secret)),
        json!(["s", "kubernetes.io/tls", 2, "<unknown>"])
    );
    assert_eq!(
        row("", "Secret", json!({}))[1..3],
        [json!("Opaque"), json!(0)]
    );

    let cm = json!({"metadata": {"name": "cm"}, "data": {"a": "1"}, "binaryData": {"b": "AA=="}});
    assert_eq!(row("", "ConfigMap", cm)[1], 2);
    let sa = json!({"metadata": {"name": "default"}, "secrets": [{"name": "tok"}]});
    assert_eq!(
        names("", "ServiceAccount"),
        [("Name", 0), ("Secrets", 0), ("Age", 0)]
    );
    assert_eq!(row("", "ServiceAccount", sa)[1], 1);
}

#[test]
fn persistent_volumes_and_claims() {
    // TestPrintPersistentVolume, TestPrintPersistentVolumeClaim
    let pv = json!({"metadata": {"name": "pv1", "creationTimestamp": ago(60)},
        "spec": {"capacity": {"storage": "4Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce",
            "ReadWriteOnce"], "claimRef": {"namespace": "default", "name": "claim"},
            "storageClassName": "fast", "persistentVolumeReclaimPolicy": "Delete"},
        "status": {"phase": "Bound"}});
    assert_eq!(
        Value::Array(row("", "PersistentVolume", pv)),
        json!([
            "pv1",
            "4Gi",
            "RWO,RWX",
            "Delete",
            "Bound",
            "default/claim",
            "fast",
            "<unset>",
            "",
            "60s",
            "Filesystem"
        ])
    );
    let pv = json!({"metadata": {"name": "pv2", "deletionTimestamp": ago(1),
            "annotations": {"volume.beta.kubernetes.io/storage-class": "beta"}},
        "spec": {"volumeMode": "Block", "volumeAttributesClassName": "gold"},
        "status": {"reason": "Lost"}});
    assert_eq!(
        Value::Array(row("", "PersistentVolume", pv)),
        json!([
            "pv2",
            "0",
            "",
            "Retain",
            "Terminating",
            "",
            "beta",
            "gold",
            "Lost",
            "<unknown>",
            "Block"
        ])
    );
    let pvc = json!({"metadata": {"name": "c1", "creationTimestamp": ago(60)},
        "spec": {"volumeName": "pv1", "storageClassName": "fast",
            "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Bound", "capacity": {"storage": "4Gi"}, "accessModes": ["ReadOnlyMany"]}});
    assert_eq!(
        Value::Array(row("", "PersistentVolumeClaim", pvc)),
        json!([
            "c1",
            "Bound",
            "pv1",
            "4Gi",
            "ROX",
            "fast",
            "<unset>",
            "60s",
            "Filesystem"
        ])
    );
    let pvc = json!({"metadata": {"name": "c2"}, "spec": {}});
    assert_eq!(
        row("", "PersistentVolumeClaim", pvc)[1..6],
        [json!("Pending"), json!(""), json!(""), json!(""), json!("")]
    );
}

#[test]
fn resource_quota() {
    // TestPrintResourceQuota: sorted by name, limits.* in their own column.
    let rq = json!({"metadata": {"name": "q", "creationTimestamp": ago(10)},
        "status": {"hard": {"pods": "10", "limits.memory": "2Gi", "cpu": "1",
            "requests.memory": "1Gi", "limits.cpu": "2"},
            "used": {"cpu": "100m", "pods": "1", "limits.cpu": "0"}}});
    assert_eq!(
        Value::Array(row("", "ResourceQuota", rq)),
        json!([
            "q",
            "10s",
            "cpu: 100m/1, pods: 1/10, requests.memory: 0/1Gi",
            "limits.cpu: 0/2, limits.memory: 0/2Gi"
        ])
    );
    assert_eq!(
        row("", "ResourceQuota", json!({}))[2..4],
        [json!(""), json!("")]
    );
}

#[test]
fn storage_kinds() {
    let sc = json!({"metadata": {"name": "standard", "creationTimestamp": ago(5),
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer"});
    assert_eq!(
        Value::Array(row("storage.k8s.io", "StorageClass", sc)),
        json!([
            "standard (default)",
            "rancher.io/local-path",
            "Delete",
            "WaitForFirstConsumer",
            false,
            "5s"
        ])
    );
    let va = json!({"metadata": {"name": "csi-1"}, "spec": {"attacher": "ebs.csi.aws.com",
        "source": {"persistentVolumeName": "pv1"}, "nodeName": "n1"}, "status": {"attached": true}});
    assert_eq!(
        Value::Array(row("storage.k8s.io", "VolumeAttachment", va)),
        json!(["csi-1", "ebs.csi.aws.com", "pv1", "n1", true, "<unknown>"])
    );
    assert_eq!(
        columns("storage.k8s.io", "VolumeAttachment").expect("va")[1].format,
        "name"
    );
    let node =
        json!({"metadata": {"name": "n1"}, "spec": {"drivers": [{"name": "a"}, {"name": "b"}]}});
    assert_eq!(row("storage.k8s.io", "CSINode", node)[1], 2);
    let driver = json!({"metadata": {"name": "d"}, "spec": {}});
    assert_eq!(
        Value::Array(row("storage.k8s.io", "CSIDriver", driver)),
        json!([
            "d",
            true,
            false,
            false,
            "<unset>",
            false,
            "Persistent",
            "<unknown>"
        ])
    );
    let driver = json!({"metadata": {"name": "d"}, "spec": {"attachRequired": false,
        "tokenRequests": [{"audience": "a"}, {"audience": "b"}],
        "volumeLifecycleModes": ["Persistent", "Ephemeral"]}});
    assert_eq!(
        row("storage.k8s.io", "CSIDriver", driver)[1..7],
        [
            json!(false),
            json!(false),
            json!(false),
            json!("a,b"),
            json!(false),
            json!("Persistent,Ephemeral")
        ]
    );
    let cap = json!({"metadata": {"name": "c"}, "storageClassName": "fast"});
    assert_eq!(
        Value::Array(row("storage.k8s.io", "CSIStorageCapacity", cap)),
        json!(["c", "fast", "<unset>"])
    );
}

// ---- rbac, certificates, coordination, scheduling, node

#[test]
fn bindings_and_roles() {
    let rb = json!({"metadata": {"name": "rb", "creationTimestamp": ago(3600 * 9)},
        "roleRef": {"kind": "ClusterRole", "name": "view", "apiGroup": "rbac.authorization.k8s.io"},
        "subjects": [{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"},
            {"kind": "ServiceAccount", "namespace": "ci", "name": "bot"},
            {"kind": "User", "name": "bob"}]});
    assert_eq!(
        Value::Array(row("rbac.authorization.k8s.io", "RoleBinding", rb.clone())),
        json!([
            "rb",
            "ClusterRole/view",
            "9h",
            "alice, bob",
            "devs",
            "ci/bot"
        ])
    );
    assert_eq!(
        row("rbac.authorization.k8s.io", "ClusterRoleBinding", rb)[1],
        "ClusterRole/view"
    );
    assert_eq!(
        names("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        [
            ("Name", 0),
            ("Role", 0),
            ("Age", 0),
            ("Users", 1),
            ("Groups", 1),
            ("ServiceAccounts", 1)
        ]
    );
    // Roles have no printer: the default table, created-at in RFC 3339.
    assert_eq!(columns("rbac.authorization.k8s.io", "Role"), None);
    assert_eq!(columns("", "LimitRange"), None);
    let role =
        json!({"metadata": {"name": "r", "creationTimestamp": "2024-04-30T10:00:00.5+02:00"}});
    assert_eq!(
        cells("rbac.authorization.k8s.io", "Role", &role, now()),
        [json!("r"), json!("2024-04-30T08:00:00Z")]
    );
    assert_eq!(default_cells(&json!({}))[1], "0001-01-01T00:00:00Z");
    let cols = default_columns();
    assert_eq!(
        cols.iter()
            .map(|c| (c.name, c.type_, c.format))
            .collect::<Vec<_>>(),
        [("Name", "string", "name"), ("Created At", "date", "")]
    );
}

#[test]
fn certificate_signing_request() {
    // TestPrintCertificateSigningRequest
    let csr = |status: Value, spec: Value| {
        row(
            "certificates.k8s.io",
            "CertificateSigningRequest",
            json!({"metadata": {"name": "csr1", "creationTimestamp": ago(60)},
                "spec": spec, "status": status}),
        )
    };
    assert_eq!(
        Value::Array(csr(json!({}), json!({"username": "CSRRequestor"}))),
        json!(["csr1", "60s", "<none>", "CSRRequestor", "<none>", "Pending"])
    );
    let cells = csr(
        json!({"conditions": [{"type": "Approved"}, {"type": "Denied"}]}),
        json!({"signerName": "example.com/signer", "expirationSeconds": 7200}),
    );
    assert_eq!(
        cells[2..6],
        [
            json!("example.com/signer"),
            json!(""),
            json!("120m"),
            json!("Denied")
        ]
    );
    let cells = csr(
        json!({"conditions": [{"type": "Approved"}, {"type": "Failed"}], "certificate": "Y2VydA=="}),
        json!({}),
    );
    assert_eq!(cells[5], "Approved,Failed,Issued");
    assert_eq!(
        csr(json!({}), json!({"expirationSeconds": 86400}))[4],
        "24h"
    );
}

#[test]
fn small_kinds() {
    let lease = json!({"metadata": {"name": "l", "creationTimestamp": ago(3)},
        "spec": {"holderIdentity": "node-1"}});
    assert_eq!(
        Value::Array(row("coordination.k8s.io", "Lease", lease)),
        json!(["l", "node-1", "3s"])
    );
    assert_eq!(row("coordination.k8s.io", "Lease", json!({}))[1], "");
    let pc = json!({"metadata": {"name": "high"}, "value": 1000000, "globalDefault": true});
    assert_eq!(
        Value::Array(row("scheduling.k8s.io", "PriorityClass", pc)),
        json!(["high", 1000000, true, "<unknown>", "PreemptLowerPriority"])
    );
    assert_eq!(
        names("scheduling.k8s.io", "PriorityClass"),
        [
            ("Name", 0),
            ("Value", 0),
            ("Global-Default", 0),
            ("Age", 0),
            ("PreemptionPolicy", 0)
        ]
    );
    let rc = json!({"metadata": {"name": "gvisor"}, "handler": "runsc"});
    assert_eq!(row("node.k8s.io", "RuntimeClass", rc)[1], "runsc");
    let wh = json!({"metadata": {"name": "w"}, "webhooks": [{}, {}, {}]});
    assert_eq!(
        row(
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration",
            wh.clone()
        )[1],
        3
    );
    assert_eq!(
        row(
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
            wh
        )[1],
        3
    );
    let cs = json!({"metadata": {"name": "etcd-0"}, "conditions": [{"type": "Healthy",
        "status": "True", "message": "ok"}]});
    assert_eq!(
        Value::Array(row("", "ComponentStatus", cs)),
        json!(["etcd-0", "Healthy", "ok", ""])
    );
}

#[test]
fn admission_policies() {
    let vap = json!({"metadata": {"name": "p"}, "spec": {"validations": [{}, {}],
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}});
    assert_eq!(
        row(
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicy",
            vap
        )[1..3],
        [json!(2), json!("v1/ConfigMap")]
    );
    let vap = json!({"metadata": {"name": "p"}, "spec": {}});
    assert_eq!(
        row(
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicy",
            vap
        )[2],
        "<unset>"
    );
    let binding = |param: Value| {
        row(
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicyBinding",
            json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "paramRef": param}}),
        )[2]
        .clone()
    };
    assert_eq!(binding(Value::Null), "<unset>");
    assert_eq!(binding(json!({"name": "cfg", "namespace": "ns"})), "ns/cfg");
    assert_eq!(binding(json!({"name": "cfg"})), "*/cfg");
    assert_eq!(
        binding(json!({"selector": {"matchLabels": {"b": "2", "a": "1"},
            "matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}]}})),
        "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],},},}"
    );
    let map_ = json!({"metadata": {"name": "m"}, "spec": {"mutations": [{}]}});
    assert_eq!(
        row(
            "admissionregistration.k8s.io",
            "MutatingAdmissionPolicy",
            map_
        )[1],
        1
    );
}

#[test]
fn flow_control() {
    let fs = json!({"metadata": {"name": "system-nodes"}, "spec": {
            "priorityLevelConfiguration": {"name": "system"}, "matchingPrecedence": 500,
            "distinguisherMethod": {"type": "ByUser"}},
        "status": {"conditions": [{"type": "Dangling", "status": "False"}]}});
    assert_eq!(
        Value::Array(row("flowcontrol.apiserver.k8s.io", "FlowSchema", fs)),
        json!([
            "system-nodes",
            "system",
            500,
            "ByUser",
            "<unknown>",
            "False"
        ])
    );
    let fs = json!({"metadata": {"name": "f"}, "spec": {}});
    let cells = row("flowcontrol.apiserver.k8s.io", "FlowSchema", fs);
    assert_eq!(cells[2..4], [json!(1000), json!("<none>")]);
    assert_eq!(cells[5], "?");
    let pl = json!({"metadata": {"name": "global-default"}, "spec": {"type": "Limited",
        "limited": {"nominalConcurrencyShares": 20, "limitResponse": {"type": "Queue",
            "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}}});
    assert_eq!(
        Value::Array(row(
            "flowcontrol.apiserver.k8s.io",
            "PriorityLevelConfiguration",
            pl
        )),
        json!(["global-default", "Limited", 20, 128, 6, 50, "<unknown>"])
    );
    let pl = json!({"metadata": {"name": "p"}, "spec": {"type": "Limited",
        "limited": {"limitResponse": {"type": "Queue", "queuing": {"queues": 0}}}}});
    assert_eq!(
        row(
            "flowcontrol.apiserver.k8s.io",
            "PriorityLevelConfiguration",
            pl
        )[2..6],
        [json!(30), json!(64), json!(8), json!(50)]
    );
    let pl = json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt", "exempt": {}}});
    assert_eq!(
        row(
            "flowcontrol.apiserver.k8s.io",
            "PriorityLevelConfiguration",
            pl
        )[2..6],
        [
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>")
        ]
    );
}

#[test]
fn horizontal_pod_autoscaler() {
    let hpa = |spec: Value, status: Value| {
        row(
            "autoscaling",
            "HorizontalPodAutoscaler",
            json!({"metadata": {"name": "h"}, "spec": spec, "status": status}),
        )
    };
    // autoscaling/v1: the CPU target is converted to a Resource metric.
    let cells = hpa(
        json!({"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 1,
            "maxReplicas": 10, "targetCPUUtilizationPercentage": 80}),
        json!({"currentReplicas": 4, "currentCPUUtilizationPercentage": 50}),
    );
    assert_eq!(
        Value::Array(cells),
        json!([
            "h",
            "Deployment/web",
            "cpu: 50%/80%",
            "1",
            10,
            4,
            "<unknown>"
        ])
    );
    // TestPrintHPA: v2 metrics, two shown then "+ N more...".
    let metrics = json!([
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
        {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "100"}}},
        {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}}
    ]);
    let cells = hpa(
        json!({"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3, "metrics": metrics}),
        json!({"currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 10}}}]}),
    );
    assert_eq!(cells[2], "cpu: 10%/80%, <unknown>/100 + 1 more...");
    assert_eq!(cells[3], "1");
    let cells = hpa(
        json!({"metrics": [{"type": "External", "external": {"target": {"value": "5"}}},
        {"type": "Other"}]}),
        json!({}),
    );
    assert_eq!(cells[2], "<unknown>/5, <unknown type>");
    assert_eq!(hpa(json!({}), json!({}))[2], "<none>");
}

#[test]
fn newer_and_internal_kinds() {
    let sv = json!({"metadata": {"name": "apps.deployments"}, "status": {
        "storageVersions": [{"apiServerID": "a", "encodingVersion": "apps/v1"},
            {"apiServerID": "b", "encodingVersion": "apps/v1"}, {"apiServerID": "c", "encodingVersion": "v1"},
            {"apiServerID": "d", "encodingVersion": "v1"}]}});
    assert_eq!(
        row("internal.apiserver.k8s.io", "StorageVersion", sv)[1..3],
        [
            json!("<unset>"),
            json!("a=apps/v1,b=apps/v1,c=v1 + 1 more...")
        ]
    );
    let claim = |status: Value, deleting: bool| {
        let mut o = json!({"metadata": {"name": "c"}, "status": status});
        if deleting {
            o["metadata"]["deletionTimestamp"] = json!(ago(1));
        }
        row("resource.k8s.io", "ResourceClaim", o)[1].clone()
    };
    assert_eq!(claim(json!({}), false), "pending");
    assert_eq!(claim(json!({}), true), "deleted");
    assert_eq!(
        claim(json!({"allocation": {}, "reservedFor": [{}]}), true),
        "deleted,allocated,reserved"
    );
    let ip = json!({"metadata": {"name": "10.96.0.1"}, "spec": {"parentRef": {"group": "",
        "resource": "services", "namespace": "default", "name": "kubernetes"}}});
    assert_eq!(
        row("networking.k8s.io", "IPAddress", ip)[1],
        "services/default/kubernetes"
    );
    let cidr = json!({"metadata": {"name": "kubernetes"}, "spec": {"cidrs": ["10.96.0.0/12", "fd00::/108"]}});
    assert_eq!(
        row("networking.k8s.io", "ServiceCIDR", cidr)[1],
        "10.96.0.0/12,fd00::/108"
    );
    let svm = json!({"metadata": {"name": "m"}, "spec": {"resource": {"group": "apps", "version": "v1",
        "resource": "deployments"}}});
    assert_eq!(
        row("storagemigration.k8s.io", "StorageVersionMigration", svm)[1],
        "deployments.v1.apps"
    );
    let slice = json!({"metadata": {"name": "s"}, "spec": {"nodeName": "n", "driver": "gpu.example.com",
        "pool": {"name": "p"}}});
    assert_eq!(
        row("resource.k8s.io", "ResourceSlice", slice)[1..4],
        [json!("n"), json!("gpu.example.com"), json!("p")]
    );
    let api = |o: Value| row("apiregistration.k8s.io", "APIService", o);
    let local = json!({"metadata": {"name": "v1.apps", "creationTimestamp": ago(100)},
        "spec": {"group": "apps"}, "status": {"conditions": [{"type": "Available", "status": "True",
            "reason": "Local"}]}});
    assert_eq!(
        Value::Array(api(local)),
        json!(["v1.apps", "Local", "True", "100s"])
    );
    let remote = json!({"metadata": {"name": "v1beta1.metrics.k8s.io"},
        "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
        "status": {"conditions": [{"type": "Available", "status": "False",
            "reason": "MissingEndpoints"}]}});
    assert_eq!(
        api(remote)[1..3],
        [
            json!("kube-system/metrics-server"),
            json!("False (MissingEndpoints)")
        ]
    );
    assert_eq!(api(json!({}))[2], "Unknown");
    assert_eq!(columns("core", "Pod"), columns("", "Pod"));
    assert_eq!(columns("apps", "Pod"), None);
    assert_eq!(columns("", "Deployment"), None);
}

// ---- properties

const KINDS: &[(&str, &str)] = &[
    ("", "Pod"),
    ("", "PodTemplate"),
    ("", "ReplicationController"),
    ("", "Service"),
    ("", "Endpoints"),
    ("", "Node"),
    ("", "Event"),
    ("", "Namespace"),
    ("", "Secret"),
    ("", "ServiceAccount"),
    ("", "PersistentVolume"),
    ("", "PersistentVolumeClaim"),
    ("", "ComponentStatus"),
    ("", "ConfigMap"),
    ("", "ResourceQuota"),
    ("", "LimitRange"),
    ("events.k8s.io", "Event"),
    ("policy", "PodDisruptionBudget"),
    ("apps", "ReplicaSet"),
    ("apps", "DaemonSet"),
    ("apps", "StatefulSet"),
    ("apps", "Deployment"),
    ("apps", "ControllerRevision"),
    ("batch", "Job"),
    ("batch", "CronJob"),
    ("networking.k8s.io", "Ingress"),
    ("networking.k8s.io", "IngressClass"),
    ("networking.k8s.io", "NetworkPolicy"),
    ("networking.k8s.io", "ServiceCIDR"),
    ("networking.k8s.io", "IPAddress"),
    ("autoscaling", "HorizontalPodAutoscaler"),
    ("autoscaling", "Scale"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io", "Role"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("certificates.k8s.io", "ClusterTrustBundle"),
    ("coordination.k8s.io", "Lease"),
    ("coordination.k8s.io", "LeaseCandidate"),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "VolumeAttributesClass"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSIStorageCapacity"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("node.k8s.io", "RuntimeClass"),
    ("discovery.k8s.io", "EndpointSlice"),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
    ),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicyBinding",
    ),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("internal.apiserver.k8s.io", "StorageVersion"),
    ("resource.k8s.io", "DeviceClass"),
    ("resource.k8s.io", "ResourceClaim"),
    ("resource.k8s.io", "ResourceClaimTemplate"),
    ("resource.k8s.io", "ResourceSlice"),
    ("storagemigration.k8s.io", "StorageVersionMigration"),
    ("apiregistration.k8s.io", "APIService"),
];

/// JSON built from the field names the printers read, so that random
/// trees reach deep into the objects.
fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-5i64..5).prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop_oneof![
            Just("2024-04-30T12:00:00Z"),
            Just("0001-01-01T00:00:00Z"),
            Just("9999-12-31T23:59:59Z"),
            Just("True"),
            Just("Always"),
            Just("In"),
            Just("Exists"),
            Just("Ready"),
            Just("Completed"),
            Just("LoadBalancer"),
            Just("limits.cpu"),
            Just("::1"),
            Just(""),
        ]
        .prop_map(Value::from),
        "[a-z/. :-]{0,6}".prop_map(Value::from),
    ];
    let keys = prop_oneof![
        Just("metadata"),
        Just("name"),
        Just("spec"),
        Just("status"),
        Just("creationTimestamp"),
        Just("deletionTimestamp"),
        Just("containers"),
        Just("initContainers"),
        Just("containerStatuses"),
        Just("initContainerStatuses"),
        Just("state"),
        Just("lastState"),
        Just("terminated"),
        Just("waiting"),
        Just("running"),
        Just("finishedAt"),
        Just("restartCount"),
        Just("ready"),
        Just("started"),
        Just("reason"),
        Just("exitCode"),
        Just("signal"),
        Just("conditions"),
        Just("type"),
        Just("phase"),
        Just("replicas"),
        Just("selector"),
        Just("matchLabels"),
        Just("matchExpressions"),
        Just("key"),
        Just("operator"),
        Just("values"),
        Just("ports"),
        Just("port"),
        Just("nodePort"),
        Just("template"),
        Just("labels"),
        Just("subsets"),
        Just("addresses"),
        Just("ip"),
        Just("metrics"),
        Just("resource"),
        Just("target"),
        Just("averageValue"),
        Just("current"),
        Just("currentMetrics"),
        Just("hard"),
        Just("used"),
        Just("parentRef"),
        Just("paramRef"),
        Just("limited"),
        Just("queuing"),
        Just("limitResponse"),
        Just("series"),
        Just("count"),
        Just("startTime"),
        Just("completionTime"),
        Just("completions"),
        Just("parallelism"),
        Just("jobTemplate"),
        Just("loadBalancer"),
        Just("ingress"),
        Just("rules"),
        Just("endpoints"),
        Just("storageVersions"),
        Just("ownerReferences"),
        Just("controller"),
        Just("apiVersion"),
        Just("subjects"),
        Just("kind"),
        Just("capacity"),
        Just("storage"),
        Just("clusterIPs"),
        Just("externalIPs"),
        Just("podIPs"),
        Just("readinessGates"),
        Just("conditionType"),
        Just("involvedObject"),
        Just("regarding"),
        Just("allocation"),
        Just("annotations"),
        Just("data"),
    ]
    .prop_map(String::from);
    leaf.prop_recursive(6, 64, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(keys.clone(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn cells_match_columns_on_any_json(obj in arb_json(), offset in any::<i64>()) {
        let now = DateTime::from_timestamp(offset % 300_000_000_000, 0).unwrap_or_else(now_fallback);
        for (group, kind) in KINDS {
            let cells = cells(group, kind, &obj, now);
            let want = columns(group, kind).unwrap_or_else(default_columns).len();
            prop_assert_eq!(cells.len(), want, "{}/{}", group, kind);
        }
    }

    #[test]
    fn age_never_panics(s in ".{0,40}", nanos in any::<i64>()) {
        let _ = age(Some(&s), now());
        let text = human_duration(nanos);
        prop_assert!(!text.is_empty());
    }
}

fn now_fallback() -> DateTime<Utc> {
    now()
}
