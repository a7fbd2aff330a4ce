//! What a tenant's ServiceAccount may read: a tenant SyncConfig's copies
//! are planned from caches mirra fills with its own rights, so a plan
//! would otherwise tell the tenant (in its status) what exists, and whose
//! it is, in namespaces its account may not read. Each (account,
//! namespace, resource) is asked once with a SelfSubjectAccessReview made
//! as the account (`get`), one request per triple, never per object or
//! per event; where the answer is no, the tenant's items there fail with
//! that reason and nothing is planned, written or pruned there for it.
//!
//! A refusal is asked again at each verification pass (a grant is picked
//! up then); a permission is kept while mirra runs (a revoked one leaves
//! the writes to the server, which refuses them).
//!
//! What this module must NOT do: send the reviews (the engine does), or
//! decide for SyncConfigs that name no ServiceAccount.

use super::*;

/// One question: may `user` get `resource` (plural) of `group` in
/// `namespace`.
pub type AccessKey = (String, String, String, String);

/// The answer to an [`AccessKey`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Asked, no answer yet.
    Asked,
    /// The account may read.
    Allowed,
    /// The account may not read: the items' failure message.
    Denied(String),
}

impl State {
    /// Holds back, in `plan`, what tenant SyncConfigs would do where their
    /// account may not (or is not yet known to) read the target's kind:
    /// their ops go, their outcomes say why (`Failed`) or wait
    /// (`Pending`). Returns the questions nobody has asked yet.
    pub(super) fn hold_unreadable(&self, plan: &mut NamespacePlan) -> Vec<AccessKey> {
        let mut missing = BTreeSet::new();
        let mut held: BTreeSet<(ConfigRef, mirra_mirror::ObjectKey)> = BTreeSet::new();
        for o in &mut plan.outcomes {
            let Some(key) = self.access_key(&o.config, &o.target) else {
                continue;
            };
            let verdict = self.access.get(&key);
            match verdict {
                Some(Access::Allowed) => continue,
                Some(Access::Denied(reason)) => {
                    o.state = OutcomeState::Failed {
                        reason: reason.clone(),
                    };
                }
                Some(Access::Asked) | None => {
                    if verdict.is_none() {
                        missing.insert(key);
                    }
                    o.state = OutcomeState::Pending;
                }
            }
            // Nothing a plan found out about an object the account may not
            // read reaches its status: no winner, no owner, no content.
            o.contenders.clear();
            held.insert((o.config.clone(), o.target.key()));
        }
        plan.ops
            .retain(|op| !held.contains(&(op.config().clone(), op.target().key())));
        plan.verified
            .retain(|(t, c, _)| !held.contains(&(c.clone(), t.key())));
        missing.into_iter().collect()
    }

    /// The question a tenant SyncConfig's outcome about `target` depends
    /// on; `None` for SyncConfigs that name no account, cluster-scoped
    /// targets and kinds not resolved (refused by other means).
    fn access_key(
        &self,
        config: &ConfigRef,
        target: &mirra_mirror::ObjectRef,
    ) -> Option<AccessKey> {
        if target.namespace.is_empty() {
            return None;
        }
        let user = self.compiled.get(config)?.impersonated_user()?;
        let kind = (target.api_version.to_string(), target.kind.to_string());
        let Resolution::Served(ar) = &self.kinds.get(&kind)?.resolution else {
            return None;
        };
        Some((
            user,
            target.namespace.to_string(),
            ar.group.clone(),
            ar.plural.clone(),
        ))
    }

    /// Marks `keys` as asked; returns those that were not (to send).
    pub fn ask_access(&mut self, keys: Vec<AccessKey>) -> Vec<AccessKey> {
        keys.into_iter()
            .filter(|k| {
                if self.access.contains_key(k) {
                    return false;
                }
                self.access.insert(k.clone(), Access::Asked);
                true
            })
            .collect()
    }

    /// Records a review's answer (`None`: no answer, to be asked again);
    /// returns the namespace to plan again.
    pub fn access_answered(&mut self, key: AccessKey, answer: Option<Access>) -> BTreeSet<String> {
        let ns = key.1.clone();
        match answer {
            Some(a) => {
                self.access.insert(key, a);
            }
            None => {
                self.access.remove(&key);
            }
        }
        BTreeSet::from([ns])
    }

    /// Forgets every refusal, so that the next plans ask again (the
    /// verification pass: a grant is picked up then).
    pub fn forget_access_refusals(&mut self) {
        self.access.retain(|_, a| !matches!(a, Access::Denied(_)));
    }
}
