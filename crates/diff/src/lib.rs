//! Headline metrics of schedscope reports and their comparison across runs.
//!
//! [`metrics::of_report`] turns a report (the same structs the text and
//! JSON reports show) into long-form [`metrics::Metric`]s, each entity named
//! by its cross-run [`keys`] (process comm / thread comm, kworkers
//! collapsed), so that runs of different boots can be matched. The Parquet
//! export writes them as the `summary_metric` table; `schedscope diff`
//! compares them between two sets of runs.

pub mod keys;
pub mod metrics;

pub use metrics::{Better, Metric};
