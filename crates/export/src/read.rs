//! Read the `summary_metric` table back from an export root, so that
//! `schedscope diff` takes Parquet roots as inputs (one run per partition).

use crate::error::ExportError;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use schedscope_analysis::metrics::{Better, Metric, Run};
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), ExportError> {
    let rd = std::fs::read_dir(dir).map_err(|e| ExportError::io(dir, e))?;
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out)?;
        } else if p.extension().is_some_and(|e| e == "parquet") {
            out.push(p);
        }
    }
    Ok(())
}

fn column<'a>(b: &'a RecordBatch, file: &Path, name: &str) -> Result<&'a dyn Array, ExportError> {
    b.column_by_name(name)
        .map(|a| a.as_ref())
        .ok_or_else(|| ExportError::Usage(format!("{}: no column {name}", file.display())))
}

fn read_file(file: &Path) -> Result<Vec<Metric>, ExportError> {
    let bad = |what: String| ExportError::Usage(format!("{}: {what}", file.display()));
    let f = std::fs::File::open(file).map_err(|e| ExportError::io(file, e))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(f)
        .and_then(|b| b.build())
        .map_err(|e| bad(format!("not a readable Parquet file: {e}")))?;
    let mut out = Vec::new();
    for batch in reader {
        let b = batch.map_err(|e| bad(format!("bad batch: {e}")))?;
        let s = |name: &str| -> Result<_, ExportError> {
            column(&b, file, name)?
                .as_string_opt::<i32>()
                .ok_or_else(|| bad(format!("column {name} is not a string")))
        };
        let (section, metric, kind, key, stat, unit, better) = (
            s("section")?,
            s("metric")?,
            s("entity_kind")?,
            s("entity_key")?,
            s("stat")?,
            s("unit")?,
            s("better")?,
        );
        let value = column(&b, file, "value")?
            .as_primitive_opt::<Float64Type>()
            .ok_or_else(|| bad("column value is not float64".into()))?;
        let n = column(&b, file, "n")?
            .as_primitive_opt::<Int64Type>()
            .ok_or_else(|| bad("column n is not int64".into()))?;
        for i in 0..b.num_rows() {
            let better = Better::parse(better.value(i))
                .ok_or_else(|| bad(format!("row {i}: better is {:?}", better.value(i))))?;
            out.push(Metric {
                section: section.value(i).to_string(),
                metric: metric.value(i).to_string(),
                entity_kind: kind.value(i).to_string(),
                entity_key: key.value(i).to_string(),
                stat: stat.value(i).to_string(),
                value: value.value(i),
                unit: unit.value(i).to_string(),
                better,
                n: n.value(i).max(0) as u64,
            });
        }
    }
    Ok(out)
}

/// The runs of an export root: one per `summary_metric` file (a hive
/// partition, or `summary_metric.parquet` of a `--flat` export), labelled
/// `ROOT[host=../date=../run=..]`.
pub fn summary_metrics(root: &Path) -> Result<Vec<Run>, ExportError> {
    let mut list = Vec::new();
    let flat = root.join("summary_metric.parquet");
    if flat.is_file() {
        list.push(flat);
    } else {
        let dir = root.join("summary_metric");
        if !dir.is_dir() {
            return Err(ExportError::Usage(format!(
                "{}: not a schedscope export root (no summary_metric table)",
                root.display()
            )));
        }
        files(&dir, &mut list)?;
    }
    list.iter()
        .map(|f| {
            let part = f
                .parent()
                .and_then(|p| p.strip_prefix(root.join("summary_metric")).ok())
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            Ok(Run {
                label: format!("{}[{part}]", root.display()),
                metrics: read_file(f)?,
            })
        })
        .collect()
}
