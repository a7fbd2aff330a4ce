//! Flag parsing the scenarios share: `--flag value` pairs, numbers and
//! comma-separated lists, each refused with the flag's name.
//!
//! What this module must NOT do: know any scenario's flags or defaults.

use anyhow::Context;

/// The `--flag value` pairs of `args`, in order; a flag without a value
/// is refused.
pub(crate) fn pairs(args: Vec<String>) -> anyhow::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut it = args.into_iter();
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        out.push((flag, value));
    }
    Ok(out)
}

/// A whole number, refused with the flag's name.
pub(crate) fn number<T: std::str::FromStr>(flag: &str, value: &str) -> anyhow::Result<T>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    value
        .trim()
        .parse()
        .with_context(|| format!("{flag} {value:?}: not a number"))
}

/// A comma-separated list of numbers above 0; `zero` says why 0 is
/// refused.
pub(crate) fn positive_list(flag: &str, value: &str, zero: &str) -> anyhow::Result<Vec<usize>> {
    let list = value
        .split(',')
        .map(|s| s.trim().parse::<usize>())
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("{flag} {value:?}: a comma-separated list of numbers"))?;
    anyhow::ensure!(!list.contains(&0), "{flag} {value:?}: {zero}");
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    fn error<T>(r: anyhow::Result<T>) -> String {
        r.err().map(|e| format!("{e:#}")).unwrap_or_default()
    }

    #[test]
    fn malformed_values_are_refused_with_the_flag_name() {
        assert_eq!(
            pairs(strings(&["--a", "1", "--b", "x"])).ok(),
            Some(vec![("--a".into(), "1".into()), ("--b".into(), "x".into())])
        );
        assert!(error(pairs(strings(&["--a", "1", "--b"]))).contains("--b needs a value"));
        assert_eq!(number::<u64>("--n", " 7 ").ok(), Some(7));
        assert!(error(number::<u64>("--n", "-1")).contains("--n \"-1\": not a number"));
        assert!(error(number::<usize>("--n", "")).contains("--n"));
        assert_eq!(positive_list("--l", "1, 2", "no").ok(), Some(vec![1, 2]));
        assert!(error(positive_list("--l", "1,,2", "no")).contains("--l \"1,,2\": a comma"));
        assert!(error(positive_list("--l", "0", "nothing")).contains("--l \"0\": nothing"));
    }
}
