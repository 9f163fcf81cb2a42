//! No input may make the perf.data decoder panic; whatever it returns must
//! be internally consistent (sorted events, ids that resolve).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Go through the perf.data decoder even when the magic is damaged, and
    // through format detection as a user would.
    let direct = schedscope_parser::perf_data::decode("fuzz.data", data);
    if let Ok(t) = &direct {
        check(t);
    }
    if !data.is_empty() {
        if let Ok(t) = schedscope_parser::load_bytes("fuzz.data", data) {
            check(&t);
        }
    }
});

fn check(t: &schedscope_trace::Trace) {
    assert!(t.events.windows(2).all(|w| w[0].ts <= w[1].ts));
    for e in &t.events {
        assert!((e.name.0 as usize) < t.event_names.len());
        if e.stack.is_some() {
            assert!(t.stack(e.stack).is_some());
        }
        if let schedscope_trace::EventData::IpiSendCpumask { mask, .. } = e.data {
            assert!((mask.0 as usize) < t.cpumasks.len());
        }
    }
    let total: u64 = t.events_by_name.values().sum();
    assert_eq!(total, t.events.len() as u64);
}
