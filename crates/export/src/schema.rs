//! The tables: names, columns, types, units and documentation. The same
//! definitions drive the writers, `_schedscope/schema.json` and
//! `_schedscope/README.md`.

use serde::Serialize;

/// A column's type. Times and durations are Int64 nanoseconds on the trace
/// clock; there are no unsigned types (Spark reads UINT64 as a decimal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ColType {
    /// Int64.
    I64,
    /// Int32.
    I32,
    /// Float64.
    F64,
    /// Boolean.
    Bool,
    /// UTF-8 string (dictionary-encoded in Parquet).
    Str,
    /// List of UTF-8 strings.
    StrList,
    /// List of Int64.
    I64List,
}

/// One column.
#[derive(Debug, Serialize)]
pub struct ColDef {
    /// Column name.
    pub name: &'static str,
    /// Type.
    #[serde(rename = "type")]
    pub ty: ColType,
    /// Unit (`ns`, `count`, ...), empty when none.
    pub unit: &'static str,
    /// What it holds.
    pub doc: &'static str,
}

/// One table.
#[derive(Debug, Serialize)]
pub struct TableDef {
    /// Table (directory) name.
    pub name: &'static str,
    /// What one row is.
    pub doc: &'static str,
    /// Columns in order.
    pub cols: &'static [ColDef],
    /// Declared sort order (Parquet sorting columns).
    pub sort: &'static [&'static str],
}

const fn c(name: &'static str, ty: ColType, unit: &'static str, doc: &'static str) -> ColDef {
    ColDef {
        name,
        ty,
        unit,
        doc,
    }
}

use ColType::*;

/// The version of the table schemas (key-value metadata `schema_version`).
/// 2: `sched_stat_runtime` events of the standard layout moved from
/// `raw_event`/`raw_arg` to their own typed table.
/// 3: `thread_state` and `sched_slice` gained `repaired` and
/// `repair_evidence` (the lost-event repairs of the timeline).
pub const SCHEMA_VERSION: &str = "3";

const TS: ColDef = c("ts", I64, "ns", "event time, trace clock");
const CPU: ColDef = c("cpu", I32, "", "CPU that emitted the event");
const UTID: ColDef = c(
    "utid",
    I32,
    "",
    "trace-unique thread id of the current task (join thread.utid); null when unknown",
);
const TID: ColDef = c(
    "tid",
    I32,
    "",
    "kernel tid of the current task (common_pid)",
);

