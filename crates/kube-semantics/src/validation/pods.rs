//! core/v1 pod specs and pod templates: containers and init containers
//! (names, images, ports, env, envFrom, volume mounts, policies), volumes and
//! the pod-level fields.
//!
//! This module must NOT check the workload fields around a template
//! (replicas, selectors, strategies): `workloads` does, and calls in here.

use super::*;

/// What differs between a Pod's spec and a template's.
#[derive(Clone, Copy)]
pub(super) struct PodOpts {
    /// A Pod (not a template): images may not have surrounding whitespace.
    pub(super) is_pod: bool,
}

/// `ValidatePodTemplateSpec` at `path` (e.g. `spec.template`).
pub(super) fn validate_pod_template(
    template: &Value,
    path: &str,
    opts: PodOpts,
    errs: &mut Vec<FieldError>,
) {
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
pub(super) fn validate_pod_spec(
    spec: &Value,
    path: &str,
    opts: PodOpts,
    errs: &mut Vec<FieldError>,
) {
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
pub(super) const VOLUME_SOURCES: &[(&str, &str)] = &[
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
pub(super) fn validate_volumes<'a>(
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

pub(super) fn validate_container(
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
pub(super) fn validate_host_ports(containers: &[Value], path: &str, errs: &mut Vec<FieldError>) {
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

pub(super) fn validate_container_ports(c: &Value, path: &str, errs: &mut Vec<FieldError>) {
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
pub(super) fn validate_env(c: &Value, path: &str, errs: &mut Vec<FieldError>) {
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
pub(super) fn validate_env_from(c: &Value, path: &str, errs: &mut Vec<FieldError>) {
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

pub(super) fn validate_volume_mounts(
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
