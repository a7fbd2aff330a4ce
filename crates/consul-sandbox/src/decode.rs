//! Decoding of request bodies the way Consul's Go server decodes them.
//!
//! Consul uses Go's `encoding/json`, which differs from a strict serde
//! derive in ways real clients rely on: field names match
//! case-insensitively, unknown fields are ignored, `null` leaves a field at
//! its zero value, and only the first JSON value of the body is read
//! (trailing bytes are ignored). Numbers never coerce to or from strings.
//! Errors use Go's wording (`json: cannot unmarshal string into Go struct
//! field RegisterRequest.Service.Port of type int`) so the 400 bodies look
//! like Consul's.
//!
//! This module only turns bytes into plain request structs. It must NOT
//! validate business rules (missing node names and the like are the store's
//! and the handlers' job) and must never panic, whatever the input.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::model::{OptMap, ServiceAddress, ServicePort, Weights};

/// Why a body could not be decoded. Never retryable: the client must fix
/// the request. Rendered after Consul's prefix (`Request decode failed: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The body was empty (Go's decoder reports `EOF`).
    #[error("EOF")]
    Empty,
    /// The body ended in the middle of a JSON value.
    #[error("unexpected EOF")]
    Truncated,
    /// The body is not JSON.
    #[error("{0}")]
    Syntax(String),
    /// A field holds a JSON value of the wrong type.
    #[error("json: cannot unmarshal {found} into Go struct field {path} of type {want}")]
    FieldType {
        /// The JSON type found (`string`, `number 1.5`, ...).
        found: String,
        /// Go's dotted field path, e.g. `RegisterRequest.Service.Port`.
        path: String,
        /// The Go type expected.
        want: &'static str,
    },
    /// The whole body is of the wrong JSON type.
    #[error("json: cannot unmarshal {found} into Go value of type {want}")]
    ValueType {
        /// The JSON type found.
        found: String,
        /// The Go type expected.
        want: &'static str,
    },
}

/// A node as `PUT /v1/txn` node operations carry it (`api.Node`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct NodeIn {
    pub id: String,
    pub node: String,
    pub address: String,
    pub datacenter: String,
    pub tagged_addresses: OptMap,
    pub meta: OptMap,
    pub modify_index: u64,
    /// `Partition` (Enterprise; ignored by CE).
    pub partition: String,
}

/// A service instance as registrations and transactions carry it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ServiceIn {
    pub kind: String,
    pub id: String,
    pub service: String,
    pub tags: Option<Vec<String>>,
    pub address: String,
    pub tagged_addresses: BTreeMap<String, ServiceAddress>,
    pub meta: OptMap,
    pub port: i64,
    pub ports: Vec<ServicePort>,
    pub weights: Option<Weights>,
    pub enable_tag_override: bool,
    pub modify_index: u64,
    /// `Namespace` and `Partition` (Enterprise; ignored by CE).
    pub namespace: String,
    pub partition: String,
}

/// A health check as registrations and transactions carry it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CheckIn {
    pub node: String,
    pub check_id: String,
    pub name: String,
    pub status: String,
    pub notes: String,
    pub output: String,
    pub service_id: String,
    pub service_name: String,
    pub service_tags: Option<Vec<String>>,
    pub check_type: String,
    pub definition: Option<Value>,
    pub modify_index: u64,
    /// `Namespace` (Enterprise): a node-level check's; a service check
    /// takes its service's.
    pub namespace: String,
    /// `Partition` (Enterprise): its node's (txn check ops).
    pub partition: String,
}

/// Body of `PUT /v1/catalog/register` (`structs.RegisterRequest`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RegisterReq {
    pub datacenter: String,
    pub id: String,
    pub node: String,
    pub address: String,
    pub tagged_addresses: OptMap,
    pub node_meta: OptMap,
    pub service: Option<ServiceIn>,
    pub check: Option<CheckIn>,
    pub checks: Vec<CheckIn>,
    pub skip_node_update: bool,
    /// `Namespace` and `Partition` of the request (Enterprise).
    pub namespace: String,
    pub partition: String,
}