/// Every table, in the order they are written.
pub static TABLES: &[TableDef] = &[
    TableDef {
        name: "trace",
        doc: "one row per exported trace",
        sort: &[],
        cols: &[
            c("trace_id", Str, "", "run id of this trace (same as the run= partition)"),
            c("host", Str, "", "host name recorded in the file, or 'unknown'; in the hive layout this column comes from the host= partition (percent-encoded) and is not repeated in the files"),
            c("path", Str, "", "input file as given"),
            c("source_format", Str, "", "perf.data | ftrace text | trace-cmd report text | perf script text"),
            c("kernel_release", Str, "", "uname -r at record time, when recorded"),
            c("arch", Str, "", "architecture, when recorded"),
            c("cmdline", Str, "", "recording command line, when recorded"),
            c("num_cpus", I32, "count", "CPUs (recorded, or highest CPU seen + 1)"),
            c("ts_start", I64, "ns", "first event time, trace clock"),
            c("ts_end", I64, "ns", "last event time, trace clock"),
            c("wall_clock_ns", I64, "ns", "Unix time (ns, UTC) of ts_start when the file anchors the trace clock to wall time (perf.data HEADER_CLOCK_DATA, written by `perf record -k CLOCK` and by `schedscope record`; then date= is that day); null otherwise (trace.dat, text, perf.data without -k: date= then comes from the file's modification time, which is also what `perf report --header-only` prints as 'captured on')"),
            c("events", I64, "count", "events decoded"),
            c("lost", I64, "count", "events the kernel reported lost"),
            c("schedscope_version", Str, "", "version of the exporter"),
            c("schema_version", Str, "", "version of these table schemas (3 since thread_state and sched_slice have repaired and repair_evidence; 2 since sched_stat_runtime has its own table; 1 kept those events in raw_event/raw_arg)"),
        ],
    },
    TableDef {
        name: "process",
        doc: "one row per process (thread group) seen",
        sort: &["upid"],
        cols: &[
            c("upid", I32, "", "trace-unique process id"),
            c("pid", I32, "", "kernel pid (tgid)"),
            c("comm", Str, "", "command of the group leader (or of its first thread)"),
            c("start_ts", I64, "ns", "earliest fork seen among its threads; null if none"),
            c("end_ts", I64, "ns", "exit of the group leader, when seen"),
            c("threads", I32, "count", "thread incarnations"),
            c("is_idle", Bool, "", "the idle task (pid 0)"),
            c("match_key", Str, "", "cross-run identity used by diff (comm, unbound kworkers collapsed to kworker/u*)"),
            c("match_ordinal", I32, "", "0-based rank by start among processes with the same match_key"),
        ],
    },
    TableDef {
        name: "thread",
        doc: "one row per thread incarnation (a reused tid gets a new utid)",
        sort: &["utid"],
        cols: &[
            c("utid", I32, "", "trace-unique thread id"),
            c("tid", I32, "", "kernel tid"),
            c("upid", I32, "", "its process (join process.upid); null when the tgid is unknown"),
            c("pid", I32, "", "its tgid, when known"),
            c("comm", Str, "", "latest command name"),
            c("start_ts", I64, "ns", "fork time, when seen"),
            c("end_ts", I64, "ns", "exit time, when seen"),
            c("is_idle", Bool, "", "the idle task (tid 0)"),
            c("cgroup", Str, "", "CPU-controller cgroup path, when recorded"),
            c("match_key", Str, "", "cross-run identity used by diff: 'process comm/thread comm', per-CPU kthread names kept, kworker/N:M -> kworker/N:*, unbound kworker/uN:M -> kworker/u*"),
            c("match_ordinal", I32, "", "0-based rank by (start_ts, utid) among threads with the same match_key"),
        ],
    },
    TableDef {
        name: "sched_switch",
        doc: "one row per sched:sched_switch",
        sort: &["ts"],
        cols: &[
            TS,
            CPU,
            c("prev_utid", I32, "", "outgoing thread's utid"),
            c("prev_tid", I32, "", "outgoing tid (prev_pid)"),
            c("prev_comm", Str, "", "outgoing comm"),
            c("prev_prio", I32, "", "outgoing priority"),
            c("prev_state", Str, "", "state letters as perf script prints them (R, R+, S, D, ...)"),
            c("prev_state_raw", I32, "", "normalised task-report bits: 0x01 S, 0x02 D, 0x04 T, 0x08 t, 0x10 X, 0x20 Z, 0x40 P, 0x80 I, 0 = R; plus 0x100 when preempted (R+)"),
            c("next_utid", I32, "", "incoming thread's utid"),
            c("next_tid", I32, "", "incoming tid (next_pid)"),
            c("next_comm", Str, "", "incoming comm"),
            c("next_prio", I32, "", "incoming priority"),
        ],
    },
    TableDef {
        name: "sched_wakeup",
        doc: "one row per sched:sched_waking, sched_wakeup or sched_wakeup_new",
        sort: &["ts"],
        cols: &[
            TS,
            CPU,
            c("kind", Str, "", "waking | wakeup | wakeup_new"),
            c("utid", I32, "", "woken thread's utid"),
            c("tid", I32, "", "woken tid"),
            c("comm", Str, "", "woken comm"),
            c("prio", I32, "", "woken priority"),
            c("target_cpu", I32, "", "CPU it will run on"),
            c("waker_utid", I32, "", "utid of the task current on the emitting CPU"),
            c("waker_tid", I32, "", "tid of the task current on the emitting CPU (common_pid)"),
        ],
    },
    TableDef {
        name: "sched_migrate",
        doc: "one row per sched:sched_migrate_task",
        sort: &["ts"],
        cols: &[
            TS,
            CPU,
            c("utid", I32, "", "migrated thread's utid"),
            c("tid", I32, "", "migrated tid"),
            c("comm", Str, "", "migrated comm"),
            c("orig_cpu", I32, "", "source CPU"),
            c("dest_cpu", I32, "", "destination CPU"),
        ],
    },
    TableDef {
        name: "sched_stat_runtime",
        doc: "one row per sched:sched_stat_runtime (CFS runtime accounting) whose fields are comm, pid, runtime and, on kernels before 6.8, vruntime; an event recorded with other fields is a raw_event row",
        sort: &["ts"],
        cols: &[
            TS,
            CPU,
            c("utid", I32, "", "accounted thread's utid"),
            c("tid", I32, "", "accounted tid (pid field)"),
            c("comm", Str, "", "accounted comm"),
            c("runtime_ns", I64, "ns", "runtime charged since the previous update"),
            c("vruntime_ns", I64, "ns", "the task's vruntime after the update; null when the kernel does not record it (6.8 and later)"),
            c("cur_tid", I32, "", "tid of the task current on the emitting CPU (common_pid)"),
        ],
    },
    TableDef {
        name: "kvm_exit",
        doc: "one row per kvm:kvm_exit",
        sort: &["ts"],
        cols: &[
            TS,
            CPU,
            UTID,
            TID,
            c("reason_code", I64, "", "raw exit reason (VMX basic reason / SVM exit code)"),
            c("reason_name", Str, "", "exit reason name"),
            c("isa", Str, "", "vmx | svm | other:N"),
            c("is_ple", Bool, "", "pause-loop exit (VMX 40 / SVM 0x77)"),
            c("vcpu", I32, "", "vCPU id, when the format has it"),
            c("guest_rip", I64, "", "guest instruction pointer (two's complement of the u64)"),
        ],
    },
    TableDef {
        name: "ipi",
        doc: "one row per IPI or csd request: ipi:ipi_send_cpu, ipi:ipi_send_cpumask, ipi:ipi_raise, csd:csd_queue_cpu, csd:csd_function_entry, csd:csd_function_exit",
        sort: &["ts"],
        cols: &[
            TS,
            CPU,
            UTID,
            TID,
            c("event", Str, "", "the tracepoint (system:event)"),
            c("callsite", Str, "", "sender code location, symbolized from the file's kallsyms (name+0xoff) or hex"),
            c("callback", Str, "", "function the target runs (callback / func), symbolized"),
            c("target_count", I32, "count", "number of target CPUs"),
            c("target_mask", Str, "", "target CPUs as a list (0-3,6)"),
            c("csd", I64, "", "csd pointer pairing queue/entry/exit, when present"),
            c("reason", Str, "", "ipi_raise reason, when present"),
        ],
    },
    TableDef {
        name: "tlb_flush",
        doc: "one row per tlb:tlb_flush",
        sort: &["ts"],
        cols: &[
            TS,
            CPU,
            UTID,
            TID,
            c("reason", I32, "", "raw reason (0 task switch, 1 remote shootdown, 2 local shootdown, 3 local mm shootdown, 4 remote send IPI)"),
            c("reason_name", Str, "", "reason name"),
            c("pages", I64, "count", "pages flushed, -1 = full flush"),
        ],
    },
    TableDef {
        name: "cpu_idle",
        doc: "one row per power:cpu_idle",
        sort: &["ts"],
        cols: &[
            TS,
            CPU,
            c("state", I64, "", "C-state entered; -1 = exit from idle (PWR_EVENT_EXIT)"),
            c("cpu_id", I32, "", "the cpu_id field"),
        ],
    },
    TableDef {
        name: "softirq",
        doc: "one row per irq:softirq_entry, softirq_exit or softirq_raise",
        sort: &["ts"],
        cols: &[
            TS,
            CPU,
            UTID,
            TID,
            c("vec", I32, "", "softirq vector (7 = SCHED)"),
            c("vec_name", Str, "", "vector name (HI, TIMER, NET_TX, NET_RX, BLOCK, IRQ_POLL, TASKLET, SCHED, HRTIMER, RCU)"),
            c("phase", Str, "", "entry | exit | raise"),
        ],
    },
    TableDef {
        name: "raw_event",
        doc: "one row per event of any other tracepoint or sample (fork, exit, exec, kvm_entry, irq vectors, wake_idle_without_ipi, untyped tracepoints), so that nothing is dropped",
        sort: &["ts"],
        cols: &[
            c("event_id", I64, "", "row id within this trace (join raw_arg.event_id)"),
            TS,
            CPU,
            UTID,
            TID,
            c("name", Str, "", "system:event"),
            c("stack_id", I64, "", "call chain (join stack.stack_id), when recorded"),
        ],
    },
    TableDef {
        name: "raw_arg",
        doc: "long form of the fields of raw_event rows: the typed fields for event kinds schedscope decodes, and the fields the decoder kept for untyped tracepoints (perf.data and trace.dat: every non-common field of the format; text: key=value pairs as printed, else the whole body under key `body`)",
        sort: &["event_id"],
        cols: &[
            c("event_id", I64, "", "raw_event.event_id"),
            c("key", Str, "", "field name"),
            c("value", Str, "", "field value as text"),
        ],
    },
    TableDef {
        name: "stack",
        doc: "one row per distinct call chain",
        sort: &["stack_id"],
        cols: &[
            c("stack_id", I64, "", "id (join stack_sample.stack_id, raw_event.stack_id)"),
            c("depth", I32, "count", "number of frames"),
            c("frames", StrList, "", "frames ROOT FIRST, leaf last, symbolized from the file's kallsyms (name+0xoff) or hex"),
            c("frame_addrs", I64List, "", "the same frames' addresses, root first (two's complement of the u64: kernel addresses are negative)"),
        ],
    },
    TableDef {
        name: "stack_sample",
        doc: "one row per event that carries a call chain",
        sort: &["ts"],
        cols: &[
            TS,
            CPU,
            UTID,
            TID,
            c("event", Str, "", "system:event"),
            c("stack_id", I64, "", "stack.stack_id"),
        ],
    },
    TableDef {
        name: "thread_state",
        doc: "one row per interval of a thread in one state (the thread-state timeline the analyses read; schedscope's docs/design.md, 'Thread states')",
        sort: &["tid", "ts"],
        cols: &[
            TS,
            c("dur", I64, "ns", "duration; null = still in this state when the trace ends (open interval)"),
            c("utid", I32, "", "thread (utid of the incarnation live at ts)"),
            c("tid", I32, "", "kernel tid"),
            c("state", Str, "", "unknown | running | runnable | sleeping | blocked | other | dead"),
            c("cpu", I32, "", "where it runs (running) or waits (runnable), when known"),
            c("preempted", Bool, "", "runnable because preempted (switched out with R/R+), not woken"),
            c("waker_utid", I32, "", "for runnable after a wakeup: the waker's utid"),
            c("waker_tid", I32, "", "for runnable after a wakeup: the waker's tid"),
            c("repaired", Bool, "", "a running interval whose start no sched_switch recorded: the switch-in was lost (the CPU's trace shows loss) and the timeline's repair placed it at ts (schedscope's docs/design.md, 'Lost events'); false for everything the trace records"),
            c("repair_evidence", Str, "", "what placed a repaired start: stat_runtime | cpu_idle | task_event | refill | rule; null when not repaired"),
        ],
    },
    TableDef {
        name: "sched_slice",
        doc: "one row per run of a task on a CPU (idle slices have tid 0)",
        sort: &["cpu", "ts"],
        cols: &[
            TS,
            c("dur", I64, "ns", "duration; null = still running when the trace ends"),
            c("cpu", I32, "", "the CPU"),
            c("utid", I32, "", "who ran"),
            c("tid", I32, "", "who ran (0 = idle)"),
            c("end_state", Str, "", "state the task entered when the slice ended (thread_state names); null when open"),
            c("priority", I32, "", "next_prio of the sched_switch that started the slice; null when no switch recorded it"),
            c("repaired", Bool, "", "the slice's switch-in was not recorded but placed by the timeline's lost-event repair (as thread_state.repaired; one row per repair, where thread_state has none for a repair placed at the instant its task left the same CPU, which continues that running interval)"),
            c("repair_evidence", Str, "", "what placed it: stat_runtime | cpu_idle | task_event | refill | rule; null when not repaired"),
        ],
    },
    TableDef {
        name: "sched_latency",
        doc: "one row per wait for a CPU, as report --latency (perf sched latency) counts them: from a wakeup of a sleeping task, or a switch-out with prev_state=R (runnable, not preempted), to its next switch-in; waits after preemption (R+) are rows of kind 'preempted' (report: preempt_delay_*)",
        sort: &["ts_run"],
        cols: &[
            c("utid", I32, "", "the waiting thread"),
            c("tid", I32, "", "its tid"),
            c("comm", Str, "", "its comm"),
            c("ts_runnable", I64, "ns", "start of the wait"),
            c("ts_run", I64, "ns", "switch-in that ended it"),
            c("latency_ns", I64, "ns", "ts_run - ts_runnable"),
            c("kind", Str, "", "wakeup | runnable_switch_out (prev_state=R, not preempted) | first_seen | preempted"),
            c("wake_cpu", I32, "", "target CPU of the wakeup (null for the others)"),
            c("run_cpu", I32, "", "CPU it was switched in on"),
            c("waker_utid", I32, "", "task current where the wakeup was emitted"),
            c("waker_tid", I32, "", "its tid"),
        ],
    },
    TableDef {
        name: "gang_summary",
        doc: "one row per gang of report --gang",
        sort: &[],
        cols: &[
            c("gang", Str, "", "gang name"),
            c("kind", Str, "", "process | vm | explicit"),
            c("pid", I32, "", "its tgid, when one"),
            c("members", I32, "count", "member threads"),
            c("corun_ratio", F64, "ratio", "time(all alive running) / time(>=1 running)"),
            c("fragmented_ns", I64, "ns", "time(1 <= running < active)"),
            c("fragmented_ratio", F64, "ratio", "fragmented_ns / any_running_ns"),
            c("any_running_ns", I64, "ns", "time with >= 1 member running"),
            c("all_running_ns", I64, "ns", "time with every alive member running"),
            c("match_key", Str, "", "cross-run identity of the gang"),
        ],
    },
    TableDef {
        name: "gang_episode",
        doc: "one row per fragmented episode of a gang (some members run while siblings wait for a CPU)",
        sort: &[],
        cols: &[
            c("gang", Str, "", "gang_summary.gang"),
            c("pid", I32, "", "its tgid, when one"),
            TS,
            c("dur", I64, "ns", "duration (sum per gang = gang_summary.fragmented_ns)"),
            c("min_running", I32, "count", "fewest members running during the episode"),
            c("max_waiting", I32, "count", "most members runnable but not running during the episode"),
        ],
    },
    TableDef {
        name: "ple_exit",
        doc: "one row per pause-loop exit with its classification (report --lhp ple)",
        sort: &["ts"],
        cols: &[
            TS,
            CPU,
            UTID,
            TID,
            c("vm_pid", I32, "", "VM (tgid of the vCPU thread), when known"),
            c("class", Str, "", "sibling_preempted | all_running | siblings_idle"),
            c("outcome", Str, "", "directed yield: to_sibling | to_other | no_switch"),
        ],
    },
    TableDef {
        name: "idle_gap",
        doc: "one row per wasted-idle gap (a CPU idle while a task was runnable and waiting), as report --idle counts them",
        sort: &["ts"],
        cols: &[
            TS,
            c("dur", I64, "ns", "gap length (sum = report idle.wasted_idle_ns)"),
            c("cpu", I32, "", "the idle CPU"),
            c("throttled_ns", I64, "ns", "part attributed to CFS-bandwidth throttling"),
            c("imbalance_ns", I64, "ns", "part attributed to imbalance"),
            c("ending", Str, "", "what ended it: wakeup | pull | ran_elsewhere | trace_end | unthrottle"),
            c("waiting", I32, "count", "tasks waiting when it opened"),
            c("waiting_tids", I64List, "", "their tids"),
        ],
    },
    TableDef {
        name: "ipi_request",
        doc: "one row per logical IPI / csd request as report --tlb counts them (a hardware IPI that only restates a csd request is not one): per class, count(*) = tlb.ipi_classes[].count and the unnested delivery_ns / handler_ns are the samples of its delivery / handler statistics",
        sort: &["ts"],
        cols: &[
            TS,
            c("cpu", I32, "", "sending CPU"),
            UTID,
            TID,
            c("class", Str, "", "tlb_shootdown | remote_wakeup | idle_balance_kick | reschedule | other"),
            c("callsite", Str, "", "where it was queued or sent from (symbolized)"),
            c("callback", Str, "", "the function the targets run, (none) for a reschedule IPI"),
            c("target_count", I32, "count", "target CPUs"),
            c("targets", I64List, "", "the target CPUs"),
            c("ipis", I32, "count", "hardware IPIs (ipi_send_*) attached"),
            c("delivery_ns", I64List, "ns", "queue (csd_queue_cpu) to csd_function_entry on the target, per delivery seen"),
            c("handler_ns", I64List, "ns", "csd_function_entry to csd_function_exit, per handler run seen"),
        ],
    },
    TableDef {
        name: "summary_metric",
        doc: "every headline number of the text report, long form (what diff compares)",
        sort: &[],
        cols: &[
            c("section", Str, "", "latency | gang | lhp | idle | tlb"),
            c("metric", Str, "", "metric name"),
            c("entity_kind", Str, "", "trace | task | task_group | gang | vm | cpu | class"),
            c("entity_key", Str, "", "match_key of the entity ('' for the trace)"),
            c("stat", Str, "", "value | mean | max | min | stddev | total | share | rate | p50 | p99"),
            c("value", F64, "", "the number"),
            c("unit", Str, "", "ns | pct | ratio | count | per_s | ns_per_s"),
            c("better", Str, "", "lower | higher"),
            c("n", I64, "count", "items behind the number"),
        ],
    },
];

