//! Namespace selection, as espejo defines it, with its anchoring defect fixed.
//!
//! A namespace is selected when `(labelSelector matches OR any matchNames
//! pattern matches) AND no ignoreNames pattern matches`, and only while it is
//! Active (see [`NamespaceView::active`]).
//!
//! Patterns are anchored as a whole: `p` is compiled as `^(?:p)$`. espejo
//! compiled `^p$`, which made `^a|b$` mean "starts with a, or ends with b".
//!
//! Label selectors follow the Kubernetes rules: an absent selector matches
//! nothing, an empty selector (`{}`) matches everything, and requirements are
//! ANDed.
//!
//! What this module must NOT do: look at anything but the namespace's name,
//! labels and phase; selection is a pure function of those.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Namespace;
use regex::Regex;

use crate::error::ValidationError;
use crate::names::{check_label_key, check_label_value};
use crate::resource::{LabelSelector, NamespaceSelector};

/// Upper bound on the compiled size of one name pattern. The regex crate
/// matches in linear time, so the only cost a hostile pattern can impose is
/// memory; 1 MiB is far above any real namespace pattern and well below what
/// would hurt the controller.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// The parts of a Namespace that selection needs, borrowed from the cache.
#[derive(Debug, Clone, Copy)]
pub struct NamespaceView<'a> {
    /// The namespace's name.
    pub name: &'a str,
    /// The namespace's labels.
    pub labels: &'a BTreeMap<String, String>,
    /// Whether the namespace is Active (not being deleted).
    pub active: bool,
}

/// The labels of a namespace that has none.
static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

impl<'a> NamespaceView<'a> {
    /// A view of a Namespace object. A namespace is active when it has no
    /// `deletionTimestamp` and its phase is `Active`; a missing phase counts as
    /// Active because the API server always sets it, so only offline manifests
    /// (for `render`) lack it.
    pub fn from_namespace(ns: &'a Namespace) -> NamespaceView<'a> {
        let phase = ns.status.as_ref().and_then(|s| s.phase.as_deref());
        NamespaceView {
            name: ns.metadata.name.as_deref().unwrap_or(""),
            labels: ns.metadata.labels.as_ref().unwrap_or(&NO_LABELS),
            active: ns.metadata.deletion_timestamp.is_none()
                && matches!(phase, None | Some("Active")),
        }
    }
}

/// Compiles a name pattern anchored as a whole: `^(?:pattern)$`.
pub fn compile_name_pattern(pattern: &str) -> Result<Regex, regex::Error> {
    regex::RegexBuilder::new(&format!("^(?:{pattern})$"))
        .size_limit(PATTERN_SIZE_LIMIT)
        .build()
}

/// One compiled label selector requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    Exists(String),
    DoesNotExist(String),
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Requirement::In(key, values) => labels.get(key).is_some_and(|v| values.contains(v)),
            // Kubernetes: NotIn also matches when the label is absent.
            Requirement::NotIn(key, values) => labels.get(key).is_none_or(|v| !values.contains(v)),
            Requirement::Exists(key) => labels.contains_key(key),
            Requirement::DoesNotExist(key) => !labels.contains_key(key),
        }
    }
}

/// A validated label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledLabelSelector {
    requirements: Vec<Requirement>,
}

