//! Service rules: type defaulting, spec validation, cluster-IP and
//! node-port allocation on create, and what an update may change.
//!
//! This module must NOT touch the store or other kinds: the allocators it
//! draws from are passed in.

use super::*;

pub(super) fn service_type(obj: &Value) -> String {
    obj.pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_string()
}

pub(super) fn service_defaults(obj: &mut Value) -> Result<(), Vec<Cause>> {
    let ty = service_type(obj);
    if !matches!(
        ty.as_str(),
        "ClusterIP" | "NodePort" | "LoadBalancer" | "ExternalName"
    ) {
        return Err(vec![cause(
            "FieldValueNotSupported",
            "spec.type",
            format!(
                "Unsupported value: {ty:?}: supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\""
            ),
        )]);
    }
    let spec = ensure_object(obj, &["spec"]);
    spec.insert("type".into(), json!(ty));
    spec.entry("sessionAffinity").or_insert(json!("None"));
    if ty != "ExternalName" {
        spec.entry("internalTrafficPolicy")
            .or_insert(json!("Cluster"));
    }
    if ty == "NodePort" || ty == "LoadBalancer" {
        spec.entry("externalTrafficPolicy")
            .or_insert(json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        spec.entry("allocateLoadBalancerNodePorts")
            .or_insert(json!(true));
    }
    // Port defaults (`SetDefaults_Service`): TCP, and a target port equal
    // to the port when it is unset, 0 or "".
    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
        for p in ports.iter_mut() {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            if let Value::Object(m) = p {
                m.entry("protocol").or_insert(json!("TCP"));
                let unset = match m.get("targetPort") {
                    None | Some(Value::Null) => true,
                    Some(Value::String(t)) => t.is_empty(),
                    Some(t) => t.as_i64() == Some(0),
                };
                if ty != "ExternalName" && unset {
                    m.insert("targetPort".into(), json!(port));
                }
            }
        }
    }
    let causes: Vec<Cause> = validate_service_spec(spec, &ty)
        .into_iter()
        .map(Cause::from)
        .collect();
    if causes.is_empty() {
        Ok(())
    } else {
        Err(causes)
    }
}

