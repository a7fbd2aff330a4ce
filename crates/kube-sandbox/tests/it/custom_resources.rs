//! Custom resources over HTTP as apiextensions-apiserver serves them: the
//! CRD's structural schema prunes unknown fields (warned about, ignored or
//! refused as `fieldValidation` says), applies defaults and validates
//! (422 with the schema's causes); Tables carry the CRD's printer columns;
//! the group-version's OpenAPI v3 document publishes the schema. Also the
//! wire form every answer shares: a `Status` in the server's field order
//! and a newline after every JSON body.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use kube_sandbox::Sandbox;
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{Answer, CRDS, JSON, MERGE, create_crd, request, send, start, widget_crd};

const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// The Widget CRD with a structural schema (a required field, a range, an
/// enum, defaults, a node keeping unknown fields), a status subresource
/// and printer columns.
fn crd() -> Value {
    let mut crd = widget_crd();
    crd["spec"]["names"]["shortNames"] = json!(["wd"]);
    crd["spec"]["versions"][0] = json!({
        "name": "v1", "served": true, "storage": true,
        "subresources": {"status": {}},
        "additionalPrinterColumns": [
            {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
            {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
            {"name": "Created", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
        ],
        "schema": {"openAPIV3Schema": {
            "type": "object",
            "description": "A Widget is a test kind.",
            "properties": {
                "spec": {
                    "type": "object",
                    "description": "What the widget should be.",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string", "maxLength": 10},
                        "replicas": {"type": "integer", "minimum": 1, "default": 1},
                        "color": {"type": "string", "enum": ["red", "blue"], "description": "The colour."},
                        "mode": {"type": "object", "default": {},
                                 "properties": {"speed": {"type": "string", "default": "slow"}}},
                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                    }
                },
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
            }
        }}
    });
    crd
}

async fn sandbox_with_crd() -> Sandbox {
    let sb = start().await;
    create_crd(&sb, &crd()).await;
    sb
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
           "metadata": {"name": name}, "spec": spec})
}

/// Creates the Widget `name` with `spec`.
async fn create_widget(sb: &Sandbox, name: &str, spec: Value) -> Answer {
    send(sb, Method::POST, WIDGETS, JSON, Some(&widget(name, spec))).await
}

/// A merge patch of `{WIDGETS}/{path}` (a Widget, its status, with a query).
async fn patch_widget(sb: &Sandbox, path: &str, patch: Value) -> Answer {
    let url = format!("{WIDGETS}/{path}");
    send(sb, Method::PATCH, &url, MERGE, Some(&patch)).await
}

/// A GET of `path` as JSON.
async fn get(sb: &Sandbox, path: &str) -> Answer {
    send(sb, Method::GET, path, JSON, None).await
}

/// Replaces the CRD's versions (with their schemas) by a merge patch.
async fn patch_crd_versions(sb: &Sandbox, versions: Value) -> Answer {
    let url = format!("{CRDS}/widgets.example.com");
    let patch = json!({"spec": {"versions": versions}});
    send(sb, Method::PATCH, &url, MERGE, Some(&patch)).await
}

/// The Widgets as a Table.
async fn table(sb: &Sandbox) -> Value {
    request(sb, Method::GET, WIDGETS, &[("accept", TABLE)], vec![])
        .await
        .body
}

