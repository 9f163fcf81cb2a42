//! Decoder throughput.
//!
//! `cargo bench -p schedscope-parser --bench perf_data` decodes the committed
//! fixtures; set `SCHEDSCOPE_BENCH_FILE=/tmp/big.data` to also decode a large
//! recording (e.g. `perf record -a -m 1024 -e 'sched:*,ipi:*,tlb:tlb_flush'
//! -o /tmp/big.data -- perf bench sched messaging -g 20 -l 1500`).

use std::path::PathBuf;

fn main() {
    divan::main();
}

fn fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/perf")
        .join(name);
    std::fs::read(&p).unwrap_or_default()
}

#[divan::bench(args = ["sched_small.data", "sched_small_zstd.data", "callchain.data"])]
fn decode_fixture(bencher: divan::Bencher, name: &str) {
    let data = fixture(name);
    bencher
        .counter(divan::counter::BytesCount::new(data.len()))
        .bench(|| {
            schedscope_parser::load_bytes(name, divan::black_box(&data)).map(|t| t.events.len())
        });
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn decode_big_file(bencher: divan::Bencher) {
    let Some(path) = std::env::var_os("SCHEDSCOPE_BENCH_FILE") else {
        eprintln!("decode_big_file: set SCHEDSCOPE_BENCH_FILE to a perf.data file to run it");
        return;
    };
    let path = PathBuf::from(path);
    bencher.bench(|| schedscope_parser::load(&path).map(|t| t.events.len()));
}

/// What `schedscope report --latency` loads: only the switch and wakeup
/// events are kept (the others are counted).
#[divan::bench(sample_count = 10, sample_size = 1)]
fn decode_big_file_latency_events(bencher: divan::Bencher) {
    let Some(path) = std::env::var_os("SCHEDSCOPE_BENCH_FILE") else {
        eprintln!("decode_big_file_latency_events: set SCHEDSCOPE_BENCH_FILE to a perf.data file to run it");
        return;
    };
    let path = PathBuf::from(path);
    let opts = schedscope_parser::LoadOptions {
        keep: Some(
            [
                "sched:sched_switch",
                "sched:sched_wakeup",
                "sched:sched_wakeup_new",
                "sched:sched_waking",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        ),
        ..Default::default()
    };
    bencher.bench(|| schedscope_parser::load_with(&path, &opts).map(|t| t.events.len()));
}

#[divan::bench]
fn parse_sched_switch_format(bencher: divan::Bencher) {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/formats/sched/sched_switch/format"),
    )
    .unwrap_or_default();
    bencher.bench(|| schedscope_parser::tracefs_format::parse_format(divan::black_box(&text)).ok());
}
