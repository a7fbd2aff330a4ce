//! Label and field selectors: parsing (with the API server's error texts)
//! and matching.
//!
//! ```text
//! ?labelSelector=app=web,tier in (a,b),!legacy   -> parse_label_selector -> LabelSelector::matches
//! ?fieldSelector=metadata.name=x,status.phase!=Y -> parse_field_selector -> FieldSelector::matches
//! ```
//!
//! The label parser reproduces apimachinery's lexer and recursive-descent
//! parser token for token, because clients see its error messages in 400
//! BadRequest answers (for example
//! `unable to parse requirement: <nil>: Invalid value: "app:x": name part must consist of ...`).
//! The field parser reproduces `fields.ParseSelector`, including `\,` `\=`
//! `\\` escapes in values.
//!
//! This module must NOT know which fields a kind supports (the caller passes
//! that list to [`FieldSelector::check_fields`]) and must NOT read objects
//! beyond the labels or fields it is asked to match.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use crate::field::FieldError;
use crate::names;

/// A selector the API server would refuse. Every variant is a client error
/// (HTTP 400 BadRequest, not retryable): the user must fix the selector. The
/// `Display` text is the message the API server puts in its Status.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The `labelSelector` does not parse or has an invalid key or value.
    #[error("{0}")]
    Label(String),
    /// The `fieldSelector` does not parse (unknown operator, bad escape).
    #[error("{0}")]
    Field(String),
    /// The `fieldSelector` names a field the kind does not support.
    #[error("{0}")]
    UnsupportedField(String),
}

/// A label selector operator, as the query-string syntax spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    /// `key in (a,b)`.
    In,
    /// `key notin (a,b)`.
    NotIn,
    /// `key=value`.
    Equals,
    /// `key==value`.
    DoubleEquals,
    /// `key!=value`.
    NotEquals,
    /// `key`.
    Exists,
    /// `!key`.
    DoesNotExist,
    /// `key>5` (integers).
    GreaterThan,
    /// `key<5` (integers).
    LessThan,
}

/// One requirement of a label selector; all must hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    /// Sorted and de-duplicated, as apimachinery stores them.
    values: Vec<String>,
}

impl Requirement {
    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, sorted.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    fn has_value(&self, v: &str) -> bool {
        self.values.iter().any(|x| x == v)
    }

    /// Whether the requirement holds for a label lookup.
    fn matches_with<'a>(&self, get: &impl Fn(&str) -> Option<&'a str>) -> bool {
        let found = get(&self.key);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                found.is_some_and(|v| self.has_value(v))
            }
            Operator::NotIn | Operator::NotEquals => found.is_none_or(|v| !self.has_value(v)),
            Operator::Exists => found.is_some(),
            Operator::DoesNotExist => found.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(Ok(have)) = found.map(str::parse::<i64>) else {
                    return false;
                };
                let Some(Ok(want)) = self.values.first().map(|v| v.parse::<i64>()) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        };
        f.write_str(op)?;
        let set = matches!(self.operator, Operator::In | Operator::NotIn);
        if set {
            f.write_str("(")?;
        }
        f.write_str(&self.values.join(","))?;
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A parsed label selector: the AND of its requirements. The empty selector
/// matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether the selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let get = |k: &str| labels.get(k).map(String::as_str);
        self.requirements.iter().all(|r| r.matches_with(&get))
    }

    /// Whether the labels seen through `get` (label key to value) satisfy
    /// every requirement; for callers that keep labels in their own layout.
    pub fn matches_lookup<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| r.matches_with(&get))
    }

    /// Whether a JSON labels object (`metadata.labels`; `None` or a non-object
    /// means no labels) satisfies every requirement, without copying it.
    /// Non-string values count as absent.
    pub fn matches_json(&self, labels: Option<&Value>) -> bool {
        let map = labels.and_then(Value::as_object);
        let get = |k: &str| map.and_then(|m| m.get(k)).and_then(Value::as_str);
        self.requirements.iter().all(|r| r.matches_with(&get))
    }

    /// Whether an object's `metadata.labels` satisfy every requirement.
    pub fn matches_object(&self, object: &Value) -> bool {
        self.matches_json(object.get("metadata").and_then(|m| m.get("labels")))
    }
}