impl CompiledLabelSelector {
    /// Validates a selector; errors carry paths below `path`.
    pub fn compile(selector: &LabelSelector, path: &str) -> Result<Self, Vec<ValidationError>> {
        let mut errors = Vec::new();
        let mut requirements = Vec::new();
        for (key, value) in selector.match_labels.iter().flatten() {
            let at = format!("{path}.matchLabels[{key:?}]");
            if let Err(e) = check_label_key(key) {
                errors.push(ValidationError::Selector {
                    path: at.clone(),
                    message: format!("key {e}"),
                });
            }
            if let Err(e) = check_label_value(value) {
                errors.push(ValidationError::Selector {
                    path: at,
                    message: format!("value {e}"),
                });
            }
            requirements.push(Requirement::In(
                key.clone(),
                BTreeSet::from([value.clone()]),
            ));
        }
        for (i, expr) in selector.match_expressions.iter().flatten().enumerate() {
            let at = format!("{path}.matchExpressions[{i}]");
            if let Err(e) = check_label_key(&expr.key) {
                errors.push(ValidationError::Selector {
                    path: format!("{at}.key"),
                    message: e,
                });
            }
            let values: BTreeSet<String> = expr.values.iter().flatten().cloned().collect();
            for v in &values {
                if let Err(e) = check_label_value(v) {
                    errors.push(ValidationError::Selector {
                        path: format!("{at}.values"),
                        message: format!("value {v:?} {e}"),
                    });
                }
            }
            let key = expr.key.clone();
            let req = match expr.operator.as_str() {
                "In" | "NotIn" if values.is_empty() => {
                    errors.push(ValidationError::Selector {
                        path: format!("{at}.values"),
                        message: format!("must be non-empty for operator {}", expr.operator),
                    });
                    continue;
                }
                "Exists" | "DoesNotExist" if !values.is_empty() => {
                    errors.push(ValidationError::Selector {
                        path: format!("{at}.values"),
                        message: format!("must be empty for operator {}", expr.operator),
                    });
                    continue;
                }
                "In" => Requirement::In(key, values),
                "NotIn" => Requirement::NotIn(key, values),
                "Exists" => Requirement::Exists(key),
                "DoesNotExist" => Requirement::DoesNotExist(key),
                other => {
                    errors.push(ValidationError::Selector {
                        path: format!("{at}.operator"),
                        message: format!(
                            "unknown operator {other:?}; expected In, NotIn, Exists or DoesNotExist"
                        ),
                    });
                    continue;
                }
            };
            requirements.push(req);
        }
        if errors.is_empty() {
            Ok(CompiledLabelSelector { requirements })
        } else {
            Err(errors)
        }
    }

    /// Whether the labels satisfy every requirement. A selector without
    /// requirements (`{}`) matches everything, as in Kubernetes.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

/// A validated `spec.namespaceSelector`.
#[derive(Debug, Clone)]
pub struct CompiledSelector {
    label_selector: Option<CompiledLabelSelector>,
    match_names: Vec<Regex>,
    ignore_names: Vec<Regex>,
}

impl CompiledSelector {
    /// Validates a namespace selector. A selector is required, and it must
    /// include `labelSelector` or `matchNames` (`ignoreNames` alone selects
    /// nothing, so it is refused as in espejo). Every error is collected.
    pub fn compile(selector: Option<&NamespaceSelector>) -> Result<Self, Vec<ValidationError>> {
        const PATH: &str = "spec.namespaceSelector";
        let Some(selector) = selector else {
            return Err(vec![ValidationError::Missing {
                path: PATH.into(),
                message: "a namespace selector is required (labelSelector or matchNames)".into(),
            }]);
        };
        let mut errors = Vec::new();
        if selector.label_selector.is_none() && selector.match_names.is_empty() {
            errors.push(ValidationError::Missing {
                path: PATH.into(),
                message: "either labelSelector or matchNames is required; ignoreNames alone \
                          selects nothing"
                    .into(),
            });
        }
        let label_selector = match &selector.label_selector {
            None => None,
            Some(ls) => {
                match CompiledLabelSelector::compile(ls, &format!("{PATH}.labelSelector")) {
                    Ok(c) => Some(c),
                    Err(e) => {
                        errors.extend(e);
                        None
                    }
                }
            }
        };
        let mut compile_all = |field: &str, patterns: &[String]| -> Vec<Regex> {
            let mut out = Vec::new();
            for (i, pattern) in patterns.iter().enumerate() {
                match compile_name_pattern(pattern) {
                    Ok(re) => out.push(re),
                    Err(e) => errors.push(ValidationError::Pattern {
                        path: format!("{PATH}.{field}[{i}]"),
                        pattern: pattern.clone(),
                        message: e.to_string(),
                    }),
                }
            }
            out
        };
        let match_names = compile_all("matchNames", &selector.match_names);
        let ignore_names = compile_all("ignoreNames", &selector.ignore_names);
        if errors.is_empty() {
            Ok(CompiledSelector {
                label_selector,
                match_names,
                ignore_names,
            })
        } else {
            Err(errors)
        }
    }

