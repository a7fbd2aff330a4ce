//! The sandbox's own agent: the node, `consul` service and `serfHealth`
//! check registered at start, and the `/v1/agent/self` document.
//!
//! This module must NOT serve other endpoints or change the store after
//! start-up.

use super::*;

/// Registers the sandbox's own agent node, its `consul` service and its
/// `serfHealth` check, as a Consul server does when it starts. This is Raft
/// entry 1 and is not counted as an API Raft apply.
pub(super) fn bootstrap(store: &mut Store, config: &Config, node_id: &str) {
    let lan = "127.0.0.1".to_string();
    let tenancy = config
        .enterprise
        .then(|| crate::model::DEFAULT_TENANCY.to_string());
    let tagged = ["lan", "lan_ipv4", "wan", "wan_ipv4"]
        .iter()
        .map(|k| (k.to_string(), lan.clone()));
    let (result, _) = store.apply(false, |tx| {
        tx.ensure_node(NodeRec {
            id: node_id.to_string(),
            name: config.node_name.clone(),
            address: lan.clone(),
            datacenter: config.datacenter.clone(),
            tagged_addresses: Some(tagged.collect()),
            meta: Some(
                [
                    ("consul-network-segment", ""),
                    ("consul-version", CONSUL_VERSION),
                ]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ),
            partition: tenancy.clone(),
            create_index: 0,
            modify_index: 0,
        });
        tx.ensure_service(ServiceRec {
            node: config.node_name.clone(),
            kind: String::new(),
            id: "consul".into(),
            name: "consul".into(),
            tags: Some(Vec::new()),
            address: String::new(),
            tagged_addresses: Default::default(),
            meta: Some(Default::default()),
            port: i64::from(SERVER_RPC_PORT),
            ports: Vec::new(),
            weights: Weights::DEFAULT,
            enable_tag_override: false,
            ns: tenancy.clone(),
            partition: tenancy.clone(),
            create_index: 0,
            modify_index: 0,
        })?;
        tx.ensure_check(CheckRec {
            node: config.node_name.clone(),
            check_id: "serfHealth".into(),
            name: "Serf Health Status".into(),
            status: "passing".into(),
            notes: String::new(),
            output: "Agent alive and reachable".into(),
            service_id: String::new(),
            service_name: String::new(),
            service_tags: None,
            check_type: String::new(),
            definition: json!({}),
            ns: tenancy.clone(),
            partition: tenancy.clone(),
            create_index: 0,
            modify_index: 0,
        })
    });
    if let Err(e) = result {
        tracing::warn!(error = %e, "could not register the sandbox's own agent node");
    }
}

pub(super) fn agent_self(shared: &Shared) -> Value {
    let c = &shared.config;
    json!({
        "Config": {
            "Datacenter": c.datacenter,
            "PrimaryDatacenter": c.datacenter,
            "NodeName": c.node_name,
            "NodeID": shared.node_id,
            "Server": true,
            "Revision": "consul-sandbox",
            "Version": CONSUL_VERSION,
            "BuildDate": "",
        },
        "DebugConfig": {},
        "Coord": null,
        "Member": {
            "Name": c.node_name,
            "Addr": "127.0.0.1",
            "Port": SERF_LAN_PORT,
            "Tags": {
                "dc": c.datacenter,
                "id": shared.node_id,
                "role": "consul",
                "port": SERVER_RPC_PORT.to_string(),
                "build": CONSUL_VERSION,
                "vsn": "2",
            },
            "Status": 1,
            "ProtocolMin": 1,
            "ProtocolMax": 5,
            "ProtocolCur": 2,
            "DelegateMin": 2,
            "DelegateMax": 5,
            "DelegateCur": 4,
        },
        "Stats": agent_stats(shared),
        "Meta": { "consul-network-segment": "" },
        "xDS": null,
    })
}

/// `Stats` of `/v1/agent/self`, with the sections a Consul server fills
/// (`consul`, `raft`, `serf_lan`, `runtime`). Consul renders every value as
/// a string; the sandbox is always its own single-server leader.
pub(super) fn agent_stats(shared: &Shared) -> Value {
    let leader = !shared.faults.leaderless();
    let raft_index = shared.read().raft_index();
    let leader_addr = if leader {
        format!("127.0.0.1:{SERVER_RPC_PORT}")
    } else {
        String::new()
    };
    json!({
        "agent": {
            "check_monitors": "0",
            "check_ttls": "0",
            "checks": "0",
            "services": "0",
        },
        "build": {
            "prerelease": "",
            "revision": "consul-sandbox",
            "version": CONSUL_VERSION,
            "version_metadata": "",
        },
        "consul": {
            "acl": if shared.acl.enabled() { "enabled" } else { "disabled" },
            "bootstrap": "false",
            "known_datacenters": "1",
            "leader": leader.to_string(),
            "leader_addr": leader_addr,
            "server": "true",
        },
        "raft": {
            "applied_index": raft_index.to_string(),
            "commit_index": raft_index.to_string(),
            "fsm_pending": "0",
            "last_log_index": raft_index.to_string(),
            "last_log_term": "2",
            "last_snapshot_index": "0",
            "last_snapshot_term": "0",
            "latest_configuration": format!(
                "[{{Suffrage:Voter ID:{} Address:127.0.0.1:{SERVER_RPC_PORT}}}]",
                shared.node_id
            ),
            "num_peers": "0",
            "protocol_version": "3",
            "protocol_version_max": "3",
            "protocol_version_min": "0",
            "snapshot_version_max": "1",
            "snapshot_version_min": "0",
            "state": if leader { "Leader" } else { "Follower" },
            "term": "2",
        },
        "serf_lan": {
            "coordinate_resets": "0",
            "encrypted": "false",
            "event_queue": "0",
            "event_time": "2",
            "failed": "0",
            "health_score": "0",
            "intent_queue": "0",
            "left": "0",
            "member_time": "1",
            "members": "1",
            "query_queue": "0",
            "query_time": "1",
        },
        "runtime": {
            "arch": std::env::consts::ARCH,
            "cpu_count": std::thread::available_parallelism()
                .map_or(1, std::num::NonZero::get)
                .to_string(),
            "goroutines": "0",
            "max_procs": std::thread::available_parallelism()
                .map_or(1, std::num::NonZero::get)
                .to_string(),
            "os": std::env::consts::OS,
            "version": "consul-sandbox",
        },
    })
}
