//! kvm_exit reason names -> numbers.
//!
//! Text traces print the exit reason by name (`reason PAUSE_INSTRUCTION`,
//! `reason pause`). The tables are derived, at first use, from the kvm_exit
//! tracefs format of kernel 6.18 (copied to
//! `fixtures/formats/kvm/kvm_exit/format`): its print fmt holds one
//! `__print_symbolic` table for VMX basic exit reasons (`isa == 1`) and one
//! for SVM exit codes, so the names are exactly those the kernel prints.

use schedscope_trace::KvmIsa;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The kvm_exit format file of the kernel the tables come from.
const KVM_EXIT_FORMAT: &str = include_str!("../../../../fixtures/formats/kvm/kvm_exit/format");

/// VMX flag printed after the basic reason (`FAILED_VMENTRY`).
const VMX_FAILED_VMENTRY: u32 = 0x8000_0000;

/// The two name tables.
#[derive(Debug, Default)]
pub(crate) struct ExitReasons {
    /// VMX basic exit reason names.
    pub(crate) vmx: HashMap<String, u32>,
    /// SVM exit code names.
    pub(crate) svm: HashMap<String, u32>,
}

/// The tables parsed from the embedded format file.
pub(crate) fn reasons() -> &'static ExitReasons {
    static TABLES: OnceLock<ExitReasons> = OnceLock::new();
    TABLES.get_or_init(|| parse_format(KVM_EXIT_FORMAT))
}

/// Parse the two `__print_symbolic` tables of a kvm_exit print fmt.
pub(crate) fn parse_format(text: &str) -> ExitReasons {
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

/// Map a printed reason (`PAUSE_INSTRUCTION`, `pause`, `EXIT_NPF`,
/// `EPT_VIOLATION FAILED_VMENTRY`, or a number) to (raw reason, isa).
pub(crate) fn lookup(name: &str) -> Option<(u32, KvmIsa)> {
    let t = reasons();
    let name = name.trim();
    let (base, flag) = match name.strip_suffix(" FAILED_VMENTRY") {
        Some(b) => (b.trim(), VMX_FAILED_VMENTRY),
        None => (name, 0),
    };
    if let Some(&v) = t.vmx.get(base) {
        return Some((v | flag, KvmIsa::Vmx));
    }
    if let Some(&v) = t.svm.get(base) {
        return Some((v, KvmIsa::Svm));
    }
    // Older trace-cmd kvm plugins print SVM codes as `EXIT_NPF`, `EXIT_EXCP_GP`.
    if let Some(rest) = base.strip_prefix("EXIT_") {
        let lower = rest.to_ascii_lowercase();
        let key = match lower.strip_prefix("excp_") {
            Some(x) => format!("{} excp", x.to_ascii_uppercase()),
            None => lower,
        };
        if let Some(&v) = t.svm.get(&key) {
            return Some((v, KvmIsa::Svm));
        }
    }
    // An unsymbolised number (the isa is unknown then).
    let num = match base.strip_prefix("0x") {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => base.parse::<u32>().ok(),
    };
    num.map(|v| (v, KvmIsa::Other(0)))
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
    fn lookup_forms() {
        assert_eq!(lookup("PAUSE_INSTRUCTION"), Some((40, KvmIsa::Vmx)));
        assert_eq!(lookup("pause"), Some((0x77, KvmIsa::Svm)));
        assert_eq!(lookup("EXIT_NPF"), Some((0x400, KvmIsa::Svm)));
        assert_eq!(lookup("EXIT_EXCP_GP"), Some((0x4d, KvmIsa::Svm)));
        assert_eq!(lookup("EXIT_MSR"), Some((0x7c, KvmIsa::Svm)));
        assert_eq!(
            lookup("EPT_VIOLATION FAILED_VMENTRY"),
            Some((48 | 0x8000_0000, KvmIsa::Vmx))
        );
        assert_eq!(lookup("DE excp"), Some((0x40, KvmIsa::Svm)));
        assert_eq!(lookup("no_such_reason"), None);
    }
}
