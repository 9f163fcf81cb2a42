//! Splitting a body into its fields (`key=value` with values that may hold
//! spaces) and reading numbers, CPUs and code locations from them.
//!
//! (The helpers are `#[inline]`: every event's body goes through them,
//! from the parsers of the sibling modules.)

use super::SymText;

/// Split `body` by keys that appear in this order: the first key must start
/// the body, each later key is searched after the previous one (preceded by
/// a space); values run up to the next key, so string values may hold
/// spaces. Returns the raw values (untrimmed of trailing extras).
#[inline]
pub(super) fn fields<'a, const N: usize>(body: &'a str, keys: [&str; N]) -> Option<[&'a str; N]> {
    let mut out = [""; N];
    let mut rest = body.strip_prefix(keys[0])?;
    for i in 1..N {
        let k = keys[i];
        let pos = find_key(rest, k)?;
        out[i - 1] = &rest[..pos];
        rest = &rest[pos + 1 + k.len()..];
    }
    out[N - 1] = rest;
    Some(out)
}

/// Position of ` key` in `s` (the space before the key).
#[inline]
pub(super) fn find_key(s: &str, key: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find(key) {
        let at = from + i;
        if at > 0 && s.as_bytes()[at - 1] == b' ' {
            return Some(at - 1);
        }
        from = at + 1;
    }
    None
}

/// The first space-separated token of `s`, parsed.
#[inline]
pub(super) fn num<T: std::str::FromStr>(s: &str) -> Option<T> {
    first(s).parse().ok()
}

/// Largest CPU number accepted anywhere (the kernel's NR_CPUS limit is
/// 8192 on x86-64); larger values are damage, and would make per-CPU tables
/// of the analyses huge.
pub(crate) const MAX_CPU: u32 = 65_535;

/// A CPU number field.
#[inline]
pub(super) fn cpu_num(s: &str) -> Option<u32> {
    num::<u32>(s).filter(|&c| c <= MAX_CPU)
}

#[inline]
pub(super) fn first(s: &str) -> &str {
    let s = s.trim_start();
    s.split([' ', ',']).next().unwrap_or("")
}

/// A hex number with or without `0x`.
#[inline]
pub(super) fn hex(s: &str) -> Option<u64> {
    let t = first(s);
    let t = t.strip_prefix("0x").unwrap_or(t);
    u64::from_str_radix(t, 16).ok()
}

/// `name+0x12/0x40`, `name+0x12`, `name`, `0x0` or a decimal address.
#[inline]
pub(super) fn sym(s: &str) -> Option<SymText<'_>> {
    let t = first(s);
    if t.is_empty() {
        return None;
    }
    if let Some(h) = t.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).ok().map(SymText::Addr);
    }
    if t.bytes().all(|c| c.is_ascii_digit()) {
        return t.parse().ok().map(SymText::Addr);
    }
    let name = match t.find('+') {
        Some(i) => &t[..i],
        None => t,
    };
    // `func [module]` keeps only the function.
    Some(SymText::Name(name))
}
