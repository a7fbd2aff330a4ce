//! Creating and changing objects: create (with `generateName`), update,
//! every patch kind and the replace step they share (preconditions,
//! generation, status subresource, schema defaults).
//!
//! This module must NOT remove objects: deletion, finalizers and namespace
//! termination live in `delete`.

use super::*;

impl Store {
    /// Creates an object.
    pub fn create(
        &mut self,
        res: &Arc<Resource>,
        ns: &str,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        if let Some(storage) = self.storage_for(res)? {
            Self::check_identity(res, ns, &body)?;
            let body = convert::to_storage(res, body)?;
            let out = self.create_inner(&storage, ns, body, opts, None)?;
            return Ok(convert::bytes_to_view(res, out));
        }
        self.create_inner(res, ns, body, opts, None)
    }

    /// Creates an object; `managed` is the ownership record of an apply
    /// that creates, `None` to record the creator as an Update manager.
    pub(super) fn create_inner(
        &mut self,
        res: &Arc<Resource>,
        ns: &str,
        mut body: Value,
        opts: &WriteOptions,
        managed: Option<Value>,
    ) -> Result<Bytes, ApiError> {
        Self::check_identity(res, ns, &body)?;
        body["apiVersion"] = json!(res.api_version());
        body["kind"] = json!(res.kind);
        kinds::decode(res, &mut body)?;
        let meta = metadata_mut(&mut body);
        let mut name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if name.is_empty() {
            match meta.get("generateName").and_then(Value::as_str) {
                Some(prefix) if !prefix.is_empty() => {
                    name = generate_name(prefix);
                    meta.insert("name".into(), json!(name));
                }
                _ => {
                    return Err(Self::invalid(
                        res,
                        "",
                        vec![Cause {
                            reason: "FieldValueRequired".into(),
                            field: "metadata.name".into(),
                            message: "Required value: name or generateName is required".into(),
                        }],
                    ));
                }
            }
        }
        kinds::validate_name(res.name_rule, &name)
            .map_err(|c| Self::invalid(res, &name, vec![c]))?;
        if res.namespaced {
            meta.insert("namespace".into(), json!(ns));
        } else {
            meta.remove("namespace");
        }
        for f in [
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ] {
            meta.remove(f);
        }
        meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        meta.insert("creationTimestamp".into(), json!(now()));
        if res.tracks_generation {
            meta.insert("generation".into(), json!(1));
        } else {
            meta.remove("generation");
        }
        meta.remove("managedFields");
        self.check_namespace(res, ns, &name)?;
        if self
            .lookup(res, if res.namespaced { ns } else { "" }, &name)
            .is_some()
        {
            return Err(ApiError::already_exists(&res.group, &res.plural, &name));
        }
        // Status is the subresource's, so a create resets it, as the real
        // server's strategies do, except for the two kinds whose create
        // sets it: namespaces (phase) and nodes. A built-in kind's status
        // becomes the zero value of its status struct, which keeps the
        // fields Go always writes (a StatefulSet's `replicas: 0`).
        if res.status_subresource && !matches!(res.special, Special::Namespace | Special::Node) {
            let status = kinds::initial_status(res, &body, &now());
            if let Value::Object(m) = &mut body {
                match status {
                    Some(status) => m.insert("status".into(), status),
                    None => m.remove("status"),
                };
            }
        }
        kinds::prepare_create(res, &mut body).map_err(|c| Self::invalid(res, &name, c))?;
        let crd = if res.special == Special::Crd {
            let crd = resource_from_crd(&body).map_err(|e| {
                Self::invalid(
                    res,
                    &name,
                    vec![Cause {
                        reason: "FieldValueInvalid".into(),
                        field: e.field().into(),
                        message: e.to_string(),
                    }],
                )
            })?;
            body["status"] = crd_status(&body);
            Some(crd)
        } else {
            None
        };
        Self::apply_schema(res, &name, &mut body, None)?;
        let causes = kinds::validate(res, &body, None);
        if !causes.is_empty() {
            return Err(Self::invalid(res, &name, causes));
        }
        if opts.dry_run {
            let mut probe = Allocators::default();
            kinds::on_create(res, &mut body, &mut probe)
                .map_err(|c| Self::invalid(res, &name, c))?;
            return Ok(Bytes::from(serde_json::to_vec(&body).unwrap_or_default()));
        }
        kinds::on_create(res, &mut body, &mut self.alloc)
            .map_err(|c| Self::invalid(res, &name, c))?;
        let body = match managed {
            Some(m) => {
                metadata_mut(&mut body).insert("managedFields".into(), m);
                body
            }
            None => semantics::record_update(None, &body, &opts.manager, &now(), None),
        };
        if let Some(crd) = crd {
            self.registry.insert(crd);
        }
        check_depth(&body)?;
        let scope_ns = if res.namespaced { ns } else { "" };
        Ok(self.commit(res, scope_ns, &name, EventType::Added, body, opts.protobuf))
    }
}