impl fmt::Display for LabelSelector {
    /// The canonical form apimachinery prints (`a=b,c in (x,y)`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn string_to_token(s: &[u8]) -> Option<Token> {
    Some(match s {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// apimachinery's byte lexer. Like the original, a NUL byte reads as the end
/// of input at the point it is met.
struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Lexer<'_> {
    fn read(&mut self) -> u8 {
        match self.s.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    fn scan_id_or_keyword(&mut self) -> (Token, String) {
        let mut buf = Vec::new();
        loop {
            let c = self.read();
            if c == 0 {
                break;
            }
            if is_special(c) || is_whitespace(c) {
                self.unread();
                break;
            }
            buf.push(c);
        }
        let tok = string_to_token(&buf).unwrap_or(Token::Identifier);
        (tok, String::from_utf8_lossy(&buf).into_owned())
    }

    fn scan_special(&mut self) -> (Token, String) {
        let mut buf = Vec::new();
        let mut last: Option<(Token, String)> = None;
        loop {
            let c = self.read();
            if c == 0 {
                break;
            }
            if is_special(c) {
                buf.push(c);
                if let Some(t) = string_to_token(&buf) {
                    last = Some((t, String::from_utf8_lossy(&buf).into_owned()));
                } else if last.is_some() {
                    self.unread();
                    break;
                }
            } else {
                self.unread();
                break;
            }
        }
        last.unwrap_or_else(|| {
            (
                Token::Error,
                format!(
                    "error expected: keyword found '{}'",
                    String::from_utf8_lossy(&buf)
                ),
            )
        })
    }

    fn lex(&mut self) -> (Token, String) {
        let mut c = self.read();
        while is_whitespace(c) {
            c = self.read();
        }
        if c == 0 {
            (Token::EndOfString, String::new())
        } else if is_special(c) {
            self.unread();
            self.scan_special()
        } else {
            self.unread();
            self.scan_id_or_keyword()
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

impl Parser {
    fn item(&self, at: usize, ctx: Context) -> (Token, String) {
        let (mut tok, lit) = self
            .items
            .get(at)
            .cloned()
            .unwrap_or((Token::EndOfString, String::new()));
        if ctx == Context::Values && matches!(tok, Token::In | Token::NotIn) {
            tok = Token::Identifier;
        }
        (tok, lit)
    }

    fn lookahead(&self, ctx: Context) -> (Token, String) {
        self.item(self.position, ctx)
    }

    fn consume(&mut self, ctx: Context) -> (Token, String) {
        let r = self.item(self.position, ctx);
        self.position += 1;
        r
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut reqs = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self
                        .parse_requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    reqs.push(r);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(reqs),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{l2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => return Err(format!("found '{l}', expected: ',' or 'end of string'")),
                    }
                }
                Token::EndOfString => return Ok(reqs),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        if let Some(op) = inferred {
            return new_requirement(key, op, Vec::new());
        }
        let op = self.parse_operator()?;
        let values = match op {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        new_requirement(key, op, values)
    }

    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut op = None;
        let (mut tok, mut lit) = self.consume(Context::Values);
        if tok == Token::DoesNotExist {
            op = Some(Operator::DoesNotExist);
            (tok, lit) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        let errs = names::is_qualified_name(&lit);
        if !errs.is_empty() {
            return Err(FieldError::invalid(None, &lit, errs.join("; ")).to_string());
        }
        let (t, _) = self.lookahead(Context::Values);
        if (t == Token::EndOfString || t == Token::Comma) && op.is_none() {
            op = Some(Operator::Exists);
        }
        Ok((lit, op))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                return Err(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    fn parse_values(&mut self) -> Result<Vec<String>, String> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let s = self.parse_identifiers_list()?;
                let (t, _) = self.consume(Context::Values);
                if t != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(s)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, String> {
        let mut s: Vec<String> = Vec::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    s.push(lit);
                    let (t2, l2) = self.lookahead(Context::Values);
                    match t2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(s),
                        _ => return Err(format!("found '{l2}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    // "(," and ",," and ",)" all stand for the empty value.
                    if s.is_empty() {
                        s.push(String::new());
                    }
                    let (t2, _) = self.lookahead(Context::Values);
                    if t2 == Token::ClosedPar {
                        s.push(String::new());
                        return Ok(s);
                    }
                    if t2 == Token::Comma {
                        self.consume(Context::Values);
                        s.push(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<Vec<String>, String> {
        let (tok, _) = self.lookahead(Context::Values);
        if tok == Token::EndOfString || tok == Token::Comma {
            return Ok(vec![String::new()]);
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Token::Identifier {
            return Ok(vec![lit]);
        }
        Err(format!("found '{lit}', expected: identifier"))
    }
}

/// apimachinery's `NewRequirement`: validates key and values and returns the
/// aggregated field errors as one message.
fn new_requirement(
    key: String,
    op: Operator,
    mut values: Vec<String>,
) -> Result<Requirement, String> {
    values.sort();
    values.dedup();
    let mut errs: Vec<String> = Vec::new();
    let key_errs = names::is_qualified_name(&key);
    if !key_errs.is_empty() {
        errs.push(FieldError::invalid(Some("key"), &key, key_errs.join("; ")).to_string());
    }
    // The parser never yields an empty `in` set or a wrong value count, so
    // only the integer check of `>`/`<` remains from apimachinery's list.
    match op {
        Operator::GreaterThan | Operator::LessThan => {
            for (i, v) in values.iter().enumerate() {
                if v.parse::<i64>().is_err() {
                    errs.push(
                        FieldError::invalid(
                            Some(&format!("values[{i}]")),
                            v,
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        )
                        .to_string(),
                    );
                }
            }
        }
        _ => {}
    }
    for (i, v) in values.iter().enumerate() {
        let v_errs = names::is_valid_label_value(v);
        if !v_errs.is_empty() {
            errs.push(
                FieldError::invalid(Some(&format!("values[{i}][{key}]")), v, v_errs.join("; "))
                    .to_string(),
            );
        }
    }
    if errs.is_empty() {
        Ok(Requirement {
            key,
            operator: op,
            values,
        })
    } else {
        Err(crate::gofmt::aggregate(&errs))
    }
}

/// Parses a `labelSelector` query parameter. The empty string (or only
/// whitespace) is the selector that matches everything.
///
/// # Errors
/// [`SelectorError::Label`] with the API server's message when the selector
/// does not parse or a key or value is invalid.
pub fn parse_label_selector(s: &str) -> Result<LabelSelector, SelectorError> {
    let mut lexer = Lexer {
        s: s.as_bytes(),
        pos: 0,
    };
    let mut items = Vec::new();
    loop {
        let item = lexer.lex();
        let end = item.0 == Token::EndOfString;
        items.push(item);
        if end {
            break;
        }
    }
    let mut parser = Parser { items, position: 0 };
    let mut requirements = parser.parse().map_err(SelectorError::Label)?;
    requirements.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(LabelSelector { requirements })
}

/// A field selector operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldOperator {
    /// `field=value` or `field==value`.
    Equals,
    /// `field!=value`.
    NotEquals,
}

/// One term of a field selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The dotted field path, e.g. `metadata.name`.
    pub field: String,
    /// The comparison.
    pub operator: FieldOperator,
    /// The unescaped value.
    pub value: String,
}

/// A parsed field selector: the AND of its terms. The empty selector
/// matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// The terms, in apimachinery's order (sorted by their text).
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// Whether the selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The value a term must equal for `field`, if some `=` term pins it
    /// (lets the caller use an index, e.g. for `metadata.name`).
    pub fn exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator == FieldOperator::Equals)
            .map(|r| r.value.as_str())
    }

    /// Whether `object` satisfies every term. A field is read by its dotted
    /// path; a missing field reads as the empty string (as the API server's
    /// field sets do), booleans and numbers as their text.
    pub fn matches(&self, object: &Value) -> bool {
        self.requirements.iter().all(|r| {
            let have = field_value(object, &r.field);
            let equal = have.as_deref().unwrap_or("") == r.value;
            match r.operator {
                FieldOperator::Equals => equal,
                FieldOperator::NotEquals => !equal,
            }
        })
    }

    /// Checks every term's field against the fields the kind supports.
    ///
    /// `builtin` picks the wording: built-in kinds answer
    /// `field label not supported: X`; custom resources answer
    /// `"X" is not a known field selector: only "a", "b"`.
    ///
    /// # Errors
    /// [`SelectorError::UnsupportedField`] for the first unsupported field.
    pub fn check_fields(&self, allowed: &[&str], builtin: bool) -> Result<(), SelectorError> {
        for r in &self.requirements {
            if !allowed.contains(&r.field.as_str()) {
                let msg = if builtin {
                    format!("field label not supported: {}", r.field)
                } else {
                    let only: Vec<String> =
                        allowed.iter().map(|a| crate::gofmt::quote(a)).collect();
                    format!(
                        "{} is not a known field selector: only {}",
                        crate::gofmt::quote(&r.field),
                        only.join(", ")
                    )
                };
                return Err(SelectorError::UnsupportedField(msg));
            }
        }
        Ok(())
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = match r.operator {
                FieldOperator::Equals => "=",
                FieldOperator::NotEquals => "!=",
            };
            write!(f, "{}{op}{}", r.field, escape_field_value(&r.value))?;
        }
        Ok(())
    }
}

/// Escapes a literal for use as a field selector value (`\` `,` `=`).
pub fn escape_field_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The text of the field at a dotted path, or `None` when absent or not a
/// scalar.
fn field_value(object: &Value, path: &str) -> Option<String> {
    let mut cur = object;
    for part in path.split('.') {
        cur = cur.as_object()?.get(part)?;
    }
    match cur {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Splits on commas that are not escaped with a backslash.
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// Splits a term at its first operator (`!=`, `==`, `=` tried in that order
/// at each position).
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (op, kind) in [
            ("!=", FieldOperator::NotEquals),
            ("==", FieldOperator::Equals),
            ("=", FieldOperator::Equals),
        ] {
            if let Some(rhs) = rest.strip_prefix(op) {
                return Some((&term[..i], kind, rhs));
            }
        }
    }
    None
}

fn unescape_field_value(s: &str) -> Result<String, String> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' => out.push(c),
                other => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{other}"
                    ));
                }
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            // Go prints the rune with %v: its code point number.
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                ));
            }
            other => out.push(other),
        }
    }
    if in_slash {
        return Err("invalid field selector: invalid escape sequence: \\".to_string());
    }
    Ok(out)
}