/// The definition of table `name`.
pub fn table(name: &str) -> Option<&'static TableDef> {
    TABLES.iter().find(|t| t.name == name)
}

/// `_schedscope/README.md`: every table and column with its unit.
pub fn readme() -> String {
    let mut s = String::from(
        "# schedscope Parquet export\n\n\
         Layout: `<table>/host=<host>/date=YYYY-MM-DD/run=<run id>/part-00000.parquet`\n\
         (host percent-encoded; run ids are not numeric). Read with hive partitioning,\n\
         e.g. DuckDB `read_parquet('ROOT/sched_switch/**/*.parquet', hive_partitioning=true)`.\n\n\
         Times are Int64 nanoseconds on the trace clock (`ts`, `dur`, `*_ns`); no\n\
         unsigned types; ids `utid`/`upid` are per trace (join within one run).\n\
         Files: zstd level 3, row groups of at most 1 Mi rows, DELTA_BINARY_PACKED\n\
         without dictionary for the Int64 times and durations (unit ns: ts, dur,\n\
         ts_run, latency_ns, ...) and event_id, dictionary encoding for the other\n\
         columns, page statistics, sorting columns declared, key-value metadata\n\
         `schema_version`, `trace_id`, `table`.\n\n\
         `raw_arg`: untyped tracepoints carry the fields their decoder kept (perf.data\n\
         and trace.dat: every non-common field of the event's format, integers in\n\
         decimal, strings as text, other arrays in hex; text traces: `key=value` pairs\n\
         as printed, or the whole body under the key `body`); typed kinds without a\n\
         table of their own (fork, exit, exec, kvm_entry, irq vectors, ...) carry\n\
         their typed fields.\n",
    );
    for t in TABLES {
        s.push_str(&format!(
            "\n## {}\n\n{}.\n\n| column | type | unit | meaning |\n|---|---|---|---|\n",
            t.name, t.doc
        ));
        for c in t.cols {
            s.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                c.name,
                serde_json::to_value(c.ty)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                c.unit,
                // (a `|` inside a cell would end it: escaped, as Markdown reads it)
                c.doc.replace('|', "\\|")
            ));
        }
    }
    s
}

/// `_schedscope/schema.json`: `{schema_version, tables: [...]}`.
pub fn schema_json() -> String {
    serde_json::to_string_pretty(&serde_json::json!({
        "schema_version": SCHEMA_VERSION,
        "tables": TABLES,
    }))
    .unwrap_or_default()
}
