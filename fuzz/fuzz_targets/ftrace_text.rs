//! No input may make the ftrace text decoder panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if !data.is_empty() {
        if let Ok(t) = schedscope_parser::load_bytes("fuzz.txt", data) {
            assert!(t.events.windows(2).all(|w| w[0].ts <= w[1].ts));
        }
        let _ = schedscope_parser::ftrace_text::decode("fuzz.txt", data);
    }
});
