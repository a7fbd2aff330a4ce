//! Dry runs (`--dry-run`): the writes a controller would make, kept and
//! reported instead of sent.
//!
//! A controller in a dry run watches, caches and plans as usual; where it
//! would send a write it hands the [`Preview`] a [`PlannedWrite`] under a
//! *scope*, the unit it plans (a target namespace for the mirror, a
//! Service for the catalog). [`Preview::replace`] swaps the scope's whole
//! report for the new one, so the preview always says what the controller
//! would write *now*: a write the incumbent made unnecessary meanwhile (it
//! changed the object the same way) leaves the preview with the next plan
//! of its scope. Reported three ways:
//!
//! - a log line (`dry run: would write`) when a planned write appears or
//!   changes, not again on every plan that still wants it;
//! - `mirra_dry_run_planned_writes{controller,kind,operation,reason}`, a
//!   gauge of the writes planned now, and
//!   `mirra_dry_run_reported_writes_total` (same labels), counting each
//!   appearance or change: a preview left running beside the incumbent for
//!   days shows in it the disagreements that came and went;
//! - `/preview` on the health port ([`Preview::summary`]): JSON, or a short
//!   text table for people (`?format=text`).
//!
//! Reads that failed (a missing RBAC grant) are reported with
//! [`Preview::unreadable`]: a preview that could not see everything is
//! never called quiet.
//!
//! It must NOT send anything, decide what would be written (the
//! controllers' planners do), or keep more than the current plan of each
//! scope (apart from the counters).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde_json::{Value, json};

/// At most this many planned writes are listed in `/preview`'s JSON (all
/// are counted): a first preview of a big cluster may plan tens of
/// thousands, and the log lines hold every one.
pub const LISTED_WRITES: usize = 1000;

/// One write a controller in a dry run would have sent.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PlannedWrite {
    /// What is written: a Kubernetes kind (`ConfigMap`, `SyncConfig`) or
    /// `ConsulService`.
    pub kind: String,
    /// The Kubernetes namespace, or the Consul namespace (empty when none).
    pub namespace: String,
    /// The object's name, or the Consul service ID.
    pub name: String,
    /// What would be sent: `apply`, `delete`, `release`, `patch-status`,
    /// `register`, `deregister`.
    pub operation: &'static str,
    /// Why, from a small fixed set per controller (a metric label).
    pub reason: &'static str,
    /// A short description of what differs (`data.key`, `port: 80 ->
    /// 8080`); never a Secret's value.
    pub diff: Vec<String>,
}

impl PlannedWrite {
    fn target(&self) -> (&str, &str, &str) {
        (&self.kind, &self.namespace, &self.name)
    }

