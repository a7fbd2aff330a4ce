//! Parsing of Consul ACL policy rules, in HCL or in JSON (Consul accepts
//! both in a policy's `Rules`).
//!
//! Enforced: `node`, `node_prefix`, `service`, `service_prefix` (with
//! `policy = "read" | "write" | "deny"`), the top-level `acl` and
//! `operator` rules, and, with Enterprise features on, the `namespace`,
//! `namespace_prefix`, `partition` and `partition_prefix` blocks: the rules
//! inside one apply only within the namespaces (partitions) it names, and
//! a block's own `policy` governs reading (`read`) the namespace or
//! partition itself. Parsed and not enforced: every other resource Consul
//! knows (`key_prefix`, `agent`, ...).
//!
//! This module must NOT know about tokens or HTTP; it only turns rule text
//! into rules or into Consul's parse error. It never panics, whatever the
//! input.

use serde_json::Value;

use crate::acl::{AclAccess, AclResource};

/// One parsed rule the sandbox enforces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grant {
    pub resource: AclResource,
    /// The name (exact rule) or prefix (prefix rule).
    pub name: String,
    /// `node "x"` (true) or `node_prefix "x"` (false).
    pub exact: bool,
    pub access: AclAccess,
    /// The enclosing `namespace`/`partition` labels, outermost first.
    pub scope: Vec<(String, String)>,
}

/// The namespace every record lives in without Enterprise features, and
/// the one the sandbox's tokens live in: unscoped rules apply there.
const DEFAULT: &str = "default";

/// Whether a rule with `scope` applies to a resource in namespace `ns` of
/// the default partition. Unscoped rules apply in the token's own
/// namespace, `default`.
#[cfg(test)]
pub(crate) fn scope_applies(scope: &[(String, String)], ns: &str) -> bool {
    scope_applies_in(scope, DEFAULT, ns)
}

/// Whether a rule with `scope` applies in namespace `ns` of partition
/// `partition`. The sandbox's tokens live in the default partition, so a
/// rule outside a `partition` block applies there only.
pub(crate) fn scope_applies_in(scope: &[(String, String)], partition: &str, ns: &str) -> bool {
    let mut ns_named = false;
    let mut partition_named = false;
    for (kind, label) in scope {
        let ok = match kind.as_str() {
            "partition" => {
                partition_named = true;
                label.eq_ignore_ascii_case(partition)
            }
            "partition_prefix" => {
                partition_named = true;
                partition.to_lowercase().starts_with(&label.to_lowercase())
            }
            "namespace" => {
                ns_named = true;
                label.eq_ignore_ascii_case(ns)
            }
            "namespace_prefix" => {
                ns_named = true;
                ns.to_lowercase().starts_with(&label.to_lowercase())
            }
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    (ns_named || ns.eq_ignore_ascii_case(DEFAULT))
        && (partition_named || partition.eq_ignore_ascii_case(DEFAULT))
}

/// A `policy = "..."` inside a `namespace`/`partition` block: access to the
/// namespace (partition) itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScopePolicy {
    /// The blocks around the `policy`, outermost first (the last one is
    /// the namespace or partition it is about).
    pub scope: Vec<(String, String)>,
    pub access: AclAccess,
}

impl ScopePolicy {
    /// Whether this grants `want` on namespace `name` of partition `part`
    /// (`partition`: false) or on partition `name` (`partition`: true,
    /// `part` unused).
    pub fn covers(&self, partition: bool, part: &str, name: &str) -> bool {
        let Some((kind, _)) = self.scope.last() else {
            return false;
        };
        if kind.starts_with("partition") != partition {
            return false;
        }
        if partition {
            let mut named = true;
            for (kind, label) in &self.scope {
                named &= match kind.as_str() {
                    "partition" => label.eq_ignore_ascii_case(name),
                    "partition_prefix" => name.to_lowercase().starts_with(&label.to_lowercase()),
                    _ => false,
                };
            }
            named
        } else {
            scope_applies_in(&self.scope, part, name)
        }
    }
}

/// Everything a policy's rules say, as far as the sandbox models it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ParsedRules {
    pub grants: Vec<Grant>,
    /// The top-level `acl = "..."` rule (ACL management).
    pub acl: Option<AclAccess>,
    /// The top-level `operator = "..."` rule (namespace and partition
    /// management, among Consul's operator endpoints).
    pub operator: Option<AclAccess>,
    /// `policy` lines of `namespace`/`partition` blocks.
    pub scope_policies: Vec<ScopePolicy>,
    /// `acl = "..."` inside `partition`/`partition_prefix` blocks: ACL
    /// management within those partitions (consul-k8s's server-acl-init
    /// grants it so, since `operator` is not allowed in a partition).
    pub partition_acls: Vec<ScopePolicy>,
}

