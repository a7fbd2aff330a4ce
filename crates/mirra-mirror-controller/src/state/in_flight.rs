//! Applies on the wire: events of a copy that arrive while mirra's own
//! apply of it is unanswered.
//!
//! The server sends the watch event of a write as it answers the write, so
//! the echo of an apply often reaches the copy watch before the worker
//! that sent it has read the answer. Without this, such an echo could not
//! be told from someone else's edit and planned its namespace in full
//! again (most namespaces of an edit, in the mirror benchmark). Such
//! events are held here instead and settled when the answer comes: the
//! echo of that very answer needs nothing; anything else plans the
//! namespace as any event does. Nothing is ever dropped: an apply that
//! fails, or any doubt, queues the namespaces the held events named.
//!
//! What this module must NOT do: decide anything about objects without an
//! apply of this process in flight.

use std::collections::BTreeSet;

use super::{CopyId, State};

/// One copy with an apply of this process unanswered.
#[derive(Debug, Default)]
pub(super) struct InFlight {
    /// Applies of this copy unanswered (two only for a cluster-scoped copy
    /// written by the passes of two namespaces at once).
    writers: u32,
    /// Plans of the writer's namespace when the apply was sent: one in
    /// between could not see the copy (see [`super::OwnWrite::home_plans`]).
    home_plans: u64,
    /// The namespace whose pass sends the apply.
    home: String,
    /// resourceVersions of the copy's events held meanwhile, in order.
    held: Vec<String>,
    /// Namespaces the held events would have queued.
    homes: BTreeSet<String>,
    /// Settled: the held events were not (only) the echo; queue `homes`.
    queue: bool,
}

impl State {
    /// An apply of `id` by the pass of `home` is about to be sent.
    pub fn begin_apply(&mut self, id: CopyId, home: &str) {
        let plans = self.plans_made.get(home).copied().unwrap_or(0);
        let f = self.in_flight.entry(id).or_default();
        f.writers += 1;
        f.home_plans = plans;
        f.home = home.to_string();
    }

    /// Holds an event of `id` (a new `version`, queueing `homes`) that
    /// arrived while mirra's apply of it is unanswered; false when no apply
    /// of it is in flight.
    pub(super) fn hold_event(
        &mut self,
        id: &CopyId,
        version: &str,
        homes: &BTreeSet<String>,
    ) -> bool {
        let Some(f) = self.in_flight.get_mut(id) else {
            return false;
        };
        f.held.push(version.to_string());
        f.homes.extend(homes.iter().cloned());
        true
    }

    /// The answer of the apply of `id` came with `version`: whether the
    /// copy's event of that version was already held. Held events other
    /// than exactly that echo (someone's write in between, a plan of the
    /// namespace in between, a second writer) queue their namespaces.
    pub(super) fn settle_held(&mut self, id: &CopyId, version: &str) -> bool {
        let plans = |s: &State, home: &str| s.plans_made.get(home).copied().unwrap_or(0);
        let Some(f) = self.in_flight.get(id) else {
            return false;
        };
        if f.held.is_empty() {
            return false;
        }
        let only_the_echo = f.writers == 1
            && f.held.len() == 1
            && f.held[0] == version
            && plans(self, &f.home) == f.home_plans;
        let echoed = f.held.iter().any(|v| v == version);
        if let Some(f) = self.in_flight.get_mut(id) {
            f.held.clear();
            f.queue |= !only_the_echo;
        }
        echoed
    }

