//! Binding-rule selectors and bind-name templates for `kubernetes` auth
//! methods: the go-bexpr expressions Consul evaluates over a verified
//! identity's fields (`serviceaccount.name`, `serviceaccount.namespace`,
//! `serviceaccount.uid`), and the `${...}` interpolation of bind names.
//!
//! Supported: `==`, `!=`, `is empty`, `is not empty`, `in`, `not in`,
//! `contains`, `not contains`, `matches`, `not matches`, `and`, `or`,
//! `not` and parentheses, with `"double"` or `` `back` `` quoted values
//! (or bare words). A selector naming any other field is refused.
//!
//! This module must NOT touch the ACL tables or the network; it only
//! parses and evaluates text.

use std::collections::BTreeMap;

/// The fields a `kubernetes` identity offers to selectors and templates.
pub(crate) const FIELDS: [&str; 3] = [
    "serviceaccount.namespace",
    "serviceaccount.name",
    "serviceaccount.uid",
];

/// A parsed selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expr {
    /// `a or b`.
    Or(Box<Expr>, Box<Expr>),
    /// `a and b`.
    And(Box<Expr>, Box<Expr>),
    /// `not a`.
    Not(Box<Expr>),
    /// One comparison of a field.
    Match {
        /// One of [`FIELDS`].
        field: String,
        /// The comparison.
        op: Op,
        /// The value compared with (empty for `is empty`).
        value: String,
    },
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// `field == "v"`.
    Equal,
    /// `field != "v"`.
    NotEqual,
    /// `field is empty`.
    IsEmpty,
    /// `field is not empty`.
    IsNotEmpty,
    /// `"v" in field` / `field contains "v"`: substring.
    In,
    /// `"v" not in field` / `field not contains "v"`.
    NotIn,
    /// `field matches "re"`.
    Matches,
    /// `field not matches "re"`.
    NotMatches,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Word(String),
    Str(String),
    Sym(&'static str),
}

