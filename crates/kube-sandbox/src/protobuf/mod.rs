//! Protobuf, as the API server speaks it for built-in kinds
//! (`application/vnd.kubernetes.protobuf`): request bodies decoded into the
//! JSON the rest of the sandbox works on, and JSON answers, lists and watch
//! events encoded back.
//!
//! The envelope is the API machinery's: the magic `k8s\0`, then a
//! `runtime.Unknown` (type meta `{apiVersion, kind}` = 1, the object's own
//! message = 2, content encoding = 3, content type = 4). A watch stream is
//! a sequence of frames, each a 4-byte big-endian length and a
//! `metav1.WatchEvent` (no envelope) whose object is a `RawExtension`
//! holding the enveloped object. A frame therefore ends with its object's
//! own protobuf answer ([`Frame`]): a write's event keeps one frame, which
//! serves both the write's answer and every protobuf watch that sends the
//! event, so a write is encoded once however many watch it (gets, lists
//! and the initial events of a watch without a revision are encoded as
//! they are served).
//!
//! The conversion is generic: `schema` knows every message's fields (from
//! the `k8s-pb` crate, Apache-2.0 like this project, whose generated
//! sources `tools/k8s_pb_table.py` reads) and their JSON names; the
//! Kubernetes JSON conventions are applied here: int64 as JSON numbers,
//! `Time`/`MicroTime` as RFC 3339 strings, `IntOrString`, `Quantity` as its
//! string, `RawExtension`/`FieldsV1` as embedded JSON, bytes as base64,
//! string-keyed maps as objects, inline embedded structs flattened.
//!
//! Decoding follows proto2 presence as the Go encoder writes it: a Go
//! value field is always written, so an empty string or a zero time is
//! read as absent (the JSON encoder would have left it out); numbers and
//! booleans are kept as written (a pointer's explicit zero, such as
//! `replicas: 0`, must survive).
//!
//! What this module must NOT do: decide what is served (custom resources
//! and Tables stay JSON: `http` asks only for built-in kinds), or touch
//! the store.

mod schema;

use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::status::ApiError;
use schema::{Schema, Special, Ty, schema};

mod encoder;

use encoder::*;

/// The media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The media type of a protobuf watch stream.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// The prefix of every Kubernetes protobuf body.
const MAGIC: &[u8] = b"k8s\0";

/// Whether a Content-Type (or one Accept entry) names protobuf.
pub fn is_protobuf(media_type: &str) -> bool {
    media_type
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case(MEDIA_TYPE))
}

/// What an `Accept` header asks for, in its order: `Some(true)` when
/// protobuf comes before any JSON (or wildcard) entry, `Some(false)` when
/// JSON does, `None` when it names neither (no header: JSON).
pub fn prefers_protobuf(accept: Option<&str>) -> Option<bool> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Some(false);
    };
    for entry in accept.split(',') {
        let media = entry.split(';').next().unwrap_or_default().trim();
        if media.eq_ignore_ascii_case(MEDIA_TYPE) {
            return Some(true);
        }
        if matches!(media, "application/json" | "*/*" | "application/*" | "") {
            return Some(false);
        }
    }
    None
}

/// Why a protobuf body did not decode, worded as the Go decoder words it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct WireError(String);

fn eof() -> WireError {
    WireError("unexpected EOF".into())
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// One field's raw value.
enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    /// A 32-bit fixed value: no Kubernetes field has one; skipped.
    Fixed32,
    Bytes(&'a [u8]),
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn varint(&mut self) -> Result<u64, WireError> {
        let mut out = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos).ok_or_else(eof)?;
            self.pos += 1;
            out |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err(WireError("proto: integer overflow".into()))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(n).ok_or_else(eof)?;
        let out = self.buf.get(self.pos..end).ok_or_else(eof)?;
        self.pos = end;
        Ok(out)
    }

    /// The next field, `None` at the end.
    fn field(&mut self, message: &str) -> Result<Option<(u32, Wire<'a>)>, WireError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let (number, wire_type) = (key >> 3, key & 7);
        if number == 0 || number > u64::from(u32::MAX >> 3) {
            return Err(WireError(format!(
                "proto: {message}: illegal tag {number} (wire type {wire_type})"
            )));
        }
        let value = match wire_type {
            0 => Wire::Varint(self.varint()?),
            1 => {
                let b = self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                Wire::Fixed64(u64::from_le_bytes(a))
            }
            2 => {
                let len = self.varint()?;
                if i64::try_from(len).is_err() {
                    return Err(WireError(
                        "proto: negative length found during unmarshaling".into(),
                    ));
                }
                let len = usize::try_from(len).map_err(|_| eof())?;
                Wire::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Wire::Fixed32
            }
            other => return Err(WireError(format!("proto: illegal wireType {other}"))),
        };
        // Field numbers fit: checked above.
        Ok(Some((number as u32, value)))
    }
}

