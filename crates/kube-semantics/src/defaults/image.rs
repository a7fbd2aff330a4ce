//! Image references, parsed with docker/distribution's grammar as
//! `ParseImageName` does, to find the tag that decides `imagePullPolicy`.
//!
//! This module must NOT validate images for the 422 answer: validation does.

/// The tag `ParseImageName` finds in an image reference: the explicit tag,
/// `latest` when there is neither tag nor digest, `""` for a digest alone,
/// and `None` when the reference does not parse (the container then gets
/// `IfNotPresent`, like any tag other than `latest`).
pub(super) fn image_tag(image: &str) -> Option<String> {
    if image.len() == 64
        && image
            .bytes()
            .all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    let (name_tag, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    if let Some(d) = digest
        && !valid_digest(d)
    {
        return None;
    }
    let (name, tag) = match name_tag.rfind(':') {
        Some(i) if !name_tag[i + 1..].contains('/') => (&name_tag[..i], Some(&name_tag[i + 1..])),
        _ => (name_tag, None),
    };
    if let Some(t) = tag
        && !valid_tag(t)
    {
        return None;
    }
    if !valid_name(name) {
        return None;
    }
    Some(match (tag, digest) {
        (Some(t), _) => t.to_string(),
        (None, None) => "latest".to_string(),
        (None, Some(_)) => String::new(),
    })
}

pub(super) fn valid_digest(d: &str) -> bool {
    let Some((alg, hex)) = d.split_once(':') else {
        return false;
    };
    let len = match alg {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return false,
    };
    hex.len() == len && hex.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

pub(super) fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

pub(super) fn valid_tag(t: &str) -> bool {
    let b = t.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && is_word(b[0])
        && b[1..]
            .iter()
            .all(|c| is_word(*c) || *c == b'.' || *c == b'-')
}

pub(super) fn valid_name(name: &str) -> bool {
    let (domain, remote) = match name.split_once('/') {
        Some((first, rest))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first.to_lowercase() != first =>
        {
            (Some(first), rest)
        }
        _ => (None, name),
    };
    if let Some(d) = domain
        && !valid_domain(d)
    {
        return false;
    }
    let full_len = match domain {
        Some(d) => d.len() + 1 + remote.len(),
        None if remote.contains('/') => "docker.io/".len() + remote.len(),
        None => "docker.io/library/".len() + remote.len(),
    };
    full_len <= 255 && remote.split('/').all(valid_path_component)
}

/// `[a-z0-9]+` joined by `.`, `_`, `__` or runs of `-`.
pub(super) fn valid_path_component(c: &str) -> bool {
    let b = c.as_bytes();
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    if b.is_empty() || !alnum(b[0]) || !alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let sep = &c[start..i];
        if !(sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|x| x == b'-')) {
            return false;
        }
    }
    true
}

pub(super) fn valid_domain(d: &str) -> bool {
    let (host, port) = if let Some(rest) = d.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else {
            return false;
        };
        if v6.is_empty() || !v6.bytes().all(|c| c.is_ascii_hexdigit() || c == b':') {
            return false;
        }
        (None, after.strip_prefix(':').map(Some).unwrap_or(Some("")))
    } else {
        match d.split_once(':') {
            Some((h, p)) => (Some(h), Some(p)),
            None => (Some(d), Some("")),
        }
    };
    if let Some(h) = host {
        let ok = h.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        });
        if !ok {
            return false;
        }
    }
    match port {
        Some("") | None => !d.ends_with(':'),
        Some(p) => p.bytes().all(|c| c.is_ascii_digit()),
    }
}
