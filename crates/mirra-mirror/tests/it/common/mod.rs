//! Builders and a simulated API server store shared by the integration tests.
//!
//! The store is deliberately simple: an apply merges the body into the stored
//! object (maps merged, everything else replaced, as server-side apply does
//! for fields of other managers) and assigns a uid on creation; a delete
//! removes the object when the uid matches.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap: a panic is a test failure.
#![allow(dead_code)]

use std::collections::BTreeMap;

use mirra_mirror::{CompiledConfig, NamespaceView, ObservedObject, ObservedSet, Op};
use serde_json::{Value, json};

/// A namespace for tests: name, labels, active.
#[derive(Debug, Clone)]
pub struct TestNs {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub active: bool,
}

impl TestNs {
    pub fn new(name: &str) -> Self {
        TestNs {
            name: name.into(),
            labels: BTreeMap::new(),
            active: true,
        }
    }

    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.labels.insert(k.into(), v.into());
        self
    }

    pub fn terminating(mut self) -> Self {
        self.active = false;
        self
    }

    pub fn view(&self) -> NamespaceView<'_> {
        NamespaceView {
            name: &self.name,
            labels: &self.labels,
            active: self.active,
        }
    }
}

/// A SyncConfig in namespace `ops`, created at `2024-01-01T00:00:0<age>Z`
/// (smaller `age` = older), with the given spec.
pub fn config(name: &str, age: u32, spec: Value) -> CompiledConfig {
    config_with(name, age, spec, true)
}

pub fn config_with(name: &str, age: u32, spec: Value, prune: bool) -> CompiledConfig {
    let mut meta = json!({
        "name": name, "namespace": "ops", "uid": format!("uid-{name}"), "generation": 1,
        "creationTimestamp": format!("2024-01-01T00:{:02}:{:02}Z", age / 60, age % 60),
    });
    if !prune {
        meta["annotations"] = json!({ mirra_mirror::PRUNE_ANNOTATION: "false" });
    }
    CompiledConfig::from_json(&json!({
        "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig", "metadata": meta, "spec": spec,
    }))
}

pub fn configmap(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

/// An object someone else created (no marks).
pub fn foreign(kind: &str, ns: &str, name: &str, uid: &str) -> ObservedObject {
    ObservedObject::from_json(json!({
        "apiVersion": "v1", "kind": kind,
        "metadata": {"name": name, "namespace": ns, "uid": uid, "labels": {"made-by": "human"}},
        "data": {"x": "y"},
    }))
    .unwrap()
}

/// A simulated cluster: every object in every namespace.
#[derive(Debug, Clone, Default)]
pub struct Store {
    pub objects: ObservedSet,
    next_uid: u64,
    pub applies: usize,
    pub deletes: usize,
}

impl Store {
    pub fn insert(&mut self, o: ObservedObject) {
        self.objects.insert(o);
    }

    pub fn view(&self, ns: &str) -> ObservedSet {
        self.objects.in_namespace(ns)
    }

    pub fn apply(&mut self, op: &Op) {
        match op {
            Op::Apply { target, body, .. } => {
                self.applies += 1;
                let key = target.key();
                let existing = self.objects.iter().find(|o| o.key() == key).cloned();
                let mut merged = match &existing {
                    Some(o) => merge(&o.body(), body),
                    None => body.clone(),
                };
                let uid = match &existing {
                    Some(o) => o.uid.clone(),
                    None => {
                        self.next_uid += 1;
                        format!("sim-{}", self.next_uid)
                    }
                };
                merged["metadata"]["uid"] = Value::String(uid);
                // As the API server records it: mirra's apply owns what it
                // sent, its marks among them.
                merged["metadata"]["managedFields"] = mirra_owns(body);
                self.objects
                    .insert(ObservedObject::from_json(merged).unwrap());
            }
            Op::Release { target, .. } => {
                self.applies += 1;
                let key = target.key();
                let found = self.objects.iter().find(|o| o.key() == key).cloned();
                if let Some(o) = found {
                    let mut body = o.body().into_owned();
                    let meta = &mut body["metadata"];
                    if let Some(Value::Object(l)) = meta.get_mut("labels") {
                        l.remove(mirra_mirror::MANAGED_BY_LABEL);
                    }
                    if let Some(Value::Object(a)) = meta.get_mut("annotations") {
                        for k in [
                            mirra_mirror::OWNER_ANNOTATION,
                            mirra_mirror::HASH_ANNOTATION,
                            mirra_mirror::PRUNE_ANNOTATION,
                            mirra_mirror::ADOPTED_ANNOTATION,
                        ] {
                            a.remove(k);
                        }
                    }
                    meta["managedFields"] = json!([]);
                    self.objects
                        .insert(ObservedObject::from_json(body).unwrap());
                }
            }
            Op::Delete { target, uid, .. } => {
                self.deletes += 1;
                let key = target.key();
                if self.objects.iter().any(|o| o.key() == key && &o.uid == uid) {
                    self.objects.remove(&key);
                }
            }
        }
    }
}

/// The managedFields of an object mirra's apply of `body` wrote: one
/// Apply entry owning the labels and annotations it sent.
pub fn mirra_owns(body: &Value) -> Value {
    let keys = |section: &str| -> Value {
        let mut m = serde_json::Map::new();
        if let Some(Value::Object(map)) = body["metadata"].get(section) {
            for k in map.keys() {
                m.insert(format!("f:{k}"), json!({}));
            }
        }
        Value::Object(m)
    };
    json!([{
        "manager": mirra_mirror::FIELD_MANAGER,
        "operation": "Apply",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": keys("labels"), "f:annotations": keys("annotations")}},
    }])
}

/// Maps merged key by key (desired wins); anything else replaced.
pub fn merge(observed: &Value, desired: &Value) -> Value {
    match (observed, desired) {
        (Value::Object(o), Value::Object(d)) => {
            let mut out = o.clone();
            for (k, dv) in d {
                let merged = match o.get(k) {
                    Some(ov) => merge(ov, dv),
                    None => dv.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (_, d) => d.clone(),
    }
}