fn short_name(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

fn wrong_wire(message: &str, field: &schema::Field, wire: &Wire<'_>) -> WireError {
    let wt = match wire {
        Wire::Varint(_) => 0,
        Wire::Fixed64(_) => 1,
        Wire::Bytes(_) => 2,
        Wire::Fixed32 => 5,
    };
    WireError(format!(
        "proto: wrong wireType = {wt} for field {} of {}",
        field.json.as_deref().unwrap_or(&field.snake),
        short_name(message)
    ))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn raw_json(b: &[u8]) -> Result<Value, WireError> {
    if b.is_empty() {
        return Ok(Value::Null);
    }
    crate::json::parse(b).map_err(|e| WireError(format!("invalid embedded JSON: {e}")))
}

/// Go's `time.Duration` string of a count of nanoseconds.
fn duration_string(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    let frac = |v: u64, unit: u64| -> String {
        let whole = v / unit;
        let rest = v % unit;
        if rest == 0 {
            whole.to_string()
        } else {
            let digits = unit.to_string().len() - 1;
            let f = format!("{rest:0digits$}");
            format!("{whole}.{}", f.trim_end_matches('0'))
        }
    };
    if n < 1_000 {
        return format!("{sign}{n}ns");
    }
    if n < 1_000_000 {
        return format!("{sign}{}µs", frac(n, 1_000));
    }
    if n < 1_000_000_000 {
        return format!("{sign}{}ms", frac(n, 1_000_000));
    }
    let secs_part = n % 60_000_000_000;
    let mins = n / 60_000_000_000;
    let s = format!("{}s", frac(secs_part, 1_000_000_000));
    if mins == 0 {
        return format!("{sign}{s}");
    }
    if mins < 60 {
        return format!("{sign}{mins}m{s}");
    }
    format!("{sign}{}h{}m{s}", mins / 60, mins % 60)
}

/// Parses a Go duration string into nanoseconds.
fn parse_duration(s: &str) -> Option<i64> {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(0);
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let n: f64 = rest.get(..num_end)?.parse().ok()?;
        rest = rest.get(num_end..)?;
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match rest.get(..unit_end)? {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = rest.get(unit_end..)?;
        total += n * scale;
    }
    let v = total.round() as i64;
    Some(if neg { -v } else { v })
}

fn time_string(seconds: i64, nanos: i64, micro: bool) -> Option<String> {
    let t = chrono::DateTime::from_timestamp(seconds, u32::try_from(nanos).ok()?)?;
    Some(if micro {
        t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
    } else {
        t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
    })
}

/// Decodes a message into its JSON form, merging into `out` (inline
/// embedded structs share their parent's object).
fn decode_into(
    s: &Schema,
    idx: usize,
    buf: &[u8],
    out: &mut Map<String, Value>,
) -> Result<(), WireError> {
    let m = &s.messages[idx];
    let message = short_name(&m.path);
    let mut r = Reader::new(buf);
    while let Some((number, wire)) = r.field(message)? {
        // Unknown fields are skipped, as protobuf does.
        let Some(f) = m.fields.iter().find(|f| f.number == number) else {
            continue;
        };
        let Some(name) = f.json.as_deref() else {
            // Inline: its fields are the parent's.
            let (Ty::Msg(inner), Wire::Bytes(b)) = (f.ty, &wire) else {
                return Err(wrong_wire(&m.path, f, &wire));
            };
            decode_into(s, inner, b, out)?;
            continue;
        };
        match f.ty {
            Ty::MapStr | Ty::MapBytes | Ty::MapMsg(_) => {
                let Wire::Bytes(entry) = wire else {
                    return Err(wrong_wire(&m.path, f, &wire));
                };
                let (k, v) = map_entry(s, f.ty, entry)?;
                // Looked up by `&str`: `entry` would allocate the field's
                // name again for every entry of the map.
                match out.get_mut(name) {
                    Some(Value::Object(map)) => {
                        map.insert(k, v);
                    }
                    Some(_) => {}
                    None => {
                        out.insert(name.to_string(), Value::Object(Map::from_iter([(k, v)])));
                    }
                }
            }
            _ if f.repeated => {
                if !out.contains_key(name) {
                    out.insert(name.to_string(), Value::Array(Vec::new()));
                }
                let Some(Value::Array(list)) = out.get_mut(name) else {
                    continue;
                };
                // Numbers may come packed.
                if let (Ty::I32 | Ty::I64 | Ty::Bool | Ty::F64, Wire::Bytes(b)) = (f.ty, &wire) {
                    let mut packed = Reader::new(b);
                    while packed.pos < b.len() {
                        let v = match f.ty {
                            Ty::F64 => {
                                let raw = packed.take(8)?;
                                let mut a = [0u8; 8];
                                a.copy_from_slice(raw);
                                Wire::Fixed64(u64::from_le_bytes(a))
                            }
                            _ => Wire::Varint(packed.varint()?),
                        };
                        list.push(scalar(s, &m.path, f, &v)?);
                    }
                    continue;
                }
                list.push(scalar(s, &m.path, f, &wire)?);
            }
            _ => {
                let v = scalar(s, &m.path, f, &wire)?;
                // A Go value field is always written: its zero is absence.
                let absent = match &v {
                    Value::String(x) => x.is_empty(),
                    Value::Null => true,
                    _ => false,
                };
                if absent {
                    out.remove(name);
                } else {
                    out.insert(name.to_string(), v);
                }
            }
        }
    }
    Ok(())
}

fn map_entry(s: &Schema, ty: Ty, entry: &[u8]) -> Result<(String, Value), WireError> {
    let mut r = Reader::new(entry);
    let mut key = String::new();
    let mut value = match ty {
        Ty::MapMsg(i) => special_or_object(s, i, &[])?,
        _ => json!(""),
    };
    while let Some((n, w)) = r.field("MapEntry")? {
        match (n, w) {
            (1, Wire::Bytes(k)) => key = text(k),
            (2, Wire::Bytes(v)) => {
                value = match ty {
                    Ty::MapStr => json!(text(v)),
                    Ty::MapBytes => json!(base64::engine::general_purpose::STANDARD.encode(v)),
                    Ty::MapMsg(i) => special_or_object(s, i, v)?,
                    _ => Value::Null,
                }
            }
            (1 | 2, _) => return Err(WireError("proto: wrong wireType in map entry".into())),
            _ => {}
        }
    }
    Ok((key, value))
}

fn as_i64(f: &schema::Field, w: &Wire<'_>) -> Option<i64> {
    match (f.ty, w) {
        // Two's complement, as protobuf writes a negative int32 or int64.
        (Ty::I64, Wire::Varint(n)) => Some(*n as i64),
        (Ty::I32, Wire::Varint(n)) => Some(i64::from(*n as i32)),
        _ => None,
    }
}

/// One value of a field (not a map entry).
fn scalar(s: &Schema, path: &str, f: &schema::Field, w: &Wire<'_>) -> Result<Value, WireError> {
    Ok(match (f.ty, w) {
        (Ty::Str, Wire::Bytes(b)) => json!(text(b)),
        (Ty::Bytes, Wire::Bytes(b)) => json!(base64::engine::general_purpose::STANDARD.encode(b)),
        (Ty::Bool, Wire::Varint(n)) => json!(*n != 0),
        (Ty::I32 | Ty::I64, Wire::Varint(_)) => json!(as_i64(f, w)),
        (Ty::F64, Wire::Fixed64(bits)) => json!(f64::from_bits(*bits)),
        (Ty::Msg(i), Wire::Bytes(b)) => special_or_object(s, i, b)?,
        _ => return Err(wrong_wire(path, f, w)),
    })
}

/// Reads the fields of a small well-known message by number.
fn numbered<'a>(buf: &'a [u8], message: &str) -> Result<Vec<(u32, Wire<'a>)>, WireError> {
    let mut r = Reader::new(buf);
    let mut out = Vec::new();
    while let Some(f) = r.field(message)? {
        out.push(f);
    }
    Ok(out)
}

fn special_or_object(s: &Schema, idx: usize, buf: &[u8]) -> Result<Value, WireError> {
    let m = &s.messages[idx];
    let name = short_name(&m.path);
    match m.special {
        Special::None => {
            let mut out = Map::new();
            decode_into(s, idx, buf, &mut out)?;
            Ok(Value::Object(out))
        }
        Special::Time | Special::MicroTime => {
            let (mut seconds, mut nanos) = (0i64, 0i64);
            for (n, w) in numbered(buf, name)? {
                match (n, w) {
                    (1, Wire::Varint(v)) => seconds = v as i64,
                    (2, Wire::Varint(v)) => nanos = i64::from(v as i32),
                    _ => {}
                }
            }
            if seconds == 0 && nanos == 0 {
                return Ok(Value::Null);
            }
            time_string(seconds, nanos, m.special == Special::MicroTime)
                .map(Value::String)
                .ok_or_else(|| WireError(format!("proto: {name}: time out of range")))
        }
        Special::Duration => {
            let mut d = 0i64;
            for (n, w) in numbered(buf, name)? {
                if let (1, Wire::Varint(v)) = (n, w) {
                    d = v as i64;
                }
            }
            Ok(json!(duration_string(d)))
        }
        Special::IntOrString => {
            let (mut ty, mut int, mut st) = (0u64, 0i64, String::new());
            for (n, w) in numbered(buf, name)? {
                match (n, w) {
                    (1, Wire::Varint(v)) => ty = v,
                    (2, Wire::Varint(v)) => int = i64::from(v as i32),
                    (3, Wire::Bytes(b)) => st = text(b),
                    _ => {}
                }
            }
            Ok(if ty == 1 { json!(st) } else { json!(int) })
        }
        Special::Quantity => {
            let mut q = String::new();
            for (n, w) in numbered(buf, name)? {
                if let (1, Wire::Bytes(b)) = (n, w) {
                    q = text(b);
                }
            }
            Ok(json!(q))
        }
        Special::RawJson => {
            let mut v = Value::Null;
            for (n, w) in numbered(buf, name)? {
                if let (1, Wire::Bytes(b)) = (n, w) {
                    v = raw_json(b)?;
                }
            }
            Ok(v)
        }
        Special::Strings => {
            let mut items = Vec::new();
            for (n, w) in numbered(buf, name)? {
                if let (1, Wire::Bytes(b)) = (n, w) {
                    items.push(json!(text(b)));
                }
            }
            Ok(Value::Array(items))
        }
        Special::SchemaOrArray | Special::SchemaOrBool | Special::SchemaOrStrings => {
            let props = m
                .fields
                .iter()
                .find_map(|f| match f.ty {
                    Ty::Msg(i) => Some(i),
                    _ => None,
                })
                .ok_or_else(|| WireError(format!("proto: {name}: no schema field")))?;
            let mut schema_v = None;
            let mut many = Vec::new();
            let mut allows = None;
            for (n, w) in numbered(buf, name)? {
                match (m.special, n, w) {
                    (Special::SchemaOrBool, 1, Wire::Varint(v)) => allows = Some(v != 0),
                    (Special::SchemaOrBool, 2, Wire::Bytes(b)) => {
                        schema_v = Some(special_or_object(s, props, b)?)
                    }
                    (_, 1, Wire::Bytes(b)) if m.special != Special::SchemaOrBool => {
                        schema_v = Some(special_or_object(s, props, b)?)
                    }
                    (Special::SchemaOrArray, 2, Wire::Bytes(b)) => {
                        many.push(special_or_object(s, props, b)?)
                    }
                    (Special::SchemaOrStrings, 2, Wire::Bytes(b)) => many.push(json!(text(b))),
                    _ => {}
                }
            }
            Ok(match (m.special, schema_v, allows) {
                (Special::SchemaOrBool, Some(v), _) => v,
                (Special::SchemaOrBool, None, a) => json!(a.unwrap_or(false)),
                (_, Some(v), _) => v,
                (_, None, _) => Value::Array(many),
            })
        }
    }
}

// ---- encoding ----

/// The enveloped protobuf form of a JSON object of a built-in kind (its
/// own `apiVersion` and `kind` say which), `None` when it has none (a
/// custom resource, a Table).
pub fn encode(v: &Value) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(ENCODED_GUESS);
    encode_into(v, &mut out)?;
    Some(out)
}