/// A tree of HCL/JSON values: strings, or objects with ordered entries.
#[derive(Debug, Clone)]
enum Node {
    Str(String),
    Obj(Vec<(String, Node)>),
    Other,
}

/// Parses rule text; `Err` is the text Consul puts after `Invalid Policy: `.
pub(crate) fn parse(text: &str) -> Result<ParsedRules, String> {
    let trimmed = text.trim_start();
    let tree = if trimmed.is_empty() {
        Node::Obj(Vec::new())
    } else if trimmed.starts_with('{') {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| format!("failed to parse rules: Failed to parse ACL rules: {e}"))?;
        from_json(&v)
    } else {
        let mut p = Hcl::new(text);
        let body = p
            .body(true)
            .map_err(|e| format!("failed to parse rules: Failed to parse ACL rules: {e}"))?;
        Node::Obj(body)
    };
    let mut out = ParsedRules::default();
    let Node::Obj(items) = tree else {
        return Err(
            "failed to parse rules: Failed to parse ACL rules: root must be an object".into(),
        );
    };
    interpret(&items, &[], &mut out)?;
    Ok(out)
}

fn from_json(v: &Value) -> Node {
    match v {
        Value::String(s) => Node::Str(s.clone()),
        Value::Object(m) => Node::Obj(m.iter().map(|(k, v)| (k.clone(), from_json(v))).collect()),
        // `"service": [{"web": {...}}]` is HCL-JSON's list form of blocks.
        Value::Array(a) => {
            let mut items = Vec::new();
            for e in a {
                if let Node::Obj(mut o) = from_json(e) {
                    items.append(&mut o);
                }
            }
            Node::Obj(items)
        }
        _ => Node::Other,
    }
}

fn access(kind: &str, name: &str, v: &str) -> Result<AclAccess, String> {
    match v {
        "read" => Ok(AclAccess::Read),
        "write" => Ok(AclAccess::Write),
        "deny" => Ok(AclAccess::Deny),
        _ => Err(format!(
            "failed to parse rules: Invalid {kind} policy: {}",
            rule_go_string(kind, name, v)
        )),
    }
}

/// Consul prints the offending rule with Go's `%#v`.
fn rule_go_string(kind: &str, name: &str, policy: &str) -> String {
    let ty = if kind.starts_with("node") {
        "NodeRule"
    } else {
        "ServiceRule"
    };
    let mut s = format!(
        "&acl.{ty}{{Name:{}, Policy:{}",
        crate::store::go_quote(name),
        crate::store::go_quote(policy)
    );
    if ty == "ServiceRule" {
        s.push_str(", Intentions:\"\"");
    }
    s.push('}');
    s
}

