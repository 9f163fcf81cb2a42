//! Inputs that once crashed a decoder under `cargo fuzz` (fuzz/regressions/):
//! each must now decode or fail with an error, never panic.

use std::path::PathBuf;

fn run_dir(dir: &str) -> usize {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(dir);
    let mut n = 0;
    for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
        let p = entry.expect("dir entry").path();
        let data = std::fs::read(&p).expect("read");
        let name = p.display().to_string();
        if let Ok(t) = schedscope_parser::perf_data::decode(&name, &data) {
            assert!(t.events.windows(2).all(|w| w[0].ts <= w[1].ts), "{name}");
            assert!(t.events.iter().all(|e| e.cpu.0 < 1 << 16), "{name}");
        }
        if !data.is_empty() {
            let _ = schedscope_parser::load_bytes(&name, &data);
        }
        n += 1;
    }
    n
}

/// crash-d0f57f1f: a sample with CPU 0xffffffff made `Trace::finish`
/// overflow computing `cpu + 1`; such samples are now skipped and counted.
#[test]
fn perf_data_crash_inputs_do_not_panic() {
    assert!(run_dir("perf_data") >= 1);
}
