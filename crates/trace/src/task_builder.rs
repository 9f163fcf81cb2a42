//! Building the task table (tid -> tgid, comm, lifetime) from what a
//! decoder learns, with one set of rules for every input format.
//!
//! A decoder reports each fact by its source, and the builder decides what
//! it means for the table:
//!
//! * perf.data COMM records ([`TaskTableBuilder::comm_record`]) name a
//!   thread and its process; perf synthesizes them from `/proc/PID/comm`,
//!   which for kworkers carries the workqueue suffix the tracepoints lack,
//!   so an event's comm ([`TaskTableBuilder::event_comm`]) does not replace
//!   them;
//! * FORK records ([`TaskTableBuilder::fork_record`]) start a thread with its
//!   parent's name; fork and exit *events* ([`TaskTableBuilder::fork_event`],
//!   [`TaskTableBuilder::exit`], or [`TaskTableBuilder::fork_exit_events`]
//!   over a decoded event list) start and end incarnations where the file
//!   has no such records (a reused tid gets a new [`crate::Utid`]);
//! * saved cmdlines ([`TaskTableBuilder::saved_cmdline`]) and the pids of
//!   samples ([`TaskTableBuilder::sample_tgid`]) only fill what nothing
//!   else told;
//! * text traces name tasks in every line prefix and in event fields, where
//!   `<...>` and `<idle>` are placeholders rather than names
//!   ([`TaskTableBuilder::line_task`], [`TaskTableBuilder::printed_comm`]).
//!
//! The order of the calls is the decoder's: it fixes the order in which
//! tasks first appear, hence their utids.

use crate::event::{Event, EventData};
use crate::hash::FxMap;
use crate::ids::{Tid, Ts};
use crate::strings::Strings;
use crate::task::TaskTable;

/// Builds a [`TaskTable`] from the facts a decoder reports (see the module
/// documentation for what each means).
#[derive(Debug, Default)]
pub struct TaskTableBuilder {
    table: TaskTable,
    /// Tids named by a COMM record.
    comm_records: FxMap<Tid, ()>,
    /// Tid 0 has been named `swapper` (text traces).
    swapper_named: bool,
}