/// Body of `PUT /v1/catalog/deregister` (`structs.DeregisterRequest`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct DeregisterReq {
    pub datacenter: String,
    pub node: String,
    pub service_id: String,
    pub check_id: String,
    /// `Namespace` and `Partition` of the request (Enterprise).
    pub namespace: String,
    pub partition: String,
}

/// One element of a `PUT /v1/txn` body (`api.TxnOp`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TxnOpIn {
    /// A KV operation; the sandbox has no KV store.
    Kv,
    /// A node operation.
    Node { verb: String, node: NodeIn },
    /// A service operation on the named node.
    Service {
        verb: String,
        node: String,
        service: ServiceIn,
    },
    /// A check operation.
    Check { verb: String, check: CheckIn },
    /// An element with no operation at all.
    Empty,
}

/// Parses the first JSON value of `body`, ignoring anything after it, as
/// Go's `json.Decoder.Decode` does.
pub(crate) fn first_value(body: &[u8]) -> Result<Value, DecodeError> {
    let mut stream = serde_json::Deserializer::from_slice(body).into_iter::<Value>();
    match stream.next() {
        None => Err(DecodeError::Empty),
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) if e.is_eof() => Err(DecodeError::Truncated),
        Some(Err(e)) => Err(DecodeError::Syntax(syntax_message(&e))),
    }
}

/// Rephrases serde's syntax errors closer to Go's `invalid character ...`.
fn syntax_message(e: &serde_json::Error) -> String {
    format!(
        "invalid character at line {} column {}: {e}",
        e.line(),
        e.column()
    )
}

/// Decodes a catalog registration.
pub(crate) fn register(body: &[u8]) -> Result<RegisterReq, DecodeError> {
    let v = first_value(body)?;
    let Some(o) = Obj::root(&v, "RegisterRequest", "structs.RegisterRequest")? else {
        return Ok(RegisterReq::default());
    };
    Ok(RegisterReq {
        datacenter: o.string("Datacenter")?,
        id: o.string("ID")?,
        node: o.string("Node")?,
        address: o.string("Address")?,
        tagged_addresses: o.string_map("TaggedAddresses")?,
        node_meta: o.string_map("NodeMeta")?,
        service: match o.object("Service")? {
            Some(s) => Some(service_in(&s)?),
            None => None,
        },
        check: match o.object("Check")? {
            Some(c) => Some(check_in(&c)?),
            None => None,
        },
        checks: o.list("Checks", check_in)?,
        skip_node_update: o.boolean("SkipNodeUpdate")?,
        namespace: o.string("Namespace")?,
        partition: o.string("Partition")?,
    })
}

/// Decodes a catalog deregistration.
pub(crate) fn deregister(body: &[u8]) -> Result<DeregisterReq, DecodeError> {
    let v = first_value(body)?;
    let Some(o) = Obj::root(&v, "DeregisterRequest", "structs.DeregisterRequest")? else {
        return Ok(DeregisterReq::default());
    };
    Ok(DeregisterReq {
        datacenter: o.string("Datacenter")?,
        node: o.string("Node")?,
        service_id: o.string("ServiceID")?,
        check_id: o.string("CheckID")?,
        namespace: o.string("Namespace")?,
        partition: o.string("Partition")?,
    })
}

/// Decodes a transaction body: a JSON array of operations.
pub(crate) fn txn(body: &[u8]) -> Result<Vec<TxnOpIn>, DecodeError> {
    let v = first_value(body)?;
    let items = match &v {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => {
            return Err(DecodeError::ValueType {
                found: json_type(other),
                want: "api.TxnOps",
            });
        }
    };
    let mut ops = Vec::with_capacity(items.len());
    for item in items {
        let op = match item {
            Value::Null => TxnOpIn::Empty,
            Value::Object(map) => txn_op(&Obj::new(map, "TxnOp".into()))?,
            other => {
                return Err(DecodeError::ValueType {
                    found: json_type(other),
                    want: "api.TxnOp",
                });
            }
        };
        ops.push(op);
    }
    Ok(ops)
}

