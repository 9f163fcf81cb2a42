//! Compare the metrics of two sets of runs: per metric and entity, the
//! mean of each side, the % change with mmtests' sign (positive = better,
//! by each metric's [`Better`] direction), and a significance mark when
//! each side has at least 3 runs and the 95% confidence intervals of the
//! means do not overlap.

use schedscope_analysis::metrics::{Better, Metric, Run};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};

/// One side's summary of a metric.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Stats {
    /// Mean over the runs that have the metric.
    pub mean: f64,
    /// Sample standard deviation (n - 1), when n >= 2.
    pub stddev: Option<f64>,
    /// Runs that have the metric.
    pub n: usize,
}

/// One line of the comparison table.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    /// Report section.
    pub section: String,
    /// Metric name.
    pub metric: String,
    /// Entity kind (`trace`, `task_group`, `gang`, `vm`, `class`).
    pub entity_kind: String,
    /// Entity key (`""` for the trace).
    pub entity_key: String,
    /// Statistic.
    pub stat: String,
    /// Unit.
    pub unit: String,
    /// Which direction is better.
    pub better: Better,
    /// Base side.
    pub base: Stats,
    /// New side.
    pub new: Stats,
    /// % change, positive = better; None when the base is 0 and new is not.
    pub pct_change: Option<f64>,
    /// Whether the 95% confidence intervals do not overlap; None when a
    /// side has fewer than 3 runs (no test possible).
    pub significant: Option<bool>,
}

/// The whole comparison (`diff --format json` prints this).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Diff {
    /// Schema of this object.
    pub schema: &'static str,
    /// Base runs.
    pub base: Vec<String>,
    /// New runs.
    pub new: Vec<String>,
    /// What % change means.
    pub sign: &'static str,
    /// Rows in section order.
    pub rows: Vec<Row>,
    /// Entities (`kind key`) seen only in the base runs.
    pub base_only: Vec<String>,
    /// Entities seen only in the new runs.
    pub new_only: Vec<String>,
    /// Whether a significance test was possible (>= 3 runs per side).
    pub tested: bool,
    /// Footnote for the tables.
    pub footnote: String,
}

/// What % change means, printed in every header.
pub const SIGN: &str = "% change: positive = better (mmtests convention), by each metric's direction: (base - new) / base for lower-is-better, (new - base) / base for higher-is-better";

type Key = (String, String, String, String, String);

fn key(m: &Metric) -> Key {
    (
        m.section.clone(),
        m.metric.clone(),
        m.entity_kind.clone(),
        m.entity_key.clone(),
        m.stat.clone(),
    )
}

/// One run's values by key; duplicate keys (two processes with one name)
/// add up for totals and average otherwise.
fn values(run: &Run) -> HashMap<Key, f64> {
    let mut acc: HashMap<Key, (f64, usize)> = HashMap::new();
    for m in &run.metrics {
        let e = acc.entry(key(m)).or_insert((0.0, 0));
        e.0 += m.value;
        e.1 += 1;
    }
    acc.into_iter()
        .map(|(k, (sum, n))| {
            let v = if k.4 == "total" { sum } else { sum / n as f64 };
            (k, v)
        })
        .collect()
}

/// Two-sided 95% Student t quantile for `df` degrees of freedom.
fn t95(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    T.get(df.wrapping_sub(1)).copied().unwrap_or(1.960)
}

