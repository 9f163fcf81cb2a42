//! The comparison of schedscope reports across runs: `schedscope diff`.
//!
//! Each run's headline numbers are [`schedscope_analysis::metrics`] (long
//! form, entities named by their cross-run [`schedscope_analysis::keys`]),
//! from a trace or read back from a Parquet export's `summary_metric`
//! table; [`compare::compare`] groups the runs of each side (mean per side,
//! % change with mmtests' sign, significance with 3 or more runs per side)
//! into a [`Diff`], which `schedscope_render::diff` prints.

pub mod compare;

pub use compare::{compare, Diff, Row, Stats};
pub use schedscope_analysis::metrics::{Better, Metric, Run};
