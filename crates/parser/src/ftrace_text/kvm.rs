//! kvm_exit reason names -> numbers for text traces.
//!
//! Text traces print the exit reason by name (`reason PAUSE_INSTRUCTION`,
//! `reason pause`). The tables are the kernel's own, from
//! [`schedscope_trace::kvm`]; this module adds the printed forms around them
//! (`FAILED_VMENTRY`, old trace-cmd `EXIT_*` names, bare numbers).

use schedscope_trace::kvm::reasons;
use schedscope_trace::KvmIsa;

/// VMX flag printed after the basic reason (`FAILED_VMENTRY`).
const VMX_FAILED_VMENTRY: u32 = 0x8000_0000;

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
