//! `schedscope-ebizzy`: an ebizzy-like workload for demos and tests.
//!
//! N threads repeatedly mmap an anonymous chunk, fill it with sorted
//! records, binary-search it for random keys and munmap it again. munmap in
//! a multi-threaded process flushes the TLBs of the other CPUs running its
//! threads, so the workload produces real TLB shootdowns, IPIs and a lot of
//! scheduling. Like ebizzy it prints records (searches) per second, here
//! once per second, and a total with real/user/sys time at the end.
//!
//! Usage: `schedscope-ebizzy [-t THREADS] [-S SECONDS] [-s CHUNK_BYTES]`

mod mem;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Searches per mapped chunk before it is unmapped.
const SEARCHES_PER_CHUNK: u64 = 64;

struct Opts {
    threads: usize,
    seconds: u64,
    chunk: usize,
}

fn usage(msg: &str) -> ! {
    eprintln!("schedscope-ebizzy: {msg}");
    eprintln!("usage: schedscope-ebizzy [-t THREADS] [-S SECONDS] [-s CHUNK_BYTES]");
    std::process::exit(2)
}

fn parse_args() -> Opts {
    let mut o = Opts {
        threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
        seconds: 10,
        chunk: 512 << 10,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| -> u64 {
            let v = args
                .next()
                .unwrap_or_else(|| usage(&format!("{name} needs a value")));
            v.parse()
                .unwrap_or_else(|_| usage(&format!("{name} {v}: expected a positive integer")))
        };
        match a.as_str() {
            "-t" => o.threads = value("-t") as usize,
            "-S" => o.seconds = value("-S"),
            "-s" => o.chunk = value("-s") as usize,
            "-h" | "--help" => usage("ebizzy-like memory workload"),
            other => usage(&format!("unknown option {other}")),
        }
    }
    if o.threads == 0 || o.seconds == 0 || o.chunk < 64 {
        usage("-t and -S must be at least 1, -s at least 64 bytes");
    }
    o
}

/// xorshift64: cheap per-thread pseudo-random numbers.
fn next_rand(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    x
}

/// One worker: map, fill, search, unmap until `stop`.
fn worker(seed: u64, chunk: usize, stop: &AtomicBool, records: &AtomicU64) -> Result<(), String> {
    let mut rng = seed | 1;
    while !stop.load(Ordering::Relaxed) {
        let mut m = mem::Chunk::map(chunk).map_err(|e| format!("mmap of {chunk} bytes: {e}"))?;
        let words = m.as_mut_slice();
        let base = next_rand(&mut rng) % 1024;
        for (i, w) in words.iter_mut().enumerate() {
            *w = base + 2 * i as u64;
        }
        let mut found = 0u64;
        for _ in 0..SEARCHES_PER_CHUNK {
            let key = base + next_rand(&mut rng) % (2 * words.len() as u64);
            if words.binary_search(&key).is_ok() {
                found += 1;
            }
        }
        std::hint::black_box(found);
        drop(m);
        records.fetch_add(SEARCHES_PER_CHUNK, Ordering::Relaxed);
    }
    Ok(())
}

fn main() {
    let o = parse_args();
    let stop = Arc::new(AtomicBool::new(false));
    let records = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut handles = Vec::with_capacity(o.threads);
    for t in 0..o.threads {
        let (stop, records) = (Arc::clone(&stop), Arc::clone(&records));
        let chunk = o.chunk;
        let seed = 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(t as u64 + 1);
        let h = std::thread::Builder::new()
            .name(format!("ebizzy-{t}"))
            .spawn(move || worker(seed, chunk, &stop, &records));
        match h {
            Ok(h) => handles.push(h),
            Err(e) => {
                eprintln!("schedscope-ebizzy: cannot start thread {t}: {e}");
                std::process::exit(1);
            }
        }
    }
    let mut last = 0;
    for s in 1..=o.seconds {
        let target = start + Duration::from_secs(s);
        std::thread::sleep(target.saturating_duration_since(Instant::now()));
        let now = records.load(Ordering::Relaxed);
        println!("{} records/s", now - last);
        last = now;
    }
    stop.store(true, Ordering::Relaxed);
    let mut failed = false;
    for h in handles {
        match h.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                eprintln!("schedscope-ebizzy: {e}");
                failed = true;
            }
            Err(_) => failed = true,
        }
    }
    let real = start.elapsed().as_secs_f64();
    let total = records.load(Ordering::Relaxed);
    let (user, sys) = mem::cpu_times();
    println!("{:.0} records/s", total as f64 / real);
    println!("real {real:5.2} s");
    println!("user {user:5.2} s");
    println!("sys  {sys:5.2} s");
    if failed {
        std::process::exit(1);
    }
}