fn interpret(
    items: &[(String, Node)],
    scope: &[(String, String)],
    out: &mut ParsedRules,
) -> Result<(), String> {
    for (key, value) in items {
        match key.as_str() {
            "node" | "node_prefix" | "service" | "service_prefix" => {
                let resource = if key.starts_with("node") {
                    AclResource::Node
                } else {
                    AclResource::Service
                };
                let Node::Obj(named) = value else {
                    return Err(format!(
                        "failed to parse rules: Failed to parse ACL rules: {key}: should be a block with a name"
                    ));
                };
                for (name, block) in named {
                    let policy = match block {
                        Node::Obj(fields) => {
                            fields.iter().find_map(|(k, v)| match (k.as_str(), v) {
                                ("policy", Node::Str(p)) => Some(p.clone()),
                                _ => None,
                            })
                        }
                        _ => None,
                    }
                    .unwrap_or_default();
                    let acc = access(key, name, &policy)?;
                    out.grants.push(Grant {
                        resource,
                        name: name.clone(),
                        exact: !key.ends_with("_prefix"),
                        access: acc,
                        scope: scope.to_vec(),
                    });
                }
            }
            "namespace" | "namespace_prefix" | "partition" | "partition_prefix" => {
                let Node::Obj(named) = value else {
                    return Err(format!(
                        "failed to parse rules: Failed to parse ACL rules: {key}: should be a block with a name"
                    ));
                };
                for (name, block) in named {
                    let Node::Obj(inner) = block else { continue };
                    let mut s = scope.to_vec();
                    s.push((key.clone(), name.clone()));
                    interpret(inner, &s, out)?;
                }
            }
            "acl" if !scope.is_empty() && scope.iter().all(|(k, _)| k.starts_with("partition")) => {
                if let Node::Str(v) = value {
                    out.partition_acls.push(ScopePolicy {
                        scope: scope.to_vec(),
                        access: top_level_access(key, v)?,
                    });
                }
            }
            "acl" | "operator" if scope.is_empty() => {
                if let Node::Str(v) = value {
                    let a = top_level_access(key, v)?;
                    if key == "acl" {
                        out.acl = Some(a);
                    } else {
                        out.operator = Some(a);
                    }
                }
            }
            "policy" if !scope.is_empty() => {
                if let Node::Str(v) = value {
                    let access = top_level_access(&scope[scope.len() - 1].0, v)?;
                    out.scope_policies.push(ScopePolicy {
                        scope: scope.to_vec(),
                        access,
                    });
                }
            }
            // Other resources (key_prefix, agent, operator, ...) are
            // accepted and not enforced by the sandbox.
            _ => {}
        }
    }
    Ok(())
}

/// `acl = "..."`, `operator = "..."`, or a block's `policy = "..."`.
fn top_level_access(kind: &str, v: &str) -> Result<AclAccess, String> {
    match v {
        "read" => Ok(AclAccess::Read),
        "write" => Ok(AclAccess::Write),
        "deny" => Ok(AclAccess::Deny),
        other => Err(format!(
            "failed to parse rules: Invalid {} policy: {}",
            kind.trim_end_matches("_prefix"),
            crate::store::go_quote(other)
        )),
    }
}

/// A small HCL (version 1) reader: `key "label"... { body }`,
/// `key = "value"`, `key = { body }`, comments `#`, `//`, `/* */`.
struct Hcl<'a> {
    src: &'a [u8],
    pos: usize,
}

impl<'a> Hcl<'a> {
    fn new(src: &'a str) -> Self {
        Hcl {
            src: src.as_bytes(),
            pos: 0,
        }
    }

    /// Line and column of the current position, 1-based, as HCL reports.
    fn at(&self) -> String {
        let before = &self.src[..self.pos.min(self.src.len())];
        let line = before.iter().filter(|b| **b == b'\n').count() + 1;
        let col = before.iter().rev().take_while(|b| **b != b'\n').count() + 1;
        format!("At {line}:{col}")
    }

    fn skip_ws(&mut self) {
        loop {
            match self.src.get(self.pos) {
                Some(b' ' | b'\t' | b'\r' | b'\n' | b',') => self.pos += 1,
                Some(b'#') => self.skip_line(),
                Some(b'/') if self.src.get(self.pos + 1) == Some(&b'/') => self.skip_line(),
                Some(b'/') if self.src.get(self.pos + 1) == Some(&b'*') => {
                    self.pos += 2;
                    while self.pos < self.src.len()
                        && !(self.src[self.pos] == b'*'
                            && self.src.get(self.pos + 1) == Some(&b'/'))
                    {
                        self.pos += 1;
                    }
                    self.pos = (self.pos + 2).min(self.src.len());
                }
                _ => return,
            }
        }
    }