    /// Whether a namespace with this name and these labels is selected,
    /// ignoring its phase.
    pub fn matches(&self, name: &str, labels: &BTreeMap<String, String>) -> bool {
        if self.ignore_names.iter().any(|re| re.is_match(name)) {
            return false;
        }
        self.label_selector
            .as_ref()
            .is_some_and(|ls| ls.matches(labels))
            || self.match_names.iter().any(|re| re.is_match(name))
    }

    /// Whether a namespace is selected: it matches and it is Active.
    pub fn selects(&self, ns: &NamespaceView<'_>) -> bool {
        ns.active && self.matches(ns.name, ns.labels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::LabelSelectorRequirement;
    use proptest::prelude::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn names(patterns: &[&str]) -> Vec<String> {
        patterns.iter().map(|s| s.to_string()).collect()
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: if values.is_empty() {
                None
            } else {
                Some(names(values))
            },
        }
    }

    fn selector(
        ls: Option<LabelSelector>,
        matching: &[&str],
        ignoring: &[&str],
    ) -> CompiledSelector {
        CompiledSelector::compile(Some(&NamespaceSelector {
            label_selector: ls,
            match_names: names(matching),
            ignore_names: names(ignoring),
        }))
        .unwrap()
    }

    #[test]
    fn anchoring_is_over_the_whole_pattern() {
        // espejo compiled `^a|b$`, which matched "axe" (starts with a) and
        // "bob" (ends with b). mirra reads the pattern as "exactly a or b".
        let espejo = Regex::new("^a|b$").unwrap();
        assert!(espejo.is_match("axe"));
        assert!(espejo.is_match("bob"));
        let mirra = compile_name_pattern("a|b").unwrap();
        assert!(!mirra.is_match("axe"));
        assert!(!mirra.is_match("bob"));
        assert!(mirra.is_match("a"));
        assert!(mirra.is_match("b"));
        // A literal name must not match a longer one.
        let lit = compile_name_pattern("team-a").unwrap();
        assert!(lit.is_match("team-a"));
        assert!(!lit.is_match("team-ab"));
        assert!(!lit.is_match("xteam-a"));
        // Patterns already carrying anchors still work.
        assert!(
            compile_name_pattern("^team-.*$")
                .unwrap()
                .is_match("team-x")
        );
    }

    #[test]
    fn star_alone_is_rejected_not_match_all() {
        // espejo compiled `*` to `^*$`, which Go accepts and which matched
        // every name; here it is an error.
        assert!(compile_name_pattern("*").is_err());
        let err = CompiledSelector::compile(Some(&NamespaceSelector {
            label_selector: None,
            match_names: names(&["ok", "*"]),
            ignore_names: vec![],
        }))
        .unwrap_err();
        assert_eq!(err.len(), 1);
        assert_eq!(err[0].path(), "spec.namespaceSelector.matchNames[1]");
    }

    #[test]
    fn selection_table() {
        let prod = labels(&[("env", "prod")]);
        let none = labels(&[]);
        let ls = || {
            Some(LabelSelector {
                match_labels: Some([("env".to_string(), "prod".to_string())].into()),
                match_expressions: None,
            })
        };
        // (selector, namespace name, labels, selected?)
        let cases: Vec<(CompiledSelector, &str, &BTreeMap<String, String>, bool)> = vec![
            (selector(ls(), &[], &[]), "a", &prod, true),
            (selector(ls(), &[], &[]), "a", &none, false),
            (selector(None, &["team-.*"], &[]), "team-x", &none, true),
            (selector(None, &["team-.*"], &[]), "other", &none, false),
            // OR between labelSelector and matchNames.
            (selector(ls(), &["team-.*"], &[]), "team-x", &none, true),
            (selector(ls(), &["team-.*"], &[]), "other", &prod, true),
            // ignoreNames wins over both.
            (
                selector(ls(), &["team-.*"], &["team-x"]),
                "team-x",
                &prod,
                false,
            ),
            (
                selector(ls(), &[], &["kube-.*"]),
                "kube-system",
                &prod,
                false,
            ),
            (selector(ls(), &[], &["kube-.*"]), "kube", &prod, true),
        ];
        for (i, (sel, name, labels, want)) in cases.iter().enumerate() {
            assert_eq!(sel.matches(name, labels), *want, "case {i}: {name}");
        }
    }

    #[test]
    fn inactive_namespaces_are_never_selected() {
        let sel = selector(None, &[".*"], &[]);
        let l = labels(&[]);
        let active = NamespaceView {
            name: "a",
            labels: &l,
            active: true,
        };
        let terminating = NamespaceView {
            name: "a",
            labels: &l,
            active: false,
        };
        assert!(sel.selects(&active));
        assert!(!sel.selects(&terminating));
    }

    #[test]
    fn namespace_view_reads_phase_and_deletion() {
        let mut ns = Namespace::default();
        ns.metadata.name = Some("a".into());
        assert!(
            NamespaceView::from_namespace(&ns).active,
            "no status: offline manifest"
        );
        ns.status = Some(k8s_openapi::api::core::v1::NamespaceStatus {
            phase: Some("Terminating".into()),
            ..Default::default()
        });
        assert!(!NamespaceView::from_namespace(&ns).active);
        ns.status = Some(k8s_openapi::api::core::v1::NamespaceStatus {
            phase: Some("Active".into()),
            ..Default::default()
        });
        assert!(NamespaceView::from_namespace(&ns).active);
        assert!(NamespaceView::from_namespace(&ns).labels.is_empty());
    }

    #[test]
    fn label_selector_operators_table() {
        let l = labels(&[("env", "prod"), ("tier", "web")]);
        let cases: Vec<(LabelSelector, bool)> = vec![
            // Empty selector matches everything.
            (LabelSelector::default(), true),
            (
                LabelSelector {
                    match_labels: Some(BTreeMap::new()),
                    match_expressions: Some(vec![]),
                },
                true,
            ),
            (
                LabelSelector {
                    match_labels: Some(labels(&[("env", "prod")])),
                    match_expressions: None,
                },
                true,
            ),
            (
                LabelSelector {
                    match_labels: Some(labels(&[("env", "dev")])),
                    match_expressions: None,
                },
                false,
            ),
            (sel_expr(expr("env", "In", &["dev", "prod"])), true),
            (sel_expr(expr("env", "In", &["dev"])), false),
            (sel_expr(expr("missing", "In", &["x"])), false),
            (sel_expr(expr("env", "NotIn", &["dev"])), true),
            (sel_expr(expr("env", "NotIn", &["prod"])), false),
            // NotIn matches an absent label.
            (sel_expr(expr("missing", "NotIn", &["x"])), true),
            (sel_expr(expr("tier", "Exists", &[])), true),
            (sel_expr(expr("missing", "Exists", &[])), false),
            (sel_expr(expr("missing", "DoesNotExist", &[])), true),
            (sel_expr(expr("tier", "DoesNotExist", &[])), false),
            // matchLabels AND matchExpressions.
            (
                LabelSelector {
                    match_labels: Some(labels(&[("env", "prod")])),
                    match_expressions: Some(vec![expr("tier", "In", &["db"])]),
                },
                false,
            ),
        ];
        for (i, (ls, want)) in cases.iter().enumerate() {
            let c = CompiledLabelSelector::compile(ls, "s").unwrap();
            assert_eq!(c.matches(&l), *want, "case {i}: {ls:?}");
        }
    }

    fn sel_expr(e: LabelSelectorRequirement) -> LabelSelector {
        LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![e]),
        }
    }