impl TaskTableBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder that adds to `table`.
    pub fn from_table(table: TaskTable) -> Self {
        TaskTableBuilder {
            table,
            ..Self::default()
        }
    }

    /// The table.
    pub fn finish(self) -> TaskTable {
        self.table
    }

    /// A COMM record: `tid` of process `pid` is called `comm` (from now on;
    /// event comms do not rename it).
    pub fn comm_record(&mut self, pid: Tid, tid: Tid, comm: &str) {
        self.table.set_comm(tid, comm);
        self.table.set_tgid(tid, pid);
        self.comm_records.insert(tid, ());
    }

    /// A FORK record: `tid` of process `pid`, forked by `ptid` at `ts`,
    /// starts with its parent's name.
    pub fn fork_record(&mut self, pid: Tid, tid: Tid, ptid: Tid, ts: Ts) {
        let comm = self.table.comm(ptid).to_string();
        self.table.fork(tid, Some(pid), &comm, Some(ts));
    }

    /// A fork event: `child`, called `comm`, forked at `ts` (its process
    /// unknown).
    pub fn fork_event(&mut self, child: Tid, comm: &str, ts: Ts) {
        self.table.fork(child, None, comm, Some(ts));
    }

    /// An exit (record or event) of `tid` at `ts`.
    pub fn exit(&mut self, tid: Tid, ts: Ts) {
        self.table.exit(tid, ts);
    }

    /// The fork events (when `forks`) and exit events (when `exits`) of
    /// `events`, in their order; `strings` holds their comms.
    pub fn fork_exit_events(
        &mut self,
        events: &[Event],
        strings: &Strings,
        forks: bool,
        exits: bool,
    ) {
        if !forks && !exits {
            return;
        }
        for ev in events {
            match ev.data {
                EventData::Fork {
                    child_tid,
                    child_comm,
                    ..
                } if forks => self.fork_event(child_tid, strings.get(child_comm), ev.ts),
                EventData::Exit { tid, .. } if exits => self.exit(tid, ev.ts),
                _ => {}
            }
        }
    }

    /// A saved cmdline (tracing data): names `tid` when nothing did yet.
    pub fn saved_cmdline(&mut self, tid: Tid, comm: &str) {
        if self.table.comm(tid).is_empty() {
            self.table.set_comm(tid, comm);
        }
    }

    /// The pid of a sample of `tid`: its process, when nothing told it yet.
    pub fn sample_tgid(&mut self, tid: Tid, tgid: Tid) {
        if self.table.tgid(tid).is_none() {
            self.table.set_tgid(tid, tgid);
        }
    }

    /// The comm an event's field gives `tid` (its latest): names it unless
    /// a COMM record already did.
    pub fn event_comm(&mut self, tid: Tid, comm: &str) {
        if !self.comm_records.contains_key(&tid) || self.table.comm(tid).is_empty() {
            self.table.set_comm(tid, comm);
        }
    }

    /// A text trace's line prefix: task `tid` called `comm`, of process
    /// `tgid` when the line has that column. Tid 0 is the idle task,
    /// `swapper`, whatever the line calls it.
    #[inline]
    pub fn line_task(&mut self, tid: Tid, comm: &str, tgid: Option<Tid>) {
        if tid.0 == 0 {
            if !self.swapper_named {
                self.table.set_comm(Tid(0), "swapper");
                self.swapper_named = true;
            }
            return;
        }
        self.printed_comm(tid, comm);
        if let Some(tgid) = tgid {
            self.table.set_tgid(tid, tgid);
        }
    }

    /// A comm printed in a text trace (a line prefix or an event field):
    /// names `tid`, unless it is the idle task or the text is a
    /// placeholder (`<...>`, `<idle>`, empty).
    #[inline]
    pub fn printed_comm(&mut self, tid: Tid, comm: &str) {
        if tid.0 > 0 && !comm.is_empty() && comm != "<...>" && comm != "<idle>" {
            self.table.set_comm(tid, comm);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{NameId, StackId};
    use crate::ids::Cpu;

    #[test]
    fn comm_records_win_over_event_comms_until_empty() {
        let mut b = TaskTableBuilder::new();
        b.comm_record(Tid(10), Tid(11), "kworker/0:1-events");
        b.event_comm(Tid(11), "kworker/0:1");
        b.event_comm(Tid(12), "bash");
        let t = b.finish();
        assert_eq!(t.comm(Tid(11)), "kworker/0:1-events");
        assert_eq!(t.tgid(Tid(11)), Some(Tid(10)));
        assert_eq!(t.comm(Tid(12)), "bash");
        // A COMM record with an empty name does not keep event comms out.
        let mut b = TaskTableBuilder::new();
        b.comm_record(Tid(5), Tid(5), "");
        b.event_comm(Tid(5), "sh");
        assert_eq!(b.finish().comm(Tid(5)), "sh");
    }

    #[test]
    fn cmdlines_and_sample_pids_fill_only_what_is_unknown() {
        let mut b = TaskTableBuilder::new();
        b.comm_record(Tid(7), Tid(8), "a");
        b.saved_cmdline(Tid(8), "b");
        b.saved_cmdline(Tid(9), "c");
        b.sample_tgid(Tid(8), Tid(99));
        b.sample_tgid(Tid(9), Tid(9));
        let t = b.finish();
        assert_eq!((t.comm(Tid(8)), t.tgid(Tid(8))), ("a", Some(Tid(7))));
        assert_eq!((t.comm(Tid(9)), t.tgid(Tid(9))), ("c", Some(Tid(9))));
    }

    #[test]
    fn fork_records_inherit_the_parents_name_and_reused_tids_get_new_incarnations() {
        let mut b = TaskTableBuilder::new();
        b.comm_record(Tid(1), Tid(1), "init");
        b.fork_record(Tid(20), Tid(20), Tid(1), Ts(5));
        b.exit(Tid(20), Ts(9));
        b.fork_event(Tid(20), "again", Ts(12));
        let t = b.finish();
        type Incarnation<'a> = (&'a str, Option<Tid>, Option<Ts>, Option<Ts>);
        let incarnations: Vec<Incarnation> = t
            .iter()
            .filter(|k| k.tid == Tid(20))
            .map(|k| (k.comm.as_str(), k.tgid, k.fork_ts, k.exit_ts))
            .collect();
        assert_eq!(
            incarnations,
            [
                ("init", Some(Tid(20)), Some(Ts(5)), Some(Ts(9))),
                ("again", None, Some(Ts(12)), None)
            ]
        );
    }

    #[test]
    fn fork_exit_events_replay_only_the_kinds_asked_for() {
        let mut strings = Strings::new();
        let child_comm = strings.intern("child");
        let ev = |ts: u64, data| Event {
            ts: Ts(ts),
            cpu: Cpu(0),
            tid: Tid(1),
            name: NameId(0),
            stack: StackId::NONE,
            data,
        };
        let events = [
            ev(
                1,
                EventData::Fork {
                    parent_tid: Tid(1),
                    child_tid: Tid(30),
                    child_comm,
                },
            ),
            ev(
                2,
                EventData::Exit {
                    tid: Tid(30),
                    comm: child_comm,
                },
            ),
        ];
        let run = |forks, exits| {
            let mut b = TaskTableBuilder::new();
            b.fork_exit_events(&events, &strings, forks, exits);
            b.finish()
                .by_tid(Tid(30))
                .map(|k| (k.comm.clone(), k.fork_ts, k.exit_ts))
        };
        assert_eq!(
            run(true, true),
            Some(("child".into(), Some(Ts(1)), Some(Ts(2))))
        );
        assert_eq!(run(false, true), Some((String::new(), None, Some(Ts(2)))));
        assert_eq!(run(true, false), Some(("child".into(), Some(Ts(1)), None)));
        assert_eq!(run(false, false), None);
    }

    #[test]
    fn text_prefixes_name_the_idle_task_swapper_and_skip_placeholders() {
        let mut b = TaskTableBuilder::new();
        b.line_task(Tid(0), "<idle>", None);
        b.line_task(Tid(0), "swapper/3", Some(Tid(0)));
        b.line_task(Tid(40), "<...>", Some(Tid(39)));
        b.line_task(Tid(41), "sshd", None);
        b.printed_comm(Tid(41), "<idle>");
        b.printed_comm(Tid(41), "");
        b.printed_comm(Tid(42), "cat");
        let t = b.finish();
        assert_eq!(t.comm(Tid(0)), "swapper");
        assert_eq!(t.tgid(Tid(0)), None);
        assert_eq!((t.comm(Tid(40)), t.tgid(Tid(40))), ("", Some(Tid(39))));
        assert_eq!(t.comm(Tid(41)), "sshd");
        assert_eq!(t.comm(Tid(42)), "cat");
        // Tasks appear in the order they were first told of.
        let tids: Vec<i32> = t.iter().map(|k| k.tid.0).collect();
        assert_eq!(tids, [0, 40, 41, 42]);
    }
}