/// A first guess of an encoding's size: a small object's whole frame fits
/// without growing the buffer.
const ENCODED_GUESS: usize = 512;

/// [`encode`], appended to `out`.
fn encode_into(v: &Value, out: &mut Vec<u8>) -> Option<()> {
    let s = schema();
    let api_version = v.get("apiVersion")?.as_str()?;
    let kind = v.get("kind")?.as_str()?;
    let idx = s.kind(api_version, kind)?;
    out.extend_from_slice(MAGIC);
    put_nested(out, 1, |type_meta| {
        put_bytes(type_meta, 1, api_version.as_bytes());
        put_bytes(type_meta, 2, kind.as_bytes());
        true
    });
    // The object's message is written even when nothing of it could be.
    put_nested(out, 2, |raw| {
        encode_message(s, idx, v, raw);
        true
    });
    // contentEncoding and contentType are written empty, as the Go
    // encoder writes its value fields.
    put_bytes(out, 3, b"");
    put_bytes(out, 4, b"");
    Some(())
}

/// The protobuf form of a JSON body, when it is of a built-in kind.
pub fn encode_json_bytes(body: &[u8]) -> Option<Vec<u8>> {
    let v: Value = crate::json::parse(body).ok()?;
    encode(&v)
}

/// One frame of a protobuf watch stream: the event's type and its
/// object's JSON form (`None` when the object has no protobuf form).
pub fn watch_frame(event_type: &str, object: &Value) -> Option<Bytes> {
    Frame::of_value(event_type, object).map(|f| f.frame)
}