    fn to_json(&self) -> Value {
        json!({
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "operation": self.operation,
            "reason": self.reason,
            "diff": self.diff,
        })
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PlannedLabels {
    controller: &'static str,
    kind: String,
    operation: &'static str,
    reason: &'static str,
}

#[derive(Debug, Default)]
struct Inner {
    /// Scope -> the writes its last plan would make.
    scopes: BTreeMap<String, Vec<PlannedWrite>>,
    /// What could not be read -> why.
    unreadable: BTreeMap<String, String>,
    /// Planned writes reported since the start (appearances and changes).
    reported: u64,
}

/// The dry-run report of one controller. Cheap to clone; clones share it.
#[derive(Debug, Clone)]
pub struct Preview {
    controller: &'static str,
    inner: Arc<Mutex<Inner>>,
    planned: Family<PlannedLabels, Gauge>,
    reported: Family<PlannedLabels, Counter>,
}

impl Preview {
    /// A preview for `controller` (`mirror`, `catalog`).
    pub fn new(controller: &'static str) -> Preview {
        Preview {
            controller,
            inner: Arc::default(),
            planned: Family::default(),
            reported: Family::default(),
        }
    }

    /// Exports its metric families in `registry`, under
    /// [`crate::metrics::PREFIX`].
    pub fn register(&self, registry: &mut Registry) {
        let registry = registry.sub_registry_with_prefix(crate::metrics::PREFIX);
        registry.register(
            "dry_run_planned_writes",
            "Writes a controller in a dry run would make now, by kind, operation and reason",
            self.planned.clone(),
        );
        registry.register(
            "dry_run_reported_writes",
            "Planned writes a controller in a dry run reported (each appearance or change)",
            self.reported.clone(),
        );
    }

    /// The controller it reports for.
    pub fn controller(&self) -> &'static str {
        self.controller
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Only counters and reports live here: a panic elsewhere leaves
        // them consistent.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn labels(&self, w: &PlannedWrite) -> PlannedLabels {
        PlannedLabels {
            controller: self.controller,
            kind: w.kind.clone(),
            operation: w.operation,
            reason: w.reason,
        }
    }

    /// Replaces what `scope`'s last plan would have written with `writes`
    /// (empty: the scope is in step). Logs and counts what is new or
    /// changed.
    pub fn replace(&self, scope: &str, mut writes: Vec<PlannedWrite>) {
        writes.sort();
        let mut inner = self.lock();
        let old = if writes.is_empty() {
            inner.scopes.remove(scope).unwrap_or_default()
        } else {
            inner
                .scopes
                .insert(scope.to_string(), writes.clone())
                .unwrap_or_default()
        };
        if old == writes {
            return;
        }
        for w in &old {
            self.planned.get_or_create(&self.labels(w)).dec();
            if !writes.iter().any(|n| n.target() == w.target()) {
                tracing::info!(controller = self.controller, kind = %w.kind,
                    namespace = %w.namespace, name = %w.name, operation = w.operation,
                    "dry run: no longer needs writing");
            }
        }
        for w in &writes {
            self.planned.get_or_create(&self.labels(w)).inc();
            if old.contains(w) {
                continue;
            }
            inner.reported += 1;
            self.reported.get_or_create(&self.labels(w)).inc();
            tracing::info!(controller = self.controller, kind = %w.kind,
                namespace = %w.namespace, name = %w.name, operation = w.operation,
                reason = w.reason, diff = ?w.diff, "dry run: would write");
        }
    }

    /// Records that `what` could not be read (or clears it, with `None`).
    pub fn unreadable(&self, what: &str, error: Option<String>) {
        let mut inner = self.lock();
        match error {
            Some(e) => {
                if inner.unreadable.get(what) != Some(&e) {
                    tracing::warn!(controller = self.controller, what, error = %e,
                        "dry run: cannot read; the preview is incomplete");
                }
                inner.unreadable.insert(what.to_string(), e);
            }
            None => {
                inner.unreadable.remove(what);
            }
        }
    }

    /// Every write planned now, in a stable order.
    pub fn writes(&self) -> Vec<PlannedWrite> {
        self.lock().scopes.values().flatten().cloned().collect()
    }

    /// The summary `/preview` serves as JSON.
    pub fn summary(&self) -> Value {
        let inner = self.lock();
        let mut by_operation: BTreeMap<&str, u64> = BTreeMap::new();
        let mut by_kind: BTreeMap<&str, u64> = BTreeMap::new();
        let mut by_reason: BTreeMap<&str, u64> = BTreeMap::new();
        let mut total = 0u64;
        for w in inner.scopes.values().flatten() {
            total += 1;
            *by_operation.entry(w.operation).or_default() += 1;
            *by_kind.entry(&w.kind).or_default() += 1;
            *by_reason.entry(w.reason).or_default() += 1;
        }
        let listed: Vec<Value> = inner
            .scopes
            .values()
            .flatten()
            .take(LISTED_WRITES)
            .map(PlannedWrite::to_json)
            .collect();
        let unreadable: Vec<Value> = inner
            .unreadable
            .iter()
            .map(|(what, error)| json!({"what": what, "error": error}))
            .collect();
        json!({
            "controller": self.controller,
            "dryRun": true,
            "quiet": total == 0 && inner.unreadable.is_empty(),
            "plannedWrites": total,
            "reportedSinceStart": inner.reported,
            "byOperation": by_operation,
            "byKind": by_kind,
            "byReason": by_reason,
            "unreadable": unreadable,
            "writes": listed,
            "truncated": total > LISTED_WRITES as u64,
        })
    }
}

/// The summaries of several controllers' previews as one text table, for
/// people (`/preview?format=text`).
pub fn text(previews: &[Preview]) -> String {
    let mut out = String::new();
    for p in previews {
        let s = p.summary();
        let quiet = s["quiet"].as_bool().unwrap_or(false);
        let _ = writeln!(
            out,
            "{}: {} planned write(s){}",
            p.controller,
            s["plannedWrites"],
            if quiet {
                ", quiet: the switch would write nothing"
            } else {
                ""
            }
        );
        for u in s["unreadable"].as_array().into_iter().flatten() {
            let _ = writeln!(
                out,
                "  cannot read {}: {}",
                u["what"].as_str().unwrap_or_default(),
                u["error"].as_str().unwrap_or_default()
            );
        }
        let writes = p.writes();
        if writes.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "  {:<14} {:<14} {:<18} {:<24} {:<32} DIFF",
            "OPERATION", "REASON", "KIND", "NAMESPACE", "NAME"
        );
        for w in writes.iter().take(LISTED_WRITES) {
            let _ = writeln!(
                out,
                "  {:<14} {:<14} {:<18} {:<24} {:<32} {}",
                w.operation,
                w.reason,
                w.kind,
                w.namespace,
                w.name,
                w.diff.join(", ")
            );
        }
        if writes.len() > LISTED_WRITES {
            let _ = writeln!(out, "  ... and {} more", writes.len() - LISTED_WRITES);
        }
    }
    out
}

