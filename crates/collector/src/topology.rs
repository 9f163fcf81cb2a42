//! The machine's CPU topology from sysfs, for perf.data's
//! HEADER_CPU_TOPOLOGY section (what `perf record` writes): per CPU its
//! package, die and core sibling lists and its ids, read from
//! `/sys/devices/system/cpu/cpuN/topology/`.

use schedscope_trace::CpuTopology;
use std::path::Path;

/// Id perf writes for a CPU that is not online (no topology directory).
const OFFLINE: u32 = u32::MAX;

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The topology of CPUs `0..nr_avail` under `sys` (`/sys/devices/system/cpu`),
/// or `None` when CPU 0 has no readable topology (the section is then left
/// out, as perf does when it cannot build it). Sibling lists are kept once,
/// in order of first appearance; dies only where the kernel has
/// `die_cpus_list` (5.x).
pub(crate) fn read(sys: &Path, nr_avail: u32) -> Option<CpuTopology> {
    let mut t = CpuTopology::default();
    let mut has_dies = true;
    let push = |v: &mut Vec<String>, s: String| {
        if !v.contains(&s) {
            v.push(s);
        }
    };
    for cpu in 0..nr_avail {
        let dir = sys.join(format!("cpu{cpu}/topology"));
        let first = |names: &[&str]| names.iter().find_map(|n| read_trim(&dir.join(n)));
        let id = |name: &str| read_trim(&dir.join(name)).and_then(|s| s.parse::<u32>().ok());
        let Some(package) = first(&["package_cpus_list", "core_siblings_list"]) else {
            if cpu == 0 {
                return None;
            }
            t.cpus.push((OFFLINE, Some(OFFLINE), OFFLINE));
            continue;
        };
        push(&mut t.package_cpus, package);
        if let Some(core) = first(&["core_cpus_list", "thread_siblings_list"]) {
            push(&mut t.core_cpus, core);
        }
        match read_trim(&dir.join("die_cpus_list")) {
            Some(d) => push(&mut t.die_cpus, d),
            None => has_dies = false,
        }
        t.cpus.push((
            id("core_id").unwrap_or(OFFLINE),
            Some(id("die_id").unwrap_or(OFFLINE)),
            id("physical_package_id").unwrap_or(OFFLINE),
        ));
    }
    if !has_dies {
        t.die_cpus.clear();
        for c in &mut t.cpus {
            c.1 = None;
        }
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, cpu: u32, files: &[(&str, &str)]) {
        let d = dir.join(format!("cpu{cpu}/topology"));
        std::fs::create_dir_all(&d).unwrap();
        for (n, v) in files {
            std::fs::write(d.join(n), format!("{v}\n")).unwrap();
        }
    }

    #[test]
    fn reads_a_generated_sysfs_tree() {
        let dir = std::env::temp_dir().join(format!("schedscope-topo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // 4 CPUs, 2 packages, SMT pairs (0,2) and (1,3); CPU 3 offline
        for (cpu, pkg, core) in [(0, "0,2", "0,2"), (1, "1,3", "1,3"), (2, "0,2", "0,2")] {
            let p = if pkg == "0,2" { "0" } else { "1" };
            write(
                &dir,
                cpu,
                &[
                    ("package_cpus_list", pkg),
                    ("core_cpus_list", core),
                    ("die_cpus_list", pkg),
                    ("core_id", "0"),
                    ("die_id", "0"),
                    ("physical_package_id", p),
                ],
            );
        }
        let t = read(&dir, 4).unwrap();
        assert_eq!(t.package_cpus, vec!["0,2", "1,3"]);
        assert_eq!(t.core_cpus, vec!["0,2", "1,3"]);
        assert_eq!(t.die_cpus, vec!["0,2", "1,3"]);
        assert_eq!(
            t.cpus,
            vec![
                (0, Some(0), 0),
                (0, Some(0), 1),
                (0, Some(0), 0),
                (OFFLINE, Some(OFFLINE), OFFLINE)
            ]
        );
        assert_eq!(read(&dir.join("nothing"), 4), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn this_machine_reads_as_perf_would_list_it() {
        let sys = Path::new("/sys/devices/system/cpu");
        let Some(t) = read(sys, 1) else {
            eprintln!("SKIPPED: no sysfs CPU topology here");
            return;
        };
        assert_eq!(t.cpus.len(), 1);
        assert!(!t.package_cpus.is_empty());
    }
}
