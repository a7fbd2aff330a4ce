//! `${PROJECT_NAME}` templating.
//!
//! The placeholder is replaced by the target namespace's name in every string
//! value of an item, at any depth, including strings inside lists and the
//! object's own name. Map keys are NOT templated: espejo replaced values only
//! (its walker visits map values and never rewrites keys), and a SyncConfig
//! must mean the same thing under mirra. Numbers, booleans and nulls pass
//! through untouched, so a float such as `1.5` or an integer beyond 32 bits
//! is written back exactly as it was read (espejo crashed on floats and on
//! lists of strings).
//!
//! What this module must NOT do: interpret the values; it is a blind string
//! substitution.

use serde_json::Value;

/// The placeholder replaced by the target namespace's name.
pub const PROJECT_NAME: &str = "${PROJECT_NAME}";

/// Replaces the placeholder in one string.
pub fn template_str(s: &str, namespace: &str) -> String {
    s.replace(PROJECT_NAME, namespace)
}

/// Replaces the placeholder in every string value of `value`, in place.
pub fn template_value(value: &mut Value, namespace: &str) {
    match value {
        Value::String(s) => {
            if s.contains(PROJECT_NAME) {
                *s = template_str(s, namespace);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| template_value(v, namespace)),
        Value::Object(map) => map.values_mut().for_each(|v| template_value(v, namespace)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Whether any string value of `value` contains the placeholder.
pub fn contains_placeholder(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains(PROJECT_NAME),
        Value::Array(items) => items.iter().any(contains_placeholder),
        Value::Object(map) => map.values().any(contains_placeholder),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn strings_at_every_depth_are_templated_keys_are_not() {
        let mut v = json!({
            "metadata": {"name": "cfg-${PROJECT_NAME}", "labels": {"${PROJECT_NAME}": "${PROJECT_NAME}"}},
            "data": {"a": "x ${PROJECT_NAME} y ${PROJECT_NAME}"},
            "args": ["--ns=${PROJECT_NAME}", 3, null, true, {"k": "${PROJECT_NAME}"}],
        });
        template_value(&mut v, "team-a");
        assert_eq!(
            v,
            json!({
                "metadata": {"name": "cfg-team-a", "labels": {"${PROJECT_NAME}": "team-a"}},
                "data": {"a": "x team-a y team-a"},
                "args": ["--ns=team-a", 3, null, true, {"k": "team-a"}],
            })
        );
    }

    #[test]
    fn near_misses_are_left_alone() {
        let mut v = json!([
            "$PROJECT_NAME",
            "${PROJECT_NAME",
            "${project_name}",
            "{PROJECT_NAME}"
        ]);
        let before = v.clone();
        template_value(&mut v, "x");
        assert_eq!(v, before);
    }

    #[test]
    fn floats_round_trip_bit_exact() {
        let text = r#"{"f":1.5,"tiny":5e-324,"pi":3.141592653589793,"neg":-0.1,"big":18446744073709551615,"min":-9223372036854775808,"e":1e300}"#;
        let mut v: Value = serde_json::from_str(text).unwrap();
        template_value(&mut v, "ns");
        let out = serde_json::to_string(&v).unwrap();
        let back: Value = serde_json::from_str(&out).unwrap();
        for key in ["f", "tiny", "pi", "neg", "e"] {
            let before: Value = serde_json::from_str::<Value>(text).unwrap()[key].clone();
            assert_eq!(
                back[key].as_f64().unwrap().to_bits(),
                before.as_f64().unwrap().to_bits(),
                "{key}"
            );
        }
        assert_eq!(back["big"].as_u64(), Some(u64::MAX));
        assert_eq!(back["min"].as_i64(), Some(i64::MIN));
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        crate::test_json::json_tree("[a-z${}_A-Z ]{0,20}", "[a-z${}A-Z_]{1,8}")
    }

    proptest! {
        #[test]
        fn templating_without_placeholder_is_identity(v in arb_json(), ns in "[a-z0-9-]{1,20}") {
            prop_assume!(!contains_placeholder(&v));
            let mut t = v.clone();
            template_value(&mut t, &ns);
            prop_assert_eq!(t, v);
        }

        #[test]
        fn templating_leaves_no_placeholder_and_keeps_numbers(v in arb_json(), ns in "[a-z0-9-]{1,20}") {
            let mut t = v.clone();
            template_value(&mut t, &ns);
            prop_assert!(!contains_placeholder(&t));
            // The serialized numbers are identical: templating only touches strings.
            let text = serde_json::to_string(&t).unwrap();
            let reparsed: Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(serde_json::to_string(&reparsed).unwrap(), text);
            prop_assert_eq!(count_numbers(&t), count_numbers(&v));
        }
    }

    fn count_numbers(v: &Value) -> Vec<String> {
        match v {
            Value::Number(n) => vec![n.to_string()],
            Value::Array(a) => a.iter().flat_map(count_numbers).collect(),
            Value::Object(m) => m.values().flat_map(count_numbers).collect(),
            _ => vec![],
        }
    }
}
