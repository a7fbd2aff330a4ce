//! Unknown fields of built-in kinds over HTTP, as the API server treats
//! them: dropped with a `Warning` header by default, dropped silently with
//! `fieldValidation=Ignore`, refused with 400 by `fieldValidation=Strict`,
//! and refused with 500 by server-side apply whatever the directive.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{CMS, JSON, get_json, send, start};

fn cm_with_typos(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "colour": "red"},
           "data": {"k": "v"}, "spec": {"x": 1}})
}

#[tokio::test]
async fn create_and_update_drop_warn_or_refuse_as_field_validation_says() {
    let sb = start().await;

    // Default (Warn): created without the unknown fields, one warning each.
    let a = send(&sb, Method::POST, CMS, JSON, Some(&cm_with_typos("warned"))).await;
    assert_eq!(a.code, 201, "{}", a.body);
    assert_eq!(
        a.warnings,
        [
            r#"299 - "unknown field \"metadata.colour\"""#,
            r#"299 - "unknown field \"spec\"""#
        ]
    );
    let warned = format!("{CMS}/warned");
    let (_, stored) = get_json(&sb, &warned).await;
    assert!(stored.get("spec").is_none(), "{stored}");
    assert!(stored["metadata"].get("colour").is_none(), "{stored}");
    assert_eq!(stored["data"], json!({"k": "v"}));

    // Ignore: the same, silently.
    let url = format!("{CMS}?fieldValidation=Ignore");
    let body = cm_with_typos("ignored");
    let a = send(&sb, Method::POST, &url, JSON, Some(&body)).await;
    assert_eq!((a.code, a.warnings.len()), (201, 0), "{}", a.body);
    let (_, ignored) = get_json(&sb, &format!("{CMS}/ignored")).await;
    assert!(ignored.get("spec").is_none());

    // Strict (what kubectl sends): refused, nothing stored.
    let url = format!("{CMS}?fieldValidation=Strict");
    let body = cm_with_typos("strict");
    let a = send(&sb, Method::POST, &url, JSON, Some(&body)).await;
    assert_eq!(a.code, 400);
    assert_eq!(a.body["reason"], "BadRequest");
    assert_eq!(
        a.body["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding \
         error: unknown field \"metadata.colour\", unknown field \"spec\""
    );
    assert_eq!(get_json(&sb, &format!("{CMS}/strict")).await.0, 404);

    // PUT, Strict: refused, the stored object unchanged.
    let (_, before) = get_json(&sb, &warned).await;
    let mut replaced = cm_with_typos("warned");
    replaced["data"] = json!({"k": "changed"});
    let url = format!("{warned}?fieldValidation=Strict");
    let a = send(&sb, Method::PUT, &url, JSON, Some(&replaced)).await;
    assert_eq!(a.code, 400, "{}", a.body);
    assert_eq!(get_json(&sb, &warned).await.1, before);
    // PUT, default: written without them.
    let a = send(&sb, Method::PUT, &warned, JSON, Some(&replaced)).await;
    assert_eq!((a.code, a.warnings.len()), (200, 2), "{}", a.body);
    assert_eq!(a.body["data"], json!({"k": "changed"}));
    assert!(a.body.get("spec").is_none());
}

#[tokio::test]
async fn patches_are_judged_by_their_fields_and_apply_refuses_unknown_ones() {
    let sb = start().await;
    let cm = json!({"metadata": {"name": "c"}, "data": {"k": "v"}});
    let a = send(&sb, Method::POST, CMS, JSON, Some(&cm)).await;
    assert_eq!(a.code, 201);
    let merge = "application/merge-patch+json";
    let strategic = "application/strategic-merge-patch+json";
    let apply = "application/apply-patch+yaml";
    let c = format!("{CMS}/c");

    // Merge patch: the unknown field is dropped with a warning, the rest
    // applies; a null (a delete) is no unknown field.
    let patch = json!({"data": {"k": "w"}, "dataa": {"x": "y"}, "binaryData": null});
    let a = send(&sb, Method::PATCH, &c, merge, Some(&patch)).await;
    assert_eq!(a.code, 200, "{}", a.body);
    assert_eq!(a.warnings, [r#"299 - "unknown field \"dataa\"""#]);
    assert_eq!(a.body["data"], json!({"k": "w"}));
    assert!(a.body.get("dataa").is_none());
    // Strategic merge patch, Strict: refused.
    let url = format!("{c}?fieldValidation=Strict");
    let patch = json!({"data": {"k": "x"}, "immutabl": true});
    let a = send(&sb, Method::PATCH, &url, strategic, Some(&patch)).await;
    assert_eq!(a.code, 400, "{}", a.body);
    assert_eq!(
        a.body["message"],
        r#"strict decoding error: unknown field "immutabl""#
    );
    assert_eq!(get_json(&sb, &c).await.1["data"], json!({"k": "w"}));

    // Server-side apply: 500, whatever fieldValidation says, on an
    // existing object and on one the apply would create.
    let (_, before) = get_json(&sb, &c).await;
    for (name, query) in [("c", ""), ("c", "&fieldValidation=Ignore"), ("new", "")] {
        let url = format!("{CMS}/{name}?fieldManager=test{query}");
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": name}, "data": {"k": "z"}, "spec": {"x": 1}});
        let a = send(&sb, Method::PATCH, &url, apply, Some(&body)).await;
        assert_eq!(a.code, 500, "{name}{query}: {}", a.body);
        assert_eq!(a.body["reason"], "InternalError");
        assert_eq!(
            a.body["message"],
            format!(
                "failed to create typed patch object (default/{name}; /v1, Kind=ConfigMap): \
                 .spec: field not declared in schema"
            )
        );
    }
    assert_eq!(get_json(&sb, &c).await.1, before);
    assert_eq!(get_json(&sb, &format!("{CMS}/new")).await.0, 404);
    // A clean apply still works (forced: `data.k` was set by the patches).
    let url = format!("{c}?fieldManager=test&force=true");
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "c"}, "data": {"k": "z"}});
    let a = send(&sb, Method::PATCH, &url, apply, Some(&body)).await;
    assert_eq!(a.code, 200, "{}", a.body);
    assert_eq!(a.body["data"], json!({"k": "z"}));
}