/// Parses a `fieldSelector` query parameter (`=`, `==`, `!=` on any dotted
/// field path, comma-separated; values may escape `\,` `\=` `\\`). The empty
/// string matches everything.
///
/// # Errors
/// [`SelectorError::Field`] with the API server's message.
pub fn parse_field_selector(s: &str) -> Result<FieldSelector, SelectorError> {
    let mut parts = split_terms(s);
    parts.sort_unstable();
    let mut requirements = Vec::new();
    for part in parts {
        if part.is_empty() {
            continue;
        }
        let Some((lhs, op, rhs)) = split_term(part) else {
            return Err(SelectorError::Field(format!(
                "invalid selector: '{s}'; can't understand '{part}'"
            )));
        };
        let value = unescape_field_value(rhs).map_err(SelectorError::Field)?;
        requirements.push(FieldRequirement {
            field: lhs.to_string(),
            operator: op,
            value,
        });
    }
    Ok(FieldSelector { requirements })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn err(s: &str) -> String {
        parse_label_selector(s).unwrap_err().to_string()
    }

    #[test]
    fn equality_and_set_based_requirements_match() {
        let l = labels(&[("app", "web"), ("tier", "front"), ("n", "7")]);
        let cases = [
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app!=db", true),
            ("missing!=x", true),
            ("app in (web,db)", true),
            ("app in (db)", false),
            ("app notin (db)", true),
            ("missing notin (db)", true),
            ("app notin (web)", false),
            ("app", true),
            ("missing", false),
            ("!missing", true),
            ("!app", false),
            ("app=web,tier=front", true),
            ("app=web,tier=back", false),
            ("  app = web , tier in ( front , back )  ", true),
            ("n>5", true),
            ("n<5", false),
            ("app>5", false),
            ("missing=", false),
        ];
        for (sel, want) in cases {
            let s = parse_label_selector(sel).unwrap();
            assert_eq!(s.matches(&l), want, "{sel:?}");
        }
    }

    #[test]
    fn empty_values() {
        let s = parse_label_selector("a=").unwrap();
        assert!(s.matches(&labels(&[("a", "")])));
        assert!(!s.matches(&labels(&[("a", "x")])));
        let s = parse_label_selector("x in (foo,,baz),y,z notin ()").unwrap();
        assert_eq!(s.requirements()[0].values(), ["", "baz", "foo"]);
        assert_eq!(s.requirements()[2].values(), [""]);
    }

    #[test]
    fn in_and_notin_are_values_inside_parentheses() {
        let s = parse_label_selector("k in (in,notin)").unwrap();
        assert!(s.matches(&labels(&[("k", "notin")])));
    }

    #[test]
    fn json_labels_match_without_copying() {
        let s = parse_label_selector("app=web,!gone").unwrap();
        assert!(s.matches_json(Some(&json!({"app": "web"}))));
        assert!(!s.matches_json(Some(&json!({"app": "web", "gone": "1"}))));
        assert!(!s.matches_json(None));
        assert!(!s.matches_json(Some(&json!({"app": 1}))));
        assert!(s.matches_object(&json!({"metadata": {"labels": {"app": "web"}}})));
        assert!(
            parse_label_selector("!x")
                .unwrap()
                .matches_object(&json!("garbage"))
        );
    }

    #[test]
    fn display_is_canonical() {
        let s = parse_label_selector("z in (b,a), a!=1 ,!m,k").unwrap();
        assert_eq!(s.to_string(), "a!=1,k,!m,z in (a,b)");
    }

    #[test]
    fn syntax_errors_use_apimachinery_wording() {
        assert_eq!(err("a=b c"), "found 'c', expected: ',' or 'end of string'");
        assert_eq!(
            err("component not in (x)"),
            "unable to parse requirement: found 'not', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(err("a,"), "found '', expected: identifier after ','");
        assert_eq!(
            err(",a"),
            "found ',', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            err("a in x"),
            "unable to parse requirement: found 'x' expected: '('"
        );
        assert_eq!(
            err("a in (x y)"),
            "unable to parse requirement: found 'y', expected: ',' or ')'"
        );
        assert_eq!(
            err("a in (="),
            "unable to parse requirement: found '=', expected: ',', ')' or identifier"
        );
        assert_eq!(
            err("!"),
            "unable to parse requirement: found '', expected: identifier"
        );
        assert_eq!(
            err("a=(b"),
            "unable to parse requirement: found '(', expected: identifier"
        );
        assert_eq!(err("!a=b"), "found '=', expected: ',' or 'end of string'");
    }

    #[test]
    fn invalid_keys_and_values_use_field_error_wording() {
        assert_eq!(
            err("app:monolith"),
            "unable to parse requirement: <nil>: Invalid value: \"app:monolith\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
        assert_eq!(err("a=b!c"), "found '!', expected: ',' or 'end of string'");
        let e = err("a=-x");
        assert!(
            e.starts_with("unable to parse requirement: values[0][a]: Invalid value: \"-x\": a valid label must be an empty string"),
            "{e}"
        );
        let e = err("a in (-x,_y)");
        assert!(
            e.starts_with("unable to parse requirement: [values[0][a]: Invalid value: \"-x\""),
            "{e}"
        );
        let e = err("a>b");
        assert!(e.contains("values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer"), "{e}");
    }

    #[test]
    fn field_selectors_parse_and_match() {
        let obj = json!({
            "metadata": {"name": "web", "namespace": "prod"},
            "spec": {"nodeName": "n1", "replicas": 3, "paused": false},
            "status": {"phase": "Running"},
            "type": "Opaque"
        });
        let cases = [
            ("", true),
            ("metadata.name=web", true),
            ("metadata.name==web", true),
            ("metadata.name!=web", false),
            ("metadata.namespace=prod,status.phase=Running", true),
            ("metadata.namespace=prod,status.phase=Pending", false),
            ("spec.nodeName=", false),
            ("spec.missing=", true),
            ("spec.missing!=", false),
            ("spec.replicas=3", true),
            ("spec.paused=false", true),
            ("type=Opaque", true),
            ("metadata.name=!x", false),
        ];
        for (sel, want) in cases {
            let s = parse_field_selector(sel).unwrap();
            assert_eq!(s.matches(&obj), want, "{sel:?}");
        }
        let s = parse_field_selector("metadata.name=a\\,b\\=c\\\\").unwrap();
        assert_eq!(s.requirements()[0].value, "a,b=c\\");
        assert!(s.matches(&json!({"metadata": {"name": "a,b=c\\"}})));
        assert_eq!(s.to_string(), "metadata.name=a\\,b\\=c\\\\");
        assert_eq!(s.exact_match("metadata.name"), Some("a,b=c\\"));
    }

    #[test]
    fn field_selector_errors() {
        let e = |s: &str| parse_field_selector(s).unwrap_err().to_string();
        assert_eq!(
            e("status.state"),
            "invalid selector: 'status.state'; can't understand 'status.state'"
        );
        assert_eq!(
            e("a=b,c"),
            "invalid selector: 'a=b,c'; can't understand 'c'"
        );
        assert_eq!(
            e("a=b=c"),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            e("a=b\\x"),
            "invalid field selector: invalid escape sequence: \\x"
        );
        assert_eq!(
            e("a=b\\"),
            "invalid field selector: invalid escape sequence: \\"
        );
    }

    #[test]
    fn unsupported_fields_are_reported_in_both_wordings() {
        let s = parse_field_selector("foo.bar=baz").unwrap();
        assert_eq!(
            s.check_fields(&["metadata.name", "metadata.namespace"], false)
                .unwrap_err()
                .to_string(),
            "\"foo.bar\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        assert_eq!(
            s.check_fields(&["metadata.name"], true)
                .unwrap_err()
                .to_string(),
            "field label not supported: foo.bar"
        );
        assert!(
            parse_field_selector("metadata.name=x")
                .unwrap()
                .check_fields(&["metadata.name"], true)
                .is_ok()
        );
    }

    fn arb_labels() -> impl Strategy<Value = BTreeMap<String, String>> {
        proptest::collection::btree_map("[a-c]", "[x-z]{0,2}", 0..4)
    }

    proptest! {
        #[test]
        fn label_parser_never_panics(s in any::<String>()) {
            let _ = parse_label_selector(&s);
        }

        #[test]
        fn label_parser_never_panics_on_selector_like_text(s in "[a-c!=(), inotx<>\\-\u{0}]{0,30}") {
            if let Ok(sel) = parse_label_selector(&s) {
                // A parsed selector prints to text that parses to the same selector.
                let again = parse_label_selector(&sel.to_string()).unwrap();
                prop_assert_eq!(again, sel);
            }
        }

        #[test]
        fn field_parser_never_panics(s in any::<String>(), obj in proptest::arbitrary::any::<u8>()) {
            if let Ok(sel) = parse_field_selector(&s) {
                let _ = sel.matches(&json!({"a": obj}));
                let _ = sel.to_string();
            }
        }

        #[test]
        fn equality_selector_from_a_set_matches_exactly_its_supersets(
            want in arb_labels(), have in arb_labels()
        ) {
            let text: Vec<String> = want.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let sel = parse_label_selector(&text.join(",")).unwrap();
            let expected = want.iter().all(|(k, v)| have.get(k) == Some(v));
            prop_assert_eq!(sel.matches(&have), expected);
            let as_json = serde_json::to_value(&have).unwrap();
            prop_assert_eq!(sel.matches_json(Some(&as_json)), expected);
        }

        #[test]
        fn notin_is_the_negation_of_in(key in "[a-c]", vals in proptest::collection::vec("[x-z]", 1..3), have in arb_labels()) {
            let inn = parse_label_selector(&format!("{key} in ({})", vals.join(","))).unwrap();
            let notin = parse_label_selector(&format!("{key} notin ({})", vals.join(","))).unwrap();
            // `in` needs the key; `notin` holds when it is absent.
            prop_assert_eq!(inn.matches(&have), !notin.matches(&have));
        }

        #[test]
        fn field_value_escaping_round_trips(v in any::<String>()) {
            let sel = parse_field_selector(&format!("metadata.name={}", escape_field_value(&v))).unwrap();
            let obj = json!({"metadata": {"name": v}});
            prop_assert!(sel.matches(&obj));
        }
    }
}
