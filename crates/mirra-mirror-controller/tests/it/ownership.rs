//! Ownership nobody can forge with a label: mirra deletes only the copies
//! it created itself (its field manager's apply wrote the marks), releases
//! the objects it adopted instead of deleting them, and leaves alone an
//! object whose marks someone else wrote.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap: a panic is a test failure.

use crate::common;

use common::*;
use mirra_mirror_controller::Settings;
use mirra_mirror_controller::mirra_mirror::{
    ADOPTED_ANNOTATION, MANAGED_BY_LABEL, OWNER_ANNOTATION,
};
use serde_json::json;

#[tokio::test]
async fn marks_someone_else_wrote_cause_no_delete() {
    let env = Env::new().await;
    env.create_ns("f", &[("team", "a")]).await;
    // Looks exactly like a copy of `base` that `base` does not want.
    forged_secret(&env, "f", "theirs", &format!("{OPS}/base")).await;
    // And one mirra really wrote (long ago): that one is pruned.
    marked_secret(&env, "f", "stale", &format!("{OPS}/base"), None).await;
    env.create_team_sc("base", "a", vec![secret_item("s")])
        .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    ctl.wait_ready().await;
    wait_for("stale pruned, s copied", || async {
        let names = secret_names(&env, "f").await;
        !names.contains(&"stale".to_string()) && names.contains(&"s".to_string())
    })
    .await;
    let stats = env.settle().await;
    // The forged one is untouched: not deleted, not written.
    let theirs = secrets(&env, "f").get("theirs").await.unwrap();
    assert_eq!(
        theirs.data.unwrap()["own"].0,
        b"mine".to_vec(),
        "its content is the owner's"
    );
    // One delete: the stale copy's.
    assert_eq!(stats.namespaces["f"].get("delete secrets"), Some(&1));
    ctl.stop().await;
}

#[tokio::test]
async fn an_adopted_object_is_released_not_deleted() {
    let env = Env::new().await;
    env.create_ns("a", &[("team", "a")]).await;
    // The team's own ConfigMap, which a syncItem then names.
    env.create_cm(
        "a",
        json!({"metadata": {"name": "settings"}, "data": {"own": "1"}}),
    )
    .await;
    env.create_team_sc(
        "base",
        "a",
        vec![
            cm_item("settings", json!({"synced": "yes"})),
            cm_item("other", json!({})),
        ],
    )
    .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    ctl.wait_ready().await;
    wait_for("settings adopted", || async {
        env.cm("a", "settings").await.is_some_and(|c| {
            c.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.get(ADOPTED_ANNOTATION).map(String::as_str) == Some("true"))
        })
    })
    .await;
    let adopted = env.cm("a", "settings").await.unwrap();
    let data = adopted.data.unwrap();
    assert_eq!(
        (data["own"].as_str(), data["synced"].as_str()),
        ("1", "yes")
    );
    assert_eq!(
        adopted.metadata.annotations.unwrap()[OWNER_ANNOTATION],
        format!("{OPS}/base")
    );
    // A created copy is not marked adopted.
    let other = env.cm("a", "other").await.unwrap();
    assert!(
        !other
            .metadata
            .annotations
            .unwrap()
            .contains_key(ADOPTED_ANNOTATION)
    );
    // Quiet: the adoption mark does not make the copy flap.
    env.settle().await;
    env.sb.reset_stats();
    let quiet = env.settle().await;
    assert_eq!(quiet.get("patch configmaps"), 0, "{:?}", quiet.requests);

    // No longer wanted: the adopted one is let go, the created one pruned.
    env.patch_sc_spec(
        "base",
        spec_for_team("a", vec![cm_item("third", json!({}))]),
    )
    .await;
    wait_for("other pruned", || async {
        env.cm("a", "other").await.is_none()
    })
    .await;
    wait_for("settings released", || async {
        env.cm("a", "settings").await.is_some_and(|c| {
            !c.metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(MANAGED_BY_LABEL))
        })
    })
    .await;
    let stats = env.settle().await;
    let released = env.cm("a", "settings").await.unwrap();
    let data = released.data.unwrap();
    // The team's own field stays; the one only mirra set goes with it.
    assert_eq!(data.get("own").map(String::as_str), Some("1"));
    assert_eq!(data.get("synced"), None);
    let annotations = released.metadata.annotations.unwrap_or_default();
    assert!(
        !annotations.contains_key(OWNER_ANNOTATION),
        "{annotations:?}"
    );
    assert!(!annotations.contains_key(ADOPTED_ANNOTATION));
    assert_eq!(stats.namespaces["a"].get("delete configmaps"), Some(&1));
    // Released, it is out of mirra's sight: nothing more is written.
    env.sb.reset_stats();
    let quiet = env.settle().await;
    assert_eq!(quiet.get("patch configmaps"), 0, "{:?}", quiet.requests);
    ctl.stop().await;
}

/// An object whose every field mirra's forced apply takes over (a copy
/// espejo left out of date) keeps no other manager in its managedFields;
/// it is still one mirra did not create (the server answered the apply
/// 200, not 201), so it is marked adopted and released, never deleted.
#[tokio::test]
async fn an_object_whose_every_field_mirra_took_over_is_adopted_and_released() {
    let env = Env::new().await;
    env.create_ns("a", &[("team", "a")]).await;
    env.create_cm(
        "a",
        json!({"metadata": {"name": "shared"}, "data": {"mode": "slow"}}),
    )
    .await;
    env.create_team_sc(
        "base",
        "a",
        vec![cm_item("shared", json!({"mode": "fast"}))],
    )
    .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    ctl.wait_ready().await;
    wait_for("shared adopted", || async {
        env.cm("a", "shared").await.is_some_and(|c| {
            c.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.get(ADOPTED_ANNOTATION).map(String::as_str) == Some("true"))
        })
    })
    .await;
    let adopted = env.cm("a", "shared").await.unwrap();
    assert_eq!(adopted.data.unwrap()["mode"], "fast");
    let managers: Vec<String> = adopted
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert_eq!(
        managers,
        vec!["mirra".to_string()],
        "the creator's fields are all mirra's now"
    );

    env.patch_sc_spec(
        "base",
        spec_for_team("a", vec![cm_item("other", json!({}))]),
    )
    .await;
    wait_for("shared released", || async {
        env.cm("a", "shared").await.is_some_and(|c| {
            !c.metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(MANAGED_BY_LABEL))
        })
    })
    .await;
    let stats = env.settle().await;
    assert!(
        env.cm("a", "shared").await.is_some(),
        "released, not deleted"
    );
    assert_eq!(stats.namespaces["a"].get("delete configmaps"), None);
    ctl.stop().await;
}
