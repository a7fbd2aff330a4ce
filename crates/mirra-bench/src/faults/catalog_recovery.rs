//! The catalog half of the `faults` scenario: a relay in front of Consul that
//! can cut the connection, the catalog controller against it, and the time
//! until Consul matches the cluster again.
//!
//! This module must NOT touch the mirror half (see `mirror_recovery`).

use super::*;
use crate::catalog::endpoint_slice;

// ----- the catalog ------------------------------------------------------------

/// A TCP relay in front of Consul that can be taken down (its port refuses
/// connections, open ones are cut) and brought back on the same port.
pub(super) struct Relay {
    pub(super) addr: SocketAddr,
    pub(super) target: SocketAddr,
    pub(super) task: Option<tokio::task::JoinHandle<()>>,
}

impl Relay {
    pub(super) async fn start(target: SocketAddr) -> anyhow::Result<Relay> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let mut r = Relay {
            addr: listener.local_addr()?,
            target,
            task: None,
        };
        r.serve(listener);
        Ok(r)
    }

    pub(super) fn serve(&mut self, listener: TcpListener) {
        let target = self.target;
        self.task = Some(tokio::spawn(async move {
            // Dropping the set (the task aborted) cuts every connection.
            let mut conns = tokio::task::JoinSet::new();
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    continue;
                };
                conns.spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                while conns.try_join_next().is_some() {}
            }
        }));
    }

    pub(super) fn down(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }

    pub(super) async fn up(&mut self) -> anyhow::Result<()> {
        let start = Instant::now();
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Ok(l) => break l,
                Err(e) if start.elapsed() > Duration::from_secs(10) => return Err(e.into()),
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        };
        self.serve(listener);
        Ok(())
    }
}

pub(super) fn endpoint(generation: usize, svc: usize) -> String {
    format!("10.{}.{}.{}", 100 + generation, svc / 256, svc % 256)
}

/// The Service's two endpoints: a fixed one and one of `generation`.
pub(super) fn svc_ips(generation: usize, svc: usize) -> Vec<String> {
    vec![endpoint(0, svc), endpoint(generation, svc)]
}

