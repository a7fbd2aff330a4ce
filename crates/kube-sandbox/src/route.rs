//! URL routing: a request path to what it names.
//!
//! Pure and total: every path maps to a [`Route`] or an error, never a
//! panic (a property test feeds it arbitrary strings).

use std::sync::Arc;

use crate::registry::{Registry, Resource};
use crate::status::ApiError;

/// What a path names.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    /// `/version`.
    Version,
    /// `/healthz`, `/readyz`, `/livez`.
    Health,
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    Groups,
    /// `/apis/<group>`.
    Group(String),
    /// `/api/v1` or `/apis/<group>/<version>`.
    ResourceList(String, String),
    /// `/openapi/v2`.
    OpenApiV2,
    /// `/openapi/v3`.
    OpenApiV3,
    /// `/openapi/v3/<api/v1 | apis/g/v>`.
    OpenApiV3Doc(String, String),
    /// `/sandbox/stats`.
    Stats,
    /// `/sandbox/faults` and `/sandbox/faults/<action>`.
    Faults(Option<String>),
    /// A resource URL.
    Object(ObjectRoute),
}

/// A resource URL, with or without a name.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectRoute {
    /// The resource.
    pub res: Arc<Resource>,
    /// Namespace in the URL (namespaced resources; `None` for all
    /// namespaces).
    pub namespace: Option<String>,
    /// Object name.
    pub name: Option<String>,
    /// Subresource (`status`).
    pub subresource: Option<String>,
}

