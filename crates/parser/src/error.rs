//! Decoder errors. Every variant names the file; binary formats add the byte offset.

use thiserror::Error;

/// Why a file could not be decoded at all. Damage that still leaves usable
/// events is a [`schedscope_trace::Warning`] on the trace instead.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is empty.
    #[error("{path}: file is empty (no trace data)")]
    Empty {
        /// File.
        path: String,
    },
    /// Not a format we read.
    #[error("{path}: unknown trace format: {detail}")]
    UnknownFormat {
        /// File.
        path: String,
        /// What was found.
        detail: String,
    },
    /// A file of a kind schedscope recognises but does not read, or text
    /// that holds no scheduler events; `detail` says what it is and what
    /// to give schedscope instead.
    #[error("{path}: {detail}")]
    Unsupported {
        /// File.
        path: String,
        /// What the file is and what to do.
        detail: String,
    },
    /// The file ends before a structure it announces.
    #[error("{path}: truncated at byte offset {offset}: expected {expected}")]
    Truncated {
        /// File.
        path: String,
        /// Byte offset where data was expected.
        offset: u64,
        /// What was expected there.
        expected: String,
    },
    /// A structure has impossible values.
    #[error("{path}: corrupt data at byte offset {offset}: {detail}")]
    Corrupt {
        /// File.
        path: String,
        /// Byte offset of the bad structure.
        offset: u64,
        /// What is wrong.
        detail: String,
    },
    /// A text trace has a malformed line that cannot be skipped.
    #[error("{path}:{line}: {detail}")]
    BadLine {
        /// File.
        path: String,
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        detail: String,
    },
    /// An embedded tracefs format description could not be parsed.
    #[error("{path}: bad format description for event {event}: {detail}")]
    BadFormat {
        /// File.
        path: String,
        /// Event name.
        event: String,
        /// What is wrong.
        detail: String,
    },
}

impl ParseError {
    /// An I/O error on `path`.
    pub fn io(path: &str, source: std::io::Error) -> ParseError {
        ParseError::Io {
            path: path.to_string(),
            source,
        }
    }
}

/// Why [`crate::stream_with`] did not stream a file.
#[derive(Debug, Error)]
pub enum StreamError {
    /// The file could not be read (as [`crate::load_with`] would say).
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The file cannot be streamed in bounded memory, for the reason
    /// given: load it whole ([`crate::load_with`]) instead. What the sink
    /// received so far is to be thrown away.
    #[error("{path}: cannot be streamed: {why}")]
    Unstreamable {
        /// File.
        path: String,
        /// Why.
        why: String,
    },
}
