//! A small scheduling simulator that writes traces with known answers.
//!
//! This machine cannot record kvm:kvm_exit (its KVM has no VT-x/AMD-V), and
//! real traces never come with the true co-run ratio attached. The simulator
//! fills both gaps: vCPU threads of several VMs and plain multi-threaded
//! processes overcommitted on a few CPUs, with time slices, sleeps, lock
//! hand-offs, pause-loop and other kvm exits and directed yields.
//!
//! Data flow: a [`Config`] (or a named scenario, [`Config::scenario`]) goes
//! into [`simulate`], which advances the model tick by tick ([`model`]),
//! records [`SimEvent`]s, and integrates the ground truth from its own state
//! arrays while it runs ([`truth`], independent of the analysis code). The
//! events are written as ftrace text ([`ftrace::to_ftrace_text`]) and as
//! perf.data ([`perf::to_perf_data`], payloads laid out from this kernel's
//! format files in `fixtures/formats/`).

pub mod bandwidth;
pub mod config;
pub mod ftrace;
pub mod loss;
pub mod model;
pub mod perf;
pub mod truth;

pub use bandwidth::{simulate_bandwidth, BandwidthSpec, BandwidthTruth};
pub use config::{Config, Isa, Policy, ProcSpec, VmSpec, SCENARIOS};
pub use model::{simulate, SimEvent, Simulation};
pub use truth::Truth;