/// `ValidateService`'s spec rules, in upstream's order: ports present,
/// the ExternalName, each port (name, number, protocol, target port, app
/// protocol), the selector's labels, node ports a ClusterIP may not have.
pub(super) fn validate_service_spec(
    spec: &serde_json::Map<String, Value>,
    ty: &str,
) -> Vec<FieldError> {
    use kube_semantics::names::{
        is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
    };
    use kube_semantics::validation::is_valid_port_name;
    let mut errs = Vec::new();
    let ports: &[Value] = spec
        .get("ports")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let headless = spec.get("clusterIP").and_then(Value::as_str) == Some("None");
    if ports.is_empty() && !headless && ty != "ExternalName" {
        errs.push(FieldError::required("spec.ports", ""));
    }
    if ty == "ExternalName" {
        let name = spec
            .get("externalName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // A trailing dot marks the name fully qualified.
        let cname = name.strip_suffix('.').unwrap_or(name);
        if cname.is_empty() {
            errs.push(FieldError::required("spec.externalName", ""));
        }
        for msg in is_dns1123_subdomain(cname)
            .into_iter()
            .filter(|_| !cname.is_empty())
        {
            errs.push(FieldError::invalid("spec.externalName", cname, &msg));
        }
    }
    let mut names = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let path = format!("spec.ports[{i}]");
        let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
        if ports.len() > 1 && name.is_empty() {
            errs.push(FieldError::required(format!("{path}.name"), ""));
        } else if !name.is_empty() {
            for msg in is_dns1123_label(name) {
                errs.push(FieldError::invalid(format!("{path}.name"), name, &msg));
            }
            if !names.insert(name) {
                errs.push(FieldError::duplicate(format!("{path}.name"), name));
            }
        }
        let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
        if !(1..=65535).contains(&port) {
            errs.push(FieldError::invalid_rendered(
                format!("{path}.port"),
                &port.to_string(),
                PORT_RANGE,
            ));
        }
        match p
            .get("protocol")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "" => errs.push(FieldError::required(format!("{path}.protocol"), "")),
            "TCP" | "UDP" | "SCTP" => {}
            other => errs.push(FieldError::not_supported(
                format!("{path}.protocol"),
                other,
                &["SCTP", "TCP", "UDP"],
            )),
        }
        // `ValidatePortNumOrName`: a number in range or an IANA service name.
        match p.get("targetPort") {
            Some(Value::String(t)) => {
                for msg in is_valid_port_name(t) {
                    errs.push(FieldError::invalid(format!("{path}.targetPort"), t, &msg));
                }
            }
            Some(t) => {
                let n = t.as_i64().unwrap_or(0);
                if !(1..=65535).contains(&n) {
                    errs.push(FieldError::invalid_rendered(
                        format!("{path}.targetPort"),
                        &n.to_string(),
                        PORT_RANGE,
                    ));
                }
            }
            None => {}
        }
        if let Some(app) = p.get("appProtocol").and_then(Value::as_str) {
            for msg in is_qualified_name(app) {
                errs.push(FieldError::invalid(
                    format!("{path}.appProtocol"),
                    app,
                    &msg,
                ));
            }
        }
    }
    // `ValidateLabels`: every problem is reported on the map itself.
    if let Some(Value::Object(selector)) = spec.get("selector") {
        for (k, v) in selector {
            for msg in is_qualified_name(k) {
                errs.push(FieldError::invalid("spec.selector", k, &msg));
            }
            if let Some(v) = v.as_str() {
                for msg in is_valid_label_value(v) {
                    errs.push(FieldError::invalid("spec.selector", v, &msg));
                }
            }
        }
    }
    if ty == "ClusterIP" {
        for (i, p) in ports.iter().enumerate() {
            if p.get("nodePort")
                .and_then(Value::as_i64)
                .is_some_and(|n| n != 0)
            {
                errs.push(FieldError::forbidden(
                    format!("spec.ports[{i}].nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    errs
}

/// `validation.InclusiveRangeError(1, 65535)`.
pub(super) const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

pub(super) fn service_create(obj: &mut Value, alloc: &mut Allocators) -> Result<(), Vec<Cause>> {
    service_defaults(obj)?;
    let ty = service_type(obj);
    let requested = obj
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if ty != "ExternalName" {
        let ip = if requested.is_empty() {
            alloc.alloc_ip().ok_or_else(|| {
                vec![cause(
                    "FieldValueInvalid",
                    "spec.clusterIPs",
                    "Internal error: range is full".into(),
                )]
            })?
        } else if requested == "None" {
            requested
        } else {
            if requested.parse::<std::net::Ipv4Addr>().is_err() {
                return Err(vec![cause(
                    "FieldValueInvalid",
                    "spec.clusterIPs[0]",
                    format!("Invalid value: {requested:?}: must be a valid IP address"),
                )]);
            }
            if !alloc.used_ips.insert(requested.clone()) {
                return Err(vec![cause(
                    "FieldValueInvalid",
                    "spec.clusterIPs",
                    format!(
                        "Invalid value: []string{{{requested:?}}}: failed to allocate IP {requested}: provided IP is already allocated"
                    ),
                )]);
            }
            requested
        };
        let spec = ensure_object(obj, &["spec"]);
        spec.insert("clusterIP".into(), json!(ip));
        spec.insert("clusterIPs".into(), json!([ip]));
        spec.insert("ipFamilies".into(), json!(["IPv4"]));
        spec.insert("ipFamilyPolicy".into(), json!("SingleStack"));
    }
    // A LoadBalancer gets node ports unless it opts out with
    // `allocateLoadBalancerNodePorts: false`; ports it names are still
    // reserved, as the real allocator does.
    let mut bad = Vec::new();
    let mut taken = Vec::new();
    let allocate = ty == "NodePort"
        || (ty == "LoadBalancer"
            && obj.pointer("/spec/allocateLoadBalancerNodePorts") != Some(&json!(false)));
    if (ty == "NodePort" || ty == "LoadBalancer")
        && let Some(Value::Array(ports)) = obj.pointer_mut("/spec/ports")
    {
        for (i, p) in ports.iter_mut().enumerate() {
            // 0 is Go's zero value: unset.
            if p.get("nodePort")
                .and_then(Value::as_u64)
                .is_none_or(|n| n == 0)
            {
                if !allocate {
                    continue;
                }
                let port = alloc.alloc_port().ok_or_else(|| {
                    vec![cause(
                        "FieldValueInvalid",
                        "spec.ports",
                        "Internal error: node port range is full".into(),
                    )]
                })?;
                p["nodePort"] = json!(port);
                taken.push(port);
            } else if let Some(n) = p.get("nodePort").and_then(Value::as_u64) {
                // The node-port allocator's answers for a requested port.
                let field = format!("spec.ports[{i}].nodePort");
                let detail = match u16::try_from(n) {
                    Ok(n) if (NODE_PORT_MIN..=NODE_PORT_MAX).contains(&n) => {
                        if alloc.used_ports.insert(n) {
                            taken.push(n);
                            continue;
                        }
                        "provided port is already allocated".to_string()
                    }
                    _ => format!(
                        "provided port is not in the valid range. The range of valid ports is {NODE_PORT_MIN}-{NODE_PORT_MAX}"
                    ),
                };
                bad.push(cause(
                    "FieldValueInvalid",
                    &field,
                    format!("Invalid value: {n}: {detail}"),
                ));
            }
        }
    }
    if !bad.is_empty() {
        // Nothing of a refused Service stays allocated; ports it asked for
        // that another Service holds are not this one's to free.
        for p in taken {
            alloc.used_ports.remove(&p);
        }
        if let Some(ip) = obj.pointer("/spec/clusterIP").and_then(Value::as_str) {
            alloc.used_ips.remove(ip);
        }
        return Err(bad);
    }
    Ok(())
}

pub(super) fn service_update(old: &Value, new: &mut Value) -> Result<(), Vec<Cause>> {
    service_defaults(new)?;
    // Allocated values are carried over when an update leaves them empty,
    // as the real server does.
    let old_ip = old
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let new_ip = new
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if service_type(new) != "ExternalName" {
        if new_ip.is_empty() && !old_ip.is_empty() {
            let spec = ensure_object(new, &["spec"]);
            spec.insert("clusterIP".into(), json!(old_ip));
            if let Some(ips) = old.pointer("/spec/clusterIPs") {
                spec.insert("clusterIPs".into(), ips.clone());
            }
            for f in ["ipFamilies", "ipFamilyPolicy"] {
                if let Some(v) = old.pointer(&format!("/spec/{f}")) {
                    spec.entry(f).or_insert(v.clone());
                }
            }
        } else if !old_ip.is_empty() && new_ip != old_ip {
            return Err(vec![cause(
                "FieldValueInvalid",
                "spec.clusterIPs[0]",
                format!("Invalid value: []string{{{new_ip:?}}}: may not change once set"),
            )]);
        }
    }
    // Node ports carried over by port number.
    let old_ports = old
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(Value::Array(ports)) = new.pointer_mut("/spec/ports") {
        for p in ports.iter_mut() {
            if p.get("nodePort").is_none()
                && let Some(op) = old_ports.iter().find(|op| op.get("port") == p.get("port"))
                && let Some(np) = op.get("nodePort")
            {
                p["nodePort"] = np.clone();
            }
        }
    }
    Ok(())
}
