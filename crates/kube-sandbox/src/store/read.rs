//! Reads of the store: one object, a filtered page of a list, and the start
//! of a watch (replayed history, then the live broadcast), plus the
//! [`Filter`] that list and watch apply.
//!
//! This module must NOT change the store: writes live in `write` and
//! `delete`, so a read can never bump the revision.

use super::*;

impl Filter {
    pub(super) fn matches(
        &self,
        ns: &str,
        labels: &Labels,
        object: impl FnOnce() -> Option<Value>,
    ) -> bool {
        if let Some(want) = &self.namespace
            && want != ns
        {
            return false;
        }
        if let Some(sel) = &self.labels
            && !sel.matches_lookup(|k| labels.get(k))
        {
            return false;
        }
        if let Some(sel) = &self.fields {
            return match object() {
                Some(obj) => semantics::field_matches(sel, &obj),
                None => false,
            };
        }
        true
    }

    /// Whether an event's object passes the filter.
    pub(super) fn matches_event(&self, e: &Event) -> bool {
        self.matches(&e.namespace, &e.labels, || {
            crate::json::parse(&e.object).ok()
        })
    }

    /// What a watcher with this filter is sent for `e`, if anything. A
    /// modification that moves the object into the selection is an ADDED,
    /// one that moves it out a DELETED of the object as it was (at the
    /// event's revision), as the server's watch cache sends them; a
    /// watcher that only ever saw an object must learn that it left.
    pub fn deliver(&self, e: &Event) -> Option<(EventType, Bytes)> {
        let now = self.matches_event(e);
        let before = match (&e.kind, &e.prev) {
            (EventType::Modified, Some((labels, json))) => {
                self.matches(&e.namespace, labels, || crate::json::parse(json).ok())
            }
            _ => now,
        };
        match (now, before) {
            (true, true) => Some((e.kind, e.object.clone())),
            (true, false) => Some((EventType::Added, e.object.clone())),
            (false, true) => {
                let json = e.prev.as_ref().map(|(_, j)| j.clone())?;
                Some((EventType::Deleted, with_revision(&json, e.rv)))
            }
            (false, false) => None,
        }
    }
}

impl Store {
    /// Reads one object.
    pub fn get(&self, res: &Resource, ns: &str, name: &str) -> Result<Bytes, ApiError> {
        self.lookup(res, ns, name)
            .map(|s| convert::bytes_to_view(res, s.json.clone()))
            .ok_or_else(|| ApiError::not_found(&res.group, &res.plural, name))
    }

    /// Reads one object, parsed.
    pub fn get_value(&self, res: &Resource, ns: &str, name: &str) -> Result<Value, ApiError> {
        let stored = self
            .lookup(res, ns, name)
            .ok_or_else(|| ApiError::not_found(&res.group, &res.plural, name))?;
        Self::parse(stored).map(|v| convert::to_view(res, v))
    }

    /// Lists objects, optionally a page at a time.
    pub fn list(
        &self,
        res: &Resource,
        filter: &Filter,
        limit: Option<usize>,
        cont: Option<&str>,
    ) -> Result<ListPage, ApiError> {
        let (list_rv, after) = match cont {
            Some(token) if !token.is_empty() => {
                let (rv, after) = decode_continue(token)?;
                if rv < self.compacted {
                    return Err(ApiError::expired(
                        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                    ));
                }
                (rv, Some(after))
            }
            _ => (self.rv, None),
        };
        let mut items = Vec::new();
        let mut last: Option<Key> = None;
        let mut remaining = 0;
        let limit = limit.filter(|l| *l > 0);
        if let Some(coll) = self.collection(res) {
            let range: Box<dyn Iterator<Item = (&Key, &Stored)>> = match &after {
                Some(k) => Box::new(coll.range((
                    std::ops::Bound::Excluded(k.clone()),
                    std::ops::Bound::Unbounded,
                ))),
                None => Box::new(coll.iter()),
            };
            for (key, stored) in range {
                if !filter.matches(&key.0, &stored.labels, || {
                    crate::json::parse(&stored.json).ok()
                }) {
                    continue;
                }
                if limit.is_some_and(|l| items.len() >= l) {
                    remaining += 1;
                    continue;
                }
                items.push(convert::bytes_to_view(res, stored.json.clone()));
                last = Some(key.clone());
            }
        }
        let continue_token = match (remaining, last) {
            (r, Some(last)) if r > 0 => Some(encode_continue(list_rv, &last)),
            _ => None,
        };
        Ok(ListPage {
            items,
            rv: list_rv,
            continue_token,
            remaining,
        })
    }
}

impl Store {
    /// Starts a watch from a revision (`None`: from now, with the current
    /// objects as ADDED events first).
    pub fn watch(
        &self,
        res: &Resource,
        filter: &Filter,
        from: Option<u64>,
    ) -> Result<WatchStart, ApiError> {
        let rx = self.tx.subscribe();
        let resource = res.qualified();
        match from {
            None => {
                let mut initial = Vec::new();
                if let Some(coll) = self.collection(res) {
                    let resource: Arc<str> = Arc::from(resource.as_str());
                    for (key, stored) in coll {
                        if !filter.matches(&key.0, &stored.labels, || {
                            crate::json::parse(&stored.json).ok()
                        }) {
                            continue;
                        }
                        initial.push(Arc::new(Event {
                            rv: stored.rv,
                            resource: resource.clone(),
                            namespace: key.0.clone(),
                            kind: EventType::Added,
                            object: stored.json.clone(),
                            labels: stored.labels.clone(),
                            prev: None,
                            protobuf: std::sync::OnceLock::new(),
                        }));
                    }
                }
                Ok(WatchStart {
                    initial,
                    rx,
                    rv: self.rv,
                })
            }
            Some(rv) => {
                if rv < self.compacted {
                    return Err(ApiError::expired(format!(
                        "too old resource version: {rv} ({})",
                        self.compacted + 1
                    )));
                }
                let initial = self
                    .history
                    .iter()
                    .filter(|e| {
                        e.rv > rv && *e.resource == *resource && filter.deliver(e).is_some()
                    })
                    .cloned()
                    .collect();
                Ok(WatchStart {
                    initial,
                    rx,
                    rv: self.rv.max(rv),
                })
            }
        }
    }
}

pub(super) fn encode_continue(rv: u64, after: &Key) -> String {
    use base64::Engine;
    let token = json!({"rv": rv, "ns": &*after.0, "name": &*after.1});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

pub(super) fn decode_continue(token: &str) -> Result<(u64, Key), ApiError> {
    use base64::Engine;
    let bad = || ApiError::bad_request(format!("continue key is not valid: {token:?}"));
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(bad)?;
    let ns = v.get("ns").and_then(Value::as_str).ok_or_else(bad)?;
    let name = v.get("name").and_then(Value::as_str).ok_or_else(bad)?;
    Ok((rv, (Arc::from(ns), Arc::from(name))))
}