fn txn_op(o: &Obj<'_>) -> Result<TxnOpIn, DecodeError> {
    // Go's dispatch order when several members are set: KV, Node, Service,
    // Check (the first non-nil wins).
    if o.object("KV")?.is_some() {
        return Ok(TxnOpIn::Kv);
    }
    if let Some(n) = o.object("Node")? {
        let node = match n.object("Node")? {
            Some(inner) => node_in(&inner)?,
            None => NodeIn::default(),
        };
        return Ok(TxnOpIn::Node {
            verb: n.string("Verb")?,
            node,
        });
    }
    if let Some(s) = o.object("Service")? {
        let service = match s.object("Service")? {
            Some(inner) => service_in(&inner)?,
            None => ServiceIn::default(),
        };
        return Ok(TxnOpIn::Service {
            verb: s.string("Verb")?,
            node: s.string("Node")?,
            service,
        });
    }
    if let Some(c) = o.object("Check")? {
        let check = match c.object("Check")? {
            Some(inner) => check_in(&inner)?,
            None => CheckIn::default(),
        };
        return Ok(TxnOpIn::Check {
            verb: c.string("Verb")?,
            check,
        });
    }
    Ok(TxnOpIn::Empty)
}

fn node_in(o: &Obj<'_>) -> Result<NodeIn, DecodeError> {
    Ok(NodeIn {
        id: o.string("ID")?,
        node: o.string("Node")?,
        address: o.string("Address")?,
        datacenter: o.string("Datacenter")?,
        tagged_addresses: o.string_map("TaggedAddresses")?,
        meta: o.string_map("Meta")?,
        modify_index: o.uint("ModifyIndex")?,
        partition: o.string("Partition")?,
    })
}

fn service_in(o: &Obj<'_>) -> Result<ServiceIn, DecodeError> {
    let weights = match o.object("Weights")? {
        Some(w) => Some(Weights {
            passing: w.int("Passing")?,
            warning: w.int("Warning")?,
        }),
        None => None,
    };
    let mut tagged = BTreeMap::new();
    if let Some(ta) = o.object("TaggedAddresses")? {
        for (key, value) in ta.map {
            let path = format!("{}.TaggedAddresses", ta.path);
            match value {
                Value::Null => {}
                Value::Object(m) => {
                    let a = Obj::new(m, path);
                    tagged.insert(
                        key.clone(),
                        ServiceAddress {
                            address: a.string("Address")?,
                            port: a.int("Port")?,
                        },
                    );
                }
                other => {
                    return Err(DecodeError::FieldType {
                        found: json_type(other),
                        path,
                        want: "structs.ServiceAddress",
                    });
                }
            }
        }
    }
    Ok(ServiceIn {
        kind: o.string("Kind")?,
        id: o.string("ID")?,
        service: o.string("Service")?,
        tags: o.string_list("Tags")?,
        address: o.string("Address")?,
        tagged_addresses: tagged,
        meta: o.string_map("Meta")?,
        port: o.int("Port")?,
        ports: o.list("Ports", port_in)?,
        weights,
        enable_tag_override: o.boolean("EnableTagOverride")?,
        modify_index: o.uint("ModifyIndex")?,
        namespace: o.string("Namespace")?,
        partition: o.string("Partition")?,
    })
}

/// One entry of a service's `Ports`. Like `Port`, numbers are not range
/// checked (Go decodes them into an `int`).
fn port_in(o: &Obj<'_>) -> Result<ServicePort, DecodeError> {
    Ok(ServicePort {
        name: o.string("Name")?,
        port: o.int("Port")?,
        default: o.boolean("Default")?,
    })
}

fn check_in(o: &Obj<'_>) -> Result<CheckIn, DecodeError> {
    Ok(CheckIn {
        node: o.string("Node")?,
        check_id: o.string("CheckID")?,
        name: o.string("Name")?,
        status: o.string("Status")?,
        notes: o.string("Notes")?,
        output: o.string("Output")?,
        service_id: o.string("ServiceID")?,
        service_name: o.string("ServiceName")?,
        service_tags: o.string_list("ServiceTags")?,
        check_type: o.string("Type")?,
        definition: o
            .object("Definition")?
            .map(|d| Value::Object(d.map.clone())),
        modify_index: o.uint("ModifyIndex")?,
        namespace: o.string("Namespace")?,
        partition: o.string("Partition")?,
    })
}

/// Go's name for the JSON type of `v`, as its unmarshal errors print it.
fn json_type(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) => format!("number {n}"),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

