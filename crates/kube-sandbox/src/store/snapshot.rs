//! Saving the whole store (objects and revision counter) as one JSON
//! document for a restart, and building a store back from one.
//!
//! This module must NOT serve API requests or keep watch history: it is
//! only for persisting the objects across a restart.

use super::*;

impl Store {
    /// Every stored object and the revision counter, for a restart
    /// ([`Store::restore`]). Watch history is not part of it.
    pub fn snapshot(&self) -> Value {
        let crds = crate::status::qualified("apiextensions.k8s.io", "customresourcedefinitions");
        let mut resources: Vec<&Arc<str>> = self.objects.keys().collect();
        // CRDs first, so a restore serves their resources before it meets
        // their objects; then a stable order.
        resources.sort_by_key(|r| (&***r != crds.as_str(), r.to_string()));
        let mut objects = Vec::new();
        for resource in resources {
            for ((namespace, _), stored) in &self.objects[resource] {
                if let Ok(object) = crate::json::parse(&stored.json) {
                    objects.push(json!({
                        "resource": &**resource,
                        "namespace": &**namespace,
                        "object": object,
                    }));
                }
            }
        }
        json!({"revision": self.rv, "objects": objects})
    }

    /// A store holding what [`Store::snapshot`] saved: every object as it
    /// was (resourceVersions, uids and all), the resources of its CRDs
    /// served, the Services' addresses and ports taken. The history starts
    /// empty, so a watch resumed from before the restart gets 410 and its
    /// client lists again, as after an etcd compaction.
    pub fn restore(config: StoreConfig, snapshot: &Value) -> Result<Self, String> {
        let mut store = Store::empty(config);
        let revision = snapshot
            .get("revision")
            .and_then(Value::as_u64)
            .ok_or("the state has no numeric \"revision\"")?;
        let objects = snapshot
            .get("objects")
            .and_then(Value::as_array)
            .ok_or("the state has no \"objects\" list")?;
        let crds = crate::status::qualified("apiextensions.k8s.io", "customresourcedefinitions");
        let services = crate::status::qualified("", "services");
        let mut top = revision;
        for (i, entry) in objects.iter().enumerate() {
            let field = |k: &str| entry.get(k).and_then(Value::as_str);
            let (Some(resource), Some(namespace), Some(object)) =
                (field("resource"), field("namespace"), entry.get("object"))
            else {
                return Err(format!(
                    "object {i}: needs \"resource\", \"namespace\" and \"object\""
                ));
            };
            let name = meta_str(object, "name")
                .filter(|n| !n.is_empty())
                .ok_or_else(|| format!("object {i} ({resource}) has no name"))?;
            let rv = meta_str(object, "resourceVersion")
                .ok_or_else(|| format!("object {i} ({resource} {name}) has no resourceVersion"))
                .and_then(|v| parse_rv(v).map_err(|e| format!("object {i}: {}", e.message)))?;
            top = top.max(rv);
            if resource == crds {
                let res = resource_from_crd(object)
                    .map_err(|e| format!("object {i} (CRD {name}): {e}"))?;
                store.registry.insert(res);
            }
            if resource == services {
                store.alloc.reserve(object);
            }
            let json = Bytes::from(serde_json::to_vec(object).unwrap_or_default());
            let key: Key = (store.intern(namespace), Arc::from(name));
            let resource = store.intern(resource);
            store.objects.entry(resource).or_default().insert(
                key,
                Stored {
                    json,
                    labels: Labels::of(object),
                    rv,
                },
            );
        }
        store.rv = top;
        store.compacted = top;
        Ok(store)
    }
}
