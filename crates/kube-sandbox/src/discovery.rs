//! Discovery and OpenAPI documents, generated from the registry.
//!
//! Discovery (`/api`, `/apis`, `/apis/<group>/<version>`) is what kubectl
//! and kube-rs read to map kinds to URLs. The OpenAPI v3 documents carry
//! only what kubectl needs: one operation per verb with
//! `x-kubernetes-action`, `x-kubernetes-group-version-kind` and the
//! query parameters the server honours (kubectl's `apply` checks for
//! `fieldValidation` there), and the schemas of the built-in kinds with
//! everything they refer to (`kubectl explain` reads them).

use serde_json::{Value, json};

use crate::registry::{Registry, Resource, Special};

/// The version the sandbox reports.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "33",
        "gitVersion": "v1.33.0-mirra-sandbox",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// The verbs of a resource: every standard one, but `deletecollection`
/// where the registry has no collection delete (namespaces).
fn verbs(res: &Resource) -> Value {
    match res.special {
        Special::Review => return json!(["create"]),
        Special::ComponentStatus => return json!(["get", "list"]),
        _ => {}
    }
    let mut v = vec!["create", "delete"];
    if res.deletes_collections() {
        v.push("deletecollection");
    }
    v.extend(["get", "list", "patch", "update", "watch"]);
    json!(v)
}

fn subresource_verbs() -> Value {
    json!(["get", "patch", "update"])
}

fn api_resource(res: &Resource) -> Vec<Value> {
    let mut out = vec![json!({
        "name": res.plural,
        "singularName": res.singular,
        "namespaced": res.namespaced,
        "kind": res.kind,
        "verbs": verbs(res),
        "shortNames": res.short_names,
        "categories": res.categories,
        "storageVersionHash": "",
    })];
    if res.scale_subresource {
        out.push(json!({
            "name": format!("{}/scale", res.plural),
            "singularName": "",
            "namespaced": res.namespaced,
            "group": "autoscaling",
            "version": "v1",
            "kind": "Scale",
            "verbs": subresource_verbs(),
        }));
    }
    if res.status_subresource {
        out.push(json!({
            "name": format!("{}/status", res.plural),
            "singularName": "",
            "namespaced": res.namespaced,
            "kind": res.kind,
            "verbs": subresource_verbs(),
        }));
    }
    for sub in crate::subresources::extra(res) {
        let mut entry = json!({
            "name": format!("{}/{}", res.plural, sub.name),
            "singularName": "",
            "namespaced": res.namespaced,
            "kind": sub.kind,
            "verbs": sub.verbs,
        });
        if let Some((group, version)) = sub.group_version {
            entry["group"] = json!(group);
            entry["version"] = json!(version);
        }
        out.push(entry);
    }
    // Subresources follow their resource in name order, as the server
    // lists them.
    out[1..].sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    out
}

