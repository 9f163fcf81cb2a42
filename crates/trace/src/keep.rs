//! The load rule: which events a filtered load keeps in [`Trace::events`]
//! (`schedscope_parser::LoadOptions::keep`), and [`Trace::retain_kept`],
//! the same rule applied to a trace that was loaded whole (the export
//! decodes every event for its event tables, then keeps only what the
//! analyses read).

use crate::trace::Dropped;
use crate::Trace;

/// Event names every filtered load keeps: the task table falls back on them
/// when the file has no FORK/EXIT records.
pub const ALWAYS_KEEP: [&str; 3] = [
    "sched:sched_process_fork",
    "sched:sched_process_exit",
    "sched:sched_process_exec",
];

/// Whether the keep (or tally) entry `pat` names the event `name`: equal,
/// or a prefix of it when `pat` ends with `*` (`cpu-clock*` names
/// `cpu-clock:u` and `cpu-clock/period=2000000/`).
pub fn name_matches(pat: &str, name: &str) -> bool {
    match pat.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pat == name,
    }
}

/// Whether a load that keeps `keep` keeps the event named `name`: every
/// event without a list (`None`); else the names it lists, `*` prefixes,
/// and [`ALWAYS_KEEP`].
pub fn keeps(keep: Option<&[String]>, name: &str) -> bool {
    match keep {
        None => true,
        Some(k) => k.iter().any(|pat| name_matches(pat, name)) || ALWAYS_KEEP.contains(&name),
    }
}

impl Trace {
    /// Apply the load rule ([`keeps`]) to a trace that was loaded whole:
    /// leave in [`Trace::events`] only what a load keeping `keep` keeps,
    /// give the rest of the vector back, and record in [`Trace::dropped`]
    /// (unless a filtered load already did) the event count and time span
    /// of the whole trace, so that counts and span still describe it, as
    /// after a filtered load.
    pub fn retain_kept(&mut self, keep: Option<&[String]>) {
        let kept: Vec<bool> = self.event_names.iter().map(|n| keeps(keep, n)).collect();
        if kept.iter().all(|k| *k) {
            return;
        }
        if self.dropped.is_none() {
            self.dropped = Some(Dropped {
                total: self.event_count(),
                first: self.start(),
                last: self.end(),
            });
        }
        self.events
            .retain(|e| kept.get(e.name.0 as usize).copied().unwrap_or(true));
        self.events.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_keeps_listed_names_prefixes_and_process_events() {
        let keep = vec!["sched:sched_switch".to_string(), "cpu-clock*".to_string()];
        let k = |n: &str| keeps(Some(&keep), n);
        assert!(k("sched:sched_switch"));
        assert!(k("cpu-clock:u") && k("cpu-clock/period=2000000/"));
        assert!(k("sched:sched_process_exec"), "always kept");
        assert!(!k("sched:sched_wakeup"));
        assert!(!k("sched:sched_switch2"), "no prefix without a star");
        assert!(keeps(None, "anything"));
    }
}
