//! Newtypes for units and identifiers.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A timestamp in nanoseconds (perf clock / ftrace clock, as recorded).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Ts(pub u64);

/// A duration in nanoseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Dur(pub u64);

/// A CPU number.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Cpu(pub u32);

/// A kernel thread id (pid in kernel terms). Kernel tids are reused; see [`Utid`].
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Tid(pub i32);

/// A trace-unique thread id: index into [`crate::TaskTable`].
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Utid(pub u32);

impl Ts {
    /// Duration from `earlier` to `self`, zero if `earlier` is later.
    pub fn since(self, earlier: Ts) -> Dur {
        Dur(self.0.saturating_sub(earlier.0))
    }
}

impl Tid {
    /// The idle task (swapper/N) has tid 0 on every CPU.
    pub const IDLE: Tid = Tid(0);
    /// Whether this is the per-CPU idle task.
    pub fn is_idle(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Display for Ts {
    /// Seconds with microsecond precision, as `perf script` prints them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:06}",
            self.0 / 1_000_000_000,
            (self.0 % 1_000_000_000) / 1000
        )
    }
}

impl fmt::Display for Dur {
    /// Milliseconds with three decimals.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} ms", self.0 as f64 / 1e6)
    }
}

impl fmt::Display for Cpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for Tid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
