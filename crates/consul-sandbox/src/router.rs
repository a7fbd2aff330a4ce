//! Pure request parsing: which endpoint a path names, the query string
//! (with Go's `url.ParseQuery` rules) and Go durations for `?wait=`.
//!
//! Kept free of I/O so the router and the parsers can be fuzzed directly:
//! none of these functions may panic, whatever bytes arrive.

use std::time::Duration;

/// The endpoints the sandbox serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    Register,
    Deregister,
    Datacenters,
    Services,
    Nodes,
    ServiceNodes(String),
    NodeServices(String),
    Node(String),
    HealthService(String),
    HealthNode(String),
    HealthState(String),
    HealthChecks(String),
    AgentSelf,
    /// `/v1/acl/...`: the path after `/v1/acl/`.
    Acl(String),
    /// `/v1/namespace[/<name>]`, `/v1/namespaces` and the same for
    /// partitions (Enterprise; 404 without).
    Tenancy {
        partition: bool,
        list: bool,
        name: Option<String>,
    },
    StatusLeader,
    StatusPeers,
    Txn,
    SandboxStats,
    SandboxFaults,
    NotFound,
}

impl Route {
    /// The low-cardinality name used in request counters: the path with its
    /// parameter removed, e.g. `/v1/catalog/node-services`.
    pub fn template(&self) -> &'static str {
        match self {
            Route::Register => "/v1/catalog/register",
            Route::Deregister => "/v1/catalog/deregister",
            Route::Datacenters => "/v1/catalog/datacenters",
            Route::Services => "/v1/catalog/services",
            Route::Nodes => "/v1/catalog/nodes",
            Route::ServiceNodes(_) => "/v1/catalog/service",
            Route::NodeServices(_) => "/v1/catalog/node-services",
            Route::Node(_) => "/v1/catalog/node",
            Route::HealthService(_) => "/v1/health/service",
            Route::HealthNode(_) => "/v1/health/node",
            Route::HealthState(_) => "/v1/health/state",
            Route::HealthChecks(_) => "/v1/health/checks",
            Route::AgentSelf => "/v1/agent/self",
            Route::Acl(rest) => crate::acl_http::template(rest),
            Route::Tenancy {
                partition: false,
                list: false,
                ..
            } => "/v1/namespace",
            Route::Tenancy {
                partition: false,
                list: true,
                ..
            } => "/v1/namespaces",
            Route::Tenancy {
                partition: true,
                list: false,
                ..
            } => "/v1/partition",
            Route::Tenancy {
                partition: true,
                list: true,
                ..
            } => "/v1/partitions",
            Route::StatusLeader => "/v1/status/leader",
            Route::StatusPeers => "/v1/status/peers",
            Route::Txn => "/v1/txn",
            Route::SandboxStats => "/v1/sandbox/stats",
            Route::SandboxFaults => "/v1/sandbox/faults",
            Route::NotFound => "unknown",
        }
    }

    /// The methods the endpoint accepts, as sent in `Allow` on a 405.
    pub fn allowed(&self) -> &'static [&'static str] {
        match self {
            Route::Register | Route::Deregister | Route::Txn => &["PUT"],
            Route::SandboxFaults => &["POST", "DELETE"],
            Route::Acl(_) | Route::Tenancy { .. } => &["GET", "PUT", "DELETE"],
            Route::NotFound => &[],
            _ => &["GET"],
        }
    }

    /// Whether this is one of the sandbox's own control endpoints (exempt
    /// from fault injection and ACLs).
    pub fn is_control(&self) -> bool {
        matches!(self, Route::SandboxStats | Route::SandboxFaults)
    }
}

