//! The figures one run of the `mirror` or `catalog` scenario hands to the
//! cost curve (`--json-out FILE`), and the per-event costs derived from
//! them.
//!
//! This module must NOT measure anything: the scenarios fill these in from
//! what they already measured and printed.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// One run of the mirror scenario (mirra only; the espejo baseline is not
/// part of the curve).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MirrorFigures {
    /// Namespaces selected at the start.
    pub(crate) namespaces: usize,
    /// Copies at the start: namespaces x SyncConfigs x items.
    pub(crate) copies: usize,
    /// Copies each selected namespace holds (SyncConfigs x items).
    pub(crate) copies_per_namespace: usize,
    /// Namespace creations in each of the burst and paced phases, and
    /// relabels out (`--events`).
    pub(crate) events: usize,
    /// Initial convergence: requests by verb (watch included) and time.
    pub(crate) initial_requests: BTreeMap<String, u64>,
    pub(crate) initial_secs: f64,
    /// Namespace creations back to back: requests (the bench's own
    /// `events` namespace creates included), time and the latency from a
    /// creation to all its copies seen on a watch.
    pub(crate) burst_requests: BTreeMap<String, u64>,
    pub(crate) burst_secs: f64,
    pub(crate) burst_p50_ms: f64,
    pub(crate) burst_p99_ms: f64,
    /// Namespace creations one every 100 ms (the bench's creates included).
    pub(crate) paced_requests: BTreeMap<String, u64>,
    pub(crate) paced_p50_ms: f64,
    pub(crate) paced_p99_ms: f64,
    /// Relabels out (the bench's own `events` patches included).
    pub(crate) relabel_requests: BTreeMap<String, u64>,
    pub(crate) relabel_secs: f64,
    /// One item edit (the bench's SyncConfig patch included): requests,
    /// time until every copy shows it, and how many copies it changed.
    pub(crate) edit_requests: BTreeMap<String, u64>,
    pub(crate) edit_secs: f64,
    pub(crate) edited_copies: usize,
    /// The idle window (verification passes only).
    pub(crate) idle_requests: BTreeMap<String, u64>,
    pub(crate) idle_secs: f64,
    /// Bench process RSS before the controller started and at `copies`
    /// copies; `None` when the sandbox ran in the same process.
    pub(crate) rss_before_kib: Option<u64>,
    pub(crate) rss_at_copies_kib: Option<u64>,
    pub(crate) rss_growth_kib: Option<u64>,
}

/// One run of the catalog scenario (mirra only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CatalogFigures {
    pub(crate) services: usize,
    pub(crate) endpoints: usize,
    /// Services x endpoints: the instances registered in Consul.
    pub(crate) instances: usize,
    pub(crate) txn_batch: usize,
    pub(crate) cold_applies: u64,
    pub(crate) cold_secs: f64,
    pub(crate) warm_applies: u64,
    /// EndpointSlice writes of the rollout (one per Service, each
    /// replacing all its pods) and the pods they replaced.
    pub(crate) rollout_changes: usize,
    pub(crate) rollout_pods: usize,
    pub(crate) rollout_applies: u64,
    pub(crate) rollout_p50_ms: f64,
    pub(crate) rollout_p99_ms: f64,
    pub(crate) idle_secs: f64,
    pub(crate) idle_applies: u64,
    /// The controller's RSS after cold start and its peak during it
    /// (`None` when it could not be read); `separate_process` says whether
    /// that is the controller's alone or the whole bench process's.
    pub(crate) rss_after_cold_kib: Option<u64>,
    pub(crate) rss_cold_peak_kib: Option<u64>,
    /// The restarted controller after rollout and idle, and its peak.
    pub(crate) rss_after_idle_kib: Option<u64>,
    pub(crate) rss_peak_kib: Option<u64>,
    pub(crate) separate_process: bool,
}

/// Requests of every verb but `watch` (long-running streams, reopened on a
/// timer, are no per-event cost).
pub(crate) fn requests(by_verb: &BTreeMap<String, u64>) -> u64 {
    by_verb
        .iter()
        .filter(|(verb, _)| verb.as_str() != "watch")
        .map(|(_, n)| n)
        .sum()
}

/// `(requests - own) / per`: the controller's requests per event once the
/// bench's own writes that made the events are taken out; `None` without
/// events.
pub(crate) fn per_event(by_verb: &BTreeMap<String, u64>, own: u64, per: usize) -> Option<f64> {
    (per > 0).then(|| requests(by_verb).saturating_sub(own) as f64 / per as f64)
}

impl MirrorFigures {
    /// Requests per copy written at initial convergence.
    pub(crate) fn initial_per_copy(&self) -> Option<f64> {
        per_event(&self.initial_requests, 0, self.copies)
    }

    /// Controller requests per namespace created back to back.
    pub(crate) fn burst_per_namespace(&self) -> Option<f64> {
        per_event(&self.burst_requests, self.events as u64, self.events)
    }

    /// Controller requests per namespace created one at a time.
    pub(crate) fn paced_per_namespace(&self) -> Option<f64> {
        per_event(&self.paced_requests, self.events as u64, self.events)
    }

    /// Controller requests per namespace relabelled out.
    pub(crate) fn relabel_per_namespace(&self) -> Option<f64> {
        per_event(&self.relabel_requests, self.events as u64, self.events)
    }

    /// Controller requests per copy an item edit changed.
    pub(crate) fn edit_per_copy(&self) -> Option<f64> {
        per_event(&self.edit_requests, 1, self.edited_copies)
    }
}

