use super::*;
use proptest::prelude::*;
use serde_json::json;

fn canon(s: &str) -> String {
    match canonicalize(s) {
        Ok(c) => c,
        Err(e) => panic!("{s}: {e}"),
    }
}

fn q(s: &str) -> Quantity {
    match parse(s) {
        Ok(q) => q,
        Err(e) => panic!("{s}: {e}"),
    }
}

#[test]
fn error_texts_are_apimachinerys() {
    assert_eq!(
        QuantityError::FormatWrong.to_string(),
        format!("quantities must match the regular expression '{SPLIT_RE}'")
    );
    assert_eq!(
        QuantityError::Numeric.to_string(),
        "unable to parse numeric part of quantity"
    );
    assert_eq!(
        QuantityError::Suffix.to_string(),
        "unable to parse quantity's suffix"
    );
}

// quantity_test.go TestQuantityParseEmit, positive and negated.
#[test]
fn parse_emit_table() {
    let table = [
        ("1Ki", "1Ki"),
        ("1Mi", "1Mi"),
        ("1Gi", "1Gi"),
        ("1024Mi", "1Gi"),
        ("1000M", "1G"),
        (".001Ki", "1024m"),
        (".000001Ki", "1024u"),
        (".000000001Ki", "1024n"),
        (".000000000001Ki", "2n"),
    ];
    for (input, want) in table {
        assert_eq!(canon(input), want, "{input}");
        assert_eq!(canon(&format!("-{input}")), format!("-{want}"), "-{input}");
    }
}

// quantity_test.go TestQuantityString: canonical strings are kept on
// parse, and the alternates print canonically.
#[test]
fn string_table_canonical_and_alternates() {
    let table = [
        ("1Gi", "1024Mi"),
        ("300Mi", "307200Ki"),
        ("6Ki", ""),
        ("1001Gi", "1025024Mi"),
        ("1Ti", "1024Gi"),
        ("5", "5000m"),
        ("500m", "0.5"),
        ("1G", "1000M"),
        ("1G", "0.001T"),
        ("1m", "1000u"),
        ("80m", ""),
        ("1080m", "1.08"),
        ("1080m", "1080000000n"),
        ("300M", ""),
        ("1T", ""),
        ("1234567M", ""),
        ("1234567m", ""),
        ("3k", ""),
        ("1025", ""),
        ("0", ""),
        ("1e9", ".001e12"),
        ("1e-3", "0.001e0"),
        ("1e-9", "1000e-12"),
        ("80e-3", ""),
        ("300e6", ""),
        ("1e12", ""),
        ("1e3", ""),
        ("3e3", ""),
        ("0", "00"),
        ("1n", ""),
        ("80n", ""),
        ("1080n", ""),
        ("1u", ""),
        ("80u", ""),
        ("1080u", ""),
    ];
    for (canonical, alternate) in table {
        let p = q(canonical);
        assert_eq!(
            p.cached.as_deref(),
            Some(canonical),
            "kept text of {canonical}"
        );
        assert_eq!(p.canonical(), canonical);
        if !alternate.is_empty() {
            let a = q(alternate);
            assert_eq!(a.cached, None, "{alternate} must not be kept");
            assert_eq!(a.canonical(), canonical, "{alternate}");
        }
    }
}

#[test]
fn brief_examples() {
    assert_eq!(canon("0.5"), "500m");
    assert_eq!(canon("1000m"), "1");
    assert_eq!(canon("1024Mi"), "1Gi");
    assert_eq!(canon("0.5Gi"), "512Mi");
    assert_eq!(canon("1.5Ki"), "1536");
    assert_eq!(canon("100Mi"), "100Mi");
    assert_eq!(canon("1.5"), "1500m");
    assert_eq!(canon("1.5Gi"), "1536Mi");
    assert_eq!(canon("-0"), "0");
    assert_eq!(canon("-0.0"), "0");
    // `1e3` is a decimal-exponent quantity already canonical: kept.
    assert_eq!(canon("1e3"), "1e3");
    assert_eq!(canon("1000e0"), "1e3");
    assert_eq!(canon("0.1m"), "100u");
    assert_eq!(canon("0.0000000001"), "1n");
}