/// A watch frame that can also serve its object alone: the frame ends
/// with the enveloped object (the `RawExtension`'s raw is the last field
/// of the event, and the object is all of that extension), so the
/// object's protobuf answer is a slice of the frame, not a second
/// encoding.
#[derive(Debug, Clone)]
pub struct Frame {
    frame: Bytes,
    /// Where the enveloped object starts in `frame`.
    object_at: usize,
}

impl Frame {
    /// The frame of an event of `event_type` whose object is the JSON
    /// `object` (`None` when the object has no protobuf form).
    pub fn of_json(event_type: &str, object: &[u8]) -> Option<Frame> {
        Frame::of_value(event_type, &crate::json::parse(object).ok()?)
    }

    /// The same from the object itself, where the caller has it parsed.
    /// One buffer holds the whole frame: the length prefix, the event, the
    /// `RawExtension` and the enveloped object at its end.
    pub fn of_value(event_type: &str, object: &Value) -> Option<Frame> {
        let mut b = Vec::with_capacity(ENCODED_GUESS);
        b.extend_from_slice(&[0; 4]);
        put_bytes(&mut b, 1, event_type.as_bytes());
        let mut enveloped_len = None;
        put_nested(&mut b, 2, |raw_ext| {
            put_nested(raw_ext, 1, |raw| {
                let at = raw.len();
                let ok = encode_into(object, raw).is_some();
                enveloped_len = ok.then(|| raw.len() - at);
                ok
            })
        });
        let enveloped_len = enveloped_len?;
        let len = u32::try_from(b.len() - 4).ok()?;
        b[..4].copy_from_slice(&len.to_be_bytes());
        // A frame lives as long as its event in the history: no spare
        // capacity kept with it.
        if b.capacity() - b.len() > b.len() / 8 {
            b.shrink_to_fit();
        }
        let object_at = b.len() - enveloped_len;
        Some(Frame {
            frame: Bytes::from(b),
            object_at,
        })
    }

