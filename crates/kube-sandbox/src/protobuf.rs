//! Reads the protobuf bodies of the review kinds, of the pods' Binding and
//! Eviction and of a ServiceAccount's TokenRequest, which kubectl's typed
//! clients (`kubectl auth can-i`, `kubectl auth whoami`, `kubectl drain`,
//! `kubectl create token`) send as
//! `application/vnd.kubernetes.protobuf`, into the JSON the rest of the
//! sandbox works on.
//!
//! The envelope is the API machinery's: the magic `k8s\0`, then a
//! `runtime.Unknown` (type meta, raw object bytes). Only the fields of the
//! review kinds are mapped (by their generated field numbers); anything
//! else is skipped, as an unknown field is.
//!
//! What this module must NOT do: decode any other kind (the sandbox
//! refuses protobuf bodies elsewhere with 415), or answer in protobuf (the
//! clients accept JSON answers).

use serde_json::{Map, Value, json};

use crate::status::ApiError;

/// The prefix of every Kubernetes protobuf body.
const MAGIC: &[u8] = b"k8s\0";

/// One field's raw value (fixed-width numbers are skipped: none of the
/// mapped fields has one).
enum Wire<'a> {
    Number(u64),
    Bytes(&'a [u8]),
}

fn varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut out = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        out |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(out);
        }
    }
    None
}

/// The fields of one message, in order; `None` when it does not parse.
fn fields(buf: &[u8]) -> Option<Vec<(u64, Wire<'_>)>> {
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < buf.len() {
        let key = varint(buf, &mut pos)?;
        let (number, wire_type) = (key >> 3, key & 7);
        let value = match wire_type {
            0 => Wire::Number(varint(buf, &mut pos)?),
            2 => {
                let len = usize::try_from(varint(buf, &mut pos)?).ok()?;
                let end = pos.checked_add(len)?;
                let bytes = buf.get(pos..end)?;
                pos = end;
                Wire::Bytes(bytes)
            }
            1 => {
                pos = pos.checked_add(8)?;
                Wire::Number(0)
            }
            5 => {
                pos = pos.checked_add(4)?;
                Wire::Number(0)
            }
            _ => return None,
        };
        out.push((number, value));
    }
    (pos == buf.len()).then_some(out)
}

/// How a message's fields map to JSON: (number, name, shape).
enum Shape {
    Str,
    Strings,
    /// A varint read as a signed 64-bit number.
    Int,
    /// A `map<string, string>` (entries with key 1 and value 2).
    Map,
    Msg(&'static [(u64, &'static str, Shape)]),
}

const NON_RESOURCE: &[(u64, &str, Shape)] = &[(1, "path", Shape::Str), (2, "verb", Shape::Str)];
const RESOURCE: &[(u64, &str, Shape)] = &[
    (1, "namespace", Shape::Str),
    (2, "verb", Shape::Str),
    (3, "group", Shape::Str),
    (4, "version", Shape::Str),
    (5, "resource", Shape::Str),
    (6, "subresource", Shape::Str),
    (7, "name", Shape::Str),
];
const META: &[(u64, &str, Shape)] = &[
    (1, "name", Shape::Str),
    (2, "generateName", Shape::Str),
    (3, "namespace", Shape::Str),
    (5, "uid", Shape::Str),
    (6, "resourceVersion", Shape::Str),
    (11, "labels", Shape::Map),
    (12, "annotations", Shape::Map),
];
const OBJECT_REFERENCE: &[(u64, &str, Shape)] = &[
    (1, "kind", Shape::Str),
    (2, "namespace", Shape::Str),
    (3, "name", Shape::Str),
    (4, "uid", Shape::Str),
    (5, "apiVersion", Shape::Str),
    (6, "resourceVersion", Shape::Str),
    (7, "fieldPath", Shape::Str),
];
const PRECONDITIONS: &[(u64, &str, Shape)] =
    &[(1, "uid", Shape::Str), (2, "resourceVersion", Shape::Str)];
const DELETE_OPTIONS: &[(u64, &str, Shape)] = &[
    (1, "gracePeriodSeconds", Shape::Int),
    (2, "preconditions", Shape::Msg(PRECONDITIONS)),
    (4, "propagationPolicy", Shape::Str),
    (5, "dryRun", Shape::Strings),
];
const SAR_SPEC: &[(u64, &str, Shape)] = &[
    (1, "resourceAttributes", Shape::Msg(RESOURCE)),
    (2, "nonResourceAttributes", Shape::Msg(NON_RESOURCE)),
    (3, "user", Shape::Str),
    (4, "groups", Shape::Strings),
    (6, "uid", Shape::Str),
];
const SELF_SAR_SPEC: &[(u64, &str, Shape)] = &[
    (1, "resourceAttributes", Shape::Msg(RESOURCE)),
    (2, "nonResourceAttributes", Shape::Msg(NON_RESOURCE)),
];
const RULES_SPEC: &[(u64, &str, Shape)] = &[(1, "namespace", Shape::Str)];
const TOKEN_SPEC: &[(u64, &str, Shape)] =
    &[(1, "token", Shape::Str), (2, "audiences", Shape::Strings)];
