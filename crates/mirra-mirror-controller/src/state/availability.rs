//! Which kinds cannot be read now (a copies or deleteItem watch refused), and
//! the namespaces whose plans change when that changes.
//!
//! This module must NOT retry watches: the watch tasks do.

use super::*;

impl State {
    /// Why `kind` cannot be read now, if its copies watch or one of its
    /// deleteItem watches is refused.
    pub fn unavailable(&self, kind: &KindId) -> Option<&Unavailable> {
        self.kinds
            .get(kind)
            .and_then(|e| e.unavailable.as_ref())
            .or_else(|| {
                self.deletes
                    .iter()
                    .filter(|((k, _), _)| k == kind)
                    .find_map(|(_, d)| d.unavailable.as_ref())
            })
    }

    /// Records whether the copies watch of `kind` is refused; returns the
    /// namespaces to re-plan when that changed whether the kind can be used.
    pub fn set_copies_unavailable(
        &mut self,
        kind: &KindId,
        value: Option<Unavailable>,
    ) -> BTreeSet<String> {
        let before = self.unavailable(kind).is_some();
        match self.kinds.get_mut(kind) {
            Some(e) if e.unavailable != value => e.unavailable = value,
            _ => return BTreeSet::new(),
        }
        self.availability_changed(kind, before)
    }

    /// [`State::set_copies_unavailable`] for a deleteItem watch.
    pub fn set_delete_unavailable(
        &mut self,
        id: &DeleteWatchId,
        value: Option<Unavailable>,
    ) -> BTreeSet<String> {
        let before = self.unavailable(&id.0).is_some();
        match self.deletes.get_mut(id) {
            Some(d) if d.unavailable != value => d.unavailable = value,
            _ => return BTreeSet::new(),
        }
        self.availability_changed(&id.0, before)
    }

    pub(super) fn availability_changed(&self, kind: &KindId, before: bool) -> BTreeSet<String> {
        if self.unavailable(kind).is_some() == before {
            // Only the message may have changed; the items' outcomes are
            // refreshed by the next plan of their namespaces anyway.
            return BTreeSet::new();
        }
        self.users_of_kind(kind)
    }

    /// The namespaces selected by the valid SyncConfigs that name `kind` in
    /// a syncItem or a deleteItem.
    pub fn users_of_kind(&self, kind: &KindId) -> BTreeSet<String> {
        let users: Vec<&CompiledConfig> = self
            .compiled
            .values()
            .filter(|c| config_kinds(c).contains(kind))
            .collect();
        if users.is_empty() {
            return BTreeSet::new();
        }
        self.selected_by(&users)
    }
}
