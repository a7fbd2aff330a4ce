//! copyItems against the sandbox: a Secret copied from its namespace into
//! every selected one and kept in step, at exactly one write per copy and
//! no read when the source changes; a deleted source keeps its copies and
//! says so on the status and in an Event; a copy is never written onto its
//! own source; a restart writes nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use kube::api::{Patch, PatchParams, PostParams};
use mirra_mirror_controller::Settings;
use serde_json::{Value, json};

const TEAM: [&str; 4] = ["t1", "t2", "t3", "t4"];

async fn create_source(env: &Env, cert: &str) {
    secrets(env, "cert-manager")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "wildcard-tls", "labels": {"team": "platform", "other": "x"}},
                "type": "kubernetes.io/tls",
                "data": {"tls.crt": cert, "tls.key": "a2V5"},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
}

async fn patch_source(env: &Env, patch: Value) {
    secrets(env, "cert-manager")
        .patch(
            "wildcard-tls",
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await
        .unwrap();
}

/// The certificate of the copy in `ns`, read by GET (counted by the
/// caller).
async fn copy_cert(env: &Env, ns: &str) -> Option<String> {
    let s = secrets(env, ns).get_opt("wildcard-tls").await.unwrap()?;
    let data = s.data?;
    let bytes = data.get("tls.crt")?;
    Some(String::from_utf8_lossy(&bytes.0).into_owned())
}

fn copy_spec(names: &[&str]) -> Value {
    json!({
        "namespaceSelector": {"matchNames": names},
        "copyItems": [{
            "apiVersion": "v1", "kind": "Secret",
            "namespace": "cert-manager", "name": "wildcard-tls",
            "labels": ["team"],
        }],
    })
}

/// Waits until every team namespace's copy holds `cert`; returns the GETs
/// it sent.
async fn wait_copies(env: &Env, cert: &str) -> u64 {
    let polls = std::cell::Cell::new(0u64);
    wait_for(&format!("copies holding {cert}"), || async {
        let mut all = true;
        for ns in TEAM {
            polls.set(polls.get() + 1);
            all &= copy_cert(env, ns).await.as_deref() == Some(cert);
        }
        all
    })
    .await;
    polls.get()
}

#[tokio::test]
async fn a_source_change_costs_one_write_per_copy_and_no_read() {
    let env = Env::new().await;
    env.create_ns("cert-manager", &[]).await;
    for ns in TEAM {
        env.create_ns(ns, &[]).await;
    }
    // "djE=" is "v1".
    create_source(&env, "djE=").await;
    env.create_sc("tls", json!({}), copy_spec(&TEAM)).await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    ctl.wait_ready().await;
    wait_copies(&env, "v1").await;
    env.settle().await;
    let copy = secrets(&env, "t1").get("wildcard-tls").await.unwrap();
    assert_eq!(copy.type_.as_deref(), Some("kubernetes.io/tls"));
    let labels = copy.metadata.labels.unwrap();
    assert_eq!(labels.get("team").map(String::as_str), Some("platform"));
    assert!(
        !labels.contains_key("other"),
        "only the named labels are copied"
    );
    assert_eq!(env.status("tls").await["synchronizedItemCount"], 4);

    // The certificate is renewed: one apply per copy, no read, no status.
    env.sb.reset_stats();
    patch_source(&env, json!({"data": {"tls.crt": "djI="}})).await;
    let polls = wait_copies(&env, "v2").await;
    let stats = env.settle().await;
    assert_eq!(
        non_watch(&stats),
        [
            ("patch secrets".to_string(), 4 + 1),
            ("get secrets".to_string(), polls),
        ]
        .into_iter()
        .collect(),
        "the test's own patch of the source and its GETs aside, exactly one apply per copy: {:?}",
        stats.requests
    );
    for ns in TEAM {
        assert_eq!(
            stats.namespaces[ns].get("patch secrets"),
            Some(&1),
            "{ns}: {:?}",
            stats.namespaces[ns]
        );
    }

    // A change of the source outside what is copied: nothing.
    env.sb.reset_stats();
    patch_source(&env, json!({"metadata": {"labels": {"other": "y"}}})).await;
    let stats = env.settle().await;
    assert_eq!(
        non_watch(&stats),
        [("patch secrets".to_string(), 1)].into_iter().collect(),
        "{:?}",
        stats.requests
    );

    // The source is deleted: the copies stay, the item fails in each
    // namespace, with a reason on the status and an Event.
    secrets(&env, "cert-manager")
        .delete("wildcard-tls", &Default::default())
        .await
        .unwrap();
    wait_for("the status to count the failures", || async {
        env.status("tls").await["failedItemCount"] == 4
    })
    .await;
    env.settle().await;
    for ns in TEAM {
        assert_eq!(copy_cert(&env, ns).await.as_deref(), Some("v2"), "{ns}");
    }
    let (_, _, message) = env.condition("tls", "Degraded").await.unwrap_or_default();
    let status = env.status("tls").await;
    let said = format!("{message} {status}");
    assert!(
        said.contains("the source Secret cert-manager/wildcard-tls does not exist"),
        "{said}"
    );
    let events = env.events_full("tls").await;
    assert!(
        events
            .iter()
            .any(|(_, _, _, msg)| msg.contains("cert-manager/wildcard-tls does not exist")),
        "{events:?}"
    );

    // Back again, with new content: every copy follows, the failures go.
    create_source(&env, "djM=").await;
    wait_copies(&env, "v3").await;
    wait_for("the failures to clear", || async {
        env.status("tls").await["failedItemCount"] == 0
    })
    .await;
    env.settle().await;
    ctl.stop().await;

    // A restart against copies in step writes nothing.
    env.sb.reset_stats();
    let ctl = env.start(Settings::for_tests(&[OPS]));
    ctl.wait_ready().await;
    let stats = env.settle().await;
    assert_eq!(stats.get("patch secrets"), 0, "{:?}", stats.requests);
    assert_eq!(stats.get("delete secrets"), 0, "{:?}", stats.requests);
    ctl.stop().await;
}

#[tokio::test]
async fn the_source_namespace_is_never_written_and_a_removed_item_is_pruned() {
    let env = Env::new().await;
    env.create_ns("cert-manager", &[]).await;
    env.create_ns("t1", &[]).await;
    create_source(&env, "djE=").await;
    // The selector takes the source's own namespace too.
    env.create_sc("tls", json!({}), copy_spec(&["cert-manager", "t1"]))
        .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    ctl.wait_ready().await;
    wait_for("the copy in t1", || async {
        copy_cert(&env, "t1").await.as_deref() == Some("v1")
    })
    .await;
    wait_for("the status to count the refusal", || async {
        env.status("tls").await["failedItemCount"] == 1
    })
    .await;
    let stats = env.settle().await;
    assert_eq!(
        stats
            .namespaces
            .get("cert-manager")
            .and_then(|m| m.get("patch secrets")),
        None,
        "the source is never written: {:?}",
        stats.namespaces.get("cert-manager")
    );
    let source = secrets(&env, "cert-manager")
        .get("wildcard-tls")
        .await
        .unwrap();
    assert!(
        !source
            .metadata
            .labels
            .unwrap_or_default()
            .contains_key("app.kubernetes.io/managed-by"),
        "the source carries no mark of mirra"
    );
    let status = env.status("tls").await.to_string();
    assert!(
        status.contains("would be its source cert-manager/wildcard-tls itself"),
        "{status}"
    );

    // The item removed (the SyncConfig keeps a deleteItem): the copy goes,
    // the source stays.
    env.patch_sc_spec(
        "tls",
        json!({
            "namespaceSelector": {"matchNames": ["cert-manager", "t1"]},
            "copyItems": null,
            "deleteItems": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "nothing"}],
        }),
    )
    .await;
    wait_for("the copy pruned", || async {
        copy_cert(&env, "t1").await.is_none()
    })
    .await;
    env.settle().await;
    assert!(
        copy_cert(&env, "cert-manager").await.is_some(),
        "the source stays"
    );
    ctl.stop().await;
}

