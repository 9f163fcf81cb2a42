//! Headline metrics of schedscope reports and their comparison across runs.
//!
//! [`metrics::of_report`] turns a report (the same structs the text and
//! JSON reports show) into long-form [`metrics::Metric`]s, each entity named
//! by its cross-run [`keys`] (process comm, kworkers collapsed; or comm and
//! start order, or comm and pid), so that runs of different boots can be
//! matched. The Parquet export writes them as the `summary_metric` table;
//! `schedscope diff` groups the runs of each side, [`compare::compare`]s
//! them (mean per side, % change with mmtests' sign, significance with 3 or
//! more runs per side) and [`render`]s the table.

pub mod compare;
pub mod keys;
pub mod metrics;
pub mod render;

pub use compare::{compare, Diff, Run};
pub use metrics::{Better, Metric};