    /// The length-prefixed frame, as a watch stream sends it.
    pub fn frame(&self) -> Bytes {
        self.frame.clone()
    }

    /// The enveloped object alone, as a get, create or update answers it.
    pub fn object(&self) -> Bytes {
        self.frame.slice(self.object_at..)
    }
}

/// The request body summary the server puts in a decode error: the first
/// 30 bytes in hex.
fn summary(body: &[u8]) -> String {
    const MAX: usize = 30;
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    match body {
        [] => "<empty>".into(),
        b if b.len() > MAX => format!("{} ...", hex(&b[..MAX])),
        b => hex(b),
    }
}

/// Decodes a protobuf request body into its JSON form, with `apiVersion`
/// and `kind` from the envelope (or, where the envelope leaves them empty,
/// from the URL: `expected_api_version`, `expected_kind`). Errors are the
/// server's 400s: a body that is not an envelope is "unrecognized"; an
/// object that does not decode "cannot be handled".
pub fn decode(
    body: &[u8],
    expected_api_version: &str,
    expected_kind: &str,
) -> Result<Value, ApiError> {
    let unrecognized = |e: &str| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {expected_kind}): {e} ({})",
            summary(body)
        ))
    };
    let rest = match body.strip_prefix(MAGIC) {
        Some([]) => return Err(unrecognized("empty body")),
        Some(rest) => rest,
        None => {
            return Err(unrecognized(
                "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]",
            ));
        }
    };
    let mut api_version = String::new();
    let mut kind = String::new();
    let mut raw: &[u8] = &[];
    let envelope = (|| -> Result<(), WireError> {
        let mut r = Reader::new(rest);
        while let Some((n, w)) = r.field("Unknown")? {
            match (n, w) {
                (1, Wire::Bytes(tm)) => {
                    let mut t = Reader::new(tm);
                    while let Some((n, w)) = t.field("TypeMeta")? {
                        match (n, w) {
                            (1, Wire::Bytes(b)) => api_version = text(b),
                            (2, Wire::Bytes(b)) => kind = text(b),
                            (1 | 2, _) => {
                                return Err(WireError(
                                    "proto: wrong wireType for field TypeMeta".into(),
                                ));
                            }
                            _ => {}
                        }
                    }
                }
                (2, Wire::Bytes(b)) => raw = b,
                (3 | 4, Wire::Bytes(_)) => {}
                (1..=4, _) => {
                    return Err(WireError("proto: wrong wireType for field Unknown".into()));
                }
                _ => {}
            }
        }
        Ok(())
    })();
    if let Err(WireError(e)) = envelope {
        return Err(unrecognized(&e));
    }
    if kind.is_empty() {
        kind = expected_kind.to_string();
    }
    if api_version.is_empty() {
        api_version = expected_api_version.to_string();
    }
    let version = api_version
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_string();
    let cannot = |e: &str| {
        ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {expected_kind}: {e}"
        ))
    };
    let s = schema();
    let Some(idx) = s.kind(&api_version, &kind) else {
        return Err(cannot(&format!(
            "no kind {kind:?} is registered for version {api_version:?} in scheme \"pkg/api/legacyscheme/scheme.go:30\""
        )));
    };
    let mut obj = Map::new();
    obj.insert("apiVersion".into(), json!(api_version));
    obj.insert("kind".into(), json!(kind));
    decode_into(s, idx, raw, &mut obj).map_err(|WireError(e)| cannot(&e))?;
    Ok(Value::Object(obj))
}

#[cfg(test)]
mod tests;
