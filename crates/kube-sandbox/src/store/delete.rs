//! Removing objects: delete and delete-collection with their preconditions,
//! finalizers, namespace termination and the cleanup when a
//! CustomResourceDefinition goes away.
//!
//! This module must NOT create or change objects other than the
//! `deletionTimestamp`/finalizer steps of a removal.

use super::*;

impl Store {
    /// A namespace is removed only when empty and its spec finalizers are
    /// gone; other objects only by their metadata finalizers.
    pub(super) fn blocks_removal(&self, res: &Resource, obj: &Value) -> bool {
        if res.special != Special::Namespace {
            return false;
        }
        let ns = meta_str(obj, "name").unwrap_or_default();
        self.namespace_has_content(ns)
    }

    pub(super) fn namespace_has_content(&self, ns: &str) -> bool {
        self.objects.values().any(|c| {
            c.range((Arc::from(ns), Arc::from(""))..)
                .next()
                .is_some_and(|((n, _), _)| &**n == ns)
        })
    }

    /// Removes an object for good and runs what follows: a Service's
    /// allocations return, a CRD's resources go, a terminating namespace
    /// that became empty goes.
    pub(super) fn remove(
        &mut self,
        res: &Arc<Resource>,
        ns: &str,
        name: &str,
        obj: Value,
    ) -> Bytes {
        if res.special == Special::Service {
            self.alloc.release(&obj);
        }
        let out = self.commit(res, ns, name, EventType::Deleted, obj.clone(), false);
        if res.special == Special::Crd
            && let Ok(crd) = resource_from_crd(&obj)
        {
            self.drop_resource(&crd);
        }
        if res.namespaced {
            self.maybe_finish_namespace(ns);
        }
        out
    }

    /// The stored objects of a custom resource as they read back after its
    /// CRD changed. The real server prunes and defaults whatever it reads
    /// from storage, so a default the schema gained shows on objects
    /// stored before it (with their resourceVersion, and no watch event);
    /// rewriting them here once is the same to every reader.
    pub(super) fn reread_with_schema(&mut self, res: &Resource) {
        use kube_semantics::structural;
        let Some(schema) = res.schema.clone() else {
            return;
        };
        let Some(coll) = self.objects.get_mut(res.qualified().as_str()) else {
            return;
        };
        for stored in coll.values_mut() {
            let Ok(mut obj) = crate::json::parse(&stored.json) else {
                continue;
            };
            let before = obj.clone();
            structural::prune(&schema, &mut obj);
            structural::drop_non_nullable_nulls(&schema, &mut obj);
            structural::default(&schema, &mut obj);
            if obj != before {
                stored.json = Bytes::from(serde_json::to_vec(&obj).unwrap_or_default());
            }
        }
    }

    pub(super) fn drop_resource(&mut self, crd: &Resource) {
        let Some(served) = self.registry.get(&crd.group, &crd.version, &crd.plural) else {
            return;
        };
        let keys: Vec<Key> = self
            .collection(&served)
            .map(|c| c.keys().cloned().collect())
            .unwrap_or_default();
        for (ns, name) in keys {
            if let Ok(obj) = self.get_value(&served, &ns, &name) {
                self.commit(&served, &ns, &name, EventType::Deleted, obj, false);
            }
        }
        self.objects.remove(served.qualified().as_str());
        self.registry.remove(&crd.group, &crd.version, &crd.plural);
    }

