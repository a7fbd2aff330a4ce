//! `mirra sandbox kube|consul` and `mirra dev`: start the embedded servers
//! and run until SIGINT or SIGTERM.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use clap::Parser;

use crate::cli::{AclDefaultPolicyArg, ConsulSandboxArgs, DevArgs, KubeSandboxArgs};

/// Resolves on SIGINT or SIGTERM.
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down");
}

fn announce(line: &str) -> anyhow::Result<()> {
    // Flushed at once: a parent process waits for this line.
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").context("cannot write to stdout")?;
    out.flush().context("cannot write to stdout")
}

fn write_kubeconfig_for(
    path: &Path,
    url: &str,
    token: Option<&str>,
    ca_pem: Option<&str>,
) -> anyhow::Result<()> {
    std::fs::write(path, kube_sandbox::kubeconfig_for(url, token, ca_pem))
        .with_context(|| format!("cannot write kubeconfig to {}", path.display()))
}

async fn bind(addr: std::net::SocketAddr, what: &str) -> anyhow::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} for the {what}"))
}

/// `mirra sandbox kube`.
pub async fn kube(args: KubeSandboxArgs) -> anyhow::Result<()> {
    let listener = bind(args.listen, "Kubernetes sandbox").await?;
    let mut config = kube_sandbox::Config::default();
    if args.https {
        config.tls = Some(kube_sandbox::tls::ServerTls::generate()?);
    }
    let scheme = if args.https { "https" } else { "http" };
    let url = format!("{scheme}://{}", listener.local_addr()?);
    config.store.history_limit = args.history;
    config.state_file = args.state_file;
    let mut admin_token = None;
    if args.rbac {
        let token = kube_sandbox::auth::random_token().map_err(anyhow::Error::msg)?;
        let mut tokens = args.tokens;
        tokens.push(kube_sandbox::auth::StaticToken {
            token: token.clone(),
            user: "admin".into(),
            groups: vec![kube_sandbox::auth::MASTERS.into()],
        });
        config.auth = Some(kube_sandbox::auth::AuthConfig { tokens });
        admin_token = Some(token);
    }
    if let Some(path) = &args.kubeconfig_out {
        let ca = config
            .tls
            .as_ref()
            .map(kube_sandbox::tls::ServerTls::ca_pem);
        write_kubeconfig_for(path, &url, admin_token.as_deref(), ca)?;
    }
    announce(&format!("listening on {url}"))?;
    tracing::info!(%url, "kube-sandbox ready");
    kube_sandbox::serve(listener, config, shutdown_signal())
        .await
        .context("kube-sandbox failed")
}

/// `mirra sandbox consul`.
pub async fn consul(args: ConsulSandboxArgs) -> anyhow::Result<()> {
    let tls = match (&args.tls_cert_file, &args.tls_key_file) {
        (Some(cert), Some(key)) => Some(consul_sandbox::TlsConfig {
            cert_file: cert.clone(),
            key_file: key.clone(),
            ca_file: args.tls_ca_file.clone(),
            verify_incoming: args.verify_incoming,
        }),
        _ => None,
    };
    // The files are read before anything listens: a bad one is reported
    // at once, and no parent is told an address that will not answer.
    let loaded = tls
        .as_ref()
        .map(consul_sandbox::TlsConfig::load)
        .transpose()
        .context("cannot serve HTTPS")?;
    let listener = bind(args.listen, "Consul sandbox").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let https = match (args.https_listen, loaded) {
        (Some(addr), Some(loaded)) => Some((bind(addr, "Consul sandbox's HTTPS").await?, loaded)),
        _ => None,
    };
    let https_url = match &https {
        Some((l, _)) => Some(format!("https://{}", l.local_addr()?)),
        None => None,
    };
    let config = consul_sandbox::Config {
        datacenter: args.datacenter,
        max_txn_ops: args.max_txn_ops,
        acl_default_policy: args.acl_default_policy.map(|p| match p {
            AclDefaultPolicyArg::Deny => consul_sandbox::AclDefaultPolicy::Deny,
            AclDefaultPolicyArg::Allow => consul_sandbox::AclDefaultPolicy::Allow,
        }),
        acl_initial_management_token: args.acl_initial_management_token,
        enterprise: args.enterprise,
        tls,
        ..Default::default()
    };
    announce(&format!("listening on {url}"))?;
    if let Some(https_url) = &https_url {
        announce(&format!("listening on {https_url}"))?;
    }
    match &https_url {
        Some(https_url) => tracing::info!(%url, %https_url, "consul-sandbox ready"),
        None => tracing::info!(%url, "consul-sandbox ready"),
    }
    let served = match https {
        Some((https, loaded)) => {
            consul_sandbox::serve_https(Some(listener), https, loaded, config, shutdown_signal())
                .await
        }
        None => consul_sandbox::serve(listener, config, shutdown_signal()).await,
    };
    served.context("consul-sandbox failed")
}