    fn skip_line(&mut self) {
        while self.pos < self.src.len() && self.src[self.pos] != b'\n' {
            self.pos += 1;
        }
    }

    fn ident(&mut self) -> Option<String> {
        let start = self.pos;
        while let Some(b) = self.src.get(self.pos) {
            if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.') {
                self.pos += 1;
            } else {
                break;
            }
        }
        (self.pos > start).then(|| String::from_utf8_lossy(&self.src[start..self.pos]).into_owned())
    }

    fn string(&mut self) -> Result<String, String> {
        // At the opening quote.
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            match self.src.get(self.pos) {
                None | Some(b'\n') => return Err(format!("{}: literal not terminated", self.at())),
                Some(b'"') => {
                    self.pos += 1;
                    return String::from_utf8(out)
                        .map_err(|_| format!("{}: invalid UTF-8", self.at()));
                }
                Some(b'\\') => {
                    let c = self.src.get(self.pos + 1).copied();
                    match c {
                        Some(b'"') => out.push(b'"'),
                        Some(b'\\') => out.push(b'\\'),
                        Some(b'n') => out.push(b'\n'),
                        Some(b't') => out.push(b'\t'),
                        _ => return Err(format!("{}: unknown escape sequence", self.at())),
                    }
                    self.pos += 2;
                }
                Some(b) => {
                    out.push(*b);
                    self.pos += 1;
                }
            }
        }
    }

    /// A body: items until `}` (nested) or the end (top level).
    fn body(&mut self, top: bool) -> Result<Vec<(String, Node)>, String> {
        let mut items: Vec<(String, Node)> = Vec::new();
        loop {
            self.skip_ws();
            match self.src.get(self.pos) {
                None if top => return Ok(items),
                None => {
                    return Err(format!(
                        "{}: object expected closing RBRACE got: EOF",
                        self.at()
                    ));
                }
                Some(b'}') if !top => {
                    self.pos += 1;
                    return Ok(items);
                }
                Some(b'}') => {
                    return Err(format!(
                        "{}: expected: IDENT | STRING got: RBRACE",
                        self.at()
                    ));
                }
                _ => {}
            }
            let key = match self.src.get(self.pos) {
                Some(b'"') => self.string()?,
                _ => match self.ident() {
                    Some(k) => k,
                    None => {
                        return Err(format!("{}: illegal char", self.at()));
                    }
                },
            };
            let mut labels = Vec::new();
            let value = loop {
                self.skip_ws();
                match self.src.get(self.pos) {
                    Some(b'"') => labels.push(self.string()?),
                    Some(b'{') => {
                        self.pos += 1;
                        break Node::Obj(self.body(false)?);
                    }
                    Some(b'=') => {
                        self.pos += 1;
                        self.skip_ws();
                        break match self.src.get(self.pos) {
                            Some(b'"') => Node::Str(self.string()?),
                            Some(b'{') => {
                                self.pos += 1;
                                Node::Obj(self.body(false)?)
                            }
                            Some(b'[') => {
                                return Err(format!(
                                    "{}: lists are not valid in ACL rules",
                                    self.at()
                                ));
                            }
                            _ => match self.ident() {
                                Some(_) => Node::Other,
                                None => {
                                    return Err(format!(
                                        "{}: Unknown token: illegal char",
                                        self.at()
                                    ));
                                }
                            },
                        };
                    }
                    None => {
                        return Err(format!(
                            "{}: key '{key}' expected start of object ('{{') or assignment ('=')",
                            self.at()
                        ));
                    }
                    Some(_) => {
                        return Err(format!(
                            "{}: key '{key}' expected start of object ('{{') or assignment ('=')",
                            self.at()
                        ));
                    }
                }
            };
            // `a "b" "c" { }` nests as a = { b = { c = { } } }.
            let mut node = value;
            for label in labels.into_iter().rev() {
                node = Node::Obj(vec![(label, node)]);
            }
            // Repeated blocks of one kind merge, as HCL's decoder does.
            match (items.iter_mut().find(|(k, _)| *k == key), node) {
                (Some((_, Node::Obj(existing))), Node::Obj(mut more)) => existing.append(&mut more),
                (_, node) => items.push((key, node)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hcl_and_json_give_the_same_rules() {
        let hcl = r#"
            # sync rules
            node_prefix "" { policy = "read" }
            node "k8s-sync" { policy = "write" }
            service_prefix "" { policy = "read" }
            service "web" { policy = "write" }
            namespace "team" { service "db" { policy = "write" } }
            key_prefix "" { policy = "deny" }
            operator = "read"
        "#;
        let json = r#"{"node_prefix": {"": {"policy": "read"}},
            "node": {"k8s-sync": {"policy": "write"}},
            "service_prefix": {"": {"policy": "read"}},
            "service": {"web": {"policy": "write"}},
            "namespace": {"team": {"service": {"db": {"policy": "write"}}}},
            "operator": "read"}"#;
        let a = parse(hcl).unwrap();
        let b = parse(json).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.grants.len(), 5);
        assert_eq!(
            a.grants[4].scope,
            vec![("namespace".to_string(), "team".to_string())]
        );
        assert!(a.grants[1].exact && !a.grants[0].exact);
    }

    #[test]
    fn malformed_rules_are_refused_with_a_parse_error() {
        let e = parse(r#"service "web" { policy = "bogus" }"#).unwrap_err();
        assert_eq!(
            e,
            "failed to parse rules: Invalid service policy: &acl.ServiceRule{Name:\"web\", Policy:\"bogus\", Intentions:\"\"}"
        );
        let e = parse("service \"web\" {").unwrap_err();
        assert!(
            e.starts_with("failed to parse rules: Failed to parse ACL rules: At 1:"),
            "{e}"
        );
        assert!(parse("{not json").is_err());
        assert!(parse("node \"x\" { policy = \"read\" }}").is_err());
        assert_eq!(parse("").unwrap(), ParsedRules::default());
        let e = parse(r#"namespace "team" { policy = "admin" }"#).unwrap_err();
        assert_eq!(
            e,
            "failed to parse rules: Invalid namespace policy: \"admin\""
        );
        assert!(parse(r#"operator = "sudo""#).is_err());
    }

    #[test]
    fn scopes_apply_only_where_they_name() {
        let team = vec![("namespace".to_string(), "team".to_string())];
        assert!(scope_applies(&team, "team"));
        assert!(scope_applies(&team, "TEAM"));
        assert!(!scope_applies(&team, "default"));
        assert!(scope_applies(&[], "default"));
        assert!(
            !scope_applies(&[], "team"),
            "top-level rules: own namespace"
        );
        let pre = vec![("namespace_prefix".to_string(), "te".to_string())];
        assert!(scope_applies(&pre, "team") && !scope_applies(&pre, "ops"));
        let other_partition = vec![
            ("partition".to_string(), "eu".to_string()),
            ("namespace".to_string(), "team".to_string()),
        ];
        assert!(!scope_applies(&other_partition, "team"));
        assert!(scope_applies_in(&other_partition, "EU", "team"));
        assert!(!scope_applies_in(&other_partition, "us", "team"));
        assert!(
            !scope_applies_in(&team, "eu", "team"),
            "rules outside a partition block stay in the token's partition"
        );
        assert!(!scope_applies_in(&[], "eu", "default"));
        let eu_pre = vec![("partition_prefix".to_string(), "E".to_string())];
        assert!(scope_applies_in(&eu_pre, "eu", "default"));
        assert!(!scope_applies_in(&eu_pre, "eu", "team"));
        assert!(!scope_applies_in(&eu_pre, "us", "default"));
        let p = parse(
            r#"operator = "write"
               namespace_prefix "" { policy = "read" }
               partition "eu" { policy = "write" }"#,
        )
        .unwrap();
        assert_eq!(p.operator, Some(AclAccess::Write));
        assert!(p.scope_policies[0].covers(false, "default", "anything"));
        assert!(!p.scope_policies[0].covers(true, "", "eu"));
        assert!(p.scope_policies[1].covers(true, "", "eu"));
        assert!(!p.scope_policies[1].covers(true, "", "us"));
    }
}
