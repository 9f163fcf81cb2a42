//! No input may make the trace.dat decoder panic or allocate by a decoded
//! size; whatever it returns must be internally consistent (sorted events,
//! names, strings and masks that resolve, untyped events' fields present,
//! CPUs below the CPU count).
#![no_main]

use libfuzzer_sys::fuzz_target;
use schedscope_trace::EventData;

fuzz_target!(|data: &[u8]| {
    // The decoder directly (whatever the magic says), and through format
    // detection as a user would.
    if let Ok(t) = schedscope_parser::trace_dat::decode("fuzz.dat", data) {
        check(&t);
    }
    if !data.is_empty() {
        if let Ok(t) = schedscope_parser::load_bytes("fuzz.dat", data) {
            check(&t);
        }
    }
});

fn check(t: &schedscope_trace::Trace) {
    assert!(t.events.windows(2).all(|w| w[0].ts <= w[1].ts));
    assert!(t.nr_cpus <= 1 << 16);
    for e in &t.events {
        assert!((e.name.0 as usize) < t.event_names.len());
        assert!(e.cpu.0 < t.nr_cpus);
        match e.data {
            EventData::Other(Some(i)) => assert!((i as usize) < t.raw_args.len()),
            EventData::Switch {
                prev_comm,
                next_comm,
                ..
            } => {
                assert!((prev_comm.0 as usize) < t.strings.len());
                assert!((next_comm.0 as usize) < t.strings.len());
            }
            EventData::IpiSendCpumask { mask, .. } | EventData::IpiRaise { mask, .. } => {
                assert!((mask.0 as usize) < t.cpumasks.len())
            }
            _ => {}
        }
    }
    let total: u64 = t.events_by_name.values().sum();
    assert_eq!(total, t.events.len() as u64);
}
