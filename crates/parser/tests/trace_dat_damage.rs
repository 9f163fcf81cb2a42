//! Damage sweep: hundreds of truncated and byte-overwritten variants of
//! small trace.dat files (versions 6 and 7, uncompressed and zstd, with a
//! second instance). Every variant must end quickly with events and a
//! warning, or with an error naming the file and a byte offset; never a
//! panic, never an event outside the CPUs and time span of the real file
//! (beyond the gap the decoder accepts), never a huge allocation (the
//! test runs under the default allocator: an absurd size would abort it).

#[path = "trace_dat_oracle/mod.rs"]
mod oracle;

use schedscope_parser::ParseError;
use std::time::{Duration, Instant};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// How a variant ended.
#[derive(Default, Debug)]
struct Tally {
    ok_with_warning: u32,
    ok_clean: u32,
    errors: u32,
}

/// Decode one variant and check what came out.
fn check(
    name: &str,
    orig: &schedscope_trace::Trace,
    data: &[u8],
    truncated: bool,
    tally: &mut Tally,
) {
    let t0 = Instant::now();
    let r = schedscope_parser::load_bytes(name, data);
    let took = t0.elapsed();
    // a hang detector, not a performance check: the file is ~40 KB
    assert!(took < Duration::from_secs(10), "{name}: took {took:?}");
    match r {
        Ok(t) => {
            assert!(
                t.events.windows(2).all(|w| w[0].ts <= w[1].ts),
                "{name}: unsorted"
            );
            assert!(t.nr_cpus <= 65536, "{name}: {} CPUs", t.nr_cpus);
            for e in &t.events {
                assert!(
                    e.cpu.0 < t.nr_cpus.max(1),
                    "{name}: cpu {} of {}",
                    e.cpu.0,
                    t.nr_cpus
                );
            }
            if !t.events.is_empty() {
                // within the real span, but for the gap a last page may jump
                let lo = orig.start().0;
                let hi = orig.end().0 + (1u64 << 45);
                assert!(
                    t.start().0 >= lo.saturating_sub(1 << 45) && t.end().0 <= hi,
                    "{name}: span {}..{} outside {lo}..{hi}",
                    t.start().0,
                    t.end().0
                );
            }
            // (the real file has its own warnings: lost events, instances)
            let new = t
                .warnings
                .iter()
                .filter(|w| !orig.warnings.contains(w))
                .count();
            if new == 0 {
                assert!(
                    !truncated,
                    "{name}: a truncated file decoded without a warning"
                );
                tally.ok_clean += 1;
            } else {
                tally.ok_with_warning += 1;
            }
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.starts_with(name),
                "{name}: error does not name the file: {msg}"
            );
            match e {
                ParseError::Truncated { .. } | ParseError::Corrupt { .. } => {
                    assert!(msg.contains("byte offset"), "{name}: {msg}")
                }
                ParseError::UnknownFormat { .. } => {
                    // the magic itself was damaged
                    assert!(!data.starts_with(b"\x17\x08\x44tracing"), "{name}: {msg}");
                }
                ParseError::Empty { .. } => assert!(data.is_empty()),
                other => panic!("{name}: unexpected error kind {other:?}"),
            }
            tally.errors += 1;
        }
    }
}

