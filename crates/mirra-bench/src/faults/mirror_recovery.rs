//! The mirror half of the `faults` scenario: starting the mirror controller
//! against the sandbox, injecting the faults and measuring how long until the
//! copies are right again.
//!
//! This module must NOT touch the catalog half (see `catalog_recovery`).

use super::*;
use crate::mirror::{create_crd, create_namespaces, ns_name, sc_resource};

// ----- the mirror ------------------------------------------------------------

pub(super) fn mirror_spec(items: usize, version: usize) -> serde_json::Value {
    let items: Vec<_> = (0..items)
        .map(|i| {
            let v = if i == 0 { version } else { 1 };
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": format!("item{i}"), "labels": {"bench": "copy"}},
                   "data": {"version": v.to_string()}})
        })
        .collect();
    json!({"namespaceSelector": {"labelSelector": {"matchLabels": {"bench": "yes"}}},
           "syncItems": items})
}

pub(super) fn mirror_controller(
    kube: kube::Client,
    lease: mirra_mirror_controller::mirra_runtime::LeaseDeadline,
    stop: CancellationToken,
) -> impl std::future::Future<Output = ()> + Send {
    let mut settings = Settings::new(WatchScope::Namespaces([OPS.to_string()].into()));
    settings.lease = lease;
    let mut registry = Registry::default();
    let metrics = Metrics::register(&mut registry);
    let ready = Readiness::new().register("mirror");
    async move {
        if let Err(e) = mirra_mirror_controller::run(kube, settings, ready, metrics, stop).await {
            eprintln!("mirror controller failed: {e}");
        }
    }
}

/// Namespaces whose copy of `item0` shows `version`.
pub(super) async fn mirror_at(c: &kube::Client, version: usize) -> anyhow::Result<usize> {
    let api: Api<ConfigMap> = Api::all(c.clone());
    let list = api
        .list(&kube::api::ListParams::default().labels("bench=copy"))
        .await?;
    let v = version.to_string();
    Ok(list
        .items
        .iter()
        .filter(|c| c.metadata.name.as_deref() == Some("item0"))
        .filter(|c| c.data.as_ref().and_then(|d| d.get("version")) == Some(&v))
        .count())
}

/// Apply requests for copies between two snapshots (refused ones
/// included).
pub(super) fn copy_writes(before: &kube_sandbox::Stats, after: &kube_sandbox::Stats) -> String {
    let d = after.since(before);
    format!("{} apply requests", d.get("patch configmaps"))
}