#[tokio::test]
async fn unknown_fields_are_pruned_warned_ignored_or_refused() {
    let sb = sandbox_with_crd().await;
    let body = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "warned", "colour": "red"},
        "spec": {"name": "a", "foo": 1, "extra": {"anything": [1]}}, "top": true});

    // Warn (the default): stored without them, one warning each.
    let a = send(&sb, Method::POST, WIDGETS, JSON, Some(&body)).await;
    assert_eq!(a.code, 201, "{}", a.text);
    assert_eq!(
        a.warnings,
        [
            r#"299 - "unknown field \"metadata.colour\"""#,
            r#"299 - "unknown field \"spec.foo\"""#,
            r#"299 - "unknown field \"top\"""#,
        ]
    );
    let got = get(&sb, &format!("{WIDGETS}/warned")).await;
    assert!(got.body["spec"].get("foo").is_none(), "{}", got.text);
    assert!(got.body.get("top").is_none(), "{}", got.text);
    assert!(got.body["metadata"].get("colour").is_none(), "{}", got.text);
    // A node preserving unknown fields keeps them.
    assert_eq!(got.body["spec"]["extra"], json!({"anything": [1]}));

    // Ignore: pruned silently.
    let mut ignored = body.clone();
    ignored["metadata"]["name"] = json!("ignored");
    let url = format!("{WIDGETS}?fieldValidation=Ignore");
    let a = send(&sb, Method::POST, &url, JSON, Some(&ignored)).await;
    assert_eq!(a.code, 201, "{}", a.text);
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    assert!(a.body["spec"].get("foo").is_none(), "{}", a.text);

    // Strict: refused by the decoder.
    let mut strict = body.clone();
    strict["metadata"]["name"] = json!("strict");
    let url = format!("{WIDGETS}?fieldValidation=Strict");
    let a = send(&sb, Method::POST, &url, JSON, Some(&strict)).await;
    assert_eq!(a.code, 400, "{}", a.text);
    assert_eq!(a.body["reason"], "BadRequest");
    assert_eq!(
        a.body["message"],
        r#"Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "metadata.colour", unknown field "spec.foo", unknown field "top""#
    );
    let gone = get(&sb, &format!("{WIDGETS}/strict")).await;
    assert_eq!(gone.code, 404);

    // A merge patch: its unknown fields are warned about (Warn) or refused
    // (Strict); the patch's nulls are deletions, not unknown fields.
    let a = patch_widget(
        &sb,
        "warned",
        json!({"spec": {"bar": 2, "color": "red", "gone": null}}),
    )
    .await;
    assert_eq!(a.code, 200, "{}", a.text);
    assert_eq!(a.warnings, [r#"299 - "unknown field \"spec.bar\"""#]);
    assert!(a.body["spec"].get("bar").is_none(), "{}", a.text);
    assert_eq!(a.body["spec"]["color"], "red");
    let strict = "warned?fieldValidation=Strict";
    let a = patch_widget(&sb, strict, json!({"spec": {"bar": 2}})).await;
    assert_eq!(a.code, 400, "{}", a.text);
    assert_eq!(
        a.body["message"],
        r#"strict decoding error: unknown field "spec.bar""#
    );

    // An update (PUT) is pruned the same way.
    let warned = format!("{WIDGETS}/warned");
    let mut current = get(&sb, &warned).await.body;
    current["spec"]["baz"] = json!(3);
    let a = send(&sb, Method::PUT, &warned, JSON, Some(&current)).await;
    assert_eq!(a.code, 200, "{}", a.text);
    assert_eq!(a.warnings, [r#"299 - "unknown field \"spec.baz\"""#]);
    assert!(a.body["spec"].get("baz").is_none());
    sb.shutdown().await;
}

#[tokio::test]
async fn schema_violations_are_refused_with_the_servers_causes() {
    let sb = sandbox_with_crd().await;

    // A missing required field.
    let a = create_widget(&sb, "w", json!({"replicas": 2})).await;
    assert_eq!(a.code, 422, "{}", a.text);
    assert_eq!(a.body["reason"], "Invalid");
    assert_eq!(
        a.body["message"],
        r#"Widget.example.com "w" is invalid: spec.name: Required value"#
    );
    assert_eq!(
        a.body["details"],
        json!({"name": "w", "group": "example.com", "kind": "Widget", "causes": [
            {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.name"}]})
    );

    // A wrong type and a value outside the enum: both causes, in a list.
    let spec = json!({"name": "a", "replicas": "string", "color": "pink"});
    let a = create_widget(&sb, "w", spec).await;
    assert_eq!(a.code, 422, "{}", a.text);
    assert_eq!(
        a.body["message"],
        r#"Widget.example.com "w" is invalid: [spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string", spec.color: Unsupported value: "pink": supported values: "red", "blue"]"#
    );
    let causes = a.body["details"]["causes"].as_array().unwrap();
    assert_eq!(causes[0]["reason"], "FieldValueTypeInvalid");
    assert_eq!(causes[1]["reason"], "FieldValueNotSupported");

    // Ranges and lengths.
    let a = create_widget(&sb, "w", json!({"name": "much-too-long", "replicas": 0})).await;
    assert_eq!(a.code, 422, "{}", a.text);
    assert_eq!(
        a.body["message"],
        r#"Widget.example.com "w" is invalid: [spec.name: Too long: may not be more than 10 bytes, spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1]"#
    );

    // Nothing was stored.
    let list = get(&sb, WIDGETS).await;
    assert_eq!(list.body["items"], json!([]));

    // An update and a patch are validated too.
    let a = create_widget(&sb, "ok", json!({"name": "a"})).await;
    assert_eq!(a.code, 201, "{}", a.text);
    let a = patch_widget(&sb, "ok", json!({"spec": {"color": "green"}})).await;
    assert_eq!(a.code, 422, "{}", a.text);
    assert_eq!(
        a.body["message"],
        r#"Widget.example.com "ok" is invalid: spec.color: Unsupported value: "green": supported values: "red", "blue""#
    );
    // The status subresource is checked against the schema as well.
    let a = patch_widget(&sb, "ok/status", json!({"status": {"ready": "yes"}})).await;
    assert_eq!(a.code, 422, "{}", a.text);
    assert_eq!(a.body["details"]["causes"][0]["field"], "status.ready");
    sb.shutdown().await;
}

#[tokio::test]
async fn defaults_are_applied_on_create_and_update() {
    let sb = sandbox_with_crd().await;
    let a = create_widget(&sb, "d", json!({"name": "a"})).await;
    assert_eq!(a.code, 201, "{}", a.text);
    assert_eq!(a.body["spec"]["replicas"], 1);
    // A defaulted object is defaulted inside as well.
    assert_eq!(a.body["spec"]["mode"], json!({"speed": "slow"}));

    // A null of a non-nullable field with a default gets the default.
    let a = patch_widget(
        &sb,
        "d",
        json!({"spec": {"replicas": 4, "mode": {"speed": "fast"}}}),
    )
    .await;
    assert_eq!(a.code, 200, "{}", a.text);
    assert_eq!(a.body["spec"]["replicas"], 4);
    assert_eq!(a.body["spec"]["mode"]["speed"], "fast");
    // Removing a defaulted field brings the default back.
    let a = patch_widget(&sb, "d", json!({"spec": {"replicas": null}})).await;
    assert_eq!(a.code, 200, "{}", a.text);
    assert_eq!(a.body["spec"]["replicas"], 1);
    sb.shutdown().await;
}

#[tokio::test]
async fn a_tightened_schema_ratchets_what_an_update_leaves_unchanged() {
    let sb = sandbox_with_crd().await;
    let a = create_widget(&sb, "r", json!({"name": "a", "color": "red"})).await;
    assert_eq!(a.code, 201, "{}", a.text);
    // The CRD now allows blue only: the stored red is invalid.
    let mut versions = crd()["spec"]["versions"].clone();
    versions[0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["color"]["enum"] =
        json!(["blue"]);
    let a = patch_crd_versions(&sb, versions).await;
    assert_eq!(a.code, 200, "{}", a.text);
    // Another field changes: the unchanged red is not judged again.
    let a = patch_widget(&sb, "r", json!({"spec": {"replicas": 2}})).await;
    assert_eq!(a.code, 200, "{}", a.text);
    // A changed colour is.
    let a = patch_widget(&sb, "r", json!({"spec": {"color": "red", "name": "b"}})).await;
    assert_eq!(a.code, 200, "{}", a.text);
    let a = patch_widget(&sb, "r", json!({"spec": {"color": "green"}})).await;
    assert_eq!(a.code, 422, "{}", a.text);
    assert_eq!(
        a.body["message"],
        r#"Widget.example.com "r" is invalid: spec.color: Unsupported value: "green": supported values: "blue""#
    );
    sb.shutdown().await;
}

#[tokio::test]
async fn a_default_added_to_the_schema_shows_on_stored_objects() {
    let sb = sandbox_with_crd().await;
    let a = create_widget(&sb, "old", json!({"name": "a"})).await;
    assert_eq!(a.code, 201, "{}", a.text);
    assert!(a.body["spec"].get("color").is_none());
    let rv = a.body["metadata"]["resourceVersion"].clone();
    let mut versions = crd()["spec"]["versions"].clone();
    versions[0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["color"]["default"] =
        json!("blue");
    let a = patch_crd_versions(&sb, versions).await;
    assert_eq!(a.code, 200, "{}", a.text);
    // Defaulted on read, the revision unchanged.
    let got = get(&sb, &format!("{WIDGETS}/old")).await;
    assert_eq!(got.body["spec"]["color"], "blue", "{}", got.text);
    assert_eq!(got.body["metadata"]["resourceVersion"], rv);
    let list = get(&sb, WIDGETS).await;
    assert_eq!(list.body["items"][0]["spec"]["color"], "blue");
    sb.shutdown().await;
}

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

#[tokio::test]
async fn tables_have_name_and_exactly_the_declared_columns() {
    let sb = sandbox_with_crd().await;
    let spec = json!({"name": "a", "color": "blue", "replicas": 3});
    let a = create_widget(&sb, "t", spec).await;
    assert_eq!(a.code, 201, "{}", a.text);
    let t = table(&sb).await;
    let cols: Vec<(&str, &str)> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["type"].as_str().unwrap()))
        .collect();
    assert_eq!(
        cols,
        [
            ("Name", "string"),
            ("Color", "string"),
            ("Replicas", "integer"),
            ("Created", "date")
        ]
    );
    assert_eq!(
        t["columnDefinitions"][1]["description"],
        "Custom resource definition column (in JSONPath format): .spec.color"
    );
    let cells = &t["rows"][0]["cells"];
    assert_eq!(cells[0], "t");
    assert_eq!(cells[1], "blue");
    assert_eq!(cells[2], 3);
    // A date column is an age (just created: seconds), not the timestamp.
    let age = cells[3].as_str().unwrap();
    assert!(
        age.ends_with('s') && age[..age.len() - 1].parse::<u32>().is_ok(),
        "{age}"
    );
    sb.shutdown().await;
}

#[tokio::test]
async fn a_crd_without_columns_prints_age() {
    let sb = start().await;
    let mut c = crd();
    c["spec"]["versions"][0]
        .as_object_mut()
        .unwrap()
        .remove("additionalPrinterColumns");
    create_crd(&sb, &c).await;
    create_widget(&sb, "t", json!({"name": "a"})).await;
    let t = table(&sb).await;
    let cols: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cols, ["Name", "Age"]);
    assert_eq!(t["columnDefinitions"][1]["type"], "date");
    sb.shutdown().await;
}

#[tokio::test]
async fn the_schema_is_published_for_explain() {
    let sb = sandbox_with_crd().await;
    let root = get(&sb, "/openapi/v3").await;
    let url = root.body["paths"]["apis/example.com/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    let doc = get(&sb, &url).await;
    assert_eq!(doc.code, 200);
    let widget = &doc.body["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(
        widget["x-kubernetes-group-version-kind"],
        json!([{"group": "example.com", "kind": "Widget", "version": "v1"}])
    );
    assert_eq!(widget["description"], "A Widget is a test kind.");
    assert_eq!(
        widget["properties"]["spec"]["properties"]["color"]["description"],
        "The colour."
    );
    assert_eq!(widget["properties"]["spec"]["required"], json!(["name"]));
    sb.shutdown().await;
}

#[tokio::test]
async fn bodies_end_with_a_newline_and_statuses_keep_the_field_order() {
    let sb = sandbox_with_crd().await;
    let a = create_widget(&sb, "n", json!({"name": "a"})).await;
    assert!(a.text.ends_with("}\n"), "{:?}", a.text);
    let list = get(&sb, WIDGETS).await;
    assert!(list.text.ends_with("]}\n"), "{:?}", list.text);
    let one = get(&sb, &format!("{WIDGETS}/n")).await;
    assert!(one.text.ends_with("}\n") && !one.text.ends_with("\n\n"));
    let missing = get(&sb, &format!("{WIDGETS}/nope")).await;
    assert_eq!(missing.code, 404);
    assert_eq!(
        missing.text,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\
         \"message\":\"widgets.example.com \\\"nope\\\" not found\",\"reason\":\"NotFound\",\
         \"details\":{\"name\":\"nope\",\"group\":\"example.com\",\"kind\":\"widgets\"},\"code\":404}\n"
    );
    let deleted = send(&sb, Method::DELETE, &format!("{WIDGETS}/n"), JSON, None).await;
    assert_eq!(deleted.code, 200, "{}", deleted.text);
    assert!(deleted.text.ends_with("}\n"));
    for path in ["/version", "/api", "/apis", "/openapi/v3"] {
        let r = get(&sb, path).await;
        assert!(r.text.ends_with('\n'), "{path}: {:?}", r.text);
    }
    sb.shutdown().await;
}
