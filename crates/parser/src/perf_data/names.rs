//! Event names as perf gives them to attrs that no name record names
//! (HEADER_EVENT_DESC, pipe mode's EVENT_UPDATE): `cycles`, `cpu-clock`,
//! `L1-dcache-load-misses`, `raw 0x1c2`, with perf's `:ukhppHG`
//! modifiers (tools/perf/util/evsel.c: `evsel__hw_names`,
//! `evsel__sw_names`, `evsel__hw_cache_type_op_res_name`,
//! `evsel__add_modifiers`).

use super::header::Attr;

/// perf's names of PERF_TYPE_HARDWARE configs.
const HW: [&str; 10] = [
    "cycles",
    "instructions",
    "cache-references",
    "cache-misses",
    "branches",
    "branch-misses",
    "bus-cycles",
    "stalled-cycles-frontend",
    "stalled-cycles-backend",
    "ref-cycles",
];

/// perf's names of PERF_TYPE_SOFTWARE configs.
const SW: [&str; 12] = [
    "cpu-clock",
    "task-clock",
    "page-faults",
    "context-switches",
    "cpu-migrations",
    "minor-faults",
    "major-faults",
    "alignment-faults",
    "emulation-faults",
    "dummy",
    "bpf-output",
    "cgroup-switches",
];

/// PERF_TYPE_HW_CACHE: cache, operation (singular, plural), result.
const CACHE: [&str; 7] = [
    "L1-dcache",
    "L1-icache",
    "LLC",
    "dTLB",
    "iTLB",
    "branch",
    "node",
];
const CACHE_OP: [(&str, &str); 3] = [
    ("load", "loads"),
    ("store", "stores"),
    ("prefetch", "prefetches"),
];
const CACHE_RESULT: [&str; 2] = ["refs", "misses"];

/// The name perf gives an event of this attr when no record names it;
/// `type{T}:0x{config}` for a type perf has no name for (tracepoints are
/// named from their formats, not here).
pub(crate) fn event_name(a: &Attr) -> String {
    // (on hybrid systems the upper 32 bits of a hardware config name the PMU)
    let cfg = a.config & 0xffff_ffff;
    let base = match a.type_ {
        0 => HW.get(cfg as usize).map(|s| s.to_string()),
        1 => SW.get(cfg as usize).map(|s| s.to_string()),
        3 => {
            let (cache, op, res) = (cfg & 0xff, (cfg >> 8) & 0xff, (cfg >> 16) & 0xff);
            match (
                CACHE.get(cache as usize),
                CACHE_OP.get(op as usize),
                CACHE_RESULT.get(res as usize),
            ) {
                (Some(c), Some((_, ops)), Some(_)) if res == 0 => Some(format!("{c}-{ops}")),
                (Some(c), Some((op1, _)), Some(r)) => Some(format!("{c}-{op1}-{r}")),
                _ => None,
            }
        }
        4 => Some(format!("raw 0x{:x}", a.config)),
        _ => None,
    };
    match base {
        Some(b) => b + &modifiers(a),
        None => format!("type{}:0x{:x}", a.type_, a.config),
    }
}

/// perf's `evsel__add_modifiers`: `:` then the privilege levels counted
/// when some are excluded, `p` per precise_ip level, and host/guest when
/// they differ from the default.
fn modifiers(a: &Attr) -> String {
    let bit = |n: u32| a.flags & (1 << n) != 0;
    let (ex_user, ex_kernel, ex_hv) = (bit(4), bit(5), bit(6));
    let (ex_host, ex_guest) = (bit(19), bit(20));
    let precise = (a.flags >> 15) & 3;
    let mut m = String::new();
    let mut guest_default = false;
    if ex_kernel || ex_user || ex_hv {
        for (excluded, c) in [(ex_kernel, 'k'), (ex_user, 'u'), (ex_hv, 'h')] {
            if !excluded {
                m.push(c);
            }
        }
        guest_default = true;
    }
    if precise > 0 {
        m.push_str(&"ppp"[..precise as usize]);
        guest_default = true;
    }
    if ex_host || ex_guest == guest_default {
        for (excluded, c) in [(ex_host, 'H'), (ex_guest, 'G')] {
            if !excluded {
                m.push(c);
            }
        }
    }
    if m.is_empty() {
        m
    } else {
        format!(":{m}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(type_: u32, config: u64, flags: u64) -> Attr {
        Attr {
            type_,
            config,
            flags,
            ..Default::default()
        }
    }

    const EX_USER: u64 = 1 << 4;
    const EX_KERNEL: u64 = 1 << 5;
    const EX_HV: u64 = 1 << 6;
    const EX_GUEST: u64 = 1 << 20;

    /// The names perf's `evsel__name` computes for these attrs (the flags
    /// are those `perf evlist -v` shows perf 6.1 setting for `-e cycles`,
    /// `cpu-clock:u`, `cpu-clock:k`, `task-clock:pp`; with a name record,
    /// perf shows the name as typed instead, and so does the decoder).
    #[test]
    fn names_as_perf_computes_them() {
        // `-e cycles`: perf sets exclude_guest
        assert_eq!(event_name(&attr(0, 0, EX_GUEST)), "cycles");
        assert_eq!(event_name(&attr(1, 0, EX_GUEST)), "cpu-clock");
        assert_eq!(event_name(&attr(1, 9, 0)), "dummy:HG");
        assert_eq!(event_name(&attr(0, 1, EX_GUEST)), "instructions");
        // `-e cycles:u` (exclude_guest set, as its default is not: `H`)
        assert_eq!(
            event_name(&attr(0, 0, EX_KERNEL | EX_HV | EX_GUEST)),
            "cycles:uH"
        );
        // `-e cpu-clock:k` (exclude_guest clear)
        assert_eq!(event_name(&attr(1, 0, EX_USER | EX_HV)), "cpu-clock:k");
        // `-e task-clock:pp`
        assert_eq!(
            event_name(&attr(1, 1, (2 << 15) | EX_GUEST)),
            "task-clock:ppH"
        );
        assert_eq!(
            event_name(&attr(3, 0x10000, EX_GUEST)),
            "L1-dcache-load-misses"
        );
        assert_eq!(event_name(&attr(3, 0, EX_GUEST)), "L1-dcache-loads");
        assert_eq!(event_name(&attr(4, 0x1c2, EX_GUEST)), "raw 0x1c2");
        assert_eq!(event_name(&attr(0, 77, 0)), "type0:0x4d");
        assert_eq!(event_name(&attr(9, 5, 0)), "type9:0x5");
    }
}