/// A short description of where `desired` is not a part of `observed`:
/// the paths (dotted, list positions in brackets) whose desired value is
/// missing or different, at most `max` of them (then `...`). Values are
/// shown, shortened, unless `hide_values` (a Secret's). Empty exactly when
/// every field of `desired` is found in `observed` with the same value.
pub fn short_diff(desired: &Value, observed: &Value, hide_values: bool, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut more = false;
    diff_into(
        desired,
        observed,
        &mut String::new(),
        hide_values,
        max,
        &mut out,
        &mut more,
    );
    if more {
        out.push("...".into());
    }
    out
}

fn diff_into(
    desired: &Value,
    observed: &Value,
    path: &mut String,
    hide: bool,
    max: usize,
    out: &mut Vec<String>,
    more: &mut bool,
) {
    match (desired, observed) {
        (Value::Object(d), Value::Object(o)) => {
            for (k, dv) in d {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
                match o.get(k) {
                    Some(ov) => diff_into(dv, ov, path, hide, max, out, more),
                    None => push(out, more, max, format!("{path}: missing")),
                }
                path.truncate(len);
            }
        }
        (Value::Array(d), Value::Array(o)) if d.len() == o.len() => {
            for (i, (dv, ov)) in d.iter().zip(o).enumerate() {
                let len = path.len();
                let _ = write!(path, "[{i}]");
                diff_into(dv, ov, path, hide, max, out, more);
                path.truncate(len);
            }
        }
        (d, o) if d == o => {}
        (d, o) => {
            let shown = if path.is_empty() { "(object)" } else { path };
            let line = if hide {
                format!("{shown}: differs")
            } else {
                format!("{shown}: {} -> {}", shorten(o), shorten(d))
            };
            push(out, more, max, line);
        }
    }
}

fn push(out: &mut Vec<String>, more: &mut bool, max: usize, line: String) {
    if out.len() < max {
        out.push(line);
    } else {
        *more = true;
    }
}