/// A JSON object viewed as a Go struct: case-insensitive field lookup and
/// Go-style type errors carrying the field path.
struct Obj<'a> {
    map: &'a Map<String, Value>,
    path: String,
}

impl<'a> Obj<'a> {
    fn new(map: &'a Map<String, Value>, path: String) -> Self {
        Obj { map, path }
    }

    /// The top-level value: `null` decodes to a zero struct (`Ok(None)`),
    /// anything but an object is a type error.
    fn root(
        v: &'a Value,
        name: &str,
        go_type: &'static str,
    ) -> Result<Option<Obj<'a>>, DecodeError> {
        match v {
            Value::Null => Ok(None),
            Value::Object(map) => Ok(Some(Obj::new(map, name.to_string()))),
            other => Err(DecodeError::ValueType {
                found: json_type(other),
                want: go_type,
            }),
        }
    }

    /// The value of `field`, matched case-insensitively; the last matching
    /// key wins, as with Go's decoder. `null` counts as absent.
    fn get(&self, field: &str) -> Option<&'a Value> {
        let mut found = None;
        for (k, v) in self.map {
            if k.eq_ignore_ascii_case(field) {
                found = Some(v);
            }
        }
        match found {
            Some(Value::Null) | None => None,
            Some(v) => Some(v),
        }
    }

    fn type_error(&self, field: &str, found: &Value, want: &'static str) -> DecodeError {
        DecodeError::FieldType {
            found: json_type(found),
            path: format!("{}.{}", self.path, field),
            want,
        }
    }

    fn string(&self, field: &str) -> Result<String, DecodeError> {
        match self.get(field) {
            None => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(self.type_error(field, other, "string")),
        }
    }

    fn boolean(&self, field: &str) -> Result<bool, DecodeError> {
        match self.get(field) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(self.type_error(field, other, "bool")),
        }
    }

    fn int(&self, field: &str) -> Result<i64, DecodeError> {
        match self.get(field) {
            None => Ok(0),
            Some(v @ Value::Number(n)) => {
                n.as_i64().ok_or_else(|| self.type_error(field, v, "int"))
            }
            Some(other) => Err(self.type_error(field, other, "int")),
        }
    }

    fn uint(&self, field: &str) -> Result<u64, DecodeError> {
        match self.get(field) {
            None => Ok(0),
            Some(v @ Value::Number(n)) => n
                .as_u64()
                .ok_or_else(|| self.type_error(field, v, "uint64")),
            Some(other) => Err(self.type_error(field, other, "uint64")),
        }
    }

    fn string_map(&self, field: &str) -> Result<OptMap, DecodeError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Object(m)) => {
                let mut out = BTreeMap::new();
                for (k, v) in m {
                    match v {
                        // Go stores "" for a null map value.
                        Value::Null => {
                            out.insert(k.clone(), String::new());
                        }
                        Value::String(s) => {
                            out.insert(k.clone(), s.clone());
                        }
                        other => return Err(self.type_error(field, other, "string")),
                    }
                }
                Ok(Some(out))
            }
            Some(other) => Err(self.type_error(field, other, "map[string]string")),
        }
    }

    fn string_list(&self, field: &str) -> Result<Option<Vec<String>>, DecodeError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    match item {
                        Value::Null => out.push(String::new()),
                        Value::String(s) => out.push(s.clone()),
                        other => return Err(self.type_error(field, other, "string")),
                    }
                }
                Ok(Some(out))
            }
            Some(other) => Err(self.type_error(field, other, "[]string")),
        }
    }

    fn object(&self, field: &str) -> Result<Option<Obj<'a>>, DecodeError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(Obj::new(m, format!("{}.{}", self.path, field)))),
            Some(other) => Err(self.type_error(field, other, "struct")),
        }
    }

    fn list<T>(
        &self,
        field: &str,
        each: impl Fn(&Obj<'_>) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        match self.get(field) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                let path = format!("{}.{}", self.path, field);
                for item in items {
                    match item {
                        Value::Null => {}
                        Value::Object(m) => out.push(each(&Obj::new(m, path.clone()))?),
                        other => return Err(self.type_error(field, other, "struct")),
                    }
                }
                Ok(out)
            }
            Some(other) => Err(self.type_error(field, other, "[]struct")),
        }
    }
}

#[cfg(test)]
mod tests;
