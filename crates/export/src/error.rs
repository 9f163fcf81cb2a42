//! Export errors: each names the file or table and what went wrong.

use std::path::{Path, PathBuf};

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// A file or directory could not be created or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The Parquet writer failed for a table.
    #[error("table {0}: parquet: {1}")]
    Parquet(&'static str, String),
    /// A batch could not be assembled for a table.
    #[error("table {0}: arrow: {1}")]
    Arrow(&'static str, String),
    /// A row's values do not name the table's columns in order (a bug in
    /// the exporter, caught before the row is written).
    #[error("table {0}: {1}")]
    Column(&'static str, String),
    /// This trace was already exported into the root; nothing is overwritten.
    #[error("{0}: already exported (this run's partition exists); remove it or export into another directory")]
    AlreadyExported(PathBuf),
    /// `--flat` output exists already; nothing is overwritten.
    #[error("{0}: exists; nothing is overwritten (remove it or choose another directory)")]
    Exists(PathBuf),
    /// An unknown table name in `--tables`.
    #[error("unknown table {0:?} in --tables (known: {1})")]
    UnknownTable(String, String),
    /// The options do not make sense together.
    #[error("{0}")]
    Usage(String),
}

impl ExportError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> ExportError {
        ExportError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn parquet(table: &'static str, e: impl std::fmt::Display) -> ExportError {
        ExportError::Parquet(table, e.to_string())
    }
}
