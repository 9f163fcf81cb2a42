//! perf's HEADER_CPU_TOPOLOGY feature section (bit
//! [`feature::CPU_TOPOLOGY`], 13): which CPUs share a package, a core and
//! a die ([`CpuTopology`]). Layout (perf's `write_cpu_topology`, file
//! byte order; strings as perf's `do_write_string`: u32 length padded to
//! 64 bytes, then the NUL-terminated text):
//!
//! ```text
//! u32 nr_packages, then that many strings   "sibling sockets"   0-7,16-23
//! u32 nr_cores, then that many strings      "sibling threads"   0,16
//! (perf 4.x on) nr_cpus_avail times:        per CPU, from CPU 0
//!   u32 core_id
//!   u32 socket_id
//! (perf 5.x on)
//! u32 nr_dies, then that many strings       "sibling dies"
//! nr_cpus_avail times: u32 die_id
//! ```
//!
//! `nr_cpus_avail` is HEADER_NRCPUS's first field, so the decoder is
//! handed it; without it (or when the bytes end early, as in files of
//! older perf) the per-CPU ids are left out.

#[cfg(doc)]
use crate::abi::feature;
use crate::abi::put_string;
use crate::sections::SectionError;
pub use schedscope_trace::CpuTopology;

/// Encode `t` as perf writes it (per-CPU ids and dies only when `t.cpus`
/// has them).
pub fn encode_cpu_topology(t: &CpuTopology) -> Vec<u8> {
    let mut b = Vec::new();
    let list = |b: &mut Vec<u8>, v: &[String]| {
        b.extend_from_slice(&(v.len() as u32).to_ne_bytes());
        for s in v {
            put_string(b, s);
        }
    };
    list(&mut b, &t.package_cpus);
    list(&mut b, &t.core_cpus);
    if t.cpus.is_empty() {
        return b;
    }
    for &(core, _, package) in &t.cpus {
        b.extend_from_slice(&core.to_ne_bytes());
        b.extend_from_slice(&package.to_ne_bytes());
    }
    if t.die_cpus.is_empty() {
        return b;
    }
    list(&mut b, &t.die_cpus);
    for &(_, die, _) in &t.cpus {
        b.extend_from_slice(&die.unwrap_or(0).to_ne_bytes());
    }
    b
}

/// Bounds-checked reads over the section.
struct Rd<'a> {
    b: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Rd<'a> {
    fn error(&self, what: &str) -> SectionError {
        SectionError {
            section: "HEADER_CPU_TOPOLOGY",
            base: self.base,
            offset: self.base + self.pos as u64,
            what: what.to_string(),
        }
    }

    fn remaining(&self) -> usize {
        self.b.len().saturating_sub(self.pos)
    }

    fn u32(&mut self) -> Option<u32> {
        let s = self.b.get(self.pos..self.pos + 4)?;
        self.pos += 4;
        Some(u32::from_ne_bytes(s.try_into().ok()?))
    }

    fn string(&mut self) -> Option<String> {
        let len = self.u32()? as usize;
        let s = self.b.get(self.pos..self.pos.checked_add(len)?)?;
        self.pos += len;
        let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
        Some(String::from_utf8_lossy(&s[..end]).into_owned())
    }

    /// A u32 count followed by that many strings (`what` names it in
    /// errors).
    fn list(&mut self, what: &str) -> Result<Vec<String>, SectionError> {
        let n = self
            .u32()
            .ok_or_else(|| self.error(&format!("truncated {what} count")))?
            as usize;
        // every string takes at least its 4-byte length
        if n > self.remaining() / 4 {
            return Err(self.error(&format!("{what} count {n} exceeds the section")));
        }
        (0..n)
            .map(|_| {
                self.string()
                    .ok_or_else(|| self.error(&format!("truncated {what} list")))
            })
            .collect()
    }
}

/// Decode the section (`base`: its file offset, for messages);
/// `nr_cpus_avail` from HEADER_NRCPUS.
pub fn decode_cpu_topology(
    b: &[u8],
    base: u64,
    nr_cpus_avail: Option<u32>,
) -> Result<CpuTopology, SectionError> {
    let mut r = Rd { b, pos: 0, base };
    let mut t = CpuTopology {
        package_cpus: r.list("package (sibling sockets)")?,
        core_cpus: r.list("core (sibling threads)")?,
        ..CpuTopology::default()
    };
    let Some(n) = nr_cpus_avail.map(|n| n as usize) else {
        return Ok(t);
    };
    if n == 0 || r.remaining() < n * 8 {
        // written by perf before 4.x: no per-CPU ids
        return Ok(t);
    }
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let (Some(core), Some(package)) = (r.u32(), r.u32()) else {
            return Err(r.error("truncated per-CPU core and socket ids"));
        };
        ids.push((core, None, package));
    }
    if r.remaining() > 0 {
        t.die_cpus = r.list("die (sibling dies)")?;
        for id in &mut ids {
            id.1 = Some(
                r.u32()
                    .ok_or_else(|| r.error("truncated per-CPU die ids"))?,
            );
        }
    }
    t.cpus = ids;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_and_without_ids_and_dies() {
        let t = CpuTopology::two_packages_example();
        let b = encode_cpu_topology(&t);
        assert_eq!(decode_cpu_topology(&b, 0, Some(64)), Ok(t.clone()));
        // perf 4.x: ids, no dies
        let no_dies = CpuTopology {
            die_cpus: Vec::new(),
            cpus: t.cpus.iter().map(|&(c, _, p)| (c, None, p)).collect(),
            ..t.clone()
        };
        let b = encode_cpu_topology(&no_dies);
        assert_eq!(decode_cpu_topology(&b, 0, Some(64)), Ok(no_dies));
        // perf 3.x: lists only (and a reader that does not know the CPU count)
        let lists = CpuTopology {
            die_cpus: Vec::new(),
            cpus: Vec::new(),
            ..t.clone()
        };
        let b = encode_cpu_topology(&lists);
        assert_eq!(decode_cpu_topology(&b, 0, Some(64)), Ok(lists.clone()));
        let b = encode_cpu_topology(&t);
        assert_eq!(decode_cpu_topology(&b, 0, None), Ok(lists));
        assert_eq!(
            t.groups(64).unwrap(),
            vec![
                (0..16).chain(32..48).collect::<Vec<u32>>(),
                (16..32).chain(48..64).collect()
            ]
        );
    }

    #[test]
    fn damage_is_an_error_naming_the_offset() {
        let b = encode_cpu_topology(&CpuTopology::two_packages_example());
        let e = decode_cpu_topology(&b[..70], 4096, Some(64)).unwrap_err();
        assert_eq!(e.section, "HEADER_CPU_TOPOLOGY");
        assert_eq!(
            e.to_string(),
            "perf HEADER_CPU_TOPOLOGY section (byte offset 4096): truncated package (sibling sockets) list at byte offset 4104"
        );
        let mut huge = b.clone();
        huge[..4].copy_from_slice(&u32::MAX.to_ne_bytes());
        let e = decode_cpu_topology(&huge, 0, Some(64)).unwrap_err();
        assert!(e.what.contains("exceeds the section"), "{e}");
        // cut inside the die ids
        let e = decode_cpu_topology(&b[..b.len() - 2], 0, Some(64)).unwrap_err();
        assert!(e.what.contains("die ids"), "{e}");
    }
}
