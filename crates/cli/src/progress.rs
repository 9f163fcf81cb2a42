//! Progress on standard error while long work runs, as perf and cargo
//! show it: only when stderr is a terminal (nothing at all otherwise, so
//! logs and pipes see exactly what they saw before), one line redrawn in
//! place at most ten times a second, from the first 200 ms on (quick runs
//! draw nothing), and cleared when the work ends.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long work runs before its line is first drawn.
const FIRST_DRAW: Duration = Duration::from_millis(200);
/// Time between two redraws (10 per second at most).
const REDRAW: Duration = Duration::from_millis(100);
/// Characters of a file name shown; longer names keep their end.
const NAME_CHARS: usize = 32;
/// Width of the bar, between its brackets.
const BAR: usize = 20;

/// Progress lines on stderr, only when stderr is a terminal.
pub(crate) struct Progress {
    on: bool,
}

impl Progress {
    /// On when stderr is a terminal.
    pub(crate) fn new() -> Progress {
        Progress {
            on: std::io::stderr().is_terminal(),
        }
    }

    /// Clear the progress line.
    pub(crate) fn done(&self) {
        if self.on {
            eprint!("\r\x1b[K");
        }
    }

    /// Run `work` on this thread; meanwhile, when on, another thread draws
    /// `line(elapsed)` every [`REDRAW`] from [`FIRST_DRAW`] on, and the
    /// line is cleared when `work` returns.
    pub(crate) fn while_running<T>(
        &self,
        line: impl Fn(Duration) -> String + Sync,
        work: impl FnOnce() -> T,
    ) -> T {
        if !self.on {
            return work();
        }
        let t0 = Instant::now();
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let ticker = scope.spawn(|| {
                let mut drawn = false;
                let mut next = t0 + FIRST_DRAW;
                loop {
                    let now = Instant::now();
                    if now < next {
                        std::thread::park_timeout(next - now);
                    }
                    if stop.load(Ordering::Acquire) {
                        break;
                    }
                    if Instant::now() < next {
                        continue; // woken early, not stopped
                    }
                    eprint!("\r\x1b[K{}", line(t0.elapsed()));
                    drawn = true;
                    next = Instant::now() + REDRAW;
                }
                if drawn {
                    eprint!("\r\x1b[K");
                }
            });
            let r = work();
            stop.store(true, Ordering::Release);
            ticker.thread().unpark();
            let _ = ticker.join();
            r
        })
    }
}

/// `name` cut to its last [`NAME_CHARS`] characters (with a leading `…`).
fn short_name(name: &str) -> String {
    let n = name.chars().count();
    if n <= NAME_CHARS {
        return name.to_string();
    }
    let tail: String = name.chars().skip(n - (NAME_CHARS - 1)).collect();
    format!("…{tail}")
}

/// Seconds with one decimal (`12.3 s`).
fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// The line shown while a file loads: `done` of `total` bytes decoded
/// (see `schedscope_parser::load_with_progress`), or only the size and
/// the time when the decoder counts nothing (`done` 0: compressed, text,
/// standard input) or the total is unknown.
///
/// `loading big.data [=========>          ]  47%  382.0/812.3 MB  1.2 s`
pub(crate) fn load_line(name: &str, done: u64, total: u64, elapsed: Duration) -> String {
    let name = short_name(name);
    let mb = |b: u64| b as f64 / 1e6;
    if done == 0 || total == 0 {
        if total == 0 {
            return format!("loading {name}  {}", secs(elapsed));
        }
        return format!("loading {name} ({:.1} MB)  {}", mb(total), secs(elapsed));
    }
    let done = done.min(total);
    let frac = done as f64 / total as f64;
    let full = ((frac * BAR as f64) as usize).min(BAR);
    let bar = if full == BAR {
        "=".repeat(BAR)
    } else {
        format!("{}>{}", "=".repeat(full), " ".repeat(BAR - full - 1))
    };
    format!(
        "loading {name} [{bar}] {:>3}%  {:.1}/{:.1} MB  {}",
        (frac * 100.0).floor() as u64,
        mb(done),
        mb(total),
        secs(elapsed)
    )
}