fn decode(seg: &str) -> String {
    // Kubernetes names cannot contain '%', so a percent in a segment is an
    // escape; an invalid escape is kept as written.
    let mut out = Vec::with_capacity(seg.len());
    let b = seg.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(hi), Some(lo)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push(hi * 16 + lo);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

/// Routes a path.
pub fn route(path: &str, reg: &Registry) -> Result<Route, ApiError> {
    let segs: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(decode)
        .collect();
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    match s.as_slice() {
        ["version"] => Ok(Route::Version),
        ["healthz" | "readyz" | "livez", ..] => Ok(Route::Health),
        ["api"] => Ok(Route::CoreVersions),
        ["apis"] => Ok(Route::Groups),
        ["apis", g] => Ok(Route::Group(g.to_string())),
        ["api", v] => Ok(Route::ResourceList(String::new(), v.to_string())),
        ["apis", g, v] => Ok(Route::ResourceList(g.to_string(), v.to_string())),
        ["openapi", "v2"] => Ok(Route::OpenApiV2),
        ["openapi", "v3"] => Ok(Route::OpenApiV3),
        ["openapi", "v3", "api", v] => Ok(Route::OpenApiV3Doc(String::new(), v.to_string())),
        ["openapi", "v3", "apis", g, v] => Ok(Route::OpenApiV3Doc(g.to_string(), v.to_string())),
        ["sandbox", "stats"] => Ok(Route::Stats),
        ["sandbox", "faults"] => Ok(Route::Faults(None)),
        ["sandbox", "faults", action] => Ok(Route::Faults(Some(action.to_string()))),
        ["api", v, rest @ ..] => object_route(reg, "", v, rest),
        ["apis", g, v, rest @ ..] => object_route(reg, g, v, rest),
        _ => Err(ApiError::no_route()),
    }
}

fn object_route(
    reg: &Registry,
    group: &str,
    version: &str,
    rest: &[&str],
) -> Result<Route, ApiError> {
    let get = |plural: &str| {
        reg.get(group, version, plural)
            .ok_or_else(ApiError::no_route)
    };
    let obj = |res: Arc<Resource>, ns: Option<&str>, name: Option<&str>, sub: Option<&str>| {
        Ok(Route::Object(ObjectRoute {
            res,
            namespace: ns.map(str::to_string),
            name: name.map(str::to_string),
            subresource: sub.map(str::to_string),
        }))
    };
    match rest {
        // /namespaces/<ns>/<plural>[/<name>[/<sub>]] when <plural> is a
        // namespaced resource of this group-version...
        ["namespaces", ns, plural, tail @ ..]
            if reg
                .get(group, version, plural)
                .is_some_and(|r| r.namespaced) =>
        {
            let res = get(plural)?;
            match tail {
                [] => obj(res, Some(ns), None, None),
                [name] => obj(res, Some(ns), Some(name), None),
                [name, sub] => obj(res, Some(ns), Some(name), Some(sub)),
                // A proxy subresource forwards the rest of the path.
                [name, "proxy", ..] => obj(res, Some(ns), Some(name), Some("proxy")),
                _ => Err(ApiError::no_route()),
            }
        }
        // ...otherwise a cluster-scoped resource (including namespaces
        // themselves and their subresources).
        [plural] => {
            let res = get(plural)?;
            obj(res, None, None, None)
        }
        [plural, name] => {
            let res = get(plural)?;
            if res.namespaced {
                return Err(ApiError::no_route());
            }
            obj(res, None, Some(name), None)
        }
        [plural, name, sub] => {
            let res = get(plural)?;
            if res.namespaced {
                return Err(ApiError::no_route());
            }
            obj(res, None, Some(name), Some(sub))
        }
        _ => Err(ApiError::no_route()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn o(r: Route) -> ObjectRoute {
        match r {
            Route::Object(o) => o,
            other => panic!("not an object route: {other:?}"),
        }
    }

    #[test]
    fn routes_resource_urls() {
        let reg = Registry::with_builtins();
        let r = o(route("/api/v1/namespaces/a/configmaps/b", &reg).unwrap());
        assert_eq!(
            (
                r.res.plural.as_str(),
                r.namespace.as_deref(),
                r.name.as_deref()
            ),
            ("configmaps", Some("a"), Some("b"))
        );
        let r = o(route("/api/v1/configmaps", &reg).unwrap());
        assert_eq!(r.namespace, None);
        let r = o(route("/api/v1/namespaces/a", &reg).unwrap());
        assert_eq!(
            (r.res.plural.as_str(), r.name.as_deref()),
            ("namespaces", Some("a"))
        );
        let r = o(route("/api/v1/namespaces/a/status", &reg).unwrap());
        assert_eq!(r.subresource.as_deref(), Some("status"));
        let r = o(route(
            "/apis/discovery.k8s.io/v1/namespaces/x/endpointslices",
            &reg,
        )
        .unwrap());
        assert_eq!(r.res.kind, "EndpointSlice");
        let r = o(route("/api/v1/namespaces/a/services/s/status", &reg).unwrap());
        assert_eq!(r.subresource.as_deref(), Some("status"));
        assert_eq!(
            route("/apis/apps/v1", &reg).unwrap(),
            Route::ResourceList("apps".into(), "v1".into())
        );
        assert_eq!(
            route("/openapi/v3/apis/apps/v1", &reg).unwrap(),
            Route::OpenApiV3Doc("apps".into(), "v1".into())
        );
    }

    #[test]
    fn unknown_paths_are_not_found() {
        let reg = Registry::with_builtins();
        for p in [
            "/api/v1/bindings",
            "/apis/nope/v1/things",
            "/api/v1/configmaps/x",
            "/x",
            "/api/v1/namespaces/a/configmaps/b/c/d",
        ] {
            assert_eq!(route(p, &reg).unwrap_err().code, 404, "{p}");
        }
    }

    #[test]
    fn percent_escapes_are_decoded() {
        assert_eq!(decode("a%2Db"), "a-b");
        assert_eq!(decode("a%"), "a%");
        assert_eq!(decode("%zz"), "%zz");
        assert_eq!(decode("%4"), "%4");
    }

    proptest! {
        #[test]
        fn routing_never_panics(path in "(/[a-z0-9%.:-]{0,12}){0,8}") {
            let reg = Registry::with_builtins();
            let _ = route(&path, &reg);
        }

        #[test]
        fn routing_arbitrary_bytes_never_panics(path in any::<String>()) {
            let reg = Registry::with_builtins();
            let _ = route(&path, &reg);
        }
    }
}