// quantity_test.go TestQuantityParse: value and format of each input,
// checked through the canonical text and comparison.
#[test]
fn parse_table_values_and_formats() {
    use Format::*;
    let table: &[(&str, &str, Format)] = &[
        ("0", "0", DecimalSI),
        ("0n", "0", DecimalSI),
        ("0Ki", "0", BinarySI),
        ("0Ti", "0", BinarySI),
        ("1", "1", DecimalSI),
        ("8Ki", "8192", DecimalSI),
        ("7Mi", "7340032", DecimalSI),
        ("3Ei", "3458764513820540928", DecimalSI),
        ("100Ti", "109951162777600", DecimalSI),
        ("5n", "5n", DecimalSI),
        ("50k", "50k", DecimalSI),
        ("40T", "40T", DecimalSI),
        ("12E", "12E", DecimalSI),
        ("1E-3", "1m", DecimalExponent),
        ("1e14", "100T", DecimalExponent),
        ("100.035k", "100035", DecimalSI),
        ("0.0005k", "500m", DecimalSI),
        ("0.5e-2", "5m", DecimalExponent),
        ("10.035M", "10035k", DecimalSI),
        ("1.3E+6", "1300k", DecimalExponent),
        ("1.7E18", "1700P", DecimalExponent),
        ("6.987654321G", "6987654321", DecimalSI),
        ("1.01E", "1010P", DecimalSI),
        ("3.001n", "4n", DecimalSI),
        ("1.1E-9", "2n", DecimalExponent),
        ("0.0000000005", "1n", DecimalSI),
        ("0.5e-9", "1n", DecimalExponent),
        ("0.9n", "1n", DecimalSI),
        ("0.00000012345", "124n", DecimalSI),
        ("0.00000012354", "124n", DecimalSI),
        ("9Ei", "9223372036854775807", DecimalSI),
        ("9223372036854775807Ki", "9223372036854775807", DecimalSI),
        ("100.035Ki", "102435840m", DecimalSI),
        ("0.5Mi", "524288", DecimalSI),
        ("0.05Gi", "53687091200m", DecimalSI),
        ("0.025Ti", "27487790694400m", DecimalSI),
        ("0.000000000001Ki", "2n", DecimalSI),
        (".001", "1m", DecimalSI),
        (".0001k", "100m", DecimalSI),
        ("1.", "1", DecimalSI),
        ("1.G", "1G", DecimalSI),
    ];
    for (input, value, format) in table {
        let got = q(input);
        let want = q(value);
        assert_eq!(got.cmp(&want), Ordering::Equal, "{input} vs {value}");
        if *value != "0"
            && !input.ends_with("Ki")
            && !input.ends_with("Mi")
            && !input.ends_with("Gi")
            && !input.ends_with("Ti")
            && !input.ends_with("Ei")
        {
            assert_eq!(got.format(), *format, "{input}");
        }
        let neg = q(&format!("-{input}"));
        let plus = q(&format!("+{input}"));
        assert_eq!(plus.cmp(&got), Ordering::Equal, "+{input}");
        if !got.is_zero() {
            assert!(neg.is_negative(), "-{input}");
            assert_eq!(
                neg.compute_canonical(),
                format!("-{}", got.compute_canonical())
            );
        }
    }
    // Binary formats as the table states them.
    assert_eq!(q("1Ki").format(), BinarySI);
    assert_eq!(q("9Ei").format(), BinarySI);
    assert_eq!(q("100.035Ki").format(), BinarySI);
    assert_eq!(q("0.000000000001Ki").format(), DecimalSI);
}

#[test]
fn parse_rejects_upstream_invalid_inputs() {
    for s in [
        "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 ",
        "",
    ] {
        assert!(parse(s).is_err(), "{s:?} parsed");
    }
    assert_eq!(parse("").err(), Some(QuantityError::FormatWrong));
    assert_eq!(parse("aoeu").err(), Some(QuantityError::FormatWrong));
    assert_eq!(parse("1.1.M").err(), Some(QuantityError::FormatWrong));
    assert_eq!(parse("0.1am").err(), Some(QuantityError::FormatWrong));
    assert_eq!(parse("1i").err(), Some(QuantityError::Suffix));
    assert_eq!(parse("0.1mi").err(), Some(QuantityError::Suffix));
    assert_eq!(parse("-3.01e-").err(), Some(QuantityError::Suffix));
    assert_eq!(parse("1e").err(), Some(QuantityError::Suffix));
    assert_eq!(parse("1ki").err(), Some(QuantityError::Suffix));
    assert_eq!(parse("1K").err(), Some(QuantityError::Suffix));
    assert_eq!(
        parse("1e99999999999999999999").err(),
        Some(QuantityError::Suffix)
    );
    assert_eq!(parse("-.e-20").err(), Some(QuantityError::Numeric));
    assert_eq!(parse("1é").err(), Some(QuantityError::FormatWrong));
    assert_eq!(parse("{}").err(), Some(QuantityError::FormatWrong));
}

