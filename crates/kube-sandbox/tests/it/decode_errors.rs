//! Bodies of built-in kinds with values of the wrong JSON type, over HTTP,
//! as the API server answers them: a create or update is refused by the
//! JSON decoder with 400 `<Kind> in version "<v>" cannot be handled as a
//! <Kind>: json: cannot unmarshal ...`; a JSON merge patch or JSON patch is
//! applied first and the patched object refused with 422 `"" is invalid:
//! patch: Invalid value: "<patched object>": json: cannot unmarshal ...`.
//! Nothing is stored either way.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{CMS, DEPLOYS, JSON, MERGE, get_json, post_json, send_json, start};

const JSON_PATCH: &str = "application/json-patch+json";

fn deployment(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
           "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

/// The decoder's message for a `kind` (at `v1`) whose JSON does not
/// decode: `json: cannot unmarshal {what}`.
fn cannot_unmarshal(kind: &str, what: &str) -> String {
    format!("{kind} in version \"v1\" cannot be handled as a {kind}: json: cannot unmarshal {what}")
}

/// Asserts an answer is a 400 BadRequest with exactly `message`.
fn assert_bad_request((code, status): (u16, Value), message: &str) {
    assert_eq!(code, 400, "{status}");
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["reason"], "BadRequest", "{status}");
    assert_eq!(status["code"], 400, "{status}");
    assert_eq!(status["message"], message, "{status}");
}

#[tokio::test]
async fn a_create_with_a_value_of_the_wrong_type_is_refused_and_stores_nothing() {
    let sb = start().await;
    let before = sb.revision().await;

    let mut d = deployment("three");
    d["spec"]["replicas"] = json!("three");
    assert_bad_request(
        post_json(&sb, DEPLOYS, &d).await,
        &cannot_unmarshal(
            "Deployment",
            "string into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
    );

    // Inside a list of structs: no indexes in the path.
    let mut d = deployment("port");
    d["spec"]["template"]["spec"]["containers"][0]["ports"] = json!([{"containerPort": "80"}]);
    assert_bad_request(
        post_json(&sb, DEPLOYS, &d).await,
        &cannot_unmarshal(
            "Deployment",
            "string into Go struct field \
             ContainerPort.spec.template.spec.containers.ports.containerPort of type int32",
        ),
    );

    // int32 overflow and a fraction carry the number's text.
    let mut d = deployment("big");
    for number in [json!(1_099_511_627_776_i64), json!(1.5)] {
        d["spec"]["replicas"] = number.clone();
        assert_bad_request(
            post_json(&sb, DEPLOYS, &d).await,
            &cannot_unmarshal(
                "Deployment",
                &format!(
                    "number {number} into Go struct field DeploymentSpec.spec.replicas of type int32"
                ),
            ),
        );
    }

    // A map value, whatever fieldValidation says (type errors come before
    // unknown fields).
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                    "data": {"a": 1}, "colour": "red"});
    for q in ["", "?fieldValidation=Strict", "?fieldValidation=Ignore"] {
        assert_bad_request(
            post_json(&sb, &format!("{CMS}{q}"), &cm).await,
            &cannot_unmarshal(
                "ConfigMap",
                "number into Go struct field ConfigMap.data of type string",
            ),
        );
    }

    // An object where a list of structs belongs.
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                     "spec": {"ports": {}}});
    assert_bad_request(
        post_json(&sb, "/api/v1/namespaces/default/services", &svc).await,
        &cannot_unmarshal(
            "Service",
            "object into Go struct field ServiceSpec.spec.ports of type []v1.ServicePort",
        ),
    );

    // A quantity that does not parse ends the decoding, so it wins over
    // the earlier mismatch.
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "p", "labels": {"a": 1}},
                     "spec": {"containers": [{"name": "c", "image": "i",
                              "resources": {"limits": {"cpu": "lots"}}}]}});
    assert_bad_request(
        post_json(&sb, "/api/v1/namespaces/default/pods", &pod).await,
        "Pod in version \"v1\" cannot be handled as a Pod: quantities must match the regular \
         expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    );

    assert_eq!(sb.revision().await, before, "a refused create wrote");
    for path in [
        format!("{DEPLOYS}/three"),
        format!("{DEPLOYS}/port"),
        format!("{DEPLOYS}/big"),
        format!("{CMS}/c"),
        "/api/v1/namespaces/default/services/s".to_string(),
        "/api/v1/namespaces/default/pods/p".to_string(),
    ] {
        assert_eq!(get_json(&sb, &path).await.0, 404, "{path} was stored");
    }
}

