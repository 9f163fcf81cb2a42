//! ftrace / trace-cmd report / perf script text decoder.

use crate::ParseError;
use schedscope_trace::{Trace, TraceFormat};

/// Recognise a text trace from its first lines.
pub fn detect(_data: &[u8]) -> Option<TraceFormat> {
    None
}

/// Decode a text trace held in memory; `name` is used in messages.
pub fn decode(name: &str, _data: &[u8]) -> Result<Trace, ParseError> {
    Err(ParseError::UnknownFormat {
        path: name.to_string(),
        detail: "text decoder under construction".into(),
    })
}