/// A value's JSON form cut to 40 characters.
fn shorten(v: &Value) -> String {
    const MAX: usize = 40;
    let s = v.to_string();
    match s.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}...", &s[..at]),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn write(name: &str, operation: &'static str, diff: &[&str]) -> PlannedWrite {
        PlannedWrite {
            kind: "ConfigMap".into(),
            namespace: "team-a".into(),
            name: name.into(),
            operation,
            reason: "content-differs",
            diff: diff.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn metric(registry: &Registry, family: &str) -> String {
        let mut body = String::new();
        prometheus_client::encoding::text::encode(&mut body, registry).unwrap_or_default();
        body.lines()
            .filter(|l| l.starts_with(family))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_scope_report_replaces_the_last_and_only_changes_are_counted() {
        let mut registry = Registry::default();
        let p = Preview::new("mirror");
        p.register(&mut registry);
        assert_eq!(p.summary()["quiet"], true);

        p.replace("team-a", vec![write("a", "apply", &["data.x: 1 -> 2"])]);
        p.replace("team-a", vec![write("a", "apply", &["data.x: 1 -> 2"])]);
        p.replace("team-b", vec![write("b", "delete", &[])]);
        let s = p.summary();
        assert_eq!(s["plannedWrites"], 2);
        assert_eq!(
            s["reportedSinceStart"], 2,
            "the same plan again is not news"
        );
        assert_eq!(s["quiet"], false);
        assert_eq!(s["byOperation"], json!({"apply": 1, "delete": 1}));

        // The incumbent made team-a's write unnecessary; team-b's changed.
        p.replace("team-a", Vec::new());
        p.replace("team-b", vec![write("b", "delete", &["x"])]);
        let s = p.summary();
        assert_eq!(s["plannedWrites"], 1);
        assert_eq!(s["reportedSinceStart"], 3);
        assert_eq!(s["writes"][0]["name"], "b");
        let gauge = metric(&registry, "mirra_dry_run_planned_writes{");
        assert!(
            gauge.contains(r#"operation="apply",reason="content-differs"} 0"#),
            "{gauge}"
        );
        assert!(
            gauge.contains(r#"operation="delete",reason="content-differs"} 1"#),
            "{gauge}"
        );
        let counter = metric(&registry, "mirra_dry_run_reported_writes_total{");
        assert!(
            counter.contains(r#"operation="delete",reason="content-differs"} 2"#),
            "{counter}"
        );
    }

    #[test]
    fn an_unreadable_source_keeps_the_preview_from_being_quiet() {
        let p = Preview::new("mirror");
        p.unreadable("secrets in team-a", Some("403 Forbidden".into()));
        let s = p.summary();
        assert_eq!(s["quiet"], false);
        assert_eq!(s["unreadable"][0]["error"], "403 Forbidden");
        assert!(
            text(std::slice::from_ref(&p)).contains("cannot read secrets in team-a: 403 Forbidden")
        );
        p.unreadable("secrets in team-a", None);
        assert_eq!(p.summary()["quiet"], true);
        assert!(text(&[p]).contains("quiet: the switch would write nothing"));
    }

    #[test]
    fn the_text_table_lists_each_write_with_its_diff() {
        let p = Preview::new("mirror");
        p.replace(
            "team-a",
            vec![write(
                "a",
                "apply",
                &["data.x: \"1\" -> \"2\"", "data.y: missing"],
            )],
        );
        let t = text(&[p]);
        assert!(t.starts_with("mirror: 1 planned write(s)\n"), "{t}");
        assert!(t.contains("OPERATION"), "{t}");
        let row = t.lines().last().unwrap_or_default();
        for part in [
            "apply",
            "content-differs",
            "ConfigMap",
            "team-a",
            "data.x: \"1\" -> \"2\", data.y: missing",
        ] {
            assert!(row.contains(part), "{part} in {row}");
        }
    }

    #[test]
    fn the_listing_is_capped_but_every_write_is_counted() {
        let p = Preview::new("mirror");
        let many: Vec<_> = (0..LISTED_WRITES + 5)
            .map(|i| write(&format!("cm-{i:05}"), "apply", &[]))
            .collect();
        p.replace("team-a", many);
        let s = p.summary();
        assert_eq!(s["plannedWrites"], LISTED_WRITES as u64 + 5);
        assert_eq!(s["writes"].as_array().map(Vec::len), Some(LISTED_WRITES));
        assert_eq!(s["truncated"], true);
        assert!(text(&[p]).ends_with("  ... and 5 more\n"));
    }

    #[test]
    fn a_diff_names_paths_hides_secret_values_and_stops_at_max() {
        let desired = json!({"data": {"a": "1", "b": "2", "c": "3"}, "list": [1, 2]});
        let observed = json!({"data": {"a": "1", "b": "x"}, "list": [1, 3], "extra": true});
        assert_eq!(
            short_diff(&desired, &observed, false, 10),
            vec![
                "data.b: \"x\" -> \"2\"".to_string(),
                "data.c: missing".into(),
                "list[1]: 3 -> 2".into()
            ]
        );
        assert_eq!(
            short_diff(&desired, &observed, true, 10),
            vec![
                "data.b: differs".to_string(),
                "data.c: missing".into(),
                "list[1]: differs".into()
            ]
        );
        assert_eq!(
            short_diff(&desired, &observed, false, 1),
            vec!["data.b: \"x\" -> \"2\"".to_string(), "...".into()]
        );
        let long = json!({"v": "y".repeat(100)});
        let d = short_diff(&long, &json!({"v": 1}), false, 5);
        assert!(d[0].len() < 60 && d[0].ends_with("..."), "{d:?}");
        assert_eq!(
            short_diff(&json!(1), &json!(2), false, 5),
            vec!["(object): 2 -> 1".to_string()]
        );
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (0i64..4).prop_map(|n| json!(n)),
            "[a-c]{0,2}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map("[a-c]", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Whether every field of `d` is in `o` with the same value (lists
    /// element by element, of the same length).
    fn is_part(d: &Value, o: &Value) -> bool {
        match (d, o) {
            (Value::Object(d), Value::Object(o)) => d
                .iter()
                .all(|(k, v)| o.get(k).is_some_and(|ov| is_part(v, ov))),
            (Value::Array(d), Value::Array(o)) => {
                d.len() == o.len() && d.iter().zip(o).all(|(a, b)| is_part(a, b))
            }
            (d, o) => d == o,
        }
    }

    proptest! {
        #[test]
        fn a_diff_is_empty_exactly_when_the_desired_form_is_already_there(
            d in json_value(),
            o in json_value(),
            hide in any::<bool>(),
        ) {
            let diff = short_diff(&d, &o, hide, 3);
            prop_assert_eq!(diff.is_empty(), is_part(&d, &o));
            prop_assert!(diff.len() <= 4);
            prop_assert!(short_diff(&d, &d, hide, 3).is_empty());
        }
    }
}
