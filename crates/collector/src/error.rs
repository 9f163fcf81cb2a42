//! Collector errors. Each names the file, event or option concerned.

use std::path::PathBuf;
use thiserror::Error;

/// Why a recording could not start or had to stop.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RecordError {
    /// Not allowed to open perf events or read tracefs.
    #[error("permission denied: {detail}; run as root, or allow perf events with `sysctl kernel.perf_event_paranoid=-1`")]
    Permission {
        /// What was refused.
        detail: String,
    },
    /// tracefs is not available.
    #[error("tracefs not available: {detail}")]
    NoTracefs {
        /// What was tried.
        detail: String,
    },
    /// A tracefs file could not be read.
    #[error("{}: {detail}", path.display())]
    Tracefs {
        /// File.
        path: PathBuf,
        /// Cause.
        detail: String,
    },
    /// An `-e` event is malformed or missing.
    #[error("event '{name}': {detail}")]
    BadEvent {
        /// The event as given.
        name: String,
        /// What is wrong.
        detail: String,
    },
    /// An option value is invalid.
    #[error("option {option}: {detail}")]
    BadOption {
        /// The option (e.g. `--buffer-size`).
        option: String,
        /// What is wrong.
        detail: String,
    },
    /// perf_event_open or an ioctl on it failed.
    #[error("{what} for {event} on CPU {cpu}: {source}")]
    PerfEvent {
        /// Operation.
        what: &'static str,
        /// Event name.
        event: String,
        /// CPU.
        cpu: u32,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// None of the requested events exists on this kernel.
    #[error("none of the requested events is available on this kernel")]
    NoEvents,
    /// The output file could not be created or written.
    #[error("{}: {source}", path.display())]
    Output {
        /// File.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The command to run could not be started.
    #[error("cannot run '{command}': {source}")]
    Command {
        /// `argv[0]`.
        command: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
}

impl RecordError {
    /// Whether this is an environment problem (permissions, tracefs, usage)
    /// that the CLI reports with exit code 2.
    pub fn is_environment(&self) -> bool {
        matches!(
            self,
            RecordError::Permission { .. }
                | RecordError::NoTracefs { .. }
                | RecordError::BadEvent { .. }
                | RecordError::BadOption { .. }
        )
    }
}
