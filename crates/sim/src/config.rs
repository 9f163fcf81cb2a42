//! What to simulate: CPUs, VMs, processes, behaviour probabilities, and the
//! named scenarios used by the fixtures and the example tables of docs/report.md.

use serde::Serialize;

/// Simulation time step. Every scheduling change happens on a tick boundary
/// (wakeups at +0 us, context switches at +1 us, kvm_exit at +4 us, kvm_entry
/// at +7 us), so that microsecond-resolution ftrace text loses nothing.
pub const TICK_NS: u64 = 10_000;

/// Timestamp of tick 0 (1000 s, like an uptime clock).
pub const BASE_NS: u64 = 1_000_000_000_000;

/// Hardware virtualization flavour of a VM (decides the kvm_exit `isa` and codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Isa {
    /// Intel VT-x: isa 1, PLE = exit reason 40 (PAUSE_INSTRUCTION).
    Vmx,
    /// AMD-V: isa 2, PLE = exit code 0x77 (pause).
    Svm,
}

/// One VM: a process with `vcpus` vCPU threads and one I/O thread.
#[derive(Clone, Debug, Serialize)]
pub struct VmSpec {
    /// Number of vCPU threads.
    pub vcpus: u32,
    /// Virtualization flavour.
    pub isa: Isa,
}

/// One plain multi-threaded process (workers that run, sleep and hand a lock around).
#[derive(Clone, Debug, Serialize)]
pub struct ProcSpec {
    /// Number of worker threads.
    pub threads: u32,
}

/// How CPUs pick the next task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// Per-CPU round robin with independent time slices (like CFS, roughly).
    Fair,
    /// Co-scheduling: slices end on every CPU at once and each slice favours
    /// one gang (VM or process) in turn.
    Gang,
}

/// A full simulation setup.
#[derive(Clone, Debug, Serialize)]
pub struct Config {
    /// Scenario name (used in file names and tables).
    pub name: String,
    /// Random seed.
    pub seed: u64,
    /// Number of CPUs.
    pub cpus: u32,
    /// Simulated length in ticks of [`TICK_NS`].
    pub ticks: u64,
    /// The VMs.
    pub vms: Vec<VmSpec>,
    /// The plain processes.
    pub procs: Vec<ProcSpec>,
    /// Time slice in ticks.
    pub slice_ticks: u32,
    /// Scheduling policy.
    pub policy: Policy,
    /// vCPU run burst (ticks), inclusive range.
    pub vcpu_burst: (u32, u32),
    /// vCPU halt (sleep) length (ticks), inclusive range.
    pub vcpu_sleep: (u32, u32),
    /// Worker run burst (ticks).
    pub worker_burst: (u32, u32),
    /// Worker sleep (ticks).
    pub worker_sleep: (u32, u32),
    /// Probability that a worker ending its burst blocks on a lock held by a
    /// busy sibling (it is then woken by that sibling when its burst ends).
    pub lock_prob: f64,
    /// Per-tick probability of a PLE exit while some sibling vCPU is Runnable.
    pub ple_spin_prob: f64,
    /// Per-tick probability of a PLE exit otherwise (futile spinning).
    pub ple_futile_prob: f64,
    /// Per-tick probability of another exit (interrupt, EPT, MSR, I/O, HLT).
    pub other_exit_prob: f64,
    /// Probability that a PLE exit with a Runnable sibling leads to a
    /// directed yield 1..=8 ticks later.
    pub yield_prob: f64,
}

impl Config {
    /// Defaults for everything but the machine and the workload.
    pub fn new(name: &str, seed: u64, cpus: u32, vms: Vec<VmSpec>, procs: Vec<ProcSpec>) -> Config {
        Config {
            name: name.to_string(),
            seed,
            cpus,
            ticks: 20_000,
            vms,
            procs,
            slice_ticks: 100,
            policy: Policy::Fair,
            vcpu_burst: (20, 400),
            vcpu_sleep: (5, 100),
            worker_burst: (10, 200),
            worker_sleep: (5, 100),
            lock_prob: 0.3,
            ple_spin_prob: 0.05,
            ple_futile_prob: 0.003,
            other_exit_prob: 0.03,
            yield_prob: 0.5,
        }
    }

    /// A named scenario (see [`SCENARIOS`]).
    pub fn scenario(name: &str, seed: u64) -> Option<Config> {
        let vm = |vcpus, isa| VmSpec { vcpus, isa };
        let p = |threads| ProcSpec { threads };
        Some(match name {
            // Two VMs (VMX and SVM) and two processes overcommitted on 4 CPUs.
            "mixed" => Config::new(
                name,
                seed,
                4,
                vec![vm(4, Isa::Vmx), vm(2, Isa::Svm)],
                vec![p(4), p(2)],
            ),
            // One 4-vCPU VM per 4 CPUs: undercommitted, futile PLE only.
            "ple-1x" => Config::new(name, seed, 4, vec![vm(4, Isa::Vmx)], vec![]),
            // Two 4-vCPU VMs on 4 CPUs.
            "ple-2x" => Config::new(
                name,
                seed,
                4,
                vec![vm(4, Isa::Vmx), vm(4, Isa::Vmx)],
                vec![],
            ),
            // Bare metal: two processes handing locks around on 2 CPUs.
            "bare-metal" => Config::new(name, seed, 2, vec![], vec![p(4), p(3)]),
            // ebizzy-in-VMs-like: two CPU-bound 4-vCPU VMs on 4 CPUs, fair scheduling ...
            "gang-baseline" => {
                let mut c = Config::new(
                    name,
                    seed,
                    4,
                    vec![vm(4, Isa::Vmx), vm(4, Isa::Vmx)],
                    vec![],
                );
                c.vcpu_burst = (100, 400);
                c.vcpu_sleep = (2, 10);
                c
            }
            // ... and the same with co-scheduling.
            "gang-cosched" => {
                let mut c = Config::scenario("gang-baseline", seed)?;
                c.name = name.to_string();
                c.policy = Policy::Gang;
                c
            }
            _ => return None,
        })
    }
}

/// Names accepted by [`Config::scenario`].
pub const SCENARIOS: &[&str] = &[
    "mixed",
    "bare-metal",
    "ple-1x",
    "ple-2x",
    "gang-baseline",
    "gang-cosched",
];
