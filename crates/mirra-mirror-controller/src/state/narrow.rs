//! Which namespace plans may be narrow: when the only events since a
//! namespace's last clean pass are edits of some SyncConfigs, its next
//! plan covers those SyncConfigs' items alone
//! ([`mirra_mirror::plan_namespace_narrow`]) and keeps the others'
//! outcomes. An edit of one SyncConfig then costs, in each namespace, the
//! work of its own items rather than of every item there.
//!
//! Any other event of a namespace (its labels, a copy, a discovery change,
//! a verification pass, a retry) makes its next plan full. So does a pass
//! that did not end clean: a write failed, was deferred or throttled, or
//! an access review was pending.
//!
//! This module must NOT plan or decide what a plan contains; it only
//! remembers what happened since each namespace's last plan.

use super::*;

/// The bookkeeping of narrow plans.
#[derive(Debug, Default)]
pub(super) struct PlanScopes {
    /// Namespaces whose last pass ended clean and that had no other event
    /// since: their stored outcomes are what a full plan would give for
    /// every SyncConfig not edited since.
    clean: BTreeSet<String>,
    /// SyncConfigs edited since the last pass of a clean namespace.
    edited: BTreeMap<String, BTreeSet<ConfigRef>>,
    /// Namespaces that had an event calling for a full plan since their
    /// current pass took its scope: that pass cannot leave them clean.
    dirtied: BTreeSet<String>,
}

impl State {
    /// A namespace had an event that calls for a full plan.
    pub(super) fn needs_full_plan(&mut self, namespace: &str) {
        let s = &mut self.scopes;
        s.clean.remove(namespace);
        s.edited.remove(namespace);
        s.dirtied.insert(namespace.to_string());
    }

    /// SyncConfig `config` changed and `namespace` must be planned for it:
    /// narrowly if the namespace is clean, in full otherwise.
    pub(super) fn edited_for(&mut self, namespace: &str, config: &ConfigRef) {
        if self.scopes.clean.contains(namespace) {
            self.scopes
                .edited
                .entry(namespace.to_string())
                .or_default()
                .insert(config.clone());
        } else {
            self.needs_full_plan(namespace);
        }
    }

    /// The SyncConfigs the next plan of `namespace` may be narrowed to
    /// (`None`: a full plan). A pass calls this once, before planning.
    pub fn take_plan_scope(&mut self, namespace: &str) -> Option<BTreeSet<ConfigRef>> {
        let s = &mut self.scopes;
        let edited = s.edited.remove(namespace);
        let clean = s.clean.remove(namespace);
        s.dirtied.remove(namespace);
        edited.filter(|_| clean)
    }

    /// The pass of `namespace` ended: clean (every write went through,
    /// none deferred or pending) or not.
    pub fn pass_ended(&mut self, namespace: &str, clean: bool) {
        // A namespace that is gone is planned in full when it comes back.
        if clean
            && !self.scopes.dirtied.contains(namespace)
            && self.namespaces.get(None, namespace).is_some()
        {
            self.scopes.clean.insert(namespace.to_string());
        }
    }
}