    #[test]
    fn bad_label_selectors_are_reported_with_paths() {
        let cases: Vec<(LabelSelector, &str)> = vec![
            (
                sel_expr(expr("env", "Equals", &["x"])),
                "s.matchExpressions[0].operator",
            ),
            (
                sel_expr(expr("env", "In", &[])),
                "s.matchExpressions[0].values",
            ),
            (
                sel_expr(expr("env", "NotIn", &[])),
                "s.matchExpressions[0].values",
            ),
            (
                sel_expr(expr("env", "Exists", &["x"])),
                "s.matchExpressions[0].values",
            ),
            (
                sel_expr(expr("bad key!", "Exists", &[])),
                "s.matchExpressions[0].key",
            ),
            (
                sel_expr(expr("env", "In", &["bad value!"])),
                "s.matchExpressions[0].values",
            ),
            (
                LabelSelector {
                    match_labels: Some(labels(&[("env", "-x")])),
                    match_expressions: None,
                },
                "s.matchLabels[\"env\"]",
            ),
        ];
        for (ls, path) in cases {
            let errs = CompiledLabelSelector::compile(&ls, "s").unwrap_err();
            assert_eq!(errs.len(), 1, "{ls:?}: {errs:?}");
            assert_eq!(errs[0].path(), path);
        }
    }

