//! Which CPUs share a package, a die and a core, as perf.data's
//! HEADER_CPU_TOPOLOGY feature records it (read from
//! `/sys/devices/system/cpu/cpuN/topology/` at record time).

/// The CPU topology of the recording machine.
///
/// The sibling lists are always there (perf 3.x on); the per-CPU ids came
/// with perf 4.x and the dies with perf 5.x, so they may be empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuTopology {
    /// CPUs of each package (perf's "sibling sockets", sysfs
    /// `package_cpus_list`, once `core_siblings_list`), as written:
    /// `0-7,16-23`.
    pub package_cpus: Vec<String>,
    /// CPUs of each die (perf's "sibling dies", `die_cpus_list`); empty
    /// when not recorded.
    pub die_cpus: Vec<String>,
    /// CPUs of each core, i.e. SMT siblings (perf's "sibling threads",
    /// `core_cpus_list`, once `thread_siblings_list`).
    pub core_cpus: Vec<String>,
    /// Per CPU (index = CPU number): `(core id, die id, package id)` as
    /// recorded; empty when the file has no per-CPU ids. The die id is
    /// `None` without die information.
    pub cpus: Vec<(u32, Option<u32>, u32)>,
}

/// The CPUs of a sysfs CPU list (`0-3,8,10-11`), ascending; `None` when
/// the text is not such a list (or a range is absurdly large).
pub fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?),
            None => {
                let a = part.trim().parse::<u32>().ok()?;
                (a, a)
            }
        };
        if b < a || b - a >= 1 << 16 {
            return None;
        }
        out.extend(a..=b);
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

#[cfg(any(test, feature = "test-support"))]
impl CpuTopology {
    /// For tests (feature `test-support`): a 64-CPU machine of 2 packages
    /// (one die each) of 16 cores with 2 SMT threads, numbered as sysfs
    /// numbers them: CPUs n and n + 32 are siblings, package 0 holds CPUs
    /// 0-15,32-47.
    pub fn two_packages_example() -> CpuTopology {
        CpuTopology {
            package_cpus: vec!["0-15,32-47".into(), "16-31,48-63".into()],
            die_cpus: vec!["0-15,32-47".into(), "16-31,48-63".into()],
            core_cpus: (0..32).map(|c| format!("{c},{}", c + 32)).collect(),
            cpus: (0..64u32)
                .map(|c| {
                    let p = (c % 32) / 16;
                    (c % 32, Some(p), p)
                })
                .collect(),
        }
    }
}

impl CpuTopology {
    /// CPU groups for display: one per package, split by die when a
    /// package has several; each group's CPUs ascending, groups by their
    /// first CPU. CPUs at or above `ncpu` are left out, and CPUs below it
    /// that no list names form one last group. `None` when the lists
    /// cannot be read.
    pub fn groups(&self, ncpu: u32) -> Option<Vec<Vec<u32>>> {
        let lists = |v: &[String]| -> Option<Vec<Vec<u32>>> {
            v.iter().map(|s| parse_cpu_list(s)).collect()
        };
        let packages = lists(&self.package_cpus)?;
        let dies = lists(&self.die_cpus).unwrap_or_default();
        let mut groups: Vec<Vec<u32>> = Vec::new();
        for p in &packages {
            let split: Vec<Vec<u32>> = dies
                .iter()
                .map(|d| {
                    d.iter()
                        .copied()
                        .filter(|c| p.contains(c))
                        .collect::<Vec<u32>>()
                })
                .filter(|d| !d.is_empty())
                .collect();
            if split.len() > 1 {
                groups.extend(split);
            } else {
                groups.push(p.clone());
            }
        }
        for g in &mut groups {
            g.retain(|&c| c < ncpu);
        }
        groups.retain(|g| !g.is_empty());
        groups.sort_by_key(|g| g[0]);
        groups.dedup();
        let named: std::collections::HashSet<u32> = groups.iter().flatten().copied().collect();
        let rest: Vec<u32> = (0..ncpu).filter(|c| !named.contains(c)).collect();
        if !rest.is_empty() {
            groups.push(rest);
        }
        Some(groups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_as_sysfs_writes_them() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("5"), Some(vec![5]));
        // as read from /sys/devices/system/cpu/online (the recorder's use)
        assert_eq!(parse_cpu_list("0-3,5\n"), Some(vec![0, 1, 2, 3, 5]));
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(parse_cpu_list("0-4294967295"), None);
    }

    #[test]
    fn groups_are_packages_split_by_die() {
        let t = CpuTopology {
            package_cpus: vec!["0-7,16-23".into(), "8-15,24-31".into()],
            die_cpus: vec!["0-3,16-19".into(), "4-7,20-23".into(), "8-15,24-31".into()],
            ..CpuTopology::default()
        };
        let g = t.groups(34).unwrap();
        assert_eq!(
            g,
            vec![
                vec![0, 1, 2, 3, 16, 17, 18, 19],
                vec![4, 5, 6, 7, 20, 21, 22, 23],
                (8..16).chain(24..32).collect(),
                vec![32, 33],
            ]
        );
        // without dies: one group per package
        let t = CpuTopology {
            die_cpus: Vec::new(),
            ..t
        };
        assert_eq!(t.groups(32).unwrap().len(), 2);
        let bad = CpuTopology {
            package_cpus: vec!["0-x".into()],
            ..CpuTopology::default()
        };
        assert_eq!(bad.groups(4), None);
    }
}
