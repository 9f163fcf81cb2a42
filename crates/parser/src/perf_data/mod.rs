//! perf.data (PERFILE2) decoder.

pub mod abi;
pub mod writer;

use crate::ParseError;
use schedscope_trace::Trace;

/// Decode a perf.data file held in memory; `name` is used in messages.
pub fn decode(name: &str, _data: &[u8]) -> Result<Trace, ParseError> {
    Err(ParseError::UnknownFormat {
        path: name.to_string(),
        detail: "perf.data decoder under construction".into(),
    })
}