const BOUND_OBJECT: &[(u64, &str, Shape)] = &[
    (1, "kind", Shape::Str),
    (2, "apiVersion", Shape::Str),
    (3, "name", Shape::Str),
    (4, "uid", Shape::Str),
];
const TOKEN_REQUEST_SPEC: &[(u64, &str, Shape)] = &[
    (1, "audiences", Shape::Strings),
    (3, "boundObjectRef", Shape::Msg(BOUND_OBJECT)),
    (4, "expirationSeconds", Shape::Int),
];

fn object(kind: &str) -> Option<&'static [(u64, &'static str, Shape)]> {
    const fn with_spec(
        spec: &'static [(u64, &'static str, Shape)],
    ) -> [(u64, &'static str, Shape); 2] {
        [
            (1, "metadata", Shape::Msg(META)),
            (2, "spec", Shape::Msg(spec)),
        ]
    }
    static SAR: [(u64, &str, Shape); 2] = with_spec(SAR_SPEC);
    static SELF_SAR: [(u64, &str, Shape); 2] = with_spec(SELF_SAR_SPEC);
    static RULES: [(u64, &str, Shape); 2] = with_spec(RULES_SPEC);
    static TOKEN: [(u64, &str, Shape); 2] = with_spec(TOKEN_SPEC);
    static TOKEN_REQUEST: [(u64, &str, Shape); 2] = with_spec(TOKEN_REQUEST_SPEC);
    static META_ONLY: [(u64, &str, Shape); 1] = [(1, "metadata", Shape::Msg(META))];
    static BINDING: [(u64, &str, Shape); 2] = [
        (1, "metadata", Shape::Msg(META)),
        (2, "target", Shape::Msg(OBJECT_REFERENCE)),
    ];
    static EVICTION: [(u64, &str, Shape); 2] = [
        (1, "metadata", Shape::Msg(META)),
        (2, "deleteOptions", Shape::Msg(DELETE_OPTIONS)),
    ];
    Some(match kind {
        "SubjectAccessReview" | "LocalSubjectAccessReview" => &SAR,
        "SelfSubjectAccessReview" => &SELF_SAR,
        "SelfSubjectRulesReview" => &RULES,
        "TokenReview" => &TOKEN,
        "TokenRequest" => &TOKEN_REQUEST,
        "SelfSubjectReview" => &META_ONLY,
        "Binding" => &BINDING,
        "Eviction" => &EVICTION,
        _ => return None,
    })
}

fn text(b: &[u8]) -> Option<String> {
    String::from_utf8(b.to_vec()).ok()
}

fn message(buf: &[u8], shape: &[(u64, &str, Shape)]) -> Option<Value> {
    let mut out = Map::new();
    for (number, wire) in fields(buf)? {
        let Some((_, name, kind)) = shape.iter().find(|(n, _, _)| *n == number) else {
            continue;
        };
        if let (Shape::Int, Wire::Number(n)) = (kind, &wire) {
            // Two's complement, as protobuf writes a negative int64.
            out.insert((*name).into(), json!(*n as i64));
            continue;
        }
        let Wire::Bytes(b) = wire else { continue };
        match kind {
            Shape::Int => {}
            Shape::Map => {
                let mut key = String::new();
                let mut value = String::new();
                for (n, w) in fields(b)? {
                    match (n, w) {
                        (1, Wire::Bytes(k)) => key = text(k)?,
                        (2, Wire::Bytes(v)) => value = text(v)?,
                        _ => {}
                    }
                }
                let map = out.entry(*name).or_insert_with(|| json!({}));
                map[key] = json!(value);
            }
            Shape::Str => {
                out.insert((*name).into(), json!(text(b)?));
            }
            Shape::Strings => {
                let list = out.entry(*name).or_insert_with(|| json!([]));
                if let Some(a) = list.as_array_mut() {
                    a.push(json!(text(b)?));
                }
            }
            Shape::Msg(inner) => {
                out.insert((*name).into(), message(b, inner)?);
            }
        }
    }
    Some(Value::Object(out))
}