    #[test]
    fn selector_requirements_table() {
        let missing = CompiledSelector::compile(None).unwrap_err();
        assert_eq!(missing[0].path(), "spec.namespaceSelector");
        let ignore_only = CompiledSelector::compile(Some(&NamespaceSelector {
            label_selector: None,
            match_names: vec![],
            ignore_names: names(&["x"]),
        }))
        .unwrap_err();
        assert_eq!(ignore_only.len(), 1);
        assert!(ignore_only[0].to_string().contains("ignoreNames alone"));
        // Every bad pattern is reported, not only the first.
        let many = CompiledSelector::compile(Some(&NamespaceSelector {
            label_selector: None,
            match_names: names(&["(", "ok", "["]),
            ignore_names: names(&[")"]),
        }))
        .unwrap_err();
        let paths: Vec<&str> = many.iter().map(ValidationError::path).collect();
        assert_eq!(
            paths,
            [
                "spec.namespaceSelector.matchNames[0]",
                "spec.namespaceSelector.matchNames[2]",
                "spec.namespaceSelector.ignoreNames[0]"
            ]
        );
    }

    proptest! {
        #[test]
        fn literal_patterns_match_exactly_their_name(a in "[a-z0-9-]{1,12}", b in "[a-z0-9-]{1,12}") {
            let re = compile_name_pattern(&regex::escape(&a)).unwrap();
            prop_assert!(re.is_match(&a));
            prop_assert_eq!(re.is_match(&b), a == b);
        }

        #[test]
        fn alternations_match_only_whole_names(a in "[a-z]{1,6}", b in "[a-z]{1,6}", extra in "[a-z]{1,4}") {
            let re = compile_name_pattern(&format!("{a}|{b}")).unwrap();
            prop_assert!(re.is_match(&a));
            prop_assert!(re.is_match(&b));
            let longer_a = format!("{a}{extra}");
            let longer_b = format!("{extra}{b}");
            prop_assert_eq!(re.is_match(&longer_a), longer_a == b);
            prop_assert_eq!(re.is_match(&longer_b), longer_b == a);
        }

        #[test]
        fn arbitrary_patterns_never_panic(p in any::<String>(), name in any::<String>()) {
            if let Ok(re) = compile_name_pattern(&p) {
                let _ = re.is_match(&name);
            }
        }

        #[test]
        fn match_labels_equal_in_requirements(
            sel in proptest::collection::btree_map("[a-c]", "[x-z]", 0..3),
            l in proptest::collection::btree_map("[a-d]", "[w-z]", 0..4),
        ) {
            let by_labels = CompiledLabelSelector::compile(
                &LabelSelector { match_labels: Some(sel.clone()), match_expressions: None }, "s").unwrap();
            let by_exprs = CompiledLabelSelector::compile(
                &LabelSelector {
                    match_labels: None,
                    match_expressions: Some(sel.iter().map(|(k, v)| expr(k, "In", &[v])).collect()),
                }, "s").unwrap();
            prop_assert_eq!(by_labels.matches(&l), by_exprs.matches(&l));
            let expected = sel.iter().all(|(k, v)| l.get(k) == Some(v));
            prop_assert_eq!(by_labels.matches(&l), expected);
        }

        #[test]
        fn not_in_is_the_negation_of_in(
            key in "[a-c]", values in proptest::collection::btree_set("[x-z]", 1..3),
            l in proptest::collection::btree_map("[a-d]", "[w-z]", 0..4),
        ) {
            let vals: Vec<&str> = values.iter().map(String::as_str).collect();
            let is_in = CompiledLabelSelector::compile(&sel_expr(expr(&key, "In", &vals)), "s").unwrap();
            let not_in = CompiledLabelSelector::compile(&sel_expr(expr(&key, "NotIn", &vals)), "s").unwrap();
            prop_assert_eq!(is_in.matches(&l), !not_in.matches(&l));
        }
    }
}