    /// The apply of `id` is over, answered or not: the namespaces its held
    /// events leave to plan (none when the only event was its echo).
    pub fn end_apply(&mut self, id: &CopyId) -> BTreeSet<String> {
        let Some(f) = self.in_flight.get_mut(id) else {
            return BTreeSet::new();
        };
        f.writers = f.writers.saturating_sub(1);
        // Unsettled events (a failed apply, or one whose answer carried no
        // version) are planned as any event.
        let queue = f.queue || !f.held.is_empty();
        let homes = if queue {
            f.queue = false;
            f.held.clear();
            std::mem::take(&mut f.homes)
        } else {
            BTreeSet::new()
        };
        if f.writers == 0 {
            self.in_flight.remove(id);
        }
        homes
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::tests::*;
    use super::super::*;
    use serde_json::json;

    /// A state that planned `t` and is sending the apply of copy `c`: the
    /// body sent.
    fn sending() -> (State, Value) {
        let mut s = state_with(Vec::new());
        let plan = s.plan("t", &settings());
        s.count_plan("t");
        s.begin_apply(copy_t_c(), "t");
        (s, apply_body(&plan))
    }

    fn answered(s: &mut State, body: &Value, version: &str) {
        s.record_own_write(copy_t_c(), own_write(body, version));
    }

    fn edited(body: &Value) -> Value {
        let mut b = body.clone();
        b["data"] = json!({"k": "someone else's"});
        b
    }

    #[test]
    fn an_echo_before_the_answer_is_not_planned() {
        let (mut s, body) = sending();
        let keys = s.apply_copies(&cm_kind(), Event::Apply(cached(echo(&body, "10"))));
        assert!(keys.is_empty(), "{keys:?}");
        answered(&mut s, &body, "10");
        assert_eq!(s.end_apply(&copy_t_c()), BTreeSet::new());
        assert!(s.in_flight.is_empty());
        // Nothing waits for another echo, and the copy is in step.
        assert!(s.own_writes.is_empty());
        assert!(s.plan("t", &settings()).ops.is_empty());
    }

    #[test]
    fn anything_but_exactly_the_echo_is_planned_once_the_apply_is_over() {
        let t = BTreeSet::from(["t".to_string()]);
        // Someone's edit before mirra's write landed, then the answer.
        let (mut s, body) = sending();
        assert!(
            s.apply_copies(&cm_kind(), Event::Apply(cached(echo(&edited(&body), "9"))))
                .is_empty()
        );
        answered(&mut s, &body, "10");
        assert_eq!(s.end_apply(&copy_t_c()), t);

        // The echo, then someone's edit, then the answer.
        let (mut s, body) = sending();
        s.apply_copies(&cm_kind(), Event::Apply(cached(echo(&body, "10"))));
        s.apply_copies(&cm_kind(), Event::Apply(cached(echo(&edited(&body), "11"))));
        answered(&mut s, &body, "10");
        assert_eq!(s.end_apply(&copy_t_c()), t);

        // The apply failed: whatever arrived meanwhile is planned.
        let (mut s, body) = sending();
        s.apply_copies(&cm_kind(), Event::Apply(cached(echo(&edited(&body), "9"))));
        assert_eq!(s.end_apply(&copy_t_c()), t);

        // A plan of the namespace ran meanwhile (it could not see the copy).
        let (mut s, body) = sending();
        s.apply_copies(&cm_kind(), Event::Apply(cached(echo(&body, "10"))));
        s.count_plan("t");
        answered(&mut s, &body, "10");
        assert_eq!(s.end_apply(&copy_t_c()), t);
        assert!(s.in_flight.is_empty());
    }

    #[test]
    fn without_an_apply_in_flight_events_are_queued_at_once() {
        let (mut s, body) = sending();
        answered(&mut s, &body, "10");
        assert_eq!(s.end_apply(&copy_t_c()), BTreeSet::new());
        // The echo after the answer: settled by `own_writes`, not queued.
        assert!(
            s.apply_copies(&cm_kind(), Event::Apply(cached(echo(&body, "10"))))
                .is_empty()
        );
        // A later edit by someone else: queued as it arrives.
        let keys = s.apply_copies(&cm_kind(), Event::Apply(cached(echo(&edited(&body), "11"))));
        assert_eq!(keys, BTreeSet::from(["t".to_string()]));
        // A deletion is never held, even with an apply in flight.
        s.begin_apply(copy_t_c(), "t");
        let keys = s.apply_copies(&cm_kind(), Event::Delete(cached(echo(&body, "12"))));
        assert_eq!(keys, BTreeSet::from(["t".to_string()]));
        assert_eq!(s.end_apply(&copy_t_c()), BTreeSet::new());
    }
}
