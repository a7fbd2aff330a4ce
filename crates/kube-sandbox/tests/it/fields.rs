//! Unknown fields of built-in kinds over HTTP, as the API server treats
//! them: dropped with a `Warning` header by default, dropped silently with
//! `fieldValidation=Ignore`, refused with 400 by `fieldValidation=Strict`,
//! and refused with 500 by server-side apply whatever the directive.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use kube_sandbox::Sandbox;
use serde_json::{Value, json};

struct Answer {
    code: u16,
    warnings: Vec<String>,
    body: Value,
}

async fn send(sb: &Sandbox, method: reqwest::Method, path: &str, ct: &str, body: Value) -> Answer {
    let r = reqwest::Client::new()
        .request(method, format!("{}{path}", sb.url()))
        .header("content-type", ct)
        .body(serde_json::to_vec(&body).unwrap())
        .send()
        .await
        .unwrap();
    let code = r.status().as_u16();
    let warnings = r
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    Answer {
        code,
        warnings,
        body: r.json().await.unwrap_or(Value::Null),
    }
}

async fn get(sb: &Sandbox, path: &str) -> (u16, Value) {
    let r = reqwest::get(format!("{}{path}", sb.url())).await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const JSON: &str = "application/json";

fn cm_with_typos(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "colour": "red"},
           "data": {"k": "v"}, "spec": {"x": 1}})
}

#[tokio::test]
async fn create_and_update_drop_warn_or_refuse_as_field_validation_says() {
    use reqwest::Method;
    let sb = Sandbox::start(kube_sandbox::Config::default())
        .await
        .unwrap();

    // Default (Warn): created without the unknown fields, one warning each.
    let a = send(&sb, Method::POST, CMS, JSON, cm_with_typos("warned")).await;
    assert_eq!(a.code, 201, "{}", a.body);
    assert_eq!(
        a.warnings,
        [
            r#"299 - "unknown field \"metadata.colour\"""#,
            r#"299 - "unknown field \"spec\"""#
        ]
    );
    let (_, stored) = get(&sb, &format!("{CMS}/warned")).await;
    assert!(stored.get("spec").is_none(), "{stored}");
    assert!(stored["metadata"].get("colour").is_none(), "{stored}");
    assert_eq!(stored["data"], json!({"k": "v"}));

    // Ignore: the same, silently.
    let a = send(
        &sb,
        Method::POST,
        &format!("{CMS}?fieldValidation=Ignore"),
        JSON,
        cm_with_typos("ignored"),
    )
    .await;
    assert_eq!((a.code, a.warnings.len()), (201, 0), "{}", a.body);
    assert!(
        get(&sb, &format!("{CMS}/ignored"))
            .await
            .1
            .get("spec")
            .is_none()
    );

    // Strict (what kubectl sends): refused, nothing stored.
    let a = send(
        &sb,
        Method::POST,
        &format!("{CMS}?fieldValidation=Strict"),
        JSON,
        cm_with_typos("strict"),
    )
    .await;
    assert_eq!(a.code, 400);
    assert_eq!(a.body["reason"], "BadRequest");
    assert_eq!(
        a.body["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding \
         error: unknown field \"metadata.colour\", unknown field \"spec\""
    );
    assert_eq!(get(&sb, &format!("{CMS}/strict")).await.0, 404);

    // PUT, Strict: refused, the stored object unchanged.
    let (_, before) = get(&sb, &format!("{CMS}/warned")).await;
    let mut replaced = cm_with_typos("warned");
    replaced["data"] = json!({"k": "changed"});
    let a = send(
        &sb,
        Method::PUT,
        &format!("{CMS}/warned?fieldValidation=Strict"),
        JSON,
        replaced.clone(),
    )
    .await;
    assert_eq!(a.code, 400, "{}", a.body);
    assert_eq!(get(&sb, &format!("{CMS}/warned")).await.1, before);
    // PUT, default: written without them.
    let a = send(&sb, Method::PUT, &format!("{CMS}/warned"), JSON, replaced).await;
    assert_eq!((a.code, a.warnings.len()), (200, 2), "{}", a.body);
    assert_eq!(a.body["data"], json!({"k": "changed"}));
    assert!(a.body.get("spec").is_none());
}

#[tokio::test]
async fn patches_are_judged_by_their_fields_and_apply_refuses_unknown_ones() {
    use reqwest::Method;
    let sb = Sandbox::start(kube_sandbox::Config::default())
        .await
        .unwrap();
    let a = send(
        &sb,
        Method::POST,
        CMS,
        JSON,
        json!({"metadata": {"name": "c"}, "data": {"k": "v"}}),
    )
    .await;
    assert_eq!(a.code, 201);
    let merge = "application/merge-patch+json";
    let strategic = "application/strategic-merge-patch+json";

    // Merge patch: the unknown field is dropped with a warning, the rest
    // applies; a null (a delete) is no unknown field.
    let a = send(
        &sb,
        Method::PATCH,
        &format!("{CMS}/c"),
        merge,
        json!({"data": {"k": "w"}, "dataa": {"x": "y"}, "binaryData": null}),
    )
    .await;
    assert_eq!(a.code, 200, "{}", a.body);
    assert_eq!(a.warnings, [r#"299 - "unknown field \"dataa\"""#]);
    assert_eq!(a.body["data"], json!({"k": "w"}));
    assert!(a.body.get("dataa").is_none());
    // Strategic merge patch, Strict: refused.
    let a = send(
        &sb,
        Method::PATCH,
        &format!("{CMS}/c?fieldValidation=Strict"),
        strategic,
        json!({"data": {"k": "x"}, "immutabl": true}),
    )
    .await;
    assert_eq!(a.code, 400, "{}", a.body);
    assert_eq!(
        a.body["message"],
        r#"strict decoding error: unknown field "immutabl""#
    );
    assert_eq!(
        get(&sb, &format!("{CMS}/c")).await.1["data"],
        json!({"k": "w"})
    );

    // Server-side apply: 500, whatever fieldValidation says, on an
    // existing object and on one the apply would create.
    let (_, before) = get(&sb, &format!("{CMS}/c")).await;
    for (name, query) in [("c", ""), ("c", "&fieldValidation=Ignore"), ("new", "")] {
        let a = send(
            &sb,
            Method::PATCH,
            &format!("{CMS}/{name}?fieldManager=test{query}"),
            "application/apply-patch+yaml",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": name}, "data": {"k": "z"}, "spec": {"x": 1}}),
        )
        .await;
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
    assert_eq!(get(&sb, &format!("{CMS}/c")).await.1, before);
    assert_eq!(get(&sb, &format!("{CMS}/new")).await.0, 404);
    // A clean apply still works (forced: `data.k` was set by the patches).
    let a = send(
        &sb,
        Method::PATCH,
        &format!("{CMS}/c?fieldManager=test&force=true"),
        "application/apply-patch+yaml",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "c"}, "data": {"k": "z"}}),
    )
    .await;
    assert_eq!(a.code, 200, "{}", a.body);
    assert_eq!(a.body["data"], json!({"k": "z"}));
}