/// Maps a decoded path to a route. Parameters are the rest of the path after
/// the prefix, as Consul's `strings.TrimPrefix` does (they may contain `/`).
pub(crate) fn route(path: &str) -> Route {
    let exact = match path {
        "/v1/catalog/register" => Some(Route::Register),
        "/v1/catalog/deregister" => Some(Route::Deregister),
        "/v1/catalog/datacenters" => Some(Route::Datacenters),
        "/v1/catalog/services" => Some(Route::Services),
        "/v1/catalog/nodes" => Some(Route::Nodes),
        "/v1/agent/self" => Some(Route::AgentSelf),
        "/v1/status/leader" => Some(Route::StatusLeader),
        "/v1/status/peers" => Some(Route::StatusPeers),
        "/v1/txn" => Some(Route::Txn),
        "/v1/sandbox/stats" => Some(Route::SandboxStats),
        "/v1/sandbox/faults" => Some(Route::SandboxFaults),
        _ => None,
    };
    if let Some(r) = exact {
        return r;
    }
    for (partition, one, many) in [
        (false, "/v1/namespace", "/v1/namespaces"),
        (true, "/v1/partition", "/v1/partitions"),
    ] {
        let tenancy = |list, name| Route::Tenancy {
            partition,
            list,
            name,
        };
        if path == many {
            return tenancy(true, None);
        }
        if path == one {
            return tenancy(false, None);
        }
        if let Some(rest) = path.strip_prefix(one).and_then(|r| r.strip_prefix('/')) {
            return tenancy(false, Some(rest.to_string()));
        }
    }
    type MakeRoute = fn(String) -> Route;
    let prefixed: [(&str, MakeRoute); 7] = [
        ("/v1/catalog/service/", Route::ServiceNodes),
        ("/v1/catalog/node-services/", Route::NodeServices),
        ("/v1/catalog/node/", Route::Node),
        ("/v1/health/service/", Route::HealthService),
        ("/v1/health/node/", Route::HealthNode),
        ("/v1/health/state/", Route::HealthState),
        ("/v1/health/checks/", Route::HealthChecks),
    ];
    if let Some(rest) = path.strip_prefix("/v1/acl/") {
        return Route::Acl(rest.to_string());
    }
    for (prefix, make) in prefixed {
        if let Some(rest) = path.strip_prefix(prefix) {
            return make(rest.to_string());
        }
    }
    Route::NotFound
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Percent-decodes `s`; `plus_is_space` for query components. `None` on a
/// malformed escape or a result that is not UTF-8.
pub(crate) fn percent_decode(s: &str, plus_is_space: bool) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hi = bytes.get(i + 1).copied().and_then(hex)?;
                let lo = bytes.get(i + 2).copied().and_then(hex)?;
                out.push(hi * 16 + lo);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// A parsed query string: ordered `(key, value)` pairs, repeats kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Parses a raw query string like Go's `url.ParseQuery`: `&`-separated,
    /// `+` is a space, a `;` or a bad escape is an error.
    pub fn parse(raw: Option<&str>) -> Result<Query, ()> {
        let mut pairs = Vec::new();
        for part in raw.unwrap_or_default().split('&') {
            if part.is_empty() {
                continue;
            }
            if part.contains(';') {
                return Err(());
            }
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            let k = percent_decode(k, true).ok_or(())?;
            let v = percent_decode(v, true).ok_or(())?;
            pairs.push((k, v));
        }
        Ok(Query { pairs })
    }

    /// The first value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The same query without the given keys (for an endpoint that does
    /// not read them).
    pub fn without(&self, keys: &[&str]) -> Query {
        Query {
            pairs: self
                .pairs
                .iter()
                .filter(|(k, _)| !keys.contains(&k.as_str()))
                .cloned()
                .collect(),
        }
    }

    /// Whether `key` is present (with or without a value).
    pub fn has(&self, key: &str) -> bool {
        self.pairs.iter().any(|(k, _)| k == key)
    }

    /// Every value of `key`.
    pub fn all(&self, key: &str) -> Vec<String> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// `node-meta=key:value` filters (a value without `:` means an empty
    /// value, as in Consul).
    pub fn node_meta(&self) -> Vec<(String, String)> {
        self.all("node-meta")
            .into_iter()
            .map(|f| match f.split_once(':') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (f, String::new()),
            })
            .collect()
    }
}

/// Parses a Go duration string (`300ms`, `1.5s`, `2m`, `1h30m`). Returns
/// nanoseconds (signed, as Go allows `-1s`); `None` when Go would refuse it.
pub(crate) fn parse_go_duration(s: &str) -> Option<i128> {
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let num_len = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b'.')
            .count();
        let (num, after) = rest.split_at(num_len);
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return None;
        }
        let unit_len = after
            .bytes()
            .take_while(|b| !(b.is_ascii_digit() || *b == b'.'))
            .count();
        let (unit, after) = after.split_at(unit_len);
        let scale: i128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
        let int: i128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().ok()?
        };
        let mut value = int.checked_mul(scale)?;
        // Fractions beyond nanosecond precision are dropped, as in Go.
        let mut frac_scale = scale;
        for d in frac_part.bytes().take(30) {
            frac_scale /= 10;
            value = value.checked_add(i128::from(d - b'0') * frac_scale)?;
        }
        total = total.checked_add(value)?;
        // Go rejects durations that overflow an int64 of nanoseconds.
        if total > i128::from(i64::MAX) {
            return None;
        }
        rest = after;
    }
    Some(if neg { -total } else { total })
}

/// Consul's defaults for blocking waits.
pub(crate) const DEFAULT_WAIT: Duration = Duration::from_secs(5 * 60);
/// Consul's cap on `?wait=`.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(10 * 60);
/// Consul adds up to `wait / 16` of random jitter so that many clients
/// blocked on the same index do not all return at once.
pub(crate) const JITTER_FRACTION: u32 = 16;