    pub(super) fn maybe_finish_namespace(&mut self, ns: &str) {
        let Some(nsres) = self.registry.get("", "v1", "namespaces") else {
            return;
        };
        let Ok(obj) = self.get_value(&nsres, "", ns) else {
            return;
        };
        if obj.pointer("/metadata/deletionTimestamp").is_none() || self.namespace_has_content(ns) {
            return;
        }
        // The namespace controller removes the `kubernetes` finalizer once
        // the namespace is empty; other metadata finalizers still hold it.
        let mut obj = obj;
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("finalizers".into(), json!([]));
        }
        if has_finalizers(&obj) {
            self.commit(&nsres, "", ns, EventType::Modified, obj, false);
        } else {
            self.remove(&nsres, "", ns, obj);
        }
    }

    /// Deletes an object.
    pub fn delete(
        &mut self,
        res: &Arc<Resource>,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        if let Some(storage) = self.storage_for(res)? {
            return Ok(match self.delete(&storage, ns, name, opts)? {
                Deleted::Gone { status, object } => Deleted::Gone {
                    status,
                    object: convert::bytes_to_view(res, object),
                },
                Deleted::Pending(b) => Deleted::Pending(convert::bytes_to_view(res, b)),
            });
        }
        let old = self.get_value(res, ns, name)?;
        if let Some(uid) = &opts.uid {
            let actual = meta_str(&old, "uid").unwrap_or_default();
            if uid != actual {
                return Err(ApiError::conflict(
                    &res.group,
                    &res.plural,
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                    ),
                ));
            }
        }
        if let Some(rv) = &opts.resource_version {
            let actual = meta_str(&old, "resourceVersion").unwrap_or_default();
            if rv != actual {
                return Err(ApiError::conflict(
                    &res.group,
                    &res.plural,
                    name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {actual}"
                    ),
                ));
            }
        }
        let uid = meta_str(&old, "uid").unwrap_or_default().to_string();
        if res.special == Special::Crd && old.pointer("/metadata/deletionTimestamp").is_none() {
            return Ok(self.delete_crd(res, name, old, opts.dry_run));
        }
        let is_namespace = res.special == Special::Namespace;
        if has_finalizers(&old) || is_namespace {
            if old.pointer("/metadata/deletionTimestamp").is_some() {
                return Ok(Deleted::Pending(self.get(res, ns, name)?));
            }
            let mut obj = old;
            let meta = metadata_mut(&mut obj);
            meta.insert("deletionTimestamp".into(), json!(now()));
            meta.insert("deletionGracePeriodSeconds".into(), json!(0));
            if is_namespace {
                obj["status"] = json!({"phase": "Terminating"});
            }
            if opts.dry_run {
                // The real server runs the graceful-deletion update without
                // persisting it, so the answer shows the deletionTimestamp
                // the object would get.
                return Ok(Deleted::Pending(Bytes::from(
                    serde_json::to_vec(&obj).unwrap_or_default(),
                )));
            }
            let out = self.commit(res, ns, name, EventType::Modified, obj, false);
            if is_namespace {
                self.terminate_namespace(name);
                // The namespace may already be gone.
                return Ok(match self.get(res, "", name) {
                    Ok(b) => Deleted::Pending(b),
                    Err(_) => Deleted::Pending(out),
                });
            }
            return Ok(Deleted::Pending(out));
        }
        let status = success_status(&res.group, &res.plural, name, &uid);
        if opts.dry_run {
            let object = self.get(res, ns, name)?;
            return Ok(Deleted::Gone { status, object });
        }
        let object = self.remove(res, ns, name, old);
        Ok(Deleted::Gone { status, object })
    }

    /// A CRD's delete, as apiextensions answers it: the definition is
    /// marked (deletionTimestamp, the `customresourcecleanup` finalizer, a
    /// `Terminating` condition) and answered; the finalizing controller
    /// then removes its custom resources and the definition, which here
    /// happens at once, after the answer is built.
    pub(super) fn delete_crd(
        &mut self,
        res: &Arc<Resource>,
        name: &str,
        old: Value,
        dry_run: bool,
    ) -> Deleted {
        const CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";
        let mut obj = old;
        let stamp = now();
        let meta = metadata_mut(&mut obj);
        meta.insert("deletionTimestamp".into(), json!(stamp));
        meta.insert("deletionGracePeriodSeconds".into(), json!(0));
        let finalizers = meta.entry("finalizers").or_insert_with(|| json!([]));
        if let Some(list) = finalizers.as_array_mut()
            && !list.iter().any(|f| f == CLEANUP)
        {
            list.push(json!(CLEANUP));
        }
        let condition = json!({
            "type": "Terminating",
            "status": "True",
            "lastTransitionTime": stamp,
            "reason": "InstanceDeletionPending",
            "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        });
        if !obj.get("status").is_some_and(Value::is_object) {
            obj["status"] = json!({});
        }
        let conditions = obj["status"]
            .as_object_mut()
            .map(|st| st.entry("conditions").or_insert_with(|| json!([])));
        if let Some(Value::Array(list)) = conditions {
            list.retain(|c| c.get("type").and_then(Value::as_str) != Some("Terminating"));
            list.push(condition);
        }
        if dry_run {
            return Deleted::Pending(Bytes::from(serde_json::to_vec(&obj).unwrap_or_default()));
        }
        let answer = self.commit(res, "", name, EventType::Modified, obj.clone(), false);
        self.remove(res, "", name, obj);
        Deleted::Pending(answer)
    }

    /// Deletes everything inside a terminating namespace.
    pub(super) fn terminate_namespace(&mut self, ns: &str) {
        let resources: Vec<Arc<Resource>> = self
            .registry
            .all()
            // A converted view shares its storage version's objects.
            .filter(|r| r.namespaced && r.stored_as.is_none())
            .cloned()
            .collect();
        for res in resources {
            let keys: Vec<Key> = self
                .collection(&res)
                .map(|c| c.keys().filter(|(n, _)| &**n == ns).cloned().collect())
                .unwrap_or_default();
            for (_, name) in keys {
                let _ = self.delete(&res, ns, &name, &DeleteOptions::default());
            }
        }
        self.maybe_finish_namespace(ns);
    }

    /// Deletes every object matching a filter; returns the deleted objects.
    pub fn delete_collection(
        &mut self,
        res: &Arc<Resource>,
        filter: &Filter,
        opts: &DeleteOptions,
    ) -> Result<Vec<Bytes>, ApiError> {
        let keys: Vec<Key> = self
            .collection(res)
            .map(|c| {
                c.iter()
                    .filter(|(k, s)| {
                        filter.matches(&k.0, &s.labels, || crate::json::parse(&s.json).ok())
                    })
                    .map(|(k, _)| k.clone())
                    .collect()
            })
            .unwrap_or_default();
        let mut out = Vec::new();
        for (ns, name) in keys {
            let before = self.get(res, &ns, &name)?;
            match self.delete(
                res,
                &ns,
                &name,
                &DeleteOptions {
                    uid: None,
                    resource_version: None,
                    dry_run: opts.dry_run,
                },
            )? {
                Deleted::Pending(b) => out.push(b),
                Deleted::Gone { .. } => out.push(before),
            }
        }
        Ok(out)
    }
}
