//! kvm_exit reason names, both ways (name -> code, code -> name).
//!
//! The tables are derived, at first use, from the kvm_exit tracefs format of
//! kernel 6.18 (copied to `fixtures/formats/kvm/kvm_exit/format` and
//! embedded at compile time): its print fmt holds one `__print_symbolic`
//! table for VMX basic exit reasons (`isa == 1`) and one for SVM exit codes,
//! so the names are exactly those the kernel prints (and `perf kvm stat`
//! shows). Text decoders map printed names to codes; analyses name codes.

use crate::event::KvmIsa;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The kvm_exit format file of the kernel the tables come from.
const KVM_EXIT_FORMAT: &str = include_str!("../../../fixtures/formats/kvm/kvm_exit/format");

/// The two name tables of a kvm_exit print fmt.
#[derive(Debug, Default)]
pub struct ExitReasons {
    /// VMX basic exit reason names -> reason.
    pub vmx: HashMap<String, u32>,
    /// SVM exit code names -> code.
    pub svm: HashMap<String, u32>,
    vmx_names: HashMap<u32, String>,
    svm_names: HashMap<u32, String>,
}

impl ExitReasons {
    /// The kernel's name of `code` (VMX: the basic reason, low 16 bits).
    pub fn name(&self, isa: KvmIsa, code: u32) -> Option<&str> {
        match isa {
            KvmIsa::Vmx => self.vmx_names.get(&(code & 0xffff)),
            KvmIsa::Svm => self.svm_names.get(&code),
            KvmIsa::Other(_) => None,
        }
        .map(String::as_str)
    }
}

/// The tables parsed from the embedded format file.
pub fn reasons() -> &'static ExitReasons {
    static TABLES: OnceLock<ExitReasons> = OnceLock::new();
    TABLES.get_or_init(|| parse_format(KVM_EXIT_FORMAT))
}

/// Parse the two `__print_symbolic` tables of a kvm_exit print fmt.
pub fn parse_format(text: &str) -> ExitReasons {
    let mut out = ExitReasons::default();
    let mut tables = text
        .match_indices("__print_symbolic(")
        .map(|(i, _)| &text[i..]);
    if let Some(t) = tables.next() {
        out.vmx = parse_symbolic(t);
    }
    if let Some(t) = tables.next() {
        out.svm = parse_symbolic(t);
    }
    out.vmx_names = out.vmx.iter().map(|(n, &c)| (c, n.clone())).collect();
    out.svm_names = out.svm.iter().map(|(n, &c)| (c, n.clone())).collect();
    out
}

/// Parse `__print_symbolic(EXPR, { V, "NAME" }, ...)` up to its closing paren.
fn parse_symbolic(s: &str) -> HashMap<String, u32> {
    let mut map = HashMap::new();
    let mut rest = s;
    // Entries until the closing paren of the call.
    while let Some(open) = rest
        .find(['{', ')'])
        .filter(|&i| rest.as_bytes()[i] == b'{')
    {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let entry = &rest[open + 1..open + close];
        rest = &rest[open + close + 1..];
        let Some((val, name)) = entry.split_once(',') else {
            continue;
        };
        let name = name.trim().trim_matches('"');
        if let Some(v) = eval_sum(val) {
            map.insert(name.to_string(), v);
        }
    }
    map
}

/// Evaluate `0x040 + 13`, `-1`, `40`.
fn eval_sum(expr: &str) -> Option<u32> {
    let mut total: i64 = 0;
    for part in expr.split('+') {
        let p = part.trim();
        let v = if let Some(h) = p.strip_prefix("0x") {
            i64::from_str_radix(h, 16).ok()?
        } else {
            p.parse::<i64>().ok()?
        };
        total = total.checked_add(v)?;
    }
    Some(total as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_come_from_the_format_file() {
        let t = reasons();
        // Values from the Intel SDM (appendix C) and AMD APM vol. 2 (appendix C).
        assert_eq!(t.vmx.get("PAUSE_INSTRUCTION"), Some(&40));
        assert_eq!(t.vmx.get("EXTERNAL_INTERRUPT"), Some(&1));
        assert_eq!(t.vmx.get("EPT_VIOLATION"), Some(&48));
        assert_eq!(t.vmx.get("HLT"), Some(&12));
        assert_eq!(t.svm.get("pause"), Some(&0x77));
        assert_eq!(t.svm.get("npf"), Some(&0x400));
        assert_eq!(t.svm.get("GP excp"), Some(&0x4d));
        assert_eq!(t.svm.get("invalid_guest_state"), Some(&u32::MAX));
        assert!(
            t.vmx.len() > 60 && t.svm.len() > 100,
            "{} {}",
            t.vmx.len(),
            t.svm.len()
        );
    }

    #[test]
    fn names_of_codes() {
        let t = reasons();
        assert_eq!(t.name(KvmIsa::Vmx, 40), Some("PAUSE_INSTRUCTION"));
        assert_eq!(
            t.name(KvmIsa::Vmx, 40 | 0x8000_0000),
            Some("PAUSE_INSTRUCTION")
        );
        assert_eq!(t.name(KvmIsa::Svm, 0x400), Some("npf"));
        assert_eq!(t.name(KvmIsa::Vmx, 999), None);
        assert_eq!(t.name(KvmIsa::Other(3), 40), None);
    }
}