impl CatalogFigures {
    /// Raft applies per EndpointSlice change of the rollout.
    pub(crate) fn applies_per_change(&self) -> Option<f64> {
        (self.rollout_changes > 0)
            .then(|| self.rollout_applies as f64 / self.rollout_changes as f64)
    }

    /// Raft applies per instance registered at cold start.
    pub(crate) fn cold_applies_per_instance(&self) -> Option<f64> {
        (self.instances > 0).then(|| self.cold_applies as f64 / self.instances as f64)
    }
}

/// Writes `figures` as pretty JSON to `path`.
pub(crate) fn write_json<T: Serialize>(path: &Path, figures: &T) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(figures)?;
    std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))
}

/// Reads figures written by [`write_json`].
pub(crate) fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> anyhow::Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn verbs(v: &[(&str, u64)]) -> BTreeMap<String, u64> {
        v.iter().map(|(k, n)| (k.to_string(), *n)).collect()
    }

    /// A mirror run at `n` namespaces with 100 events whose costs are
    /// easy to check by hand.
    pub(crate) fn mirror(n: usize, rss_growth_kib: Option<u64>) -> MirrorFigures {
        MirrorFigures {
            namespaces: n,
            copies: n * 40,
            copies_per_namespace: 40,
            events: 100,
            initial_requests: verbs(&[("list", 3), ("patch", n as u64 * 40), ("watch", 5)]),
            initial_secs: 2.0,
            // 100 namespace creates by the bench + 4,000 applies + 100
            // status writes; the watch reconnects do not count.
            burst_requests: verbs(&[("create", 100), ("patch", 4_100), ("watch", 7)]),
            burst_secs: 3.0,
            burst_p50_ms: 900.0,
            burst_p99_ms: 1_800.0,
            paced_requests: verbs(&[("create", 100), ("patch", 4_000)]),
            paced_p50_ms: 12.0,
            paced_p99_ms: 25.0,
            relabel_requests: verbs(&[("delete", 4_000), ("patch", 100)]),
            relabel_secs: 1.5,
            // 1 SyncConfig patch by the bench + one apply per copy + 1
            // status write.
            edit_requests: verbs(&[("patch", n as u64 + 100 + 2)]),
            edit_secs: 0.5,
            edited_copies: n + 100,
            idle_requests: verbs(&[("watch", 2)]),
            idle_secs: 30.0,
            rss_before_kib: Some(20_000),
            rss_at_copies_kib: rss_growth_kib.map(|g| 20_000 + g),
            rss_growth_kib,
        }
    }

    pub(crate) fn catalog(services: usize, rss_kib: Option<u64>) -> CatalogFigures {
        CatalogFigures {
            services,
            endpoints: 5,
            instances: services * 5,
            txn_batch: 64,
            cold_applies: (services as u64 * 10 + 1).div_ceil(64),
            cold_secs: 4.0,
            warm_applies: 0,
            rollout_changes: 180,
            rollout_pods: 900,
            rollout_applies: 360,
            rollout_p50_ms: 40.0,
            rollout_p99_ms: 120.0,
            idle_secs: 65.0,
            idle_applies: 0,
            rss_after_cold_kib: rss_kib,
            rss_cold_peak_kib: rss_kib.map(|r| r + 4_096),
            rss_after_idle_kib: rss_kib,
            rss_peak_kib: rss_kib.map(|r| r + 4_096),
            separate_process: true,
        }
    }

    #[test]
    fn per_event_costs_leave_out_watches_and_the_benchs_own_writes() {
        let m = mirror(1000, Some(80_000));
        // (4,200 - 7 watch - 100 creates by the bench) / 100.
        assert_eq!(m.burst_per_namespace(), Some(41.0));
        assert_eq!(m.paced_per_namespace(), Some(40.0));
        assert_eq!(m.relabel_per_namespace(), Some(40.0));
        // (1,102 - 1 SyncConfig patch) / 1,100 copies.
        assert_eq!(m.edit_per_copy(), Some(1101.0 / 1100.0));
        assert_eq!(m.initial_per_copy(), Some(40_003.0 / 40_000.0));
        let none = MirrorFigures {
            events: 0,
            edited_copies: 0,
            ..m
        };
        assert_eq!(none.burst_per_namespace(), None);
        assert_eq!(none.edit_per_copy(), None);

        let c = catalog(10_000, Some(50_000));
        assert_eq!(c.applies_per_change(), Some(2.0));
        assert_eq!(c.cold_applies_per_instance(), Some(1563.0 / 50_000.0));
    }

    #[test]
    fn figures_survive_their_json() {
        let dir = std::env::temp_dir().join(format!("mirra-bench-figures-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (m, c) = (mirror(50, None), catalog(200, Some(1)));
        write_json(&dir.join("m.json"), &m).unwrap();
        write_json(&dir.join("c.json"), &c).unwrap();
        assert_eq!(read_json::<MirrorFigures>(&dir.join("m.json")).unwrap(), m);
        assert_eq!(read_json::<CatalogFigures>(&dir.join("c.json")).unwrap(), c);
        let e = read_json::<MirrorFigures>(&dir.join("c.json")).unwrap_err();
        assert!(format!("{e:#}").contains("c.json"), "{e:#}");
        std::fs::write(dir.join("bad.json"), "{not json").unwrap();
        let e = read_json::<MirrorFigures>(&dir.join("bad.json")).unwrap_err();
        assert!(format!("{e:#}").contains("parsing"), "{e:#}");
        let e = read_json::<MirrorFigures>(&dir.join("missing.json")).unwrap_err();
        assert!(format!("{e:#}").contains("reading"), "{e:#}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
