//! The espejo baseline: what the reference controller's periodic sync does
//! against the same cluster, for comparison.
//!
//! This module must NOT measure mirra (see `measure`).

use super::*;

/// What the espejo strategy's run measured.
pub(super) struct Baseline {
    /// Its phases, in the order of mirra's.
    pub(super) phases: Vec<Phase>,
    /// Its per-namespace latencies of the burst.
    pub(super) latencies: Vec<Duration>,
    /// Its item edits.
    pub(super) edits: Edits,
}

/// The strategy's cluster between its phases: its sandbox, with every
/// phase before the item edits done, ready for edits.
pub(super) struct Strategy {
    server: Server,
    c: kube::Client,
    /// The version of each item as the strategy last wrote it.
    version: Vec<u32>,
    /// The namespaces its SyncConfigs select now.
    now_selected: Vec<String>,
    counter: Arc<Mutex<CopyCounter>>,
    counter_task: tokio::task::JoinHandle<()>,
    phases: Vec<Phase>,
    latencies: Vec<Duration>,
    edits: EditSeries,
}

/// The same scenario with espejo's strategy, against a fresh sandbox, up
/// to its item edits: initial sync, burst, relabels, and (untimed) the
/// paced namespaces mirra's run also created before its edits.
pub(super) async fn espejo_prepare(args: &Args) -> anyhow::Result<Strategy> {
    let n = args.namespaces;
    let server = Server::start(&args.sandbox_bin).await?;
    let url = server.url();
    let c = client(&url)?;
    setup(&c, n, false).await?;
    let selected: Vec<String> = (0..n).map(ns_name).collect();
    let version = vec![1u32; CONFIGS * ITEMS];
    let b0 = server.stats().await?;
    let t = Instant::now();
    espejo_sync(&c, &selected, &version).await?;
    let mut base = vec![Phase {
        name: String::new(),
        time: t.elapsed(),
        requests: by_verb(&b0, &server.stats().await?),
    }];
    let b1 = server.stats().await?;
    let t = Instant::now();
    let mut base_lat = Vec::new();
    for i in n..n + args.events {
        let name = ns_name(i);
        let at = Instant::now();
        create_namespace(&c, &name, true).await?;
        espejo_sync(&c, std::slice::from_ref(&name), &version).await?;
        base_lat.push(at.elapsed());
    }
    base_lat.sort();
    let b2 = server.stats().await?;
    base.push(Phase {
        name: String::new(),
        time: t.elapsed(),
        requests: by_verb(&b1, &b2),
    });
    let t = Instant::now();
    for i in 0..args.events {
        ns_api_for(&c)
            .patch(
                &ns_name(i),
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"bench": "no"}}})),
            )
            .await?;
        // The namespace no longer matches: espejo evaluates every SyncConfig
        // for it, selects none, and (having no ownership) deletes nothing.
    }
    let b3 = server.stats().await?;
    base.push(Phase {
        name: String::new(),
        time: t.elapsed(),
        requests: by_verb(&b2, &b3),
    });
    // mirra's run also created the paced namespaces before its edit: the
    // same ones here (untimed, in no phase's counts), so that both edits
    // change the same number of copies.
    let paced: Vec<String> = (n + args.events..n + 2 * args.events)
        .map(ns_name)
        .collect();
    for name in &paced {
        create_namespace(&c, name, true).await?;
    }
    espejo_sync(&c, &paced, &version).await?;
    let now_selected: Vec<String> = (args.events..n + 2 * args.events).map(ns_name).collect();
    // Timed as mirra's edit is: until a watch has seen every edited copy.
    let (counter, counter_task) = spawn_counter(&c, CONFIGS * ITEMS);
    // espejo deletes nothing: the copies in the relabelled namespaces stay.
    let listed = (n + 2 * args.events) * CONFIGS * ITEMS;
    wait_until("baseline copies listed", Duration::from_secs(60), || {
        counter.lock().map(|c| c.total).unwrap_or(0) == listed
    })
    .await?;
    let edits = EditSeries::new(now_selected.len(), settle(&server).await?);
    Ok(Strategy {
        server,
        c,
        version,
        now_selected,
        counter,
        counter_task,
        phases: base,
        latencies: base_lat,
        edits,
    })
}