fn lex(s: &str) -> Result<Vec<(usize, Tok)>, String> {
    let b: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let at = i + 1;
        match c {
            '(' | ')' => {
                out.push((at, Tok::Sym(if c == '(' { "(" } else { ")" })));
                i += 1;
            }
            '=' | '!' => {
                if b.get(i + 1) != Some(&'=') {
                    return Err(format!(
                        "1:{at} ({}): no match found, expected: \"==\" or \"!=\"",
                        at - 1
                    ));
                }
                out.push((at, Tok::Sym(if c == '=' { "==" } else { "!=" })));
                i += 2;
            }
            '"' | '`' => {
                let mut v = String::new();
                let mut j = i + 1;
                loop {
                    match b.get(j) {
                        None => {
                            return Err(format!(
                                "1:{at} ({}): no match found, unterminated string",
                                at - 1
                            ));
                        }
                        Some(&q) if q == c => break,
                        Some('\\') if c == '"' => {
                            if let Some(&n) = b.get(j + 1) {
                                v.push(n);
                            }
                            j += 2;
                        }
                        Some(&ch) => {
                            v.push(ch);
                            j += 1;
                        }
                    }
                }
                out.push((at, Tok::Str(v)));
                i = j + 1;
            }
            c if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-' | ':') => {
                let mut v = String::new();
                while let Some(&ch) = b.get(i) {
                    if ch.is_ascii_alphanumeric() || matches!(ch, '_' | '.' | '/' | '-' | ':') {
                        v.push(ch);
                        i += 1;
                    } else {
                        break;
                    }
                }
                out.push((at, Tok::Word(v)));
            }
            _ => {
                return Err(format!(
                    "1:{at} ({}): no match found, unexpected {c:?}",
                    at - 1
                ));
            }
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<(usize, Tok)>,
    pos: usize,
    len: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|(_, t)| t)
    }
    fn peek_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Word(x)) if x == w)
    }
    fn at(&self) -> usize {
        self.toks.get(self.pos).map_or(self.len + 1, |(a, _)| *a)
    }
    fn err(&self, what: &str) -> String {
        let at = self.at();
        format!("1:{at} ({}): no match found, expected: {what}", at - 1)
    }
    fn or(&mut self) -> Result<Expr, String> {
        let mut left = self.and()?;
        while self.peek_word("or") {
            self.pos += 1;
            let right = self.and()?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }
    fn and(&mut self) -> Result<Expr, String> {
        let mut left = self.not()?;
        while self.peek_word("and") {
            self.pos += 1;
            let right = self.not()?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
        Ok(left)
    }
    fn not(&mut self) -> Result<Expr, String> {
        if self.peek_word("not") {
            self.pos += 1;
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        self.primary()
    }
    fn value(&mut self) -> Result<String, String> {
        match self.peek().cloned() {
            Some(Tok::Str(s)) | Some(Tok::Word(s)) => {
                self.pos += 1;
                Ok(s)
            }
            _ => Err(self.err("a value")),
        }
    }
    fn primary(&mut self) -> Result<Expr, String> {
        match self.peek().cloned() {
            Some(Tok::Sym("(")) => {
                self.pos += 1;
                let e = self.or()?;
                if self.peek() != Some(&Tok::Sym(")")) {
                    return Err(self.err("\")\""));
                }
                self.pos += 1;
                Ok(e)
            }
            Some(Tok::Str(v)) => {
                // `"v" in field` / `"v" not in field`.
                self.pos += 1;
                let negate = self.peek_word("not");
                if negate {
                    self.pos += 1;
                }
                if !self.peek_word("in") {
                    return Err(self.err("\"in\" or \"not in\""));
                }
                self.pos += 1;
                let field = self.selector()?;
                Ok(Expr::Match {
                    field,
                    op: if negate { Op::NotIn } else { Op::In },
                    value: v,
                })
            }
            Some(Tok::Word(_)) => {
                let field = self.selector()?;
                let op = match self.peek().cloned() {
                    Some(Tok::Sym("==")) => Op::Equal,
                    Some(Tok::Sym("!=")) => Op::NotEqual,
                    Some(Tok::Word(w)) if w == "is" => {
                        self.pos += 1;
                        let negate = self.peek_word("not");
                        if negate {
                            self.pos += 1;
                        }
                        if !self.peek_word("empty") {
                            return Err(self.err("\"empty\" or \"not empty\""));
                        }
                        self.pos += 1;
                        return Ok(Expr::Match {
                            field,
                            op: if negate { Op::IsNotEmpty } else { Op::IsEmpty },
                            value: String::new(),
                        });
                    }
                    Some(Tok::Word(w)) if w == "contains" => Op::In,
                    Some(Tok::Word(w)) if w == "matches" => Op::Matches,
                    Some(Tok::Word(w)) if w == "not" => {
                        self.pos += 1;
                        match self.peek() {
                            Some(Tok::Word(w)) if w == "contains" => Op::NotIn,
                            Some(Tok::Word(w)) if w == "matches" => Op::NotMatches,
                            _ => return Err(self.err("\"contains\" or \"matches\"")),
                        }
                    }
                    _ => {
                        return Err(self
                            .err("\"!=\", \"==\", \"contains\", \"is\", \"matches\" or \"not\""));
                    }
                };
                self.pos += 1;
                let value = self.value()?;
                if matches!(op, Op::Matches | Op::NotMatches)
                    && let Err(e) = regex::Regex::new(&value)
                {
                    return Err(format!(
                        "Failed to compile regular expression {value:?}: {e}"
                    ));
                }
                Ok(Expr::Match { field, op, value })
            }
            _ => Err(self.err("a selector, a value, \"(\" or \"not\"")),
        }
    }
    fn selector(&mut self) -> Result<String, String> {
        match self.peek().cloned() {
            Some(Tok::Word(w)) => {
                self.pos += 1;
                if !FIELDS.contains(&w.as_str()) {
                    return Err(format!("Selector {w:?} is not valid"));
                }
                Ok(w)
            }
            _ => Err(self.err("a selector")),
        }
    }
}

/// Parses a selector (the empty selector is not parsed: it matches all).
pub(crate) fn parse(s: &str) -> Result<Expr, String> {
    let toks = lex(s)?;
    let mut p = Parser {
        toks,
        pos: 0,
        len: s.chars().count(),
    };
    let e = p.or()?;
    if p.pos != p.toks.len() {
        return Err(p.err("\"and\", \"or\" or end of input"));
    }
    Ok(e)
}

/// Evaluates a parsed selector over an identity's fields.
pub(crate) fn eval(e: &Expr, fields: &BTreeMap<String, String>) -> bool {
    match e {
        Expr::Or(a, b) => eval(a, fields) || eval(b, fields),
        Expr::And(a, b) => eval(a, fields) && eval(b, fields),
        Expr::Not(a) => !eval(a, fields),
        Expr::Match { field, op, value } => {
            let v = fields.get(field).map(String::as_str).unwrap_or_default();
            match op {
                Op::Equal => v == value,
                Op::NotEqual => v != value,
                Op::IsEmpty => v.is_empty(),
                Op::IsNotEmpty => !v.is_empty(),
                Op::In => v.contains(value.as_str()),
                Op::NotIn => !v.contains(value.as_str()),
                Op::Matches | Op::NotMatches => {
                    let hit = regex::Regex::new(value).is_ok_and(|r| r.is_match(v));
                    hit == (*op == Op::Matches)
                }
            }
        }
    }
}

/// Whether `selector` matches (the empty selector matches everything; an
/// invalid one nothing, as Consul's binder treats it).
pub(crate) fn matches(selector: &str, fields: &BTreeMap<String, String>) -> bool {
    if selector.is_empty() {
        return true;
    }
    parse(selector).is_ok_and(|e| eval(&e, fields))
}

/// Interpolates `${field}` references in a bind name with the identity's
/// values, lower-cased as Consul's binder does.
pub(crate) fn interpolate(
    template: &str,
    vars: &BTreeMap<String, String>,
) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!(
                "error interpreting template: failed to parse {template:?}: unterminated interpolation"
            ));
        };
        let name = after[..end].trim();
        let Some(v) = vars.get(name) else {
            return Err(format!(
                "error interpreting template: unknown variable accessed: {name}"
            ));
        };
        out.push_str(&v.to_lowercase());
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `^[a-z0-9]([a-z0-9\-_]*[a-z0-9])?$`: service and node identity names.
pub(crate) fn valid_identity_name(s: &str) -> bool {
    let b = s.as_bytes();
    let inner = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= 256
        && b.first().is_some_and(inner)
        && b.last().is_some_and(inner)
        && b.iter().all(|c| inner(c) || *c == b'-' || *c == b'_')
}