/// The media type of aggregated discovery (`/api` and `/apis` answered
/// with every group, version and resource in one document), which
/// kubectl and client-go ask for first.
pub const AGGREGATED_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether an `Accept` header asks for aggregated discovery (v2; the
/// v2beta1 form is no longer served by v1.33, so it falls through to the
/// plain documents as a client's next choice).
pub fn wants_aggregated(accept: &str) -> bool {
    let Some(first) = accept.split(',').next() else {
        return false;
    };
    let params: Vec<&str> = first.split(';').map(str::trim).collect();
    params.contains(&"g=apidiscovery.k8s.io")
        && params.contains(&"v=v2")
        && params.contains(&"as=APIGroupDiscoveryList")
}

fn aggregated_resource(res: &Resource) -> Value {
    let mut subs = Vec::new();
    if res.scale_subresource {
        subs.push(json!({
            "subresource": "scale",
            "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "verbs": subresource_verbs(),
        }));
    }
    if res.status_subresource {
        subs.push(json!({
            "subresource": "status",
            "responseKind": {"group": res.group, "version": res.version, "kind": res.kind},
            "verbs": subresource_verbs(),
        }));
    }
    for sub in crate::subresources::extra(res) {
        let (group, version) = sub
            .group_version
            .unwrap_or((res.group.as_str(), res.version.as_str()));
        subs.push(json!({
            "subresource": sub.name,
            "responseKind": {"group": group, "version": version, "kind": sub.kind},
            "verbs": sub.verbs,
        }));
    }
    subs.sort_by(|a, b| a["subresource"].as_str().cmp(&b["subresource"].as_str()));
    let mut r = json!({
        "resource": res.plural,
        "responseKind": {"group": res.group, "version": res.version, "kind": res.kind},
        "scope": if res.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": res.singular,
        "verbs": verbs(res),
    });
    if !res.short_names.is_empty() {
        r["shortNames"] = json!(res.short_names);
    }
    if !res.categories.is_empty() {
        r["categories"] = json!(res.categories);
    }
    if !subs.is_empty() {
        r["subresources"] = json!(subs);
    }
    r
}

/// `/api` (`core` true) or `/apis` as aggregated discovery.
pub fn aggregated(reg: &Registry, core: bool) -> Value {
    let items: Vec<Value> = reg
        .groups()
        .into_iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(g, versions)| {
            let versions: Vec<Value> = versions
                .iter()
                .map(|v| {
                    let resources: Vec<Value> = reg
                        .all()
                        .filter(|r| r.group == g && &r.version == v)
                        .map(|r| aggregated_resource(r))
                        .collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            let mut meta = json!({"creationTimestamp": null});
            if !g.is_empty() {
                meta["name"] = json!(g);
            }
            json!({"metadata": meta, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

/// `/api`.
pub fn core_versions(server_addr: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_addr}],
    })
}

/// `/api/v1` or `/apis/<group>/<version>`.
pub fn resource_list(reg: &Registry, group: &str, version: &str) -> Value {
    let resources: Vec<Value> = reg
        .all()
        .filter(|r| r.group == group && r.version == version)
        .flat_map(|r| api_resource(r))
        .collect();
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources})
}

fn group_json(group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    let preferred = vs.first().cloned().unwrap_or(Value::Null);
    json!({"name": group, "versions": vs, "preferredVersion": preferred})
}

/// `/apis`.
pub fn group_list(reg: &Registry) -> Value {
    let groups: Vec<Value> = reg
        .groups()
        .into_iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, vs)| group_json(&g, &vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>`.
pub fn group(reg: &Registry, name: &str) -> Option<Value> {
    reg.groups()
        .into_iter()
        .find(|(g, _)| g == name && !g.is_empty())
        .map(|(g, vs)| {
            let mut v = group_json(&g, &vs);
            v["kind"] = json!("APIGroup");
            v["apiVersion"] = json!("v1");
            v
        })
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `/openapi/v3`: where each group-version's document lives.
pub fn openapi_v3_root(reg: &Registry) -> Value {
    // The hash changes whenever the served kinds change, so clients do not
    // keep a stale cached document (FNV-1a over the served resources).
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for r in reg.all() {
        for b in r.qualified().bytes().chain(r.version.bytes()) {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    let mut paths = serde_json::Map::new();
    for (g, versions) in reg.groups() {
        for v in versions {
            let p = gv_path(&g, &v);
            paths.insert(
                p.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={hash:016X}")}),
            );
        }
    }
    json!({"paths": paths})
}

fn param(name: &str) -> Value {
    json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}})
}

fn operation(res: &Resource, action: &str, write: bool) -> Value {
    let mut params = vec![param("pretty")];
    if write {
        params.extend([
            param("dryRun"),
            param("fieldManager"),
            param("fieldValidation"),
        ]);
    }
    if action == "patch" {
        params.push(json!({"name": "force", "in": "query", "schema": {"type": "boolean", "uniqueItems": true}}));
    }
    let mut ok = json!({"description": "OK"});
    let schema = if res.builtin {
        crate::builtin::schema_name(&res.group, &res.version, &res.kind)
    } else {
        res.schema.as_ref().map(|_| custom_schema_name(res))
    };
    if let Some(name) = schema {
        ok["content"] = json!({"application/json": {"schema": {"$ref": format!("#/components/schemas/{name}")}}});
    }
    json!({
        "operationId": format!("{action}{}", res.kind),
        "parameters": params,
        "responses": {"200": ok},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": res.group, "version": res.version, "kind": res.kind},
    })
}

/// The named built-in schemas and every definition they refer to.
fn schema_closure(roots: &[String]) -> serde_json::Map<String, Value> {
    let all = crate::builtin::schemas();
    let mut out = serde_json::Map::new();
    let mut todo: Vec<String> = roots.to_vec();
    while let Some(name) = todo.pop() {
        if out.contains_key(&name) {
            continue;
        }
        let Some(s) = all.get(&name) else { continue };
        collect_refs(s, &mut todo);
        out.insert(name, s.clone());
    }
    out.sort_keys();
    out
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "$ref"
                    && let Some(r) = x.as_str().and_then(|r| r.rsplit('/').next())
                {
                    out.push(r.to_string());
                } else {
                    collect_refs(x, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_refs(x, out)),
        _ => {}
    }
}

/// The name the real server gives a custom resource's schema: the group
/// reversed, the version and the kind (`com.example.v1.Widget` for
/// `example.com/v1` Widget).
pub fn custom_schema_name(res: &Resource) -> String {
    let group: Vec<&str> = res.group.split('.').rev().collect();
    format!("{}.{}.{}", group.join("."), res.version, res.kind)
}

/// The name of `ObjectMeta`'s schema among the built-in definitions.
fn object_meta_name() -> Option<&'static str> {
    crate::builtin::schemas()
        .keys()
        .find(|k| k.ends_with(".apis.meta.v1.ObjectMeta"))
        .map(String::as_str)
}

/// A custom resource's published schema, as the server builds it from the
/// CRD's storage version: the `openAPIV3Schema` with `apiVersion` and
/// `kind` described, `metadata` referring to `ObjectMeta`, and the
/// `x-kubernetes-group-version-kind` kubectl looks kinds up by.
fn custom_schema(res: &Resource, schema: &Value) -> Value {
    let mut s = match schema {
        Value::Object(m) => m.clone(),
        _ => serde_json::Map::new(),
    };
    let mut props = s
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    props.insert(
        "apiVersion".into(),
        json!({"description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources", "type": "string"}),
    );
    props.insert(
        "kind".into(),
        json!({"description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds", "type": "string"}),
    );
    if let Some(meta) = object_meta_name() {
        props.insert(
            "metadata".into(),
            json!({"allOf": [{"$ref": format!("#/components/schemas/{meta}")}], "default": {}, "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"}),
        );
    }
    s.insert("properties".into(), Value::Object(props));
    s.entry("type").or_insert(json!("object"));
    s.insert(
        "x-kubernetes-group-version-kind".into(),
        json!([{"group": res.group, "kind": res.kind, "version": res.version}]),
    );
    Value::Object(s)
}

/// `/openapi/v3/<api/v1 | apis/g/v>`: the operations of one group-version.
pub fn openapi_v3_doc(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    if !reg.serves(group, version) {
        return None;
    }
    let mut paths = serde_json::Map::new();
    for res in reg
        .all()
        .filter(|r| r.group == group && r.version == version)
    {
        let base = format!("/{}", gv_path(group, version));
        let coll = if res.namespaced {
            format!("{base}/namespaces/{{namespace}}/{}", res.plural)
        } else {
            format!("{base}/{}", res.plural)
        };
        match res.special {
            // The create-only reviews have a POST on their collection and
            // nothing else.
            Special::Review => {
                paths.insert(coll, json!({"post": operation(res, "post", true)}));
                continue;
            }
            Special::ComponentStatus => {
                paths.insert(coll.clone(), json!({"get": operation(res, "list", false)}));
                paths.insert(
                    format!("{coll}/{{name}}"),
                    json!({"get": operation(res, "get", false)}),
                );
                continue;
            }
            _ => {}
        }
        paths.insert(
            coll.clone(),
            json!({
                "get": operation(res, "list", false),
                "post": operation(res, "post", true),
                "delete": operation(res, "deletecollection", false),
            }),
        );
        paths.insert(
            format!("{coll}/{{name}}"),
            json!({
                "get": operation(res, "get", false),
                "put": operation(res, "put", true),
                "patch": operation(res, "patch", true),
                "delete": operation(res, "delete", true),
            }),
        );
        if res.status_subresource {
            paths.insert(
                format!("{coll}/{{name}}/status"),
                json!({
                    "get": operation(res, "get", false),
                    "put": operation(res, "put", true),
                    "patch": operation(res, "patch", true),
                }),
            );
        }
    }
    let mut roots: Vec<String> = reg
        .all()
        .filter(|r| r.group == group && r.version == version && r.builtin)
        .filter_map(|r| crate::builtin::schema_name(&r.group, &r.version, &r.kind))
        .collect();
    let custom: Vec<(String, Value)> = reg
        .all()
        .filter(|r| r.group == group && r.version == version && !r.builtin)
        .filter_map(|r| {
            Some((
                custom_schema_name(r),
                custom_schema(r, r.schema.as_deref()?),
            ))
        })
        .collect();
    if !custom.is_empty()
        && let Some(meta) = object_meta_name()
    {
        roots.push(meta.to_string());
    }
    let mut schemas = schema_closure(&roots);
    for (name, schema) in custom {
        schemas.insert(name, schema);
    }
    schemas.sort_keys();
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.33.0-mirra-sandbox"},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_lists_builtins() {
        let reg = Registry::with_builtins();
        let core = resource_list(&reg, "", "v1");
        let names: Vec<&str> = core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"configmaps"));
        assert!(names.contains(&"services/status"));
        let groups = group_list(&reg);
        assert!(
            groups["groups"]
                .as_array()
                .unwrap()
                .iter()
                .any(|g| g["name"] == "discovery.k8s.io")
        );
        assert!(group(&reg, "apps").is_some());
        assert!(group(&reg, "nope").is_none());
    }

    #[test]
    fn openapi_operations_carry_field_validation() {
        let reg = Registry::with_builtins();
        let doc = openapi_v3_doc(&reg, "", "v1").unwrap();
        let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-action"], "patch");
        assert_eq!(
            patch["x-kubernetes-group-version-kind"]["kind"],
            "ConfigMap"
        );
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        assert!(openapi_v3_doc(&reg, "nope", "v1").is_none());

        // A CRD's schema is published under the server's name for it.
        let mut reg = reg;
        let crd = json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "description": "What is wanted.",
                                 "properties": {"size": {"type": "integer"}}}}}}}]}
        });
        reg.insert(crate::registry::resource_from_crd(&crd).unwrap());
        let doc = openapi_v3_doc(&reg, "example.com", "v1").unwrap();
        let widget = &doc["components"]["schemas"]["com.example.v1.Widget"];
        assert_eq!(
            widget["properties"]["spec"]["description"],
            "What is wanted."
        );
        assert_eq!(
            widget["x-kubernetes-group-version-kind"],
            json!([{"group": "example.com", "kind": "Widget", "version": "v1"}])
        );
        let meta = widget["properties"]["metadata"]["allOf"][0]["$ref"]
            .as_str()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap();
        assert!(doc["components"]["schemas"].get(meta).is_some());
        assert_eq!(
            doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["get"]["responses"]
                ["200"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/com.example.v1.Widget"
        );
        let root = openapi_v3_root(&reg);
        assert!(
            root["paths"]["apis/apps/v1"]["serverRelativeURL"]
                .as_str()
                .unwrap()
                .starts_with("/openapi/v3/apis/apps/v1?hash=")
        );
    }

    #[test]
    fn aggregated_discovery_is_asked_for_by_its_media_type() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert!(wants_aggregated(kubectl));
        assert!(!wants_aggregated("application/json"));
        assert!(!wants_aggregated(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
        ));
        assert!(!wants_aggregated(""));
    }

    #[test]
    fn aggregated_discovery_lists_every_resource_with_its_subresources() {
        let reg = Registry::with_builtins();
        let core = aggregated(&reg, true);
        assert_eq!(core["kind"], "APIGroupDiscoveryList");
        assert_eq!(core["apiVersion"], "apidiscovery.k8s.io/v2");
        let items = core["items"].as_array().unwrap();
        assert_eq!(items.len(), 1);
        assert!(items[0]["metadata"].get("name").is_none());
        let resources = items[0]["versions"][0]["resources"].as_array().unwrap();
        let pods = resources.iter().find(|r| r["resource"] == "pods").unwrap();
        assert_eq!(pods["scope"], "Namespaced");
        assert_eq!(pods["shortNames"], json!(["po"]));
        assert_eq!(pods["categories"], json!(["all"]));
        let rc = resources
            .iter()
            .find(|r| r["resource"] == "replicationcontrollers")
            .unwrap();
        let subs: Vec<&str> = rc["subresources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["subresource"].as_str().unwrap())
            .collect();
        assert_eq!(subs, ["scale", "status"]);
        assert_eq!(rc["subresources"][0]["responseKind"]["kind"], "Scale");

        let groups = aggregated(&reg, false);
        let names: Vec<&str> = groups["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["metadata"]["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"apps") && names.contains(&"batch"),
            "{names:?}"
        );
        assert!(!names.contains(&""));
        // Every resource of the plain discovery is in the aggregated one.
        let plain: usize = reg.all().count();
        let agg: usize = [&core, &groups]
            .iter()
            .flat_map(|d| d["items"].as_array().unwrap())
            .flat_map(|g| g["versions"].as_array().unwrap())
            .map(|v| v["resources"].as_array().unwrap().len())
            .sum();
        assert_eq!(plain, agg);
    }

    #[test]
    fn openapi_documents_carry_the_kinds_schemas() {
        let reg = Registry::with_builtins();
        let doc = openapi_v3_doc(&reg, "apps", "v1").unwrap();
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        let dep = &schemas["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            dep["x-kubernetes-group-version-kind"],
            json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
        );
        // What the kind refers to is in the same document.
        assert!(schemas.contains_key("io.k8s.api.core.v1.PodSpec"));
        assert!(schemas.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        let get = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["get"];
        assert_eq!(
            get["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/io.k8s.api.apps.v1.Deployment"
        );
    }

    #[test]
    fn namespaces_have_no_collection_delete() {
        let reg = Registry::with_builtins();
        let core = resource_list(&reg, "", "v1");
        let verbs_of = |name: &str| {
            core["resources"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["name"] == name)
                .unwrap()["verbs"]
                .clone()
        };
        assert_eq!(
            verbs_of("namespaces"),
            json!([
                "create", "delete", "get", "list", "patch", "update", "watch"
            ])
        );
        assert!(
            verbs_of("configmaps")
                .as_array()
                .unwrap()
                .contains(&json!("deletecollection"))
        );
    }
}
