//! A dry run's report of one namespace's plan: each write the plan would
//! send, why, and what differs (see `mirra_runtime::preview`).
//!
//! This module must NOT send anything or change the plan: it describes it.

use mirra_mirror::ObservedObject;
use mirra_mirror::{DeleteCause, Op};
use mirra_runtime::PlannedWrite;
use serde_json::{Map, Value};

/// Lines of difference shown per write; the rest is `...`.
const DIFF_LINES: usize = 8;

/// Why an apply is planned when the caches hold no object of its name:
/// mirra's copy watches see only objects carrying its label, so the object
/// is either missing (created) or made by someone else, espejo's copies
/// among them (adopted: applied once, then marked).
pub const REASON_CREATE_OR_ADOPT: &str = "create-or-adopt";
/// An apply of a copy mirra holds whose content or marks differ.
pub const REASON_DIFFERS: &str = "differs";

/// The planned write of `op`, with `observed`, the cached object it would
/// change, if any.
pub fn planned_write(op: &Op, observed: Option<&ObservedObject>) -> PlannedWrite {
    let t = op.target();
    let (operation, reason, diff) = match op {
        Op::Apply { body, .. } => match observed {
            None => (
                "apply",
                REASON_CREATE_OR_ADOPT,
                vec!["not among mirra's copies: created, or adopted if it exists".to_string()],
            ),
            Some(o) => (
                "apply",
                REASON_DIFFERS,
                mirra_runtime::preview::short_diff(
                    &content_of(body),
                    &observed_content(o),
                    is_secret(&t.api_version, &t.kind),
                    DIFF_LINES,
                ),
            ),
        },
        Op::Delete { cause, .. } => (
            "delete",
            match cause {
                DeleteCause::Pruned => "prune",
                DeleteCause::DeleteItem => "delete-item",
            },
            Vec::new(),
        ),
        Op::Release { .. } => ("release", "release", Vec::new()),
    };
    PlannedWrite {
        kind: t.kind.to_string(),
        namespace: t.namespace.to_string(),
        name: t.name.to_string(),
        operation,
        reason,
        diff,
    }
}

fn is_secret(api_version: &str, kind: &str) -> bool {
    kind == "Secret" && api_version == "v1"
}

/// What of an apply body can differ from the object: its content, labels
/// and annotations (identity is the same by construction).
fn content_of(body: &Value) -> Value {
    let Value::Object(top) = body else {
        return body.clone();
    };
    let mut out = Map::new();
    for (k, v) in top {
        match k.as_str() {
            "apiVersion" | "kind" => {}
            "metadata" => {
                let mut meta = Map::new();
                for field in ["labels", "annotations"] {
                    if let Some(v) = v.get(field) {
                        meta.insert(field.into(), v.clone());
                    }
                }
                out.insert(k.clone(), Value::Object(meta));
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// The same parts of a cached object (labels and annotations live in their
/// fields, not in the cached body).
fn observed_content(o: &ObservedObject) -> Value {
    let mut out = match &*o.body() {
        Value::Object(top) => top
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        _ => Map::new(),
    };
    let strings = |m: &mirra_mirror::StringMap| -> Value {
        Value::Object(
            m.iter()
                .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
                .collect(),
        )
    };
    let mut meta = Map::new();
    meta.insert("labels".into(), strings(&o.labels));
    meta.insert("annotations".into(), strings(&o.annotations));
    out.insert("metadata".into(), Value::Object(meta));
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use mirra_mirror::{ConfigRef, ObjectRef};
    use serde_json::json;

    fn target(kind: &str) -> ObjectRef {
        ObjectRef {
            api_version: "v1".into(),
            kind: kind.into(),
            namespace: "team-a".into(),
            name: "settings".into(),
        }
    }

    fn apply(kind: &str, body: Value) -> Op {
        Op::Apply {
            target: target(kind),
            body,
            config: ConfigRef {
                namespace: "ops".into(),
                name: "shared".into(),
            },
            force_recreate: false,
            check_adoption: false,
        }
    }

    fn observed(body: Value) -> ObservedObject {
        let mut o = ObservedObject::from_json(body).unwrap();
        o.compact();
        o
    }

    #[test]
    fn an_apply_of_a_held_copy_names_what_differs() {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "team-a", "labels": {"team": "a"}},
            "data": {"mode": "fast", "size": "2"}});
        let held = observed(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "team-a", "uid": "u1", "labels": {"team": "b"}},
            "data": {"mode": "slow", "size": "2"}}));
        let w = planned_write(&apply("ConfigMap", body.clone()), Some(&held));
        assert_eq!((w.operation, w.reason), ("apply", REASON_DIFFERS));
        assert_eq!(
            w.diff,
            // In the body's order: metadata first.
            vec![
                "metadata.labels.team: \"b\" -> \"a\"".to_string(),
                "data.mode: \"slow\" -> \"fast\"".into()
            ]
        );
        let w = planned_write(&apply("ConfigMap", body), None);
        assert_eq!(w.reason, REASON_CREATE_OR_ADOPT);
        assert_eq!(
            (w.namespace.as_str(), w.name.as_str()),
            ("team-a", "settings")
        );
    }

    #[test]
    fn a_secret_diff_never_shows_values() {
        let body = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "settings"}, "data": {"token": "bmV3"}});
        let held = observed(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "settings", "namespace": "team-a"}, "data": {"token": "b2xk"}}));
        let w = planned_write(&apply("Secret", body), Some(&held));
        assert_eq!(w.diff, vec!["data.token: differs".to_string()]);
    }

    #[test]
    fn deletes_and_releases_say_why() {
        let config = ConfigRef {
            namespace: "ops".into(),
            name: "shared".into(),
        };
        for (cause, reason) in [
            (DeleteCause::Pruned, "prune"),
            (DeleteCause::DeleteItem, "delete-item"),
        ] {
            let op = Op::Delete {
                target: target("ConfigMap"),
                uid: "u1".into(),
                cause,
                config: config.clone(),
            };
            let w = planned_write(&op, None);
            assert_eq!((w.operation, w.reason), ("delete", reason));
        }
        let op = Op::Release {
            target: target("ConfigMap"),
            config,
        };
        assert_eq!(planned_write(&op, None).operation, "release");
    }
}
