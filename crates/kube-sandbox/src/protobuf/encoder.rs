//! Encoding JSON into protobuf wire bytes, message by message, following
//! the schema: varints, keys, length-delimited fields, and the Kubernetes
//! JSON conventions undone (times, quantities, `IntOrString`, embedded
//! JSON).
//!
//! This module must NOT add the envelope or decide what is encoded: the
//! parent's `encode`, `watch_frame` and `Frame` do.

use super::*;

pub(super) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn put_key(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire_type));
}

pub(super) fn put_bytes(out: &mut Vec<u8>, number: u32, b: &[u8]) {
    put_key(out, number, 2);
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
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
            let mut inner = Vec::new();
            if encode_message(s, i, v, &mut inner) {
                put_bytes(out, number, &inner);
            }
        }
        Ty::MapStr | Ty::MapBytes | Ty::MapMsg(_) => {
            let Some(map) = v.as_object() else { return };
            // The Go encoder writes map entries in key order.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for k in keys {
                let val = &map[k];
                let mut entry = Vec::new();
                put_bytes(&mut entry, 1, k.as_bytes());
                match ty {
                    Ty::MapStr => encode_value(s, 2, Ty::Str, val, &mut entry),
                    Ty::MapBytes => encode_value(s, 2, Ty::Bytes, val, &mut entry),
                    Ty::MapMsg(i) => {
                        let mut inner = Vec::new();
                        encode_message(s, i, val, &mut inner);
                        put_bytes(&mut entry, 2, &inner);
                    }
                    _ => {}
                }
                put_bytes(out, number, &entry);
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
            let q = match v {
                Value::String(x) => x.clone(),
                Value::Number(n) => n.to_string(),
                _ => return false,
            };
            put_bytes(out, 1, q.as_bytes());
            true
        }
        Special::RawJson => {
            if v.is_null() {
                return false;
            }
            put_bytes(out, 1, &serde_json::to_vec(v).unwrap_or_default());
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
    for f in &s.messages[idx].fields {
        let Some(name) = f.json.as_deref() else {
            // Inline: its fields are read from the same object.
            if let Ty::Msg(inner) = f.ty {
                let mut b = Vec::new();
                encode_fields(s, inner, obj, &mut b);
                if !b.is_empty() {
                    put_bytes(out, f.number, &b);
                }
            }
            continue;
        };
        let Some(v) = obj.get(name).filter(|v| !v.is_null()) else {
            continue;
        };
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
}