#[test]
fn degenerate_numbers_parse_like_go() {
    // Go's scanner accepts a lone sign or dot as zero.
    assert_eq!(canon("."), "0");
    assert_eq!(canon("-"), "0");
    assert_eq!(canon("+"), "0");
    assert_eq!(canon("-."), "0");
    assert_eq!(canon(".Ki"), "0");
    assert_eq!(canon("000"), "0");
}

#[test]
fn text_kept_when_the_fast_path_deems_it_canonical() {
    assert_eq!(canon("+5"), "+5");
    assert_eq!(canon("05"), "05");
    assert_eq!(canon("1."), "1.");
    assert_eq!(canon("1E3"), "1E3");
    assert_eq!(canon("1e+3"), "1e+3");
    assert_eq!(canon("12Ki"), "12Ki");
    assert_eq!(canon("1.Ki"), "1.Ki");
    // Multiples of 8 in binary are recomputed.
    assert_eq!(canon("16Ki"), "16Ki");
    assert_eq!(canon("1024Ki"), "1Mi");
    assert_eq!(canon("2048Ki"), "2Mi");
    assert_eq!(canon("1000"), "1k");
    assert_eq!(canon("1500m"), "1500m");
    assert_eq!(canon("+0.5"), "500m");
}

#[test]
fn big_and_small_values() {
    assert_eq!(canon("1000E"), "1");
    assert_eq!(canon("1e21"), "1e21");
    assert_eq!(canon("10e20"), "1e21");
    assert_eq!(canon("1e100"), "10e99");
    assert_eq!(canon("1e99"), "1e99");
    assert_eq!(canon("1e-10"), "1e-9");
    assert_eq!(canon("-1e-10"), "-1e-9");
    assert_eq!(canon("1e-2000000000"), "1e-9");
    assert_eq!(canon("1e2000000000"), "100e1999999998");
    assert_eq!(canon("1.0000000001e2000000000"), "100000000010e1999999989");
    assert_eq!(
        canon("123456789012345678901234567890"),
        "123456789012345678901234567890"
    );
    assert_eq!(canon("1234567890123456789.5"), "1234567890123456789500m");
    assert_eq!(canon("8Ei"), "9223372036854775807");
    assert_eq!(canon("-8Ei"), "-9223372036854775807");
    assert_eq!(canon("7Ei"), "7Ei");
    assert_eq!(canon("1Pi"), "1Pi");
    assert_eq!(canon("1023"), "1023");
    assert_eq!(canon("1.1Ki"), "1126400m");
}

#[test]
fn round_up_matches_upstream_table() {
    // quantity_test.go TestQuantityRoundUp
    let table = [
        ("9.01", -3, "9010m", true),
        ("9.01", -2, "9010m", true),
        ("9.01", -1, "9100m", false),
        ("9.01", 0, "10", false),
        ("9.01", 1, "10", false),
        ("9.01", 2, "100", false),
        ("-9.01", -1, "-9100m", false),
        ("-9.01", 0, "-10", false),
    ];
    for (input, scale, want, exact) in table {
        let mut got = q(input);
        assert_eq!(got.round_up(scale), exact, "{input} {scale}");
        assert_eq!(got.canonical(), want, "{input} {scale}");
    }
    let mut tiny = q("1n");
    tiny.round_up(-3);
    assert_eq!(tiny.canonical(), "1m");
    let mut kept = q("+5");
    kept.round_up(-3);
    assert_eq!(kept.canonical(), "+5");
}

#[test]
fn comparisons() {
    // quantity_test.go TestQuantityCmp
    assert_eq!(q("0").cmp(&q("0")), Ordering::Equal);
    assert_eq!(q("100m").cmp(&q("50m")), Ordering::Greater);
    assert_eq!(q("50m").cmp(&q("100m")), Ordering::Less);
    assert_eq!(q("10000T").cmp(&q("100Gi")), Ordering::Greater);
    assert_eq!(q("1Ki"), q("1024"));
    assert!(q("-1") < q("0"));
    assert!(q("-2") < q("-1"));
    assert!(q("1e100") > q("8Ei"));
    assert!(q("1n") > q("0"));
    assert_eq!(q("1.5Gi"), q("1536Mi"));
    assert!(q("-0").is_zero());
    assert!(!q("-0").is_negative());
    assert_eq!(q("-1m").sign(), -1);
}

