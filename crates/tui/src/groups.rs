//! CPU groups of the timeline above [`crate::app::GROUP_ABOVE`] CPUs: one
//! per package (split by die when a package has several), from the trace's
//! CPU topology (perf.data HEADER_CPU_TOPOLOGY); without topology, runs of
//! [`GROUP_SIZE`] CPUs, and the status line says so.

use schedscope_trace::CpuTopology;

/// CPUs per group when the trace has no topology.
pub const GROUP_SIZE: usize = 8;

/// How the CPU lanes are grouped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuGroups {
    /// Each group's CPUs, ascending; groups ordered by their first CPU.
    pub groups: Vec<Vec<usize>>,
    /// A short label per group (`pkg0`, `p1d0`, `0-7`), at most 6 characters
    /// so that the lane label column fits it with its `+`/`-`.
    pub labels: Vec<String>,
    /// Whether the groups come from the trace's topology.
    pub by_topology: bool,
}

impl CpuGroups {
    /// Groups of `ncpu` CPUs, from `topo` when it is there and readable.
    pub fn new(ncpu: usize, topo: Option<&CpuTopology>) -> CpuGroups {
        if let Some((t, groups)) = topo.and_then(|t| Some((t, t.groups(ncpu as u32)?))) {
            if !groups.is_empty() {
                let split = groups.len() > t.package_cpus.len();
                let labels = groups
                    .iter()
                    .enumerate()
                    .map(|(i, g)| label(t, g, i, split))
                    .collect();
                return CpuGroups {
                    groups: groups
                        .into_iter()
                        .map(|g| g.into_iter().map(|c| c as usize).collect())
                        .collect(),
                    labels,
                    by_topology: true,
                };
            }
        }
        let groups: Vec<Vec<usize>> = (0..ncpu)
            .step_by(GROUP_SIZE)
            .map(|f| (f..(f + GROUP_SIZE).min(ncpu)).collect())
            .collect();
        let labels = groups
            .iter()
            .map(|g| format!("{}-{}", g[0], g[g.len() - 1]))
            .collect();
        CpuGroups {
            groups,
            labels,
            by_topology: false,
        }
    }

    /// The group holding CPU `c`.
    pub fn of_cpu(&self, c: usize) -> Option<usize> {
        self.groups.iter().position(|g| g.contains(&c))
    }

    /// What the status line says about the grouping.
    pub fn describe(&self) -> &'static str {
        if self.by_topology {
            "CPUs grouped by package"
        } else {
            "CPUs in groups of 8 (no topology in the trace)"
        }
    }
}

/// `pkgP` (or `pPdD` when packages are split by die) from the recorded ids
/// of the group's first CPU; the group's ordinal when the file has no ids;
/// `other` for the CPUs no list names.
fn label(t: &CpuTopology, g: &[u32], i: usize, split: bool) -> String {
    let ids = t.cpus.get(g[0] as usize).copied();
    let listed = t
        .package_cpus
        .iter()
        .filter_map(|s| schedscope_trace::topology::parse_cpu_list(s))
        .any(|l| l.contains(&g[0]));
    let s = match (listed, ids, split) {
        (false, _, _) => "other".to_string(),
        (true, Some((_, Some(d), p)), true) => format!("p{p}d{d}"),
        (true, Some((_, _, p)), _) => format!("pkg{p}"),
        (true, None, _) => format!("grp{i}"),
    };
    s.chars().take(6).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eights_without_topology() {
        let g = CpuGroups::new(20, None);
        assert_eq!(g.labels, vec!["0-7", "8-15", "16-19"]);
        assert_eq!(g.groups[2], vec![16, 17, 18, 19]);
        assert!(!g.by_topology);
        assert_eq!(g.of_cpu(9), Some(1));
    }

    #[test]
    fn packages_then_dies() {
        let t = CpuTopology {
            package_cpus: vec!["0-3".into(), "4-7".into()],
            die_cpus: vec!["0-1".into(), "2-3".into(), "4-7".into()],
            core_cpus: Vec::new(),
            cpus: (0..8u32)
                .map(|c| (c, Some(u32::from((2..4).contains(&c))), c / 4))
                .collect(),
        };
        let g = CpuGroups::new(9, Some(&t));
        assert!(g.by_topology);
        assert_eq!(g.labels, vec!["p0d0", "p0d1", "p1d0", "other"]);
        assert_eq!(g.groups[3], vec![8]);
        let no_ids = CpuTopology {
            cpus: Vec::new(),
            die_cpus: Vec::new(),
            ..t
        };
        assert_eq!(
            CpuGroups::new(8, Some(&no_ids)).labels,
            vec!["grp0", "grp1"]
        );
    }
}
