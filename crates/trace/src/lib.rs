//! Core schedscope types, shared by every other crate. No I/O lives here (page hints, madvise, in [`mem`]).
//!
//! Data flows through these types as follows: a decoder (crate
//! `schedscope-parser`) turns a file into a [`Trace`]: a time-sorted vector of
//! [`Event`]s plus the tables they refer to (interned strings, CPU masks,
//! call stacks, kernel symbols, tasks, warnings). Analyses (crate
//! `schedscope-analysis`) read a `Trace` and never see the file format.
//!
//! * [`ids`]: newtypes for units and identifiers ([`Ts`], [`Dur`], [`Cpu`],
//!   [`Tid`], [`Utid`]).
//! * [`display`]: events printed as `perf script` prints them.
//! * [`event`]: the typed event model ([`EventData`]) for the tracepoints
//!   schedscope understands; other tracepoints are kept and counted.
//! * [`keep`]: the load rule (which events a filtered load keeps), also
//!   applied to a trace loaded whole ([`Trace::retain_kept`]).
//! * [`kvm`]: kvm_exit reason names from this kernel's format file.
//! * [`mem`]: huge-page-backed vectors for the big tables.
//! * [`raw`]: the fields of events without a typed decoder ([`RawArgs`]),
//!   kept when the loader is asked to.
//! * [`strings`]: a string interner ([`Strings`], [`StrId`]).
//! * [`symbols`]: code locations, their resolved names, and the
//!   [`symbols::Symbolizer`] seam the analyses ask through.
//! * [`task`]: the task table (tid -> tgid, comm).
//! * [`task_builder`]: the rules every decoder fills the task table by
//!   ([`TaskTableBuilder`]).
//! * [`topology`]: which CPUs share a package, die and core.
//! * [`trace`]: the [`Trace`] container, its metadata and warnings.

pub mod display;
pub mod event;
pub mod hash;
pub mod ids;
pub mod keep;
pub mod kvm;
pub mod mem;
pub mod raw;
pub mod strings;
pub mod symbols;
pub mod task;
pub mod task_builder;
pub mod topology;
pub mod trace;

pub use event::{
    CpuMask, Event, EventData, EventKind, KindSet, KvmIsa, MaskId, NameId, PrevState, StackId,
    StateLayout, Sym, WakeKind,
};
pub use ids::{Cpu, Dur, Tid, Ts, Utid};
pub use raw::RawArgs;
pub use strings::{StrId, Strings};
pub use task::{Task, TaskTable};
pub use task_builder::TaskTableBuilder;
pub use topology::CpuTopology;
pub use trace::{
    CgroupSample, CpuLoss, KernelSymbols, LossMark, Mapping, Severity, Tally, Trace, TraceFormat,
    TraceMeta, WallClock, Warning,
};