fn stats(v: &[f64]) -> Stats {
    let n = v.len();
    let mean = v.iter().sum::<f64>() / n.max(1) as f64;
    let stddev = (n >= 2)
        .then(|| (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt());
    Stats { mean, stddev, n }
}

fn ci(s: &Stats) -> (f64, f64) {
    let h = t95(s.n - 1) * s.stddev.unwrap_or(0.0) / (s.n as f64).sqrt();
    (s.mean - h, s.mean + h)
}

/// % change with mmtests' sign.
pub fn pct_change(base: f64, new: f64, better: Better) -> Option<f64> {
    if base == new {
        return Some(0.0);
    }
    if base == 0.0 {
        return None;
    }
    let d = (new - base) / base.abs() * 100.0;
    Some(match better {
        Better::Higher => d,
        Better::Lower => -d,
    })
}

const SECTION_ORDER: [&str; 5] = ["latency", "gang", "lhp", "idle", "tlb"];

/// Compare `base` with `new`, keeping the metrics of `sections`.
pub fn compare(base: &[Run], new: &[Run], sections: &[&str]) -> Diff {
    let keep = |m: &Metric| sections.contains(&m.section.as_str());
    // Key order: section order, then first appearance.
    let mut order: Vec<(usize, usize, Key, String, Better)> = Vec::new();
    let mut seen: HashMap<Key, ()> = HashMap::new();
    for m in base
        .iter()
        .chain(new)
        .flat_map(|r| &r.metrics)
        .filter(|m| keep(m))
    {
        let k = key(m);
        if seen.insert(k.clone(), ()).is_none() {
            let s = SECTION_ORDER
                .iter()
                .position(|x| *x == m.section)
                .unwrap_or(9);
            order.push((s, order.len(), k, m.unit.clone(), m.better));
        }
    }
    order.sort_by_key(|o| (o.0, o.1));
    let bv: Vec<HashMap<Key, f64>> = base.iter().map(values).collect();
    let nv: Vec<HashMap<Key, f64>> = new.iter().map(values).collect();
    let entities = |side: &[HashMap<Key, f64>]| -> BTreeSet<String> {
        side.iter()
            .flat_map(|m| m.keys())
            .filter(|k| !k.3.is_empty() && sections.contains(&k.0.as_str()))
            .map(|k| format!("{} {}", k.2, k.3))
            .collect()
    };
    let (be, ne) = (entities(&bv), entities(&nv));
    let tested = base.len() >= 3 && new.len() >= 3;
    let mut rows = Vec::new();
    for (_, _, k, unit, better) in order {
        let b: Vec<f64> = bv.iter().filter_map(|m| m.get(&k).copied()).collect();
        let n: Vec<f64> = nv.iter().filter_map(|m| m.get(&k).copied()).collect();
        if b.is_empty() || n.is_empty() {
            continue;
        }
        let (bs, ns) = (stats(&b), stats(&n));
        let significant = (tested && bs.n >= 3 && ns.n >= 3).then(|| {
            let (bl, bh) = ci(&bs);
            let (nl, nh) = ci(&ns);
            bh < nl || nh < bl
        });
        rows.push(Row {
            pct_change: pct_change(bs.mean, ns.mean, better),
            section: k.0,
            metric: k.1,
            entity_kind: k.2,
            entity_key: k.3,
            stat: k.4,
            unit,
            better,
            base: bs,
            new: ns,
            significant,
        });
    }
    let footnote = if tested {
        "* = the 95% confidence intervals of the two means do not overlap (Student t, sample std-dev)".to_string()
    } else {
        format!(
            "no significance test was possible: it needs at least 3 traces per side (base {}, new {})",
            base.len(),
            new.len()
        )
    };
    Diff {
        schema: "schedscope-diff/1",
        base: base.iter().map(|r| r.label.clone()).collect(),
        new: new.iter().map(|r| r.label.clone()).collect(),
        sign: SIGN,
        rows,
        base_only: be.difference(&ne).cloned().collect(),
        new_only: ne.difference(&be).cloned().collect(),
        tested,
        footnote,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(metric: &str, value: f64, better: Better) -> Metric {
        Metric {
            section: "idle".into(),
            metric: metric.into(),
            entity_kind: "trace".into(),
            entity_key: String::new(),
            stat: "total".into(),
            value,
            unit: "ns".into(),
            better,
            n: 1,
        }
    }

    fn run(vals: &[(f64, f64)]) -> Vec<Run> {
        vals.iter()
            .map(|&(lo, hi)| Run {
                label: "r".into(),
                metrics: vec![m("lo", lo, Better::Lower), m("hi", hi, Better::Higher)],
            })
            .collect()
    }

    #[test]
    fn sign_follows_the_better_direction() {
        let d = compare(&run(&[(100.0, 100.0)]), &run(&[(50.0, 150.0)]), &["idle"]);
        assert_eq!(
            d.rows[0].pct_change,
            Some(50.0),
            "less of a lower-is-better metric"
        );
        assert_eq!(
            d.rows[1].pct_change,
            Some(50.0),
            "more of a higher-is-better metric"
        );
        assert_eq!(d.rows[0].significant, None);
        assert!(!d.tested && d.footnote.contains("no significance test"));
        assert_eq!(pct_change(0.0, 0.0, Better::Lower), Some(0.0));
        assert_eq!(pct_change(0.0, 1.0, Better::Lower), None);
    }

    #[test]
    fn significance_needs_three_runs_and_disjoint_intervals() {
        let base = run(&[(100.0, 1.0), (101.0, 1.0), (99.0, 1.0)]);
        let far = run(&[(50.0, 1.0), (51.0, 1.0), (49.0, 1.0)]);
        let near = run(&[(100.0, 1.0), (102.0, 1.0), (98.0, 1.0)]);
        assert_eq!(
            compare(&base, &far, &["idle"]).rows[0].significant,
            Some(true)
        );
        assert_eq!(
            compare(&base, &near, &["idle"]).rows[0].significant,
            Some(false)
        );
        let two = run(&[(50.0, 1.0), (51.0, 1.0)]);
        assert_eq!(compare(&base, &two, &["idle"]).rows[0].significant, None);
    }

    #[test]
    fn unmatched_entities_are_listed() {
        let mut a = m("x", 1.0, Better::Lower);
        a.entity_kind = "gang".into();
        a.entity_key = "only-base".into();
        let mut b = a.clone();
        b.entity_key = "only-new".into();
        let d = compare(
            &[Run {
                label: "a".into(),
                metrics: vec![a],
            }],
            &[Run {
                label: "b".into(),
                metrics: vec![b],
            }],
            &["idle"],
        );
        assert!(d.rows.is_empty());
        assert_eq!(d.base_only, vec!["gang only-base"]);
        assert_eq!(d.new_only, vec!["gang only-new"]);
    }
}
