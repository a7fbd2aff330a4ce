//! Encoding JSON into protobuf wire bytes, message by message, following
//! the schema: varints, keys, length-delimited fields, and the Kubernetes
//! JSON conventions undone (times, quantities, `IntOrString`, embedded
//! JSON).
//!
//! This module must NOT add the envelope or decide what is encoded: the
//! parent's `encode`, `watch_frame` and `Frame` do.

use super::*;

pub(super) fn put_varint(out: &mut Vec<u8>, v: u64) {
    let (bytes, n) = varint(v);
    out.extend_from_slice(&bytes[..n]);
}

/// `v` as a varint, on the stack: its bytes and how many of them are used.
fn varint(mut v: u64) -> ([u8; 10], usize) {
    let (mut bytes, mut n) = ([0u8; 10], 0);
    while v >= 0x80 {
        bytes[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    bytes[n] = v as u8;
    (bytes, n + 1)
}

pub(super) fn put_key(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire_type));
}

pub(super) fn put_bytes(out: &mut Vec<u8>, number: u32, b: &[u8]) {
    put_key(out, number, 2);
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Writes field `number` as a length-delimited field whose content `body`
/// writes in place, straight into `out`: the length goes in front once it
/// is known (one placeholder byte, widened when the content is 128 bytes
/// or more), so a nested message costs no buffer of its own and no copy
/// into its parent's. When `body` answers false nothing of the field is
/// left, and neither is false.
pub(super) fn put_nested(
    out: &mut Vec<u8>,
    number: u32,
    body: impl FnOnce(&mut Vec<u8>) -> bool,
) -> bool {
    let start = out.len();
    put_key(out, number, 2);
    let len_at = out.len();
    out.push(0);
    let content_at = out.len();
    if !body(out) {
        out.truncate(start);
        return false;
    }
    let len = out.len() - content_at;
    if len < 0x80 {
        out[len_at] = len as u8;
    } else {
        // Built on the stack: a buffer per long message is what writing
        // in place avoids.
        let (bytes, n) = varint(len as u64);
        out.splice(len_at..content_at, bytes[..n].iter().copied());
    }
    true
}

pub(super) fn json_i64(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_u64().map(|u| u as i64))
        .or_else(|| v.as_f64().map(|f| f as i64))
}

/// Encodes one value of a field; values of the wrong JSON type are left
/// out (what is stored was checked when it was written).
pub(super) fn encode_value(s: &Schema, number: u32, ty: Ty, v: &Value, out: &mut Vec<u8>) {
    match ty {
        Ty::Str => {
            if let Some(x) = v.as_str() {
                put_bytes(out, number, x.as_bytes());
            }
        }
        Ty::Bytes => {
            if let Some(b) = v
                .as_str()
                .and_then(|x| base64::engine::general_purpose::STANDARD.decode(x).ok())
            {
                put_bytes(out, number, &b);
            }
        }
        Ty::Bool => {
            if let Some(b) = v.as_bool() {
                put_key(out, number, 0);
                put_varint(out, u64::from(b));
            }
        }
        Ty::I32 | Ty::I64 => {
            if let Some(n) = json_i64(v) {
                let n = if ty == Ty::I32 {
                    i64::from(n as i32)
                } else {
                    n
                };
                put_key(out, number, 0);
                put_varint(out, n as u64);
            }
        }
        Ty::F64 => {
            if let Some(f) = v.as_f64() {
                put_key(out, number, 1);
                out.extend_from_slice(&f.to_bits().to_le_bytes());
            }
        }
        Ty::Msg(i) => {
            put_nested(out, number, |out| encode_message(s, i, v, out));
        }
        Ty::MapStr | Ty::MapBytes | Ty::MapMsg(_) => {
            let Some(map) = v.as_object() else { return };
            let entry = |out: &mut Vec<u8>, k: &str, val: &Value| {
                put_nested(out, number, |entry| {
                    put_bytes(entry, 1, k.as_bytes());
                    match ty {
                        Ty::MapStr => encode_value(s, 2, Ty::Str, val, entry),
                        Ty::MapBytes => encode_value(s, 2, Ty::Bytes, val, entry),
                        // An entry's message is written even when empty.
                        Ty::MapMsg(i) => {
                            put_nested(entry, 2, |inner| {
                                encode_message(s, i, val, inner);
                                true
                            });
                        }
                        _ => {}
                    }
                    true
                });
            };
            // The Go encoder writes map entries in key order; most maps
            // are small and already in it.
            if map.keys().is_sorted() {
                for (k, val) in map {
                    entry(out, k, val);
                }
            } else {
                let mut sorted: Vec<(&String, &Value)> = map.iter().collect();
                sorted.sort_unstable_by_key(|(k, _)| *k);
                for (k, val) in sorted {
                    entry(out, k, val);
                }
            }
        }
    }
}