/// The effective wait before jitter: `<= 0` or absent means the default,
/// anything above the cap is capped.
pub(crate) fn effective_wait(nanos: Option<i128>) -> Duration {
    match nanos {
        None => DEFAULT_WAIT,
        Some(n) if n <= 0 => DEFAULT_WAIT,
        Some(n) if n >= MAX_WAIT.as_nanos() as i128 => MAX_WAIT,
        Some(n) => Duration::from_nanos(u64::try_from(n).unwrap_or(u64::MAX)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn routes_and_templates() {
        assert_eq!(route("/v1/catalog/register"), Route::Register);
        assert_eq!(
            route("/v1/catalog/service/web"),
            Route::ServiceNodes("web".into())
        );
        assert_eq!(
            route("/v1/catalog/service/a/b"),
            Route::ServiceNodes("a/b".into())
        );
        assert_eq!(
            route("/v1/catalog/service/"),
            Route::ServiceNodes(String::new())
        );
        assert_eq!(
            route("/v1/catalog/node-services/n1"),
            Route::NodeServices("n1".into())
        );
        assert_eq!(route("/v1/catalog/node/n1"), Route::Node("n1".into()));
        assert_eq!(
            route("/v1/health/service/web"),
            Route::HealthService("web".into())
        );
        assert_eq!(route("/v1/health/node/n1"), Route::HealthNode("n1".into()));
        assert_eq!(Route::HealthNode("n1".into()).template(), "/v1/health/node");
        assert_eq!(route("/v1/kv/x"), Route::NotFound);
        assert_eq!(
            route("/v1/catalog/node-services/n1").template(),
            "/v1/catalog/node-services"
        );
        assert_eq!(Route::Register.allowed(), &["PUT"]);
        assert_eq!(
            route("/v1/namespace/team"),
            Route::Tenancy {
                partition: false,
                list: false,
                name: Some("team".into())
            }
        );
        assert_eq!(route("/v1/partitions").template(), "/v1/partitions");
        assert_eq!(route("/v1/namespace").template(), "/v1/namespace");
        assert_eq!(route("/v1/namespacesx"), Route::NotFound);
    }

    #[test]
    fn query_parsing_follows_go() {
        let q = Query::parse(Some(
            "index=5&wait=1s&tag=a&tag=b+c&passing&node-meta=k%3Av",
        ))
        .unwrap();
        assert_eq!(q.get("index"), Some("5"));
        assert_eq!(q.all("tag"), vec!["a".to_string(), "b c".to_string()]);
        assert!(q.has("passing"));
        assert_eq!(q.get("passing"), Some(""));
        assert_eq!(q.node_meta(), vec![("k".to_string(), "v".to_string())]);
        assert!(Query::parse(Some("a=%zz")).is_err());
        assert!(Query::parse(Some("a=1;b=2")).is_err());
        assert_eq!(Query::parse(None).unwrap(), Query::default());
    }

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("100ms"), Some(100_000_000));
        assert_eq!(parse_go_duration("1.5s"), Some(1_500_000_000));
        assert_eq!(parse_go_duration("1h30m"), Some(5_400_000_000_000));
        assert_eq!(parse_go_duration("0"), Some(0));
        assert_eq!(parse_go_duration("-2s"), Some(-2_000_000_000));
        assert_eq!(parse_go_duration("10"), None, "a unit is required");
        assert_eq!(parse_go_duration(""), None);
        assert_eq!(parse_go_duration("5x"), None);
        assert_eq!(parse_go_duration("1..2s"), None);
        assert_eq!(parse_go_duration("99999999999999999999h"), None);
    }

    #[test]
    fn waits_default_and_cap_like_consul() {
        assert_eq!(effective_wait(None), DEFAULT_WAIT);
        assert_eq!(effective_wait(Some(0)), DEFAULT_WAIT);
        assert_eq!(effective_wait(Some(-5)), DEFAULT_WAIT);
        assert_eq!(effective_wait(parse_go_duration("1h")), MAX_WAIT);
        assert_eq!(
            effective_wait(parse_go_duration("2m")),
            Duration::from_secs(120)
        );
    }

    proptest! {
        #[test]
        fn router_and_parsers_never_panic(path in ".{0,64}", raw in ".{0,64}", bytes in prop::collection::vec(any::<u8>(), 0..32)) {
            let r = route(&path);
            let _ = r.template();
            let _ = r.allowed();
            let _ = Query::parse(Some(&raw)).map(|q| q.node_meta());
            let _ = percent_decode(&raw, true);
            let _ = parse_go_duration(&raw);
            let lossy = String::from_utf8_lossy(&bytes);
            let _ = percent_decode(&lossy, false);
            let _ = parse_go_duration(&lossy);
        }

        #[test]
        fn durations_round_trip(ms in 0u64..10_000_000) {
            prop_assert_eq!(parse_go_duration(&format!("{ms}ms")), Some(i128::from(ms) * 1_000_000));
        }

        #[test]
        fn percent_encoding_round_trips(s in ".{0,32}") {
            let encoded: String = s.bytes().map(|b| format!("%{b:02X}")).collect();
            prop_assert_eq!(percent_decode(&encoded, false), Some(s));
        }
    }
}
