use super::*;
use proptest::prelude::*;

const SEC: Duration = Duration::from_secs(1);

#[test]
fn decisions() {
    let d = 15 * SEC;
    assert_eq!(decide(None, "me", Duration::ZERO, d), Decision::Acquire);
    assert_eq!(decide(Some(""), "me", Duration::ZERO, d), Decision::Acquire);
    assert_eq!(decide(Some("me"), "me", 100 * SEC, d), Decision::Renew);
    assert_eq!(decide(Some("other"), "me", 14 * SEC, d), Decision::Follow);
    assert_eq!(decide(Some("other"), "me", 15 * SEC, d), Decision::Acquire);
}

proptest! {
    /// A fresh lease held by someone else is never taken, whatever the
    /// identities look like; an expired one always is.
    #[test]
    fn fresh_foreign_lease_is_never_taken(
        holder in "[a-z0-9-]{1,20}",
        me in "[a-z0-9-]{1,20}",
        age_ms in 0u64..100_000,
        valid_ms in 1u64..100_000,
    ) {
        let age = Duration::from_millis(age_ms);
        let valid = Duration::from_millis(valid_ms);
        let d = decide(Some(&holder), &me, age, valid);
        if holder == me {
            prop_assert_eq!(d, Decision::Renew);
        } else if age < valid {
            prop_assert_eq!(d, Decision::Follow);
        } else {
            prop_assert_eq!(d, Decision::Acquire);
        }
    }
}

#[test]
fn identity_has_base_and_random_suffix() {
    assert_eq!(identity_with_suffix(Some("pod-1"), "abc"), "pod-1-abc");
    assert_eq!(identity_with_suffix(Some(""), "abc"), "mirra-abc");
    assert_eq!(identity_with_suffix(None, "abc"), "mirra-abc");
    let a = default_identity();
    let b = default_identity();
    assert_ne!(a, b, "two processes on one host must differ");
    let suffix = a.rsplit('-').next().unwrap();
    assert_eq!(suffix.len(), IDENTITY_SUFFIX_LEN);
    assert!(
        suffix
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    );
}

#[test]
fn config_validation() {
    let ok = LeaderConfig::new("ns", "mirra", "me");
    assert!(ok.validate().is_ok());
    assert_eq!(ok.lease_seconds(), 15);
    assert_eq!(ok.fence_budget(), 13 * SEC);
    for bad in [
        LeaderConfig {
            namespace: String::new(),
            ..ok.clone()
        },
        LeaderConfig {
            identity: String::new(),
            ..ok.clone()
        },
        LeaderConfig {
            lease_duration: Duration::from_millis(500),
            ..ok.clone()
        },
        LeaderConfig {
            renew: Duration::ZERO,
            ..ok.clone()
        },
        LeaderConfig {
            renew: 8 * SEC,
            ..ok.clone()
        },
    ] {
        assert!(
            matches!(bad.validate(), Err(LeaderError::InvalidConfig(_))),
            "{bad:?}"
        );
    }
    let odd = LeaderConfig {
        lease_duration: Duration::from_millis(2500),
        ..ok
    };
    assert_eq!(
        odd.lease_seconds(),
        3,
        "rounded up, never shorter than configured"
    );
}

#[test]
fn error_classes_are_constant_labels() {
    let forbidden = kube::Error::Api(Box::new(kube::core::Status {
        code: 403,
        ..Default::default()
    }));
    let forbidden = api("create")(forbidden);
    assert_eq!(forbidden.class(), "forbidden");
    let hint = forbidden.diagnosis("kube-system").unwrap();
    assert!(
        hint.contains("may not create leases") && hint.contains("\"kube-system\""),
        "{hint}"
    );
    let conflict = kube::Error::Api(Box::new(kube::core::Status {
        code: 409,
        ..Default::default()
    }));
    assert!(is_conflict(&conflict));
    let conflict = api("update")(conflict);
    assert_eq!(conflict.class(), "api");
    assert_eq!(conflict.diagnosis("ns"), None);
    assert_eq!(LeaderError::Timeout.class(), "timeout");
    assert_eq!(LeaderError::Timeout.diagnosis("ns"), None);
    let mut status = kube::core::Status::failure("namespaces \"nope\" not found", "NotFound");
    status.code = 404;
    status.details = Some(kube::core::response::StatusDetails {
        name: "nope".into(),
        group: String::new(),
        kind: "namespaces".into(),
        uid: String::new(),
        causes: Vec::new(),
        retry_after_seconds: 0,
    });
    let missing = api("create")(kube::Error::Api(Box::new(status)));
    assert_eq!(missing.class(), "not_found");
    assert!(
        missing
            .diagnosis("nope")
            .unwrap()
            .contains("\"nope\" does not exist")
    );
}
