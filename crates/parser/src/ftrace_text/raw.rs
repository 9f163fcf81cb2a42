//! The fields of untyped events, as printed (`key=value` pairs), for
//! [`schedscope_trace::Trace::raw_args`].

/// Split an untyped event's body into (name, value) pairs: `key=value`
/// tokens, a value running up to the next ` key=` (so values may hold
/// spaces); a body with no `key=` at its start is kept whole as `body`.
pub(super) fn raw_pairs(body: &str) -> Vec<(&str, &str)> {
    let starts_key = |s: &str| -> Option<usize> {
        let eq = s.find('=')?;
        let k = &s[..eq];
        (!k.is_empty() && k.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')).then_some(eq)
    };
    let body = body.trim();
    if body.is_empty() {
        return Vec::new();
    }
    let Some(eq) = starts_key(body) else {
        return vec![("body", body)];
    };
    let mut out = Vec::new();
    let (mut key, mut rest) = (&body[..eq], &body[eq + 1..]);
    loop {
        // The next ` key=` ends this value.
        let mut next = None;
        let mut from = 0;
        while let Some(off) = rest[from..].find(' ') {
            let sp = from + off;
            let tail = rest[sp..].trim_start();
            if let Some(e) = starts_key(tail) {
                next = Some((sp, rest.len() - tail.len(), e));
                break;
            }
            from = sp + 1;
        }
        match next {
            Some((sp, tail_at, e)) => {
                out.push((key, rest[..sp].trim_end()));
                key = &rest[tail_at..tail_at + e];
                rest = &rest[tail_at + e + 1..];
            }
            None => {
                out.push((key, rest.trim_end()));
                return out;
            }
        }
    }
}