/// Encodes a message's JSON form; false when the value does not fit it
/// (then nothing is written for it).
pub(super) fn encode_message(s: &Schema, idx: usize, v: &Value, out: &mut Vec<u8>) -> bool {
    let m = &s.messages[idx];
    match m.special {
        Special::None => {
            let Some(obj) = v.as_object() else {
                return false;
            };
            encode_fields(s, idx, obj, out);
            true
        }
        Special::Time | Special::MicroTime => {
            let Some(t) = v
                .as_str()
                .and_then(|x| chrono::DateTime::parse_from_rfc3339(x).ok())
            else {
                return false;
            };
            let (secs, nanos) = (t.timestamp(), t.timestamp_subsec_nanos());
            put_key(out, 1, 0);
            put_varint(out, secs as u64);
            if nanos != 0 {
                put_key(out, 2, 0);
                put_varint(out, u64::from(nanos));
            }
            true
        }
        Special::Duration => {
            let Some(d) = v.as_str().and_then(parse_duration) else {
                return false;
            };
            put_key(out, 1, 0);
            put_varint(out, d as u64);
            true
        }
        Special::IntOrString => {
            match v {
                Value::String(x) => {
                    put_key(out, 1, 0);
                    put_varint(out, 1);
                    put_bytes(out, 3, x.as_bytes());
                }
                Value::Number(_) => {
                    let n = json_i64(v).unwrap_or_default() as i32;
                    put_key(out, 1, 0);
                    put_varint(out, 0);
                    put_key(out, 2, 0);
                    put_varint(out, i64::from(n) as u64);
                }
                _ => return false,
            }
            true
        }
        Special::Quantity => {
            match v {
                Value::String(x) => put_bytes(out, 1, x.as_bytes()),
                Value::Number(n) => put_bytes(out, 1, n.to_string().as_bytes()),
                _ => return false,
            }
            true
        }
        Special::RawJson => {
            if v.is_null() {
                return false;
            }
            put_nested(out, 1, |out| {
                let at = out.len();
                // Serializing a `Value` cannot fail; were it to, the field
                // is left empty as an unencodable value was before.
                if serde_json::to_writer(&mut *out, v).is_err() {
                    out.truncate(at);
                }
                true
            });
            true
        }
        Special::Strings => {
            let Some(items) = v.as_array() else {
                return false;
            };
            for item in items {
                encode_value(s, 1, Ty::Str, item, out);
            }
            true
        }
        Special::SchemaOrArray | Special::SchemaOrBool | Special::SchemaOrStrings => {
            let Some(props) = m.fields.iter().find_map(|f| match f.ty {
                Ty::Msg(i) => Some(i),
                _ => None,
            }) else {
                return false;
            };
            match (m.special, v) {
                (Special::SchemaOrBool, Value::Bool(b)) => {
                    put_key(out, 1, 0);
                    put_varint(out, u64::from(*b));
                }
                (Special::SchemaOrBool, Value::Object(_)) => {
                    put_key(out, 1, 0);
                    put_varint(out, 1);
                    encode_value(s, 2, Ty::Msg(props), v, out);
                }
                (Special::SchemaOrArray, Value::Array(items)) => {
                    for item in items {
                        encode_value(s, 2, Ty::Msg(props), item, out);
                    }
                }
                (Special::SchemaOrStrings, Value::Array(items)) => {
                    for item in items {
                        encode_value(s, 2, Ty::Str, item, out);
                    }
                }
                (_, Value::Object(_)) if m.special != Special::SchemaOrBool => {
                    encode_value(s, 1, Ty::Msg(props), v, out);
                }
                _ => return false,
            }
            true
        }
    }
}

pub(super) fn encode_fields(s: &Schema, idx: usize, obj: &Map<String, Value>, out: &mut Vec<u8>) {
    let m = &s.messages[idx];
    if let Some(by_json) = &m.by_json
        && obj.len() < m.fields.len()
        && obj.len() <= FEW
    {
        encode_present(s, m, by_json, obj, out);
    } else {
        encode_walk(s, idx, obj, out);
    }
}

/// Encodes an object by walking the message's fields in number order and
/// looking each up in it; inline structs read the same object.
pub(super) fn encode_walk(s: &Schema, idx: usize, obj: &Map<String, Value>, out: &mut Vec<u8>) {
    for f in &s.messages[idx].fields {
        let Some(name) = f.json.as_deref() else {
            // Inline: its fields are read from the same object.
            if let Ty::Msg(inner) = f.ty {
                put_nested(out, f.number, |out| {
                    let at = out.len();
                    encode_fields(s, inner, obj, out);
                    out.len() > at
                });
            }
            continue;
        };
        if let Some(v) = obj.get(name) {
            encode_field(s, f, v, out);
        }
    }
}

/// The most properties [`encode_present`] sorts on the stack.
const FEW: usize = 32;

/// Encodes an object by its own properties: each is found among the
/// message's fields by name (binary search), and they are written in
/// field-number order, as walking the fields would write them.
pub(super) fn encode_present(
    s: &Schema,
    m: &schema::Message,
    by_json: &[usize],
    obj: &Map<String, Value>,
    out: &mut Vec<u8>,
) {
    let mut present: [(u32, usize, &Value); FEW] = [(0, 0, &Value::Null); FEW];
    let mut n = 0;
    for (k, v) in obj {
        let found = by_json.binary_search_by(|i| {
            m.fields[*i]
                .json
                .as_deref()
                .unwrap_or_default()
                .cmp(k.as_str())
        });
        if let (Ok(at), Some(slot)) = (found, present.get_mut(n)) {
            let i = by_json[at];
            *slot = (m.fields[i].number, i, v);
            n += 1;
        }
    }
    let present = &mut present[..n];
    present.sort_unstable_by_key(|(number, _, _)| *number);
    for (_, i, v) in present.iter() {
        encode_field(s, &m.fields[*i], v, out);
    }
}

/// One field's value (every item of a repeated one); null is absence.
fn encode_field(s: &Schema, f: &schema::Field, v: &Value, out: &mut Vec<u8>) {
    if v.is_null() {
        return;
    }
    if f.repeated {
        if let Some(items) = v.as_array() {
            for item in items {
                encode_value(s, f.number, f.ty, item, out);
            }
        }
    } else {
        encode_value(s, f.number, f.ty, v, out);
    }
}