/// The line shown during a phase of work on a file:
/// `exporting big.data: thread_state+sched_slice  3.4 s`.
pub(crate) fn phase_line(verb: &str, name: &str, phase: &str, elapsed: Duration) -> String {
    let name = short_name(name);
    if phase.is_empty() {
        format!("{verb} {name}  {}", secs(elapsed))
    } else {
        format!("{verb} {name}: {phase}  {}", secs(elapsed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn load_line_shows_a_bar_the_percentage_and_the_sizes() {
        assert_eq!(
            load_line("big.data", 382_000_000, 812_300_000, ms(1234)),
            "loading big.data [=========>          ]  47%  382.0/812.3 MB  1.2 s"
        );
        assert_eq!(
            load_line("big.data", 0, 812_300_000, ms(50)),
            "loading big.data (812.3 MB)  0.1 s",
            "nothing counted: size and time only"
        );
        assert_eq!(load_line("-", 0, 0, ms(2000)), "loading -  2.0 s");
        assert_eq!(
            load_line("f", 1, 1000, ms(0)),
            "loading f [>                   ]   0%  0.0/0.0 MB  0.0 s"
        );
        // done, or counted twice (a second decoding pass): a full bar, never past 100%
        for done in [1000, 2500] {
            assert_eq!(
                load_line("f", done, 1000, ms(0)),
                "loading f [====================] 100%  0.0/0.0 MB  0.0 s"
            );
        }
    }

    #[test]
    fn long_names_keep_their_end() {
        let name = "/var/tmp/recordings/2026-12-02/host-a/hackbench-g8.data";
        let line = load_line(name, 0, 1_000_000, ms(0));
        assert_eq!(
            line,
            "loading …-12-02/host-a/hackbench-g8.data (1.0 MB)  0.0 s"
        );
        assert_eq!(short_name(name).chars().count(), NAME_CHARS);
        assert_eq!(short_name("a.data"), "a.data");
    }

    #[test]
    fn phase_line_names_the_file_and_the_phase() {
        assert_eq!(
            phase_line("exporting", "a.data", "timeline build", ms(3456)),
            "exporting a.data: timeline build  3.5 s"
        );
        assert_eq!(
            phase_line("analysing", "a.data", "", ms(800)),
            "analysing a.data  0.8 s"
        );
    }

    #[test]
    fn off_runs_the_work_and_prints_nothing() {
        let p = Progress { on: false };
        let drawn = AtomicBool::new(false);
        let r = p.while_running(
            |_| {
                drawn.store(true, Ordering::Relaxed);
                String::new()
            },
            || {
                std::thread::sleep(ms(350));
                7
            },
        );
        assert_eq!(r, 7);
        assert!(!drawn.load(Ordering::Relaxed), "no line rendered when off");
    }

    #[test]
    fn on_draws_after_the_first_delay_at_most_ten_times_a_second() {
        let p = Progress { on: true };
        let draws = std::sync::atomic::AtomicU64::new(0);
        let quick = p.while_running(
            |_| {
                draws.fetch_add(1, Ordering::Relaxed);
                String::new()
            },
            || 1,
        );
        assert_eq!(quick, 1);
        assert_eq!(draws.load(Ordering::Relaxed), 0, "quick work draws nothing");
        let t0 = Instant::now();
        p.while_running(
            |_| {
                draws.fetch_add(1, Ordering::Relaxed);
                String::new()
            },
            || std::thread::sleep(ms(700)),
        );
        let n = draws.load(Ordering::Relaxed);
        // first draw at 200 ms, then one per 100 ms at most
        let max = 1 + ((t0.elapsed().as_millis() as u64).saturating_sub(200)) / 100;
        assert!(n >= 1 && n <= max, "{n} draws, at most {max}");
    }
}