/// The namespace whose SyncConfigs `mirra dev` honours: where `kubectl
/// apply` puts objects without a namespace.
const DEV_WATCH_NAMESPACE: &str = "default";

/// The Consul node `mirra dev` registers Services on (consul-k8s's default).
const DEV_CONSUL_NODE: &str = "k8s-sync";

/// `mirra dev`: both sandboxes, the SyncConfig CRD installed, and both
/// controllers running against them.
pub async fn dev(args: DevArgs) -> anyhow::Result<()> {
    let kube_listener = bind(args.kube_listen, "Kubernetes sandbox").await?;
    let consul_listener = bind(args.consul_listen, "Consul sandbox").await?;
    // As a real cluster: HTTPS, bearer tokens and RBAC. The kubeconfig
    // carries a random admin token (group system:masters) and trusts the
    // CA made here; anonymous requests get what RBAC gives anonymous users.
    let tls = kube_sandbox::tls::ServerTls::generate().context("the sandbox's certificates")?;
    let admin_token = kube_sandbox::auth::random_token().map_err(anyhow::Error::msg)?;
    let kubeconfig_text = kube_sandbox::kubeconfig_for(
        &format!("https://{}", kube_listener.local_addr()?),
        Some(&admin_token),
        Some(tls.ca_pem()),
    );
    let kube_url = format!("https://{}", kube_listener.local_addr()?);
    let consul_url = format!("http://{}", consul_listener.local_addr()?);
    std::fs::write(&args.kubeconfig_out, &kubeconfig_text).with_context(|| {
        format!(
            "cannot write kubeconfig to {}",
            args.kubeconfig_out.display()
        )
    })?;
    let kube_config = kube_sandbox::Config {
        tls: Some(tls),
        auth: Some(kube_sandbox::auth::AuthConfig {
            tokens: vec![kube_sandbox::auth::StaticToken {
                token: admin_token,
                user: "admin".into(),
                groups: vec![kube_sandbox::auth::MASTERS.into()],
            }],
        }),
        ..Default::default()
    };
    let stop = tokio_util::sync::CancellationToken::new();
    let kube = tokio::spawn(kube_sandbox::serve(
        kube_listener,
        kube_config,
        stop.clone().cancelled_owned(),
    ));
    let consul = tokio::spawn(consul_sandbox::serve(
        consul_listener,
        consul_sandbox::Config::default(),
        stop.clone().cancelled_owned(),
    ));

    let client = client_from_kubeconfig(&kubeconfig_text).await?;
    install_crd(&client).await?;

    let mut registry = prometheus_client::registry::Registry::default();
    let readiness = mirra_runtime::Readiness::new();
    let mirror_metrics = mirra_runtime::Metrics::register(&mut registry);
    let catalog_metrics = mirra_catalog_controller::register_metrics(&mut registry);
    let mirror_settings = mirra_mirror_controller::Settings::new(
        mirra_mirror_controller::WatchScope::Namespaces([DEV_WATCH_NAMESPACE.to_string()].into()),
    );
    let catalog_args = DevCatalogArgs::try_parse_from([
        "sync-catalog".to_string(),
        "--allow-k8s-namespace=*".into(),
        "--deny-k8s-namespace=kube-system".into(),
        "--consul-node-name".into(),
        DEV_CONSUL_NODE.into(),
        "--http-addr".into(),
        consul_url.clone(),
    ])
    .context("catalog settings")?
    .catalog;
    let catalog_settings = mirra_catalog_controller::Settings::from_args(&catalog_args)?;
    // The embedded Consul has no ACLs, namespaces or TLS: the CONSUL_*
    // variables of the user's shell (a token, a login, a namespace) name
    // some other Consul, and reading them here would make every dev
    // request fail against the sandbox.
    let mut consul_config =
        mirra_consul::ConsulConfig::new(&consul_url).context("Consul settings")?;
    consul_config.txn_max_ops = catalog_args.txn_batch_size;
    let consul_client = mirra_consul::Client::new(consul_config).context("Consul client")?;
    let mirror = tokio::spawn(mirra_mirror_controller::run(
        client.clone(),
        mirror_settings,
        readiness.register("mirror"),
        mirror_metrics,
        stop.clone(),
    ));
    let reverse = tokio::spawn(mirra_catalog_controller::to_k8s::run_to_k8s(
        client.clone(),
        consul_client.clone(),
        catalog_settings.sync.clone(),
        mirra_runtime::WriteFence::new(
            catalog_settings.lease.clone(),
            catalog_settings.kube_write_timeout,
        ),
        None,
        readiness.register("to-k8s"),
        stop.clone(),
    ));
    let catalog = tokio::spawn(mirra_catalog_controller::run(
        client.clone(),
        consul_client,
        catalog_settings,
        readiness.register("catalog"),
        catalog_metrics,
        stop.clone(),
    ));
    let health = crate::serve::start_health(
        args.health_listen,
        args.health_listen,
        readiness,
        registry,
        Vec::new(),
        stop.clone(),
    )
    .await?;
    let health_url = health
        .first()
        .map(|a| format!("http://{a}"))
        .unwrap_or_default();

    let kubeconfig = args.kubeconfig_out.display();
    announce(&format!("kubernetes api listening on {kube_url}"))?;
    announce(&format!("consul api listening on {consul_url}"))?;
    announce(&format!("metrics and health on {health_url}"))?;
    let first_step = if args.examples {
        apply_examples(&client).await?;
        "  # the bundled examples are applied (mirra dev --examples)".to_string()
    } else {
        "  kubectl apply -f examples/   # from the repository; or start with `mirra dev --examples`"
            .to_string()
    };
    announce(&format!(
        "\nRunning: the mirror controller (SyncConfigs in namespace {DEV_WATCH_NAMESPACE}) and the \
         catalog sync (Services of every namespace but kube-system, on Consul node {DEV_CONSUL_NODE}; \
         Consul services back as ExternalName Services in default).\n\
         Try:\n  export KUBECONFIG={kubeconfig}\n{first_step}\n  \
         kubectl get configmaps,secrets -A -l app.kubernetes.io/managed-by=mirra\n  \
         kubectl get syncconfigs\n  \
         curl {consul_url}/v1/catalog/services\n\n\
         Request counters: {kube_url}/sandbox/stats and {consul_url}/v1/sandbox/stats\n\
         Metrics: {health_url}/metrics\nPress Ctrl-C to stop."
    ))?;

    tokio::select! {
        _ = shutdown_signal() => {}
        r = mirror_and_catalog_failed(mirror, catalog) => {
            stop.cancel();
            return r;
        }
    }
    stop.cancel();
    let _ = reverse.await;
    kube.await
        .context("kube-sandbox task")?
        .context("kube-sandbox failed")?;
    consul
        .await
        .context("consul-sandbox task")?
        .context("consul-sandbox failed")?;
    Ok(())
}