pub(super) async fn mirror(args: &Args) -> anyhow::Result<Vec<Row>> {
    let sb = sandbox_without_bookmarks().await?;
    let url = sb.url();
    let c = client(&url)?;
    create_crd(&c).await?;
    Api::<Namespace>::all(c.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": OPS}}))?,
        )
        .await?;
    create_namespaces(&c, (0..args.namespaces).map(ns_name).collect()).await?;
    let scs: Api<DynamicObject> = Api::namespaced_with(c.clone(), OPS, &sc_resource());
    let mut version = 1;
    scs.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
            "metadata": {"name": "load", "namespace": OPS},
            "spec": mirror_spec(args.items, version),
        }))?,
    )
    .await?;
    let n = args.namespaces;
    let limit = Duration::from_secs(120);

    let start = Instant::now();
    let mut ctl = Proc::start(&url, None, mirror_controller)?;
    let all_copies = || async {
        let api: Api<ConfigMap> = Api::all(c.clone());
        let list = api
            .list(&kube::api::ListParams::default().labels("bench=copy"))
            .await?;
        Ok(list.items.len() == n * args.items)
    };
    until("the initial copies", limit, all_copies).await?;
    println!(
        "mirror: {} namespaces x {} items in step {:.1} s after start",
        n,
        args.items,
        start.elapsed().as_secs_f64()
    );
    let edit = |v: usize| {
        let scs = scs.clone();
        let items = args.items;
        async move {
            scs.patch(
                "load",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": mirror_spec(items, v)})),
            )
            .await
            .map(|_| ())
        }
    };
    let in_step = |v: usize| {
        let c = c.clone();
        move || {
            let c = c.clone();
            async move { Ok(mirror_at(&c, v).await? == n) }
        }
    };
    let mut rows = Vec::new();
    let mut row = |fault, from, recovery: Duration, writes: String| {
        println!(
            "mirror | {fault} | {:.2} s | {writes}",
            recovery.as_secs_f64()
        );
        rows.push(Row {
            controller: "mirror",
            fault,
            measured_from: from,
            recovery,
            writes,
        });
    };

    // A watch drops: the change is made right after.
    version += 1;
    let before = sb.stats();
    sb.close_watches();
    edit(version).await?;
    let recovery = time_until_in_step(limit, in_step(version)).await?;
    row(
        "watch drop",
        "the change",
        recovery,
        copy_writes(&before, &sb.stats()),
    );

    // 410: a write no watch of mirra's sees, the history compacted, every
    // watch closed: each resumes into 410 and lists again.
    version += 1;
    let before = sb.stats();
    Api::<Secret>::namespaced(c.clone(), "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": format!("bump-{version}")}}))?,
        )
        .await?;
    sb.compact().await;
    sb.close_watches();
    edit(version).await?;
    let recovery = time_until_in_step(limit, in_step(version)).await?;
    row(
        "410 Gone on every watch",
        "the change",
        recovery,
        copy_writes(&before, &sb.stats()),
    );

    // Refused writes, for the fault's duration.
    for (fault, status) in [
        ("409 on every apply", 409u16),
        ("429 (Retry-After 1) on every apply", 429),
        ("500 on every apply", 500),
        ("503 on every apply", 503),
    ] {
        version += 1;
        let before = sb.stats();
        sb.inject(kube_sandbox::FaultRule {
            verb: Some("patch".into()),
            resource: Some("configmaps".into()),
            status: Some(status),
            retry_after_seconds: Some(1),
            ..Default::default()
        })
        .await?;
        edit(version).await?;
        tokio::time::sleep(args.fault).await;
        sb.clear_faults().await;
        let recovery = time_until_in_step(limit, in_step(version)).await?;
        row(
            fault,
            "the fault lifted",
            recovery,
            copy_writes(&before, &sb.stats()),
        );
    }

    // Killed mid-sync: writes slowed down so that the process dies with
    // part of the change written; a fresh process starts at once.
    version += 1;
    let before = sb.stats();
    sb.inject(kube_sandbox::FaultRule {
        verb: Some("patch".into()),
        resource: Some("configmaps".into()),
        latency_ms: Some(50),
        ..Default::default()
    })
    .await?;
    edit(version).await?;
    until("part of the change written", limit, || async {
        let done = mirror_at(&c, version).await?;
        Ok(done >= n / 4)
    })
    .await?;
    ctl.kill();
    let partial = mirror_at(&c, version).await?;
    sb.clear_faults().await;
    let t0 = Instant::now();
    ctl = Proc::start(&url, None, mirror_controller)?;
    let t1 = until("in step", limit, in_step(version)).await?;
    row(
        "killed mid-sync, restarted",
        "the new process's start",
        t1 - t0,
        format!(
            "{} ({partial} of {n} written when killed)",
            copy_writes(&before, &sb.stats())
        ),
    );
    ctl.stop().await;

    // Leader election with the default 15 s lease and 2 s retry: a leader
    // and a standby, the leader stopped (its Lease released) or killed
    // (its Lease left to run out).
    for (i, (fault, kill)) in LEADER_FAULTS.into_iter().enumerate() {
        let lease = format!("mirra-bench-{i}");
        let mut leader = Proc::start(&url, Some((&lease, "leader")), mirror_controller)?;
        leader.wait_leading().await?;
        let standby = Proc::start(&url, Some((&lease, "standby")), mirror_controller)?;
        // The standby has tried once and found the Lease held.
        tokio::time::sleep(Duration::from_secs(1)).await;
        version += 1;
        let before = sb.stats();
        let t0 = Instant::now();
        leader.end(kill).await;
        edit(version).await?;
        let t1 = until("in step", limit, in_step(version)).await?;
        row(
            fault,
            "the leader's end",
            t1 - t0,
            copy_writes(&before, &sb.stats()),
        );
        standby.stop().await;
    }
    Ok(rows)
}