#[tokio::test]
async fn a_source_mirra_may_not_read_fails_its_item_until_granted() {
    let env = Env::new().await;
    env.create_ns("cert-manager", &[]).await;
    env.create_ns("t1", &[]).await;
    create_source(&env, "djE=").await;
    // RBAC without Secrets in cert-manager: mirra's cluster-wide watch of
    // its copies is allowed, the source's own watch (namespaced) is not.
    refuse_in(&env, "list", "secrets", "cert-manager").await;
    refuse_in(&env, "watch", "secrets", "cert-manager").await;
    env.create_sc("tls", json!({}), copy_spec(&["t1"])).await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    ctl.wait_ready().await;
    wait_for("the item to fail", || async {
        env.status("tls").await["failedItemCount"] == 1
    })
    .await;
    let status = env.status("tls").await.to_string();
    assert!(
        status.contains("the source Secret cert-manager/wildcard-tls cannot be read"),
        "{status}"
    );
    assert_eq!(
        copy_cert(&env, "t1").await,
        None,
        "nothing written meanwhile"
    );

    // Granted: the watch's next attempt reads it, the copy is made.
    env.sb.clear_faults().await;
    wait_for("the copy once granted", || async {
        copy_cert(&env, "t1").await.as_deref() == Some("v1")
    })
    .await;
    wait_for("the failure to clear", || async {
        env.status("tls").await["failedItemCount"] == 0
    })
    .await;
    ctl.stop().await;
}