/// Decodes a protobuf body of a review kind, a Binding or an Eviction
/// into its JSON form (with `apiVersion` and `kind` from the envelope);
/// the 415 the sandbox gives protobuf bodies of other kinds, and a 400 for
/// one that does not parse.
pub fn decode(body: &[u8], content_type: &str) -> Result<Value, ApiError> {
    let bad = || ApiError::bad_request("unable to decode the protobuf body of the request");
    let rest = body.strip_prefix(MAGIC).ok_or_else(bad)?;
    let unknown = fields(rest).ok_or_else(bad)?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    for (number, wire) in unknown {
        match (number, wire) {
            (1, Wire::Bytes(tm)) => {
                for (n, w) in fields(tm).ok_or_else(bad)? {
                    match (n, w) {
                        (1, Wire::Bytes(b)) => api_version = text(b).ok_or_else(bad)?,
                        (2, Wire::Bytes(b)) => kind = text(b).ok_or_else(bad)?,
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(b)) => raw = b,
            _ => {}
        }
    }
    let shape = object(&kind).ok_or_else(|| ApiError::unsupported_media_type(content_type))?;
    let mut obj = message(raw, shape).ok_or_else(bad)?;
    obj["apiVersion"] = json!(api_version);
    obj["kind"] = json!(kind);
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(n: u64, b: &[u8]) -> Vec<u8> {
        let mut out = vec![
            u8::try_from(n << 3 | 2).unwrap(),
            u8::try_from(b.len()).unwrap(),
        ];
        out.extend_from_slice(b);
        out
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let body = [MAGIC.to_vec(), tail].concat();
            let _ = decode(&body, "application/vnd.kubernetes.protobuf");
        }
    }

    #[test]
    fn a_token_request_decodes() {
        let bound = [field(1, b"Pod"), field(2, b"v1"), field(3, b"web-0")].concat();
        // Field 4 (expirationSeconds) as a varint: 1200.
        let spec = [
            field(1, b"vault"),
            field(3, &bound),
            vec![4 << 3, 0xB0, 0x09],
        ]
        .concat();
        let raw = [field(1, b""), field(2, &spec)].concat();
        let tm = [
            field(1, b"authentication.k8s.io/v1"),
            field(2, b"TokenRequest"),
        ]
        .concat();
        let body = [MAGIC.to_vec(), field(1, &tm), field(2, &raw)].concat();
        let v = decode(&body, "application/vnd.kubernetes.protobuf").unwrap();
        assert_eq!(
            v["spec"],
            json!({"audiences": ["vault"], "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "web-0"}, "expirationSeconds": 1200})
        );
    }

    #[test]
    fn a_self_subject_access_review_decodes() {
        let attrs = [field(2, b"create"), field(5, b"pods")].concat();
        let spec = field(1, &attrs);
        let raw = [field(1, b""), field(2, &spec)].concat();
        let tm = [
            field(1, b"authorization.k8s.io/v1"),
            field(2, b"SelfSubjectAccessReview"),
        ]
        .concat();
        let body = [MAGIC.to_vec(), field(1, &tm), field(2, &raw)].concat();
        let v = decode(&body, "application/vnd.kubernetes.protobuf").unwrap();
        assert_eq!(v["kind"], "SelfSubjectAccessReview");
        assert_eq!(
            v["spec"],
            json!({"resourceAttributes": {"verb": "create", "resource": "pods"}})
        );
        assert!(decode(b"k8s\0\xff", "p").is_err());

        // An Eviction with a negative grace period and a dry run.
        let opts = [
            vec![8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1],
            field(5, b"All"),
        ]
        .concat();
        let meta = [
            field(1, b"web"),
            field(12, &[field(1, b"k"), field(2, b"v")].concat()),
        ]
        .concat();
        let raw = [field(1, &meta), field(2, &opts)].concat();
        let tm = [field(1, b"policy/v1"), field(2, b"Eviction")].concat();
        let body = [MAGIC.to_vec(), field(1, &tm), field(2, &raw)].concat();
        let v = decode(&body, "application/vnd.kubernetes.protobuf").unwrap();
        assert_eq!(
            v,
            json!({"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": "web", "annotations": {"k": "v"}},
                "deleteOptions": {"gracePeriodSeconds": -1, "dryRun": ["All"]}})
        );
        let tm = [field(1, b"v1"), field(2, b"ConfigMap")].concat();
        let body = [MAGIC.to_vec(), field(1, &tm), field(2, b"")].concat();
        assert_eq!(decode(&body, "p").unwrap_err().code, 415);
        assert!(decode(b"nope", "p").is_err());
    }
}