#[test]
fn value_and_milli_value() {
    assert_eq!(q("1.5").value(), 2);
    assert_eq!(q("-1.5").value(), -2);
    assert_eq!(q("1.5").milli_value(), 1500);
    assert_eq!(q("1n").milli_value(), 1);
    assert_eq!(q("1e100").value(), i64::MAX);
    assert_eq!(q("2Gi").value(), 2147483648);
}

#[test]
fn json_values() {
    let p = |v: Value| parse_json(&v).map(|q| q.canonical());
    assert_eq!(p(json!(" 1")), Ok("1".into()));
    assert_eq!(p(json!("1 ")), Ok("1".into()));
    assert_eq!(p(json!(1)), Ok("1".into()));
    assert_eq!(p(json!(10)), Ok("10".into()));
    assert_eq!(p(json!(-1)), Ok("-1".into()));
    assert_eq!(p(json!(1.5)), Ok("1500m".into()));
    assert_eq!(p(json!(0.5)), Ok("500m".into()));
    assert_eq!(p(json!(1000)), Ok("1k".into()));
    // serde_json renders this f64 as `1e+21`, which the fast path keeps.
    assert_eq!(p(json!(1e21)), Ok("1e+21".into()));
    assert_eq!(p(json!(1.5e-7)), Ok("150e-9".into()));
    assert_eq!(p(json!(-0.0)), Ok("0".into()));
    assert_eq!(p(Value::Null), Ok("0".into()));
    assert_eq!(p(json!(true)), Err(QuantityError::FormatWrong));
    assert_eq!(p(json!({})), Err(QuantityError::FormatWrong));
    assert_eq!(p(json!([1])), Err(QuantityError::FormatWrong));
    assert_eq!(p(json!("")), Err(QuantityError::FormatWrong));
    assert_eq!(p(json!("1Gb")), Err(QuantityError::FormatWrong));
}

#[test]
fn walker_rewrites_matches_and_reports_paths() {
    let mut obj = json!({"spec": {"limits": [
        {"type": "Container", "max": {"cpu": "0.5", "memory": "1024Mi"}},
        {"type": "Pod", "max": {"cpu": 2}}
    ]}});
    let pat = [
        Seg::Key("spec".into()),
        Seg::Key("limits".into()),
        Seg::AnyIndex,
        Seg::Key("max".into()),
        Seg::AnyKey,
    ];
    assert_eq!(canonicalize_at(&mut obj, &pat), Ok(()));
    assert_eq!(obj["spec"]["limits"][0]["max"]["cpu"], json!("500m"));
    assert_eq!(obj["spec"]["limits"][0]["max"]["memory"], json!("1Gi"));
    assert_eq!(obj["spec"]["limits"][1]["max"]["cpu"], json!("2"));

    let mut bad = json!({"spec": {"limits": [
        {"max": {"cpu": "1.5"}},
        {"max": {"cpu": "1x", "memory": "0.5"}}
    ]}});
    let before = bad.clone();
    let err = canonicalize_at(&mut bad, &pat).err();
    assert_eq!(
        err,
        Some(QuantityFieldError {
            path: "spec.limits[1].max.cpu".into(),
            error: QuantityError::FormatWrong,
        })
    );
    assert_eq!(bad, before, "nothing changes on failure");
    assert_eq!(
        err.map(|e| e.to_string()),
        Some(format!(
            "spec.limits[1].max.cpu: quantities must match the regular expression '{SPLIT_RE}'"
        ))
    );
}

#[test]
fn walker_skips_missing_paths_and_handles_nulls() {
    let pat = [
        Seg::Key("spec".into()),
        Seg::Key("hard".into()),
        Seg::AnyKey,
    ];
    let mut none = json!({"metadata": {}});
    assert_eq!(canonicalize_at(&mut none, &pat), Ok(()));
    let mut wrong_shape = json!({"spec": {"hard": "x"}});
    assert_eq!(canonicalize_at(&mut wrong_shape, &pat), Ok(()));
    let mut nulls = json!({"spec": {"hard": {"pods": null}}, "size": null});
    assert_eq!(canonicalize_at(&mut nulls, &pat), Ok(()));
    assert_eq!(nulls["spec"]["hard"]["pods"], json!("0"));
    assert_eq!(
        canonicalize_at(&mut nulls, &[Seg::Key("size".into())]),
        Ok(())
    );
    assert_eq!(nulls["size"], Value::Null);
}