impl Store {
    /// Replaces an object (PUT), or its status.
    pub fn update(
        &mut self,
        res: &Arc<Resource>,
        ns: &str,
        name: &str,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        Self::check_identity(res, ns, &body)?;
        if let Some(body_name) = meta_str(&body, "name")
            && body_name != name
        {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        if let Some(storage) = self.storage_for(res)? {
            let body = convert::to_storage(res, body)?;
            let out = self.update(&storage, ns, name, body, opts)?;
            return Ok(convert::bytes_to_view(res, out));
        }
        let old = self.get_value(res, ns, name)?;
        check_resource_version(res, name, &body, &old)?;
        self.replace(res, ns, name, old, body, opts, None)
    }

    /// Applies a patch, or server-side apply (which may create).
    pub fn patch(
        &mut self,
        res: &Arc<Resource>,
        ns: &str,
        name: &str,
        kind: PatchKind,
        patch: &[u8],
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        if kind == PatchKind::Strategic && !res.strategic_merge {
            return Err(ApiError::unsupported_media_type(
                "application/strategic-merge-patch+json",
            ));
        }
        // A view patches (and applies to) the object as it serves it, and
        // stores the result converted back.
        let storage = self.storage_for(res)?;
        let served = storage.clone().unwrap_or_else(|| res.clone());
        let existing = self.lookup(res, ns, name).map(Self::parse).transpose()?;
        let existing_view = match &storage {
            Some(_) => existing.clone().map(|v| convert::to_view(res, v)),
            None => None,
        };
        let out = self.patch_at(
            res,
            &served,
            ns,
            name,
            kind,
            patch,
            opts,
            existing,
            existing_view,
        )?;
        Ok(convert::bytes_to_view(res, out))
    }

    /// The patch of [`Store::patch`]: `res` is the resource the request
    /// names, `storage` the one its objects are stored under (the same
    /// unless `res` is a view); `existing` is the stored object and
    /// `existing_view` its converted form for a view.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn patch_at(
        &mut self,
        res: &Arc<Resource>,
        storage: &Arc<Resource>,
        ns: &str,
        name: &str,
        kind: PatchKind,
        patch: &[u8],
        opts: &WriteOptions,
        existing: Option<Value>,
        existing_view: Option<Value>,
    ) -> Result<Bytes, ApiError> {
        let seen = existing_view.as_ref().or(existing.as_ref());
        if kind == PatchKind::Apply {
            if opts.manager.is_empty() {
                return Err(ApiError::bad_request(
                    "PATCH requests with apply-patch+yaml require fieldManager",
                ));
            }
            let applied = semantics::parse_apply_body(patch)?;
            Self::check_identity(res, ns, &applied)?;
            if let Some(n) = meta_str(&applied, "name")
                && n != name
            {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({name})"
                )));
            }
            // A resourceVersion in the apply configuration is a
            // precondition, as for any other write.
            if let Some(current) = seen {
                check_resource_version(res, name, &applied, current)?;
            }
            let mut applied = applied;
            if opts.status {
                // An apply to /status only touches status.
                if let Value::Object(m) = &mut applied {
                    m.retain(|k, _| {
                        matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status")
                    });
                }
            } else if res.status_subresource
                // An apply that creates a Node keeps its status, as a create does.
                && !(seen.is_none() && res.special == Special::Node)
                && let Value::Object(m) = &mut applied
            {
                m.remove("status");
            }
            let Some(seen) = seen else {
                // Apply creates; the apply's ownership record is kept as is.
                let mut merged =
                    semantics::apply(None, &applied, &opts.manager, opts.force, &now())
                        .map_err(|e| semantics::apply_error(res, name, e))?;
                metadata_mut(&mut merged).insert("name".into(), json!(name));
                let managed = merged.pointer("/metadata/managedFields").cloned();
                let merged = convert::to_storage(res, merged)?;
                return self.create_inner(storage, ns, merged, opts, managed);
            };
            let mut merged =
                semantics::apply(Some(seen), &applied, &opts.manager, opts.force, &now())
                    .map_err(|e| semantics::apply_error(res, name, e))?;
            if opts.status {
                // Keep everything but status (and ownership) from the old object.
                let status = merged.get("status").cloned();
                let managed = merged.pointer("/metadata/managedFields").cloned();
                merged = seen.clone();
                match status {
                    Some(s) => merged["status"] = s,
                    None => {
                        if let Value::Object(m) = &mut merged {
                            m.remove("status");
                        }
                    }
                }
                if let Some(m) = managed {
                    metadata_mut(&mut merged).insert("managedFields".into(), m);
                }
            }
            let merged = convert::to_storage(res, merged)?;
            let Some(old) = existing else {
                return Err(ApiError::not_found(&res.group, &res.plural, name));
            };
            return self.replace(
                storage,
                ns,
                name,
                old,
                merged,
                &WriteOptions {
                    status: false,
                    ..opts.clone()
                },
                Some(()),
            );
        }
        let Some(seen) = seen else {
            return Err(ApiError::not_found(&res.group, &res.plural, name));
        };
        let patched = match kind {
            PatchKind::Merge => semantics::merge_patch(seen, patch)?,
            PatchKind::Json => semantics::json_patch(seen, patch)?,
            PatchKind::Strategic => semantics::strategic_patch(seen, patch)?,
            PatchKind::Apply => unreachable!("handled above"),
        };
        // A patch that sets resourceVersion is a precondition.
        check_resource_version(res, name, &patched, seen)?;
        if meta_str(&patched, "name") != Some(name) {
            return Err(ApiError::bad_request(
                "metadata.name may not be changed by a patch",
            ));
        }
        let patched = convert::to_storage(res, patched)?;
        let Some(old) = existing else {
            return Err(ApiError::not_found(&res.group, &res.plural, name));
        };
        self.replace(storage, ns, name, old, patched, opts, None)
    }

    /// The common tail of update and patch: subresource handling, identity
    /// carried over, kind rules, generation, finalizer-driven removal.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn replace(
        &mut self,
        res: &Arc<Resource>,
        ns: &str,
        name: &str,
        old: Value,
        mut new: Value,
        opts: &WriteOptions,
        applied: Option<()>,
    ) -> Result<Bytes, ApiError> {
        if !new.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        }
        new["apiVersion"] = json!(res.api_version());
        new["kind"] = json!(res.kind);
        kinds::decode(res, &mut new)?;
        if opts.status {
            // Only status changes through /status.
            let status = new.get("status").cloned();
            new = old.clone();
            match status {
                Some(s) => new["status"] = s,
                None => {
                    if let Value::Object(m) = &mut new {
                        m.remove("status");
                    }
                }
            }
        } else if res.status_subresource {
            match old.get("status") {
                Some(s) => new["status"] = s.clone(),
                None => {
                    if let Value::Object(m) = &mut new {
                        m.remove("status");
                    }
                }
            }
        }
        // Identity and server-owned metadata come from the stored object.
        let old_meta = old.get("metadata").cloned().unwrap_or(json!({}));
        {
            let meta = metadata_mut(&mut new);
            for f in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "namespace",
                "name",
            ] {
                match old_meta.get(f) {
                    Some(v) => {
                        meta.insert(f.into(), v.clone());
                    }
                    None => {
                        meta.remove(f);
                    }
                }
            }
            meta.insert(
                "resourceVersion".into(),
                old_meta
                    .get("resourceVersion")
                    .cloned()
                    .unwrap_or(json!("")),
            );
            if applied.is_none() {
                meta.remove("managedFields");
            }
        }
        kinds::on_update(res, &old, &mut new).map_err(|c| Self::invalid(res, name, c))?;
        // A status write is validated against the whole schema too.
        Self::apply_schema(res, name, &mut new, Some(&old))?;
        if !opts.status {
            kinds::prepare_update(res, &old, &mut new);
            let causes = kinds::validate(res, &new, Some(&old));
            if !causes.is_empty() {
                return Err(Self::invalid(res, name, causes));
            }
        }
        if res.special == Special::Crd {
            let crd = resource_from_crd(&new).map_err(|e| {
                Self::invalid(
                    res,
                    name,
                    vec![Cause {
                        reason: "FieldValueInvalid".into(),
                        field: e.field().into(),
                        message: e.to_string(),
                    }],
                )
            })?;
            if !opts.dry_run {
                let served = self.registry.insert(crd);
                self.reread_with_schema(&served);
            }
        }
        if applied.is_none() {
            new = semantics::record_update(
                Some(&old),
                &new,
                &opts.manager,
                &now(),
                opts.status.then_some("status"),
            );
        }
        if res.tracks_generation && spec_part(&old) != spec_part(&new) {
            let g = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                + 1;
            metadata_mut(&mut new).insert("generation".into(), json!(g));
        }
        if comparable(&old) == comparable(&new) {
            // A no-op write keeps the revision, as the real server does.
            return self.get(res, if res.namespaced { ns } else { "" }, name);
        }
        check_depth(&new)?;
        if opts.dry_run {
            return Ok(Bytes::from(serde_json::to_vec(&new).unwrap_or_default()));
        }
        let scope = if res.namespaced { ns } else { "" };
        let deleting = old.pointer("/metadata/deletionTimestamp").is_some();
        if deleting && !has_finalizers(&new) && !self.blocks_removal(res, &new) {
            return Ok(self.remove(res, scope, name, new));
        }
        let out = self.commit(res, scope, name, EventType::Modified, new, opts.protobuf);
        Ok(out)
    }
}

/// Everything in an object but metadata and status: what `generation`
/// tracks.
pub(super) fn spec_part(obj: &Value) -> Value {
    match obj {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "metadata" && k.as_str() != "status")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The object without the fields every write changes, to detect no-ops.
pub(super) fn comparable(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(Value::Object(m)) = o.get_mut("metadata") {
        m.remove("resourceVersion");
        m.remove("managedFields");
    }
    o
}

pub(super) fn crd_status(crd: &Value) -> Value {
    let names = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let t = now();
    json!({
        "acceptedNames": names,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": t},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": t},
        ],
        "storedVersions": crd.pointer("/spec/versions").and_then(Value::as_array).map(|v| {
            v.iter().filter(|x| x.get("storage").and_then(Value::as_bool) == Some(true)).filter_map(|x| x.get("name").cloned()).collect::<Vec<_>>()
        }).unwrap_or_default(),
    })
}

/// `prefix` plus five random lowercase alphanumerics, as the server does
/// for `generateName`.
pub(super) fn generate_name(prefix: &str) -> String {
    use rand::Rng;
    // The real server's alphabet leaves out vowels and look-alikes so
    // generated names never spell words.
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    let suffix: String = (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect();
    format!("{prefix}{suffix}")
}