/// The catalog flags, parsed as `mirra sync-catalog` would parse them.
#[derive(clap::Parser)]
struct DevCatalogArgs {
    #[command(flatten)]
    catalog: mirra_catalog_controller::SyncCatalogArgs,
}

/// Resolves only if a controller stops on its own (an error, or a panic).
async fn mirror_and_catalog_failed(
    mirror: tokio::task::JoinHandle<Result<(), mirra_mirror_controller::ControllerError>>,
    catalog: tokio::task::JoinHandle<Result<(), mirra_catalog_controller::ControllerError>>,
) -> anyhow::Result<()> {
    tokio::select! {
        r = mirror => {
            r.context("mirror controller task")?.context("mirror controller")?;
            anyhow::bail!("the mirror controller stopped")
        }
        r = catalog => {
            r.context("catalog sync task")?.context("catalog sync")?;
            anyhow::bail!("the catalog sync stopped")
        }
    }
}

/// Installs (or updates) the SyncConfig CRD, as `mirra crds | kubectl
/// apply -f -` would.
/// The files of `examples/`, in the order they apply.
const EXAMPLES: &[(&str, &str)] = &[
    (
        "01-namespaces.yaml",
        include_str!("../../../examples/01-namespaces.yaml"),
    ),
    (
        "02-syncconfig.yaml",
        include_str!("../../../examples/02-syncconfig.yaml"),
    ),
    (
        "03-service.yaml",
        include_str!("../../../examples/03-service.yaml"),
    ),
    (
        "04-copy.yaml",
        include_str!("../../../examples/04-copy.yaml"),
    ),
];