#[test]
fn resource_list_walker_rounds_to_milli() {
    let mut obj = json!({"requests": {"cpu": "1n", "memory": "0.000000000001Ki", "x": "+5"}});
    let pat = [Seg::Key("requests".into()), Seg::AnyKey];
    assert_eq!(canonicalize_resource_list_at(&mut obj, &pat), Ok(()));
    assert_eq!(
        obj,
        json!({"requests": {"cpu": "1m", "memory": "1m", "x": "+5"}})
    );
}

#[test]
fn go_syntax_rendering() {
    assert_eq!(
        q("2").go_syntax(),
        "resource.Quantity{i:resource.int64Amount{value:2, scale:0}, \
         d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"2\", Format:\"DecimalSI\"}"
    );
    assert_eq!(
        q("1.5").go_syntax(),
        "resource.Quantity{i:resource.int64Amount{value:15, scale:-1}, \
         d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"\", Format:\"DecimalSI\"}"
    );
}

/// Go prints no suffix for a decimal exponent past E's 18 (its suffix
/// table has none, and the failed look-up is ignored), so such a value's
/// canonical text reads as a smaller number. Kept: the server does it.
#[test]
fn values_past_the_largest_decimal_suffix_lose_it_as_in_go() {
    assert_eq!(canonicalize("999E").as_deref(), Ok("999E"));
    assert_eq!(canonicalize("1000E").as_deref(), Ok("1"));
    assert_eq!(canonicalize("10000E").as_deref(), Ok("10"));
    // The exponent form has no table to miss.
    assert_eq!(canonicalize("1e21").as_deref(), Ok("1e21"));
}

proptest! {
    #[test]
    fn parse_never_panics(s in any::<String>()) {
        let _ = parse(&s).map(|q| q.canonical());
    }

    #[test]
    fn parse_never_panics_on_quantity_like_text(s in "[-+]?[0-9.]{0,25}[eEinumkKMGTP]{0,3}[-+]?[0-9]{0,12}") {
        let _ = parse(&s).map(|q| (q.canonical(), q.value(), q.milli_value()));
    }

    #[test]
    fn canonical_is_idempotent(s in "[-+]?[0-9]{0,22}(\\.[0-9]{0,14})?(|n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|e[-+]?[0-9]{1,3})") {
        if let Ok(first) = canonicalize(&s) {
            let second = canonicalize(&first);
            prop_assert_eq!(second.as_deref(), Ok(first.as_str()), "input {}", s);
            // The canonical text has the same value, but past the largest
            // decimal suffix (see the test above).
            let value = q(&s);
            let past_e = value.cmp(&q("1000E")) != Ordering::Less
                || value.cmp(&q("-1000E")) != Ordering::Greater;
            if !past_e {
                prop_assert_eq!(q(&first).cmp(&value), Ordering::Equal);
            }
        }
    }

    #[test]
    fn comparison_agrees_with_integer_values(a in -1_000_000_000i64..1_000_000_000, b in -1_000_000_000i64..1_000_000_000, sa in 0usize..4, sb in 0usize..4) {
        let suffixes = ["", "k", "M", "Ki"];
        let mult = [1i128, 1000, 1_000_000, 1024];
        let qa = q(&format!("{a}{}", suffixes[sa]));
        let qb = q(&format!("{b}{}", suffixes[sb]));
        let va = i128::from(a) * mult[sa];
        let vb = i128::from(b) * mult[sb];
        prop_assert_eq!(qa.cmp(&qb), va.cmp(&vb));
        prop_assert_eq!(qa.is_negative(), va < 0);
        prop_assert_eq!(qa.is_zero(), va == 0);
    }

    #[test]
    fn milli_comparison_agrees(a in -1_000_000_000i64..1_000_000_000, b in -1_000_000_000i64..1_000_000_000) {
        let qa = q(&format!("{a}m"));
        let sign = if b < 0 { "-" } else { "" };
        let qb = q(&format!("{sign}{}.{:03}", b.unsigned_abs() / 1000, b.unsigned_abs() % 1000));
        prop_assert_eq!(qa.cmp(&qb), a.cmp(&b));
        prop_assert_eq!(qb.milli_value(), b);
    }

    #[test]
    fn walker_never_panics(v in arb_json()) {
        let mut v = v;
        let _ = canonicalize_at(&mut v, &[Seg::AnyKey, Seg::AnyKey]);
        let _ = canonicalize_at(&mut v, &[Seg::AnyIndex]);
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[-+0-9.a-zA-Z ]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,3}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
