//! KVM's events: kvm_exit and kvm_entry.
//!
//! Text traces print the exit reason by name (`reason PAUSE_INSTRUCTION`,
//! `reason pause`). The tables are the kernel's own, from
//! [`schedscope_trace::kvm`]; [`lookup`] adds the printed forms around them
//! (`FAILED_VMENTRY`, old trace-cmd `EXIT_*` names, bare numbers).

use super::fields::{hex, num};
use super::Payload;
use schedscope_trace::kvm::reasons;
use schedscope_trace::KvmIsa;

/// VMX flag printed after the basic reason (`FAILED_VMENTRY`).
const VMX_FAILED_VMENTRY: u32 = 0x8000_0000;

/// Map a printed reason (`PAUSE_INSTRUCTION`, `pause`, `EXIT_NPF`,
/// `EPT_VIOLATION FAILED_VMENTRY`, or a number) to (raw reason, isa).
fn lookup(name: &str) -> Option<(u32, KvmIsa)> {
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

pub(super) fn kvm_exit(body: &str) -> Option<Payload<'_>> {
    // `vcpu N reason NAME rip 0x.. info1 ..` (5.x+) or `reason NAME rip 0x.. info A B`.
    let (vcpu_id, rest) = match body.strip_prefix("vcpu ") {
        Some(r) => {
            let (v, r) = r.split_once(' ')?;
            (Some(v.parse().ok()?), r)
        }
        None => (None, body),
    };
    let rest = rest.trim_start().strip_prefix("reason ")?;
    let at = rest.find(" rip ")?;
    let (exit_reason, isa) = lookup(&rest[..at])?;
    let guest_rip = hex(&rest[at + 5..])?;
    Some(Payload::KvmExit {
        exit_reason,
        isa,
        vcpu_id,
        guest_rip,
    })
}

pub(super) fn kvm_entry(body: &str) -> Option<Payload<'_>> {
    let r = body.strip_prefix("vcpu ")?;
    Some(Payload::KvmEntry {
        vcpu_id: Some(num(r)?),
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::p;
    use super::super::Kind;
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

    #[test]
    fn kvm_forms() {
        assert_eq!(
            p(Kind::KvmExit, "vcpu 1 reason PAUSE_INSTRUCTION rip 0xffffffff8104f1b6 info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x00000000 error_code 0x00000000 requests 0x0000000000000000"),
            Payload::KvmExit { exit_reason: 40, isa: KvmIsa::Vmx, vcpu_id: Some(1), guest_rip: 0xffffffff8104f1b6 }
        );
        assert_eq!(
            p(
                Kind::KvmExit,
                "reason EPT_VIOLATION rip 0xfffff802987d6169 info 181 0"
            ),
            Payload::KvmExit {
                exit_reason: 48,
                isa: KvmIsa::Vmx,
                vcpu_id: None,
                guest_rip: 0xfffff802987d6169
            }
        );
        assert_eq!(
            p(
                Kind::KvmExit,
                "reason EXIT_NPF rip 0x0 info 1680000007 1729a1000"
            ),
            Payload::KvmExit {
                exit_reason: 0x400,
                isa: KvmIsa::Svm,
                vcpu_id: None,
                guest_rip: 0
            }
        );
        assert_eq!(
            p(Kind::KvmExit, "vcpu 3 reason pause rip 0x10 info1 0x0 info2 0x0 intr_info 0x0 error_code 0x0 requests 0x0"),
            Payload::KvmExit { exit_reason: 0x77, isa: KvmIsa::Svm, vcpu_id: Some(3), guest_rip: 0x10 }
        );
        assert_eq!(
            p(
                Kind::KvmEntry,
                "vcpu 1, rip 0xffffffff81000000 intr_info 0x0"
            ),
            Payload::KvmEntry { vcpu_id: Some(1) }
        );
        assert_eq!(
            p(Kind::KvmEntry, "vcpu 3"),
            Payload::KvmEntry { vcpu_id: Some(3) }
        );
    }
}
