//! Building request URLs: `/v1/...` path segments (percent-encoded, so a
//! service name can never escape its segment), the datacenter, namespace
//! and partition parameters, and the query options.
//!
//! Pure; must NOT know about tokens (the token travels in a header, never in
//! a URL, so that it cannot end up in a proxy's access log).

use reqwest::Url;

use crate::blocking::{QueryOptions, format_wait};

/// Parameters sent with every request (`dc`, `ns`, `partition`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommonParams {
    /// `dc`.
    pub datacenter: Option<String>,
    /// `ns`.
    pub namespace: Option<String>,
    /// `partition`.
    pub partition: Option<String>,
}

/// A name that cannot be put in a URL path segment.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("name {0:?} cannot be used in a URL path (URL parsers resolve it as a relative path)")]
pub struct InvalidSegment(pub String);

/// Builds `base` + `/v1/<segments...>?<common>&<query>`. Each segment is
/// percent-encoded as one path segment. `.` and `..` are refused: every URL
/// parser would resolve them and address a different endpoint.
pub fn build_url(
    base: &Url,
    segments: &[&str],
    common: &CommonParams,
    query: Option<&QueryOptions>,
) -> Result<Url, InvalidSegment> {
    if let Some(bad) = segments.iter().find(|s| **s == "." || **s == "..") {
        return Err(InvalidSegment((*bad).to_owned()));
    }
    let mut url = base.clone();
    // `path_segments_mut` fails only for URLs that cannot be a base
    // (`mailto:`); config parsing admits only http(s), so the fallback of
    // leaving the path alone is unreachable in practice.
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty();
        path.push("v1");
        for s in segments {
            path.push(s);
        }
    }
    {
        let mut pairs = url.query_pairs_mut();
        let mut add = |k: &str, v: Option<&String>| {
            if let Some(v) = v.filter(|v| !v.is_empty()) {
                pairs.append_pair(k, v);
            }
        };
        add("dc", common.datacenter.as_ref());
        // A read may name its own namespace (`*` for all of them).
        let ns = query
            .and_then(|q| q.namespace.as_ref())
            .or(common.namespace.as_ref());
        add("ns", ns);
        add("partition", common.partition.as_ref());
        if let Some(q) = query {
            add("filter", q.filter.as_ref());
            for t in &q.tags {
                pairs.append_pair("tag", t);
            }
            for (k, v) in &q.node_meta {
                pairs.append_pair("node-meta", &format!("{k}:{v}"));
            }
            if q.passing_only {
                pairs.append_pair("passing", "true");
            }
            if q.stale {
                pairs.append_key_only("stale");
            }
            if let (Some(index), Some(wait)) = (q.index.filter(|i| *i > 0), q.effective_wait()) {
                pairs.append_pair("index", &index.to_string());
                pairs.append_pair("wait", &format_wait(wait));
            }
        }
    }
    // An empty query string would leave a dangling "?".
    if url.query() == Some("") {
        url.set_query(None);
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    fn base(s: &str) -> Url {
        crate::config::parse_address(s, false, "t").unwrap()
    }

    #[test]
    fn plain_path() {
        let u = build_url(
            &base("127.0.0.1:8500"),
            &["catalog", "services"],
            &CommonParams::default(),
            None,
        )
        .unwrap();
        assert_eq!(u.as_str(), "http://127.0.0.1:8500/v1/catalog/services");
    }

    #[test]
    fn path_prefix_is_kept() {
        let u = build_url(
            &base("https://proxy/consul/"),
            &["txn"],
            &CommonParams::default(),
            None,
        )
        .unwrap();
        assert_eq!(u.as_str(), "https://proxy/consul/v1/txn");
    }

    #[test]
    fn names_are_one_encoded_segment() {
        let u = build_url(
            &base("h:1"),
            &["catalog", "service", "../../agent/self?x=1#y"],
            &CommonParams::default(),
            None,
        )
        .unwrap();
        assert_eq!(
            u.path(),
            "/v1/catalog/service/..%2F..%2Fagent%2Fself%3Fx=1%23y"
        );
        assert_eq!(u.query(), None);
    }

    #[test]
    fn dot_segments_are_not_resolved() {
        for name in [".", ".."] {
            let r = build_url(
                &base("h:1"),
                &["catalog", "service", name],
                &CommonParams::default(),
                None,
            );
            assert_eq!(r, Err(InvalidSegment(name.to_owned())));
        }
        // Percent signs are encoded, so an encoded dot-dot stays a name.
        let u = build_url(
            &base("h:1"),
            &["catalog", "service", "%2e%2e"],
            &CommonParams::default(),
            None,
        )
        .unwrap();
        assert_eq!(u.path_segments().unwrap().count(), 4, "{u}");
    }

    #[test]
    fn a_read_may_name_its_own_namespace() {
        let common = CommonParams {
            namespace: Some("team".into()),
            partition: Some("p1".into()),
            ..CommonParams::default()
        };
        let q = QueryOptions {
            namespace: Some("*".into()),
            ..QueryOptions::default()
        };
        let u = build_url(
            &base("h:1"),
            &["catalog", "node-services", "n"],
            &common,
            Some(&q),
        )
        .unwrap();
        assert_eq!(u.query(), Some("ns=*&partition=p1"));
        let u = build_url(
            &base("h:1"),
            &["catalog", "node-services", "n"],
            &common,
            None,
        )
        .unwrap();
        assert_eq!(u.query(), Some("ns=team&partition=p1"));
    }

    #[test]
    fn common_and_query_params() {
        let common = CommonParams {
            datacenter: Some("dc2".into()),
            namespace: Some("team a".into()),
            partition: Some("p1".into()),
        };
        let q = QueryOptions {
            filter: Some("Service == \"web\"".into()),
            tags: vec!["k8s".into(), "v2".into()],
            node_meta: vec![("external-source".into(), "kubernetes".into())],
            passing_only: true,
            stale: true,
            index: Some(42),
            wait: Some(Duration::from_secs(30)),
            namespace: None,
        };
        let u = build_url(
            &base("h:1"),
            &["health", "service", "web"],
            &common,
            Some(&q),
        )
        .unwrap();
        let pairs: Vec<(String, String)> = u
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let expect: Vec<(String, String)> = [
            ("dc", "dc2"),
            ("ns", "team a"),
            ("partition", "p1"),
            ("filter", "Service == \"web\""),
            ("tag", "k8s"),
            ("tag", "v2"),
            ("node-meta", "external-source:kubernetes"),
            ("passing", "true"),
            ("stale", ""),
            ("index", "42"),
            ("wait", "30000ms"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        assert_eq!(pairs, expect);
    }

    #[test]
    fn index_zero_is_not_blocking() {
        let q = QueryOptions::blocking(0, Duration::from_secs(30));
        let u = build_url(
            &base("h:1"),
            &["catalog", "nodes"],
            &CommonParams::default(),
            Some(&q),
        )
        .unwrap();
        assert_eq!(u.query(), None);
    }

    proptest! {
        #[test]
        fn any_name_stays_in_its_segment(name in ".{0,40}") {
            prop_assume!(name != "." && name != "..");
            let u = build_url(&base("h:1"), &["catalog", "service", &name], &CommonParams::default(), None)
                .unwrap();
            let segs: Vec<&str> = u.path_segments().unwrap().collect();
            prop_assert_eq!(segs.len(), 4);
            prop_assert_eq!(u.query(), None);
            prop_assert_eq!(u.host_str(), Some("h"));
        }
    }
}