/// Applies the bundled examples to the sandbox, as `kubectl apply
/// --server-side` would (field manager `mirra-dev`).
async fn apply_examples(client: &kube::Client) -> anyhow::Result<()> {
    use kube::api::{Api, DynamicObject, Patch, PatchParams};
    use kube::discovery::Scope;
    use serde::Deserialize;

    for (file, text) in EXAMPLES {
        for doc in serde_yaml::Deserializer::from_str(text) {
            let value = serde_yaml::Value::deserialize(doc)
                .with_context(|| format!("examples/{file}: not YAML"))?;
            if value.is_null() {
                continue;
            }
            let obj: DynamicObject = serde_yaml::from_value(value)
                .with_context(|| format!("examples/{file}: not a Kubernetes object"))?;
            let types = obj
                .types
                .clone()
                .with_context(|| format!("examples/{file}: an object without apiVersion/kind"))?;
            let gvk = kube::api::GroupVersionKind::try_from(&types)
                .with_context(|| format!("examples/{file}: apiVersion {}", types.api_version))?;
            let (ar, caps) = kube::discovery::pinned_kind(client, &gvk)
                .await
                .with_context(|| format!("examples/{file}: the sandbox does not serve {gvk:?}"))?;
            let name = obj.metadata.name.clone().unwrap_or_default();
            let api: Api<DynamicObject> = match (caps.scope, obj.metadata.namespace.as_deref()) {
                (Scope::Namespaced, ns) => {
                    Api::namespaced_with(client.clone(), ns.unwrap_or("default"), &ar)
                }
                (Scope::Cluster, _) => Api::all_with(client.clone(), &ar),
            };
            api.patch(&name, &PatchParams::apply("mirra-dev"), &Patch::Apply(&obj))
                .await
                .with_context(|| format!("examples/{file}: applying {} {name}", types.kind))?;
            announce(&format!("applied {} {name}", types.kind))?;
        }
    }
    Ok(())
}

/// A client of the kubeconfig `mirra dev` wrote (its admin token, its CA).
async fn client_from_kubeconfig(text: &str) -> anyhow::Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(text).context("the written kubeconfig")?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .context("the written kubeconfig")?;
    kube::Client::try_from(config).context("Kubernetes client")
}

async fn install_crd(client: &kube::Client) -> anyhow::Result<()> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{Api, Patch, PatchParams};
    let crd = mirra_mirror::crd();
    let name = crd.metadata.name.clone().unwrap_or_default();
    Api::<CustomResourceDefinition>::all(client.clone())
        .patch(
            &name,
            &PatchParams::apply("mirra").force(),
            &Patch::Apply(&crd),
        )
        .await
        .context("installing the SyncConfig CRD")?;
    Ok(())
}