#[tokio::test]
async fn an_update_with_a_value_of_the_wrong_type_is_refused_and_changes_nothing() {
    let sb = start().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                    "data": {"a": "b"}});
    let (code, created) = post_json(&sb, CMS, &cm).await;
    assert_eq!(code, 201, "{created}");
    let before = sb.revision().await;
    let path = format!("{CMS}/c");

    let mut update = created.clone();
    update["data"] = json!({"a": "b", "n": 1});
    assert_bad_request(
        send_json(&sb, Method::PUT, &path, JSON, &update).await,
        &cannot_unmarshal(
            "ConfigMap",
            "number into Go struct field ConfigMap.data of type string",
        ),
    );
    let mut update = created.clone();
    update["metadata"]["labels"] = json!(["x"]);
    assert_bad_request(
        send_json(&sb, Method::PUT, &path, JSON, &update).await,
        &cannot_unmarshal(
            "ConfigMap",
            "array into Go struct field ObjectMeta.metadata.labels of type map[string]string",
        ),
    );

    let (_, stored) = get_json(&sb, &path).await;
    assert_eq!(stored, created, "a refused update changed the object");
    assert_eq!(sb.revision().await, before, "a refused update wrote");
}

#[tokio::test]
async fn a_patch_whose_result_does_not_decode_is_invalid_and_changes_nothing() {
    let sb = start().await;
    let (code, created) = post_json(&sb, DEPLOYS, &deployment("d")).await;
    assert_eq!(code, 201, "{created}");
    let before = sb.revision().await;
    let path = format!("{DEPLOYS}/d");

    let go_error = |e: &str| format!("json: cannot unmarshal {e}");
    let cases = [
        (
            MERGE,
            json!({"spec": {"replicas": "three"}}),
            go_error("string into Go struct field DeploymentSpec.spec.replicas of type int32"),
        ),
        // The patched object is re-encoded from maps: keys sorted, so
        // minReadySeconds is met before replicas.
        (
            MERGE,
            json!({"spec": {"replicas": "x", "minReadySeconds": "y"}}),
            go_error(
                "string into Go struct field DeploymentSpec.spec.minReadySeconds of type int32",
            ),
        ),
        (
            JSON_PATCH,
            json!([{"op": "replace", "path": "/spec/replicas", "value": 1.5}]),
            go_error("number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"),
        ),
    ];
    for (ct, patch, error) in cases {
        let (code, status) = send_json(&sb, Method::PATCH, &path, ct, &patch).await;
        assert_eq!(code, 422, "{patch}: {status}");
        assert_eq!(status["reason"], "Invalid", "{status}");
        let message = status["message"].as_str().unwrap();
        assert!(
            message.starts_with(" \"\" is invalid: patch: Invalid value: \"{"),
            "{message}"
        );
        assert!(message.ends_with(&format!("}}\": {error}")), "{message}");
        let causes = &status["details"]["causes"];
        assert_eq!(causes.as_array().map(Vec::len), Some(1), "{status}");
        assert_eq!(causes[0]["reason"], "FieldValueInvalid");
        assert_eq!(causes[0]["field"], "patch");
        assert!(
            causes[0]["message"]
                .as_str()
                .unwrap()
                .ends_with(&format!("\": {error}")),
            "{status}"
        );
        // The value is the patched object: the patch's value is in it.
        assert!(message.contains("\\\"name\\\":\\\"d\\\""), "{message}");
    }

    let (_, stored) = get_json(&sb, &path).await;
    assert_eq!(stored, created, "a refused patch changed the object");
    assert_eq!(sb.revision().await, before, "a refused patch wrote");

    // A patch of the right types still applies.
    let three = json!({"spec": {"replicas": 3}});
    let (code, patched) = send_json(&sb, Method::PATCH, &path, MERGE, &three).await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["spec"]["replicas"], 3);
}
