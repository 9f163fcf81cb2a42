//! The whole pipeline on arbitrary bytes, as `schedscope report --all`
//! runs it: format detection and decoding (with the CLI's keep/tally
//! options, and without), every analysis, and every output format (text
//! and JSON). Nothing may panic, and (run with `-rss_limit_mb` and
//! `-timeout`, see the README) nothing may allocate or loop by a decoded
//! number instead of by the data present.
#![no_main]

use libfuzzer_sys::fuzz_target;
use schedscope_analysis::report::{Report, Sections};
use schedscope_analysis::Options;

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let sections = Sections::all();
    let cli_opts = schedscope_parser::LoadOptions {
        keep: sections
            .needed_events()
            .map(|names| names.iter().map(|n| n.to_string()).collect()),
        spare: sections.need_timeline(),
        tally: sections
            .tallied_events()
            .iter()
            .map(|n| n.to_string())
            .collect(),
    };
    for opts in [cli_opts, schedscope_parser::LoadOptions::default()] {
        let Ok(trace) = schedscope_parser::load_bytes_with("fuzz.data", data, &opts) else {
            continue;
        };
        let aopts = Options::default();
        let report = Report::compute(&trace, sections, &aopts);
        let mut text = Vec::new();
        report
            .render_text(&trace, &aopts, &mut text)
            .expect("rendering into memory cannot fail");
        serde_json::to_vec(&report).expect("the report serializes");
    }
});