pub(super) async fn put_slices(
    c: &kube::Client,
    svcs: std::ops::Range<usize>,
    generation: usize,
) -> anyhow::Result<()> {
    let api: Api<EndpointSlice> = Api::namespaced(c.clone(), NS);
    let results: Vec<anyhow::Result<()>> = futures::stream::iter(svcs)
        .map(|i| {
            let api = api.clone();
            async move {
                let name = format!("svc-{i:05}");
                let body = endpoint_slice(&name, NS, &svc_ips(generation, i))?;
                api.patch(
                    &format!("{name}-1"),
                    &PatchParams::apply("bench").force(),
                    &Patch::Apply(&body),
                )
                .await?;
                Ok(())
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    results.into_iter().collect()
}

pub(super) fn catalog_controller(
    consul_url: String,
) -> impl Fn(
    kube::Client,
    mirra_mirror_controller::mirra_runtime::LeaseDeadline,
    CancellationToken,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
+ Send
+ Sync
+ 'static {
    move |kube, lease, stop| {
        let consul_url = consul_url.clone();
        Box::pin(async move {
            let sync = SyncSettings {
                allow_k8s_namespaces: ["*".to_owned()].into(),
                consul_node_name: NODE.to_owned(),
                ..SyncSettings::default()
            };
            let mut settings = mirra_catalog_controller::Settings::new(sync);
            settings.lease = lease;
            let consul = match mirra_consul::ConsulConfig::new(&consul_url)
                .map_err(anyhow::Error::from)
                .and_then(|cfg| mirra_consul::Client::new(cfg).map_err(anyhow::Error::from))
            {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("catalog controller: {e}");
                    return;
                }
            };
            let ready = Readiness::new().register("catalog");
            if let Err(e) = mirra_catalog_controller::run(
                kube,
                consul,
                settings,
                ready,
                CatalogMetrics::default(),
                stop,
            )
            .await
            {
                eprintln!("catalog controller failed: {e}");
            }
        })
    }
}

/// Addresses of the instances on mirra's node.
pub(super) async fn consul_addresses(c: &mirra_consul::Client) -> anyhow::Result<BTreeSet<String>> {
    let v = c
        .node_services(NODE, &mirra_consul::QueryOptions::default())
        .await?;
    Ok(v.value.services.into_iter().map(|s| s.address).collect())
}

/// Whether the first [`CHANGED`] Services show `generation`'s endpoint and
/// not the one before.
pub(super) async fn catalog_at(
    c: &mirra_consul::Client,
    generation: usize,
) -> anyhow::Result<bool> {
    let got = consul_addresses(c).await?;
    Ok((0..CHANGED).all(|i| {
        got.contains(&endpoint(generation, i)) && !got.contains(&endpoint(generation - 1, i))
    }))
}

pub(super) async fn catalog(args: &Args) -> anyhow::Result<Vec<Row>> {
    let ksb = sandbox_without_bookmarks().await?;
    let kurl = ksb.url();
    let k = client(&kurl)?;
    for ns in [NS, OPS] {
        Api::<Namespace>::all(k.clone())
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": ns}}))?,
            )
            .await?;
    }
    let services: Api<Service> = Api::namespaced(k.clone(), NS);
    let created: Vec<anyhow::Result<()>> = futures::stream::iter(0..args.services)
        .map(|i| {
            let services = services.clone();
            async move {
                let body: Service = serde_json::from_value(json!({
                    "metadata": {"name": format!("svc-{i:05}"), "namespace": NS},
                    "spec": {"type": "ClusterIP",
                             "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
                }))?;
                services.create(&PostParams::default(), &body).await?;
                Ok(())
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    created.into_iter().collect::<anyhow::Result<()>>()?;
    let mut generation = 1;
    put_slices(&k, 0..args.services, generation).await?;

    let csb = consul_sandbox::Sandbox::start(consul_sandbox::Config::default()).await?;
    let reader = mirra_consul::Client::new(mirra_consul::ConsulConfig::new(&csb.url())?)?;
    let mut relay = Relay::start(csb.addr()).await?;
    let consul_url = format!("http://{}", relay.addr);
    let limit = Duration::from_secs(120);
    let want = args.services * 2;

    let start = Instant::now();
    let mut ctl = Proc::start(&kurl, None, catalog_controller(consul_url.clone()))?;
    until("the initial catalog", limit, || async {
        Ok(consul_addresses(&reader).await?.len() == want)
    })
    .await?;
    println!(
        "catalog: {} Services x 2 endpoints in Consul {:.1} s after start",
        args.services,
        start.elapsed().as_secs_f64()
    );
    let mut rows = Vec::new();
    let mut row = |fault, from, recovery: Duration, applies: u64| {
        let writes = format!("{applies} Raft applies");
        println!(
            "catalog | {fault} | {:.2} s | {writes}",
            recovery.as_secs_f64()
        );
        rows.push(Row {
            controller: "catalog",
            fault,
            measured_from: from,
            recovery,
            writes,
        });
    };
    let in_step = |g: usize| {
        let reader = reader.clone();
        move || {
            let reader = reader.clone();
            async move { catalog_at(&reader, g).await }
        }
    };

    // A watch drops; the change is made right after.
    generation += 1;
    let before = csb.stats().raft_applies;
    ksb.close_watches();
    put_slices(&k, 0..CHANGED, generation).await?;
    let recovery = time_until_in_step(limit, in_step(generation)).await?;
    row(
        "Kubernetes watch drop",
        "the change",
        recovery,
        csb.stats().raft_applies - before,
    );

    // 410 on every watch.
    generation += 1;
    let before = csb.stats().raft_applies;
    Api::<Secret>::namespaced(k.clone(), "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "bump"}}))?,
        )
        .await?;
    ksb.compact().await;
    ksb.close_watches();
    put_slices(&k, 0..CHANGED, generation).await?;
    let recovery = time_until_in_step(limit, in_step(generation)).await?;
    row(
        "Kubernetes 410 Gone on every watch",
        "the change",
        recovery,
        csb.stats().raft_applies - before,
    );

    // Consul refuses, for the fault's duration.
    for fault in [
        "Consul down (connection refused)",
        "Consul without a leader",
        "Consul 500 on every request",
    ] {
        generation += 1;
        let before = csb.stats().raft_applies;
        match fault {
            "Consul down (connection refused)" => relay.down(),
            "Consul without a leader" => csb.faults().set_leaderless(true),
            _ => {
                csb.faults().add(
                    consul_sandbox::FaultRule::error(500, "rpc error making call: EOF")
                        .with_path_prefix("/v1/"),
                );
            }
        }
        put_slices(&k, 0..CHANGED, generation).await?;
        tokio::time::sleep(args.fault).await;
        if fault.starts_with("Consul down") {
            relay.up().await?;
        } else {
            csb.faults().clear();
        }
        let recovery = time_until_in_step(limit, in_step(generation)).await?;
        row(
            fault,
            "the fault lifted",
            recovery,
            csb.stats().raft_applies - before,
        );
    }

    // Killed mid-sync: the process dies once the change is underway; a
    // fresh one starts at once.
    generation += 1;
    let before = csb.stats().raft_applies;
    csb.faults().add(
        consul_sandbox::FaultRule::latency(Duration::from_millis(500)).with_path_prefix("/v1/txn"),
    );
    let txns = csb.stats().requests_for("PUT /v1/txn");
    put_slices(&k, 0..CHANGED, generation).await?;
    until("a transaction in flight", limit, || async {
        Ok(csb.stats().requests_for("PUT /v1/txn") > txns)
    })
    .await?;
    ctl.kill();
    csb.faults().clear();
    let t0 = Instant::now();
    ctl = Proc::start(&kurl, None, catalog_controller(consul_url.clone()))?;
    let t1 = until("in step", limit, in_step(generation)).await?;
    row(
        "killed mid-sync, restarted",
        "the new process's start",
        t1 - t0,
        csb.stats().raft_applies - before,
    );
    ctl.stop().await;

    for (i, (fault, kill)) in LEADER_FAULTS.into_iter().enumerate() {
        let lease = format!("mirra-bench-catalog-{i}");
        let mut leader = Proc::start(
            &kurl,
            Some((&lease, "leader")),
            catalog_controller(consul_url.clone()),
        )?;
        leader.wait_leading().await?;
        let standby = Proc::start(
            &kurl,
            Some((&lease, "standby")),
            catalog_controller(consul_url.clone()),
        )?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        generation += 1;
        let before = csb.stats().raft_applies;
        let t0 = Instant::now();
        leader.end(kill).await;
        put_slices(&k, 0..CHANGED, generation).await?;
        let t1 = until("in step", limit, in_step(generation)).await?;
        row(
            fault,
            "the leader's end",
            t1 - t0,
            csb.stats().raft_applies - before,
        );
        standby.stop().await;
    }
    Ok(rows)
}
