use super::*;

fn table() -> AclTable {
    AclTable::new(
        Some(&AclConfig {
            tokens: vec![
                AclToken {
                    accessor_id: "acc-1".into(),
                    secret_id: "s3cr3t".into(),
                    policy: AclPolicy::Rules(vec![
                        AclRule::new(AclResource::Service, "", AclAccess::Read),
                        AclRule::new(AclResource::Service, "web", AclAccess::Write),
                        AclRule::new(AclResource::Service, "web-private", AclAccess::Deny),
                        AclRule::new(AclResource::Node, "k8s-", AclAccess::Write),
                    ]),
                },
                AclToken {
                    accessor_id: "root".into(),
                    secret_id: "root-secret".into(),
                    policy: AclPolicy::Management,
                },
            ],
            anonymous_rules: vec![],
        }),
        None,
        None,
    )
}

#[test]
fn longest_prefix_wins_and_write_implies_read() {
    let a = table().resolve(Some("s3cr3t")).unwrap();
    assert!(
        a.require(AclResource::Service, "web-1", AclAccess::Write)
            .is_ok()
    );
    assert!(
        a.require(AclResource::Service, "web-private-1", AclAccess::Read)
            .is_err()
    );
    assert!(
        a.require(AclResource::Service, "db", AclAccess::Read)
            .is_ok()
    );
    assert!(
        a.require(AclResource::Service, "db", AclAccess::Write)
            .is_err()
    );
    assert!(
        a.require(AclResource::Node, "k8s-sync", AclAccess::Read)
            .is_ok()
    );
    assert!(
        a.require(AclResource::Node, "other", AclAccess::Read)
            .is_err()
    );
}

#[test]
fn denial_names_the_accessor_never_the_secret() {
    let a = table().resolve(Some("s3cr3t")).unwrap();
    let e = a
        .require(AclResource::Service, "db", AclAccess::Write)
        .unwrap_err();
    let msg = e.to_string();
    assert_eq!(
        msg,
        "Permission denied: token with AccessorID 'acc-1' lacks permission 'service:write' on \"db\""
    );
    assert!(!msg.contains("s3cr3t"));
}

#[test]
fn anonymous_and_unknown_tokens() {
    let t = table();
    let anon = t.resolve(None).unwrap();
    let msg = anon
        .require(AclResource::Node, "n", AclAccess::Write)
        .unwrap_err()
        .to_string();
    assert!(msg.starts_with("Permission denied: anonymous token lacks permission 'node:write'"));
    assert!(msg.ends_with("does not specify a token."));
    assert!(
        t.resolve(Some(""))
            .unwrap()
            .require(AclResource::Node, "n", AclAccess::Read)
            .is_err()
    );
    assert_eq!(t.resolve(Some("wrong")).unwrap_err(), AclError::NotFound);
    let root = t.resolve(Some("root-secret")).unwrap();
    assert!(
        root.require(AclResource::Node, "anything", AclAccess::Write)
            .is_ok()
    );
}

#[test]
fn disabled_allows_everything() {
    let a = AclTable::new(None, None, None)
        .resolve(Some("whatever"))
        .unwrap();
    assert!(!a.enforced());
    assert!(
        a.require(AclResource::Service, "x", AclAccess::Write)
            .is_ok()
    );
}