impl Strategy {
    /// The strategy's next item edit, timed as mirra's are.
    pub(super) async fn edit(&mut self) -> anyhow::Result<()> {
        let Self {
            server,
            c,
            version,
            now_selected,
            counter,
            edits,
            ..
        } = self;
        edits
            .next(server, counter, |edited| {
                version[0] = edited;
                // An edited SyncConfig is re-synced over every namespace it
                // selects, at once (espejo itself would wait for its next
                // periodic sync).
                let (c, now_selected, version) = (&*c, &*now_selected, version.clone());
                async move { espejo_sync_config(c, now_selected, 0, &version).await }
            })
            .await
    }

    /// The strategy's idle phase (its periodic full re-syncs), after its
    /// edits; stops its sandbox.
    pub(super) async fn finish(self, args: &Args) -> anyhow::Result<Baseline> {
        let Self {
            server,
            c,
            version,
            now_selected,
            counter_task,
            mut phases,
            latencies,
            edits,
            ..
        } = self;
        counter_task.abort();
        let (edits, before) = edits.finish();
        phases.push(Phase {
            name: String::new(),
            time: edits.median(),
            requests: edits.first_requests(),
        });
        let t = Instant::now();
        let mut next = Instant::now();
        while t.elapsed() < args.idle {
            if Instant::now() >= next {
                espejo_sync(&c, &now_selected, &version).await?;
                next += ESPEJO_INTERVAL;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let b5 = server.stats().await?;
        phases.push(Phase {
            name: String::new(),
            time: t.elapsed(),
            requests: by_verb(&before, &b5),
        });
        server.stop();
        Ok(Baseline {
            phases,
            latencies,
            edits,
        })
    }
}

pub(super) fn ns_api_for(c: &kube::Client) -> Api<Namespace> {
    Api::all(c.clone())
}

/// espejo's full re-sync of every SyncConfig over `namespaces`.
pub(super) async fn espejo_sync(
    c: &kube::Client,
    namespaces: &[String],
    version: &[u32],
) -> anyhow::Result<()> {
    for j in 0..CONFIGS {
        espejo_sync_config(c, namespaces, j, version).await?;
    }
    Ok(())
}

/// One SyncConfig over `namespaces`: a live GET per item, a create when
/// missing, a full PUT when different.
pub(super) async fn espejo_sync_config(
    c: &kube::Client,
    namespaces: &[String],
    config: usize,
    version: &[u32],
) -> anyhow::Result<()> {
    let work: Vec<(String, usize)> = namespaces
        .iter()
        .flat_map(|ns| (0..ITEMS).map(move |k| (ns.clone(), k)))
        .collect();
    let results: Vec<anyhow::Result<()>> = futures::stream::iter(work)
        .map(|(ns, k)| async move {
            let api: Api<ConfigMap> = Api::namespaced(c.clone(), &ns);
            let mut want = item(config, k, version[config * ITEMS + k]);
            want["data"]["namespace"] = json!(ns);
            let want: ConfigMap = serde_json::from_value(want)?;
            let name = want.metadata.name.clone().unwrap_or_default();
            match api.get_opt(&name).await? {
                None => {
                    api.create(&PostParams::default(), &want).await?;
                }
                Some(have) if have.data != want.data => {
                    let mut put = want.clone();
                    put.metadata.resource_version = have.metadata.resource_version;
                    api.replace(&name, &PostParams::default(), &put).await?;
                }
                Some(_) => {}
            }
            Ok(())
        })
        .buffer_unordered(BASELINE_CONCURRENCY)
        .collect()
        .await;
    results.into_iter().collect()
}
