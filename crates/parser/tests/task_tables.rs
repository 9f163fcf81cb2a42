//! The task table (tid -> tgid, comm) is built by one set of rules for
//! every format: the simulator's ftrace text (task names from line
//! prefixes and event fields, tgids from the TGID column) and its perf.data
//! (COMM records, sample pids) of the same simulation give the same table,
//! and it holds the processes the fixture README lists.

use schedscope_trace::{Tid, Trace};
use std::collections::BTreeMap;

fn load(name: &str) -> Trace {
    let path = format!("{}/../../fixtures/sim/{name}", env!("CARGO_MANIFEST_DIR"));
    schedscope_parser::load(std::path::Path::new(&path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// tid -> (tgid, comm) of every task but the idle task (which perf names
/// per CPU, `swapper/N`, and text prefixes print as `<idle>`).
fn tasks(t: &Trace) -> BTreeMap<i32, (Option<Tid>, String)> {
    t.tasks
        .iter()
        .filter(|k| k.tid.0 > 0)
        .map(|k| (k.tid.0, (k.tgid, k.comm.clone())))
        .collect()
}

#[test]
fn text_and_perf_data_of_one_simulation_give_the_same_tasks() {
    for (scenario, processes) in [
        // (tgid, its threads) as fixtures/sim/README.md lists them.
        (
            "mixed-s1",
            &[
                (1000, &[1000, 1001, 1002, 1003, 1004][..]),
                (1100, &[1100, 1101, 1102]),
                (5000, &[5000, 5001, 5002, 5003]),
                (5100, &[5100, 5101]),
            ][..],
        ),
        (
            "bare-metal-s1",
            &[
                (5000, &[5000, 5001, 5002, 5003][..]),
                (5100, &[5100, 5101, 5102]),
            ],
        ),
    ] {
        let text = tasks(&load(&format!("{scenario}.txt")));
        let data = tasks(&load(&format!("{scenario}.data")));
        assert_eq!(text, data, "{scenario}");
        let want: BTreeMap<i32, i32> = processes
            .iter()
            .flat_map(|(pid, tids)| tids.iter().map(move |t| (*t, *pid)))
            .collect();
        let got: BTreeMap<i32, i32> = data
            .iter()
            .map(|(tid, (tgid, _))| (*tid, tgid.map_or(-1, |g| g.0)))
            .collect();
        assert_eq!(got, want, "{scenario}");
        assert!(data.values().all(|(_, c)| !c.is_empty()), "{scenario}");
    }
}
