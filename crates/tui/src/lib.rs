//! `schedscope tui`: a terminal KernelShark for scheduler traces.
//!
//! Data flow: the caller's [`Loader`] decodes the file on a background
//! thread ([`data::spawn`]), after the lanes of the lane cache ([`cache`])
//! when it holds this file's, which the UI draws at once; a streaming
//! loader ([`StreamLoader`], [`preview::load`]) meanwhile sends the lanes
//! of the recorded switches decoded so far ([`preview`]); the timeline ([`schedscope_analysis::Timeline`])
//! is built and indexed per CPU lane ([`index`]) while the analyses run
//! ([`schedscope_analysis::Report`]); the result arrives in the event loop
//! ([`term`]) as one message. Until then the UI draws the loading progress
//! and stays responsive.
//!
//! The UI state ([`app::App`]) changes only through [`keymap::Action`]s
//! (keys) and mouse events, so tests drive it without a terminal; drawing
//! ([`draw`]) reads the state and the data and writes a ratatui buffer.
//! Per frame the timeline costs about columns x log(runs) per lane: each
//! cell asks the lane index for its busy fraction (prefix sums), dominant
//! task and process (exact scan of a few runs, else the mipmap buckets
//! that lie inside the cell) and waiting tasks (integral of a step
//! function). The analysis tabs show the report
//! structs' fields ([`tables`]); region statistics between markers A and B
//! come from the timeline's intervals ([`stats`]).

pub mod app;
pub mod cache;
pub mod data;
pub mod draw;
pub mod events;
pub mod groups;
pub mod index;
pub mod jumps;
pub mod keymap;
pub mod overlay;
pub mod preview;
pub mod stats;
pub mod tables;
pub mod term;
pub mod view;

pub use app::App;
pub use data::{CacheUse, Data, Loader, Source, StreamLoader};
pub use term::run;