#[test]
fn truncated_and_overwritten_variants_end_cleanly() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut total = Tally::default();
    for (version, zstd) in [(6, false), (7, false), (7, true)] {
        let file = oracle::scenario(version, zstd, true);
        let orig = schedscope_parser::load_bytes("orig.dat", &file).unwrap();
        assert_eq!(orig.events.len(), 46);
        let mut tally = Tally::default();
        // truncations: every 97th byte, then random cuts
        let mut cuts: Vec<usize> = (0..file.len()).step_by(97).collect();
        cuts.extend((0..60).map(|_| rng.below(file.len())));
        for cut in cuts {
            let name = format!("v{version}{}-cut{cut}.dat", if zstd { "z" } else { "" });
            check(&name, &orig, &file[..cut], true, &mut tally);
        }
        // 8 random bytes overwritten, 150 times
        for n in 0..150 {
            let mut d = file.clone();
            for _ in 0..8 {
                let at = rng.below(d.len());
                d[at] = rng.next() as u8;
            }
            let name = format!("v{version}{}-flip{n}.dat", if zstd { "z" } else { "" });
            check(&name, &orig, &d, false, &mut tally);
        }
        eprintln!("v{version} zstd={zstd}: {tally:?}");
        // the sweep reached both outcomes
        assert!(tally.errors > 0 && tally.ok_with_warning > 0, "{tally:?}");
        total.ok_with_warning += tally.ok_with_warning;
        total.ok_clean += tally.ok_clean;
        total.errors += tally.errors;
    }
    let n = total.ok_with_warning + total.ok_clean + total.errors;
    assert!(n >= 600, "only {n} variants");
}

/// Flips in the ring-buffer data of the real LISA file: the pages around
/// each flip survive, the damage is counted in a warning.
#[test]
fn overwritten_pages_of_the_lisa_file_keep_the_rest() {
    let path = oracle::real_trace("lisa_sched_load.trace.dat");
    let file = std::fs::read(&path).unwrap();
    let orig = schedscope_parser::load_bytes("lisa.dat", &file).unwrap();
    let meta = schedscope_parser::trace_dat::meta::parse("lisa.dat", &file).unwrap();
    let cpu0 = &meta.buffers[0].cpus[0];
    let start = cpu0.offset as usize;
    // a commit word far beyond the page in CPU 0's first page
    let mut d = file.clone();
    d[start + 8..start + 16].copy_from_slice(&0x00ff_ffffu64.to_le_bytes());
    let t = schedscope_parser::load_bytes("lisa-bad.dat", &d).unwrap();
    assert!(t.events.len() < orig.events.len() && t.events.len() > orig.events.len() / 2);
    let w = t
        .warnings
        .iter()
        .find(|w| w.message.contains("ring-buffer pages of CPU 0"))
        .unwrap_or_else(|| panic!("{:?}", t.warnings));
    assert!(
        w.message.contains(&format!("byte offset {start}")),
        "{}",
        w.message
    );
}

/// What the file cannot be read as is said plainly, with the file name
/// and the byte offset.
#[test]
fn unreadable_files_give_clear_errors() {
    let v6 = oracle::scenario(6, false, false);
    let v7z = oracle::scenario(7, true, false);
    let err = |d: &[u8]| {
        schedscope_parser::load_bytes("f.dat", d)
            .unwrap_err()
            .to_string()
    };
    // cut inside the header page description
    let e = err(&v6[..40]);
    assert!(e.starts_with("f.dat: truncated at byte offset "), "{e}");
    assert!(e.contains("header_page"), "{e}");
    // a version that does not exist
    let mut d = v6.clone();
    d[10] = b'8';
    let e = err(&d);
    assert!(
        e.contains("version \"8\" is not supported") && e.contains("byte offset 10"),
        "{e}"
    );
    // written on a big-endian host
    let mut d = v6.clone();
    d[12] = 1;
    assert!(err(&d).contains("big-endian"), "{}", err(&d));
    // zlib, which Debian's trace-cmd cannot write and we do not read
    let at = v7z.windows(5).position(|w| w == b"zstd\0").unwrap();
    let mut d = v7z.clone();
    d[at..at + 4].copy_from_slice(b"zlib");
    let e = err(&d);
    assert!(
        e.contains("compression \"zlib\"") && e.contains("byte offset"),
        "{e}"
    );
    // the first options section points beyond the file
    let mut d = v7z.clone();
    let o = at + "zstd\x001.5.4\0".len();
    d[o..o + 8].copy_from_slice(&(10u64 << 30).to_le_bytes());
    let e = err(&d);
    assert!(e.contains("truncated at byte offset 10737418240"), "{e}");
}
