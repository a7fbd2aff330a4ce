//! core/v1 ConfigMap, Secret and ServiceAccount: keys, sizes, Secret types and
//! the `immutable` rules.
//!
//! This module must NOT check the generic metadata rules: [`super::validate`]
//! runs those for every kind.

use super::*;

/// Bytes a base64 string decodes to, or `None` when it is not base64.
pub(super) fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut nbits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        nbits += 6;
        if nbits >= 8 {
            nbits -= 8;
            out.push(((acc >> nbits) & 0xff) as u8);
        }
    }
    Some(out)
}

/// Size of a `[]byte` field value as stored in JSON (base64); a value that
/// is not base64 counts its text length (the server would not decode it).
pub(super) fn bytes_len(v: &Value) -> usize {
    v.as_str()
        .map_or(0, |s| base64_decode(s).map_or(s.len(), |b| b.len()))
}

pub(super) fn validate_config_map(obj: &Value, errs: &mut Vec<FieldError>) {
    let empty = Map::new();
    let data = map_at(obj, "data").unwrap_or(&empty);
    let binary = map_at(obj, "binaryData").unwrap_or(&empty);
    let mut total = 0usize;
    for (k, v) in data {
        for msg in is_config_map_key(k) {
            errs.push(invalid_str(&key("data", k), k, &msg));
        }
        if binary.contains_key(k) {
            errs.push(invalid_str(
                &key("data", k),
                k,
                "duplicate of key present in binaryData",
            ));
        }
        total += v.as_str().map_or(0, str::len);
    }
    for (k, v) in binary {
        for msg in is_config_map_key(k) {
            errs.push(invalid_str(&key("binaryData", k), k, &msg));
        }
        if data.contains_key(k) {
            errs.push(invalid_str(
                &key("binaryData", k),
                k,
                "duplicate of key present in data",
            ));
        }
        total += bytes_len(v);
    }
    if total > MAX_DATA_SIZE {
        // Upstream reports the whole object: `field.NewPath("")`, which
        // prints as `[]`.
        errs.push(too_long("[]", MAX_DATA_SIZE));
    }
}

/// After `immutable: true`, the flag and the data fields may not change.
pub(super) fn validate_immutable_data(
    obj: &Value,
    old: &Value,
    fields: &[&str],
    errs: &mut Vec<FieldError>,
) {
    if get(old, "immutable").and_then(Value::as_bool) != Some(true) {
        return;
    }
    if get(obj, "immutable").and_then(Value::as_bool) != Some(true) {
        errs.push(forbidden("immutable", IMMUTABLE_WHEN_SET));
    }
    for f in fields {
        let new = map_at(obj, f).filter(|m| !m.is_empty());
        let before = map_at(old, f).filter(|m| !m.is_empty());
        if new != before {
            errs.push(forbidden(f, IMMUTABLE_WHEN_SET));
        }
    }
}

/// A Secret's data as the server sees it: `stringData` merged over `data`
/// (the v1 conversion does this before validation), values as bytes.
pub(super) fn secret_data(obj: &Value) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    if let Some(data) = map_at(obj, "data") {
        for (k, v) in data {
            let s = v.as_str().unwrap_or("");
            out.insert(
                k.clone(),
                base64_decode(s).unwrap_or_else(|| s.as_bytes().to_vec()),
            );
        }
    }
    if let Some(data) = map_at(obj, "stringData") {
        for (k, v) in data {
            out.insert(k.clone(), v.as_str().unwrap_or("").as_bytes().to_vec());
        }
    }
    out
}

pub(super) fn validate_secret(obj: &Value, errs: &mut Vec<FieldError>) {
    let ty = opt_string(obj, "type").unwrap_or("Opaque");
    let data = secret_data(obj);
    let mut total = 0usize;
    for (k, v) in &data {
        for msg in is_config_map_key(k) {
            errs.push(invalid_str(&key("data", k), k, &msg));
        }
        total += v.len();
    }
    if total > MAX_DATA_SIZE {
        errs.push(too_long("data", MAX_DATA_SIZE));
    }
    match ty {
        "kubernetes.io/service-account-token" => {
            let sa = get(obj, "metadata")
                .map(|m| {
                    map_at(m, "annotations")
                        .and_then(|a| a.get("kubernetes.io/service-account.name"))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                })
                .unwrap_or("");
            if sa.is_empty() {
                errs.push(required(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                    "",
                ));
            }
        }
        "kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson" => {
            let k = if ty == "kubernetes.io/dockercfg" {
                ".dockercfg"
            } else {
                ".dockerconfigjson"
            };
            match data.get(k) {
                None => errs.push(required(&key("data", k), "")),
                Some(bytes) => {
                    if let Some(msg) = go_json_map_error(bytes) {
                        errs.push(invalid_str(
                            &key("data", k),
                            "<secret contents redacted>",
                            &msg,
                        ));
                    }
                }
            }
        }
        "kubernetes.io/basic-auth"
            if !data.contains_key("username") && !data.contains_key("password") =>
        {
            // Upstream builds these paths from the literal "data[%s]".
            errs.push(required("data[%s][username]", ""));
            errs.push(required("data[%s][password]", ""));
        }
        "kubernetes.io/ssh-auth" if data.get("ssh-privatekey").is_none_or(Vec::is_empty) => {
            errs.push(required("data[%s][ssh-privatekey]", ""));
        }
        "kubernetes.io/tls" => {
            for k in ["tls.crt", "tls.key"] {
                if !data.contains_key(k) {
                    errs.push(required(&key("data", k), ""));
                }
            }
        }
        _ => {}
    }
}

/// The error Go's `json.Unmarshal(b, &map[string]interface{}{})` returns,
/// if any. Type mismatches and truncation are worded exactly; other syntax
/// errors are reconstructed for the common cases (`invalid character 'x'
/// looking for beginning of value`, `... after top-level value`) and fall
/// back to Go's generic wording otherwise.
pub(super) fn go_json_map_error(bytes: &[u8]) -> Option<String> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(_) | Value::Null) => None,
        Ok(other) => {
            let ty = match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                _ => "bool",
            };
            Some(format!(
                "json: cannot unmarshal {ty} into Go value of type map[string]interface {{}}"
            ))
        }
        Err(e) if e.is_eof() => Some("unexpected end of JSON input".to_string()),
        Err(e) => {
            let text = String::from_utf8_lossy(bytes);
            let first = text
                .trim_start_matches([' ', '\t', '\n', '\r'])
                .chars()
                .next();
            let valid_start = first.is_some_and(|c| {
                matches!(c, '{' | '[' | '"' | '-' | 't' | 'f' | 'n') || c.is_ascii_digit()
            });
            if let Some(c) = first.filter(|_| !valid_start) {
                return Some(format!(
                    "invalid character {} looking for beginning of value",
                    go_quote_char(c)
                ));
            }
            if e.to_string().starts_with("trailing characters") {
                let c = text
                    .chars()
                    .nth(e.column().saturating_sub(1))
                    .unwrap_or(' ');
                return Some(format!(
                    "invalid character {} after top-level value",
                    go_quote_char(c)
                ));
            }
            Some("invalid character in JSON input".to_string())
        }
    }
}

/// Go's `quoteChar` in `encoding/json` errors.
pub(super) fn go_quote_char(c: char) -> String {
    match c {
        '\'' => "'\\''".to_string(),
        '"' => "'\"'".to_string(),
        c => {
            let q = quote(&c.to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}