/// `^[A-Za-z0-9\-_]{1,256}$`: role and policy names as bind names.
pub(crate) fn valid_role_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 256
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ns: &str, name: &str) -> BTreeMap<String, String> {
        [
            ("serviceaccount.namespace", ns),
            ("serviceaccount.name", name),
            ("serviceaccount.uid", "u-1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    #[test]
    fn selectors_match_as_bexpr_does() {
        let f = id("apps", "web");
        for (sel, want) in [
            ("serviceaccount.name==web", true),
            (
                "serviceaccount.name == \"web\" and serviceaccount.namespace == apps",
                true,
            ),
            ("serviceaccount.name != web", false),
            (
                "not serviceaccount.name == web or serviceaccount.namespace == apps",
                true,
            ),
            (
                "not (serviceaccount.name == web or serviceaccount.namespace == apps)",
                false,
            ),
            ("\"we\" in serviceaccount.name", true),
            ("\"x\" not in serviceaccount.name", true),
            ("serviceaccount.name contains eb", true),
            ("serviceaccount.name matches `^w.b$`", true),
            ("serviceaccount.name not matches \"^w\"", false),
            ("serviceaccount.uid is not empty", true),
            ("serviceaccount.uid is empty", false),
            ("", true),
        ] {
            assert_eq!(matches(sel, &f), want, "{sel}");
        }
        assert_eq!(
            parse("serviceaccount.foo == x").unwrap_err(),
            "Selector \"serviceaccount.foo\" is not valid"
        );
        assert!(parse("serviceaccount.name ==").is_err());
        assert!(parse("(serviceaccount.name == x").is_err());
        assert!(parse("serviceaccount.name == x y").is_err());
        assert!(!matches("serviceaccount.name ==", &f));
    }

    #[test]
    fn bind_names_interpolate_lower_cased() {
        let f = id("Apps", "web");
        assert_eq!(
            interpolate("${serviceaccount.namespace}-${ serviceaccount.name }", &f).unwrap(),
            "apps-web"
        );
        assert_eq!(
            interpolate("${serviceaccount.pod}", &f).unwrap_err(),
            "error interpreting template: unknown variable accessed: serviceaccount.pod"
        );
        assert!(interpolate("${serviceaccount.name", &f).is_err());
        assert!(
            valid_identity_name("web-1")
                && !valid_identity_name("Web")
                && !valid_identity_name("-a")
        );
        assert!(valid_role_name("Role_1") && !valid_role_name("a b"));
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_or_fails_without_panicking(s in "[a-z .=!\"`()_-]{0,40}") {
            let _ = parse(&s);
            let _ = matches(&s, &id("a", "b"));
        }

        #[test]
        fn an_equality_on_any_value_matches_exactly_that_value(
            v in "[a-z0-9-]{1,12}", other in "[a-z0-9-]{1,12}"
        ) {
            let sel = format!("serviceaccount.name == \"{v}\"");
            let e = parse(&sel).unwrap();
            proptest::prop_assert!(eval(&e, &id("ns", &v)));
            proptest::prop_assert_eq!(eval(&e, &id("ns", &other)), v == other);
            let neg = parse(&format!("not {sel}")).unwrap();
            proptest::prop_assert_eq!(eval(&neg, &id("ns", &other)), v != other);
        }
    }
}
