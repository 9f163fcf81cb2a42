//! Table sinks: rows go into arrow builders, batches are flushed to a
//! Parquet writer (and/or a CSV file) when the buffered size passes a budget,
//! so that memory stays bounded whatever the number of rows.

use crate::error::ExportError;
use crate::schema::{ColType, TableDef};
use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int32Builder, Int64Builder, ListBuilder, StringBuilder,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::{KeyValue, SortingColumn};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::schema::types::ColumnPath;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::SyncSender;
use std::sync::Arc;

/// Rows buffered in the builders are flushed as one batch past this size.
pub const BATCH_BYTES: usize = 1 << 20;
/// A Parquet writer closes its row group once the memory it holds for it
/// (encoded pages, dictionaries and values not yet encoded:
/// `ArrowWriter::memory_size`) passes this size. Counting the memory, not
/// the estimated encoded size (`in_progress_size`, which ignores the
/// dictionary encoders' buffers), bounds what a table holds: on a
/// 1.75 M-event recording the export's peak went from 295 to 256 MiB, for
/// 3% larger files.
pub const ROW_GROUP_BYTES: usize = 2 << 20;
/// At most this many rows per row group.
pub const ROW_GROUP_ROWS: usize = 1 << 20;
/// The version of the table schemas (key-value metadata `schema_version`).
pub const SCHEMA_VERSION: &str = "1";

/// One column's builder.
enum Builder {
    I64(Int64Builder),
    I32(Int32Builder),
    F64(Float64Builder),
    Bool(BooleanBuilder),
    Str(StringBuilder),
    StrList(ListBuilder<StringBuilder>),
    I64List(ListBuilder<Int64Builder>),
}

impl Builder {
    fn new(ty: ColType) -> Builder {
        match ty {
            ColType::I64 => Builder::I64(Int64Builder::new()),
            ColType::I32 => Builder::I32(Int32Builder::new()),
            ColType::F64 => Builder::F64(Float64Builder::new()),
            ColType::Bool => Builder::Bool(BooleanBuilder::new()),
            ColType::Str => Builder::Str(StringBuilder::new()),
            ColType::StrList => Builder::StrList(ListBuilder::new(StringBuilder::new())),
            ColType::I64List => Builder::I64List(ListBuilder::new(Int64Builder::new())),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::I64(b) => Arc::new(b.finish()),
            Builder::I32(b) => Arc::new(b.finish()),
            Builder::F64(b) => Arc::new(b.finish()),
            Builder::Bool(b) => Arc::new(b.finish()),
            Builder::Str(b) => Arc::new(b.finish()),
            Builder::StrList(b) => Arc::new(b.finish()),
            Builder::I64List(b) => Arc::new(b.finish()),
        }
    }
}

/// The arrow type of a column type (no unsigned types, no timestamps: Spark
/// rejects TIMESTAMP(NANOS) and reads UINT64 as a decimal).
pub(crate) fn data_type(ty: ColType) -> DataType {
    match ty {
        ColType::I64 => DataType::Int64,
        ColType::I32 => DataType::Int32,
        ColType::F64 => DataType::Float64,
        ColType::Bool => DataType::Boolean,
        ColType::Str => DataType::Utf8,
        ColType::StrList => DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true))),
        ColType::I64List => DataType::List(Arc::new(Field::new_list_field(DataType::Int64, true))),
    }
}

fn schema_of(def: &TableDef, skip: Option<usize>) -> SchemaRef {
    Arc::new(Schema::new(
        def.cols
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != skip)
            .map(|(_, c)| Field::new(c.name, data_type(c.ty), true))
            .collect::<Vec<_>>(),
    ))
}

/// Whether column `c` is written DELTA_BINARY_PACKED without a dictionary:
/// every Int64 time or duration (unit `ns`: `ts`, `dur`, but also
/// `ts_runnable`, `ts_run`, `latency_ns`, ...) and the row ids `event_id`.
/// Their values are nearly all distinct, so a dictionary is larger than the
/// values and costs a hash-table insert per value: on a 1.75 M-event
/// recording, extending the issue's `ts`/`dur` rule to these columns cut
/// the writer thread's time from about 750 to 540 ms and the files from
/// 30.8 to 24.7 MB (same rows).
fn delta_encoded(c: &crate::schema::ColDef) -> bool {
    c.ty == ColType::I64 && (c.unit == "ns" || c.name == "event_id")
}

/// Writer settings of issue 11: zstd level 3, row groups of at most ~1 M
/// rows, DELTA_BINARY_PACKED without dictionary for `ts`/`dur` (and the
/// other times, durations and row ids: [`delta_encoded`]), page
/// statistics, the sort order declared, key-value metadata, no bloom
/// filters, Parquet 1.0 writer version.
fn properties(
    def: &TableDef,
    schema: &Schema,
    trace_id: &str,
) -> Result<WriterProperties, ExportError> {
    let level = ZstdLevel::try_new(3).map_err(|e| ExportError::parquet(def.name, e))?;
    let mut b = WriterProperties::builder()
        .set_writer_version(WriterVersion::PARQUET_1_0)
        .set_compression(Compression::ZSTD(level))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_bloom_filter_enabled(false)
        .set_dictionary_enabled(true)
        .set_created_by(format!("schedscope {}", env!("CARGO_PKG_VERSION")))
        .set_key_value_metadata(Some(vec![
            KeyValue::new("schema_version".into(), SCHEMA_VERSION.to_string()),
            KeyValue::new("trace_id".into(), trace_id.to_string()),
            KeyValue::new("table".into(), def.name.to_string()),
        ]));
    for c in def.cols {
        if delta_encoded(c) {
            let p = ColumnPath::from(c.name);
            b = b
                .set_column_dictionary_enabled(p.clone(), false)
                .set_column_encoding(p, Encoding::DELTA_BINARY_PACKED);
        }
    }
    let sorting: Vec<SortingColumn> = def
        .sort
        .iter()
        .filter_map(|s| schema.fields().iter().position(|f| f.name() == s))
        .map(|i| SortingColumn {
            column_idx: i as i32,
            descending: false,
            nulls_first: true,
        })
        .collect();
    if !sorting.is_empty() {
        b = b.set_sorting_columns(Some(sorting));
    }
    Ok(b.build())
}

/// Where one table of one trace goes.
pub struct Target {
    /// The Parquet file, if Parquet is written.
    pub parquet: Option<PathBuf>,
    /// The CSV file, if CSV is written.
    pub csv: Option<PathBuf>,
    /// A column not written to the files: one that the hive partition
    /// supplies (`trace.host`; engines reject a file column that repeats a
    /// partition column).
    pub skip: Option<&'static str>,
}

/// One table being written.
pub struct TableSink {
    def: &'static TableDef,
    schema: SchemaRef,
    cols: Vec<Builder>,
    skip: Option<usize>,
    col: usize,
    buffered: usize,
    rows: u64,
    /// This table's slot in the [`Writers`] thread.
    slot: usize,
    /// The channel to the [`Writers`] thread.
    tx: SyncSender<Msg>,
}

/// Batches in flight to the writer thread beyond the one it is writing:
/// the row builders block past this, which bounds the memory held in
/// batches to about (2 + `IN_FLIGHT`) x [`BATCH_BYTES`] whatever the number
/// of tables.
const IN_FLIGHT: usize = 2;

/// The outputs of one table.
pub(crate) struct Outputs {
    name: &'static str,
    parquet: Option<(PathBuf, ArrowWriter<File>)>,
    csv: Option<(PathBuf, BufWriter<File>)>,
}

impl Outputs {
    fn write(&mut self, batch: &RecordBatch) -> Result<(), ExportError> {
        let name = self.name;
        if let Some((_, w)) = &mut self.parquet {
            w.write(batch).map_err(|e| ExportError::parquet(name, e))?;
            if w.memory_size() >= ROW_GROUP_BYTES {
                w.flush().map_err(|e| ExportError::parquet(name, e))?;
            }
        }
        if let Some((path, w)) = &mut self.csv {
            crate::csv::write_batch(w, batch).map_err(|e| ExportError::io(path, e))?;
        }
        Ok(())
    }

    fn close(mut self) -> Result<(), ExportError> {
        if let Some((_, w)) = self.parquet.take() {
            w.close().map_err(|e| ExportError::parquet(self.name, e))?;
        }
        if let Some((path, mut w)) = self.csv.take() {
            w.flush().map_err(|e| ExportError::io(&path, e))?;
        }
        Ok(())
    }
}

/// What the row builders send to the writer thread.
pub(crate) enum Msg {
    /// A table's outputs, opened (its slot).
    Open(usize, Box<Outputs>),
    /// A batch of a table's rows.
    Batch(usize, RecordBatch),
    /// A table's last batch was sent: close its files.
    Close(usize),
}

/// The one thread that encodes, compresses and writes every table's
/// batches, beside the code that builds the rows. One thread for all
/// tables (not one per table): a table's writer holds its row group and a
/// thread keeps its own allocator arena, and with two dozen of them alive
/// at once the export of a 1.75 M-event recording held about 65 MiB more
/// than with one, for no speed on a machine with a couple of cores.
pub struct Writers {
    tx: SyncSender<Msg>,
    thread: std::thread::JoinHandle<Result<(), ExportError>>,
    next_slot: usize,
}

impl Writers {
    /// Start the writer thread.
    pub fn spawn() -> Result<Writers, ExportError> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Msg>(IN_FLIGHT);
        let thread = std::thread::Builder::new()
            .name("export writer".into())
            .spawn(move || {
                let mut open: Vec<Option<Box<Outputs>>> = Vec::new();
                let timing = std::env::var_os("SCHEDSCOPE_TIMING").is_some();
                let mut busy: Vec<(&'static str, std::time::Duration)> = Vec::new();
                for msg in rx {
                    let t0 = std::time::Instant::now();
                    let slot = match &msg {
                        Msg::Open(s, _) | Msg::Batch(s, _) | Msg::Close(s) => *s,
                    };
                    match msg {
                        Msg::Open(slot, out) => {
                            if open.len() <= slot {
                                open.resize_with(slot + 1, || None);
                            }
                            open[slot] = Some(out);
                        }
                        Msg::Batch(slot, batch) => {
                            if let Some(Some(out)) = open.get_mut(slot) {
                                out.write(&batch)?;
                            }
                        }
                        Msg::Close(slot) => {
                            if let Some(out) = open.get_mut(slot).and_then(Option::take) {
                                let name = out.name;
                                out.close()?;
                                if busy.len() <= slot {
                                    busy.resize(slot + 1, ("", Default::default()));
                                }
                                busy[slot].0 = name;
                            }
                        }
                    }
                    if timing {
                        if busy.len() <= slot {
                            busy.resize(slot + 1, ("", Default::default()));
                        }
                        busy[slot].1 += t0.elapsed();
                    }
                }
                if timing {
                    for (name, d) in &busy {
                        eprintln!("timing: writer {name} {:.1} ms", d.as_secs_f64() * 1e3);
                    }
                }
                // Tables not closed (an export that stopped on an error):
                // close them so that their files are at least readable.
                for out in open.into_iter().flatten() {
                    out.close()?;
                }
                Ok(())
            })
            .map_err(|e| ExportError::Io {
                path: PathBuf::from("<export writer thread>"),
                source: e,
            })?;
        Ok(Writers {
            tx,
            thread,
            next_slot: 0,
        })
    }

    /// Wait until every table sent is written and closed; the first error
    /// of the writer thread, if it failed.
    pub fn finish(self) -> Result<(), ExportError> {
        drop(self.tx);
        self.thread.join().unwrap_or_else(|_| {
            Err(ExportError::Arrow(
                "(writer)",
                "writer thread panicked".into(),
            ))
        })
    }
}

/// The writer thread stopped (on an error that [`Writers::finish`] returns).
fn stopped(name: &'static str) -> ExportError {
    ExportError::Arrow(name, "writer thread stopped".into())
}

fn create(path: &Path) -> Result<File, ExportError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| ExportError::io(dir, e))?;
    }
    File::options()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| ExportError::io(path, e))
}

impl TableSink {
    /// Open the outputs of `def` (files are created now, so that a table with
    /// no rows is still a readable file with its schema).
    pub fn open(
        def: &'static TableDef,
        target: Target,
        trace_id: &str,
        writers: &mut Writers,
    ) -> Result<TableSink, ExportError> {
        let skip = target
            .skip
            .and_then(|n| def.cols.iter().position(|c| c.name == n));
        let schema = schema_of(def, skip);
        let parquet = match target.parquet {
            Some(p) => {
                let f = create(&p)?;
                let props = properties(def, &schema, trace_id)?;
                let w = ArrowWriter::try_new(f, schema.clone(), Some(props))
                    .map_err(|e| ExportError::parquet(def.name, e))?;
                Some((p, w))
            }
            None => None,
        };
        let csv = match target.csv {
            Some(p) => {
                let mut w = BufWriter::new(create(&p)?);
                let header: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
                writeln!(w, "{}", header.join(",")).map_err(|e| ExportError::io(&p, e))?;
                Some((p, w))
            }
            None => None,
        };
        let slot = writers.next_slot;
        writers.next_slot += 1;
        let tx = writers.tx.clone();
        let out = Outputs {
            name: def.name,
            parquet,
            csv,
        };
        tx.send(Msg::Open(slot, Box::new(out)))
            .map_err(|_| stopped(def.name))?;
        Ok(TableSink {
            def,
            schema,
            cols: def.cols.iter().map(|c| Builder::new(c.ty)).collect(),
            skip,
            col: 0,
            buffered: 0,
            rows: 0,
            slot,
            tx,
        })
    }

    fn next(&mut self) -> &mut Builder {
        let i = self.col;
        self.col += 1;
        // A row with more values than columns is a bug in this crate, not
        // in the input: every table's rows are written by one function.
        assert!(
            i < self.cols.len(),
            "table {}: row has too many values",
            self.def.name
        );
        &mut self.cols[i]
    }

    fn mismatch(&self, want: &str) -> ! {
        panic!(
            "table {}: column {} is not {want}",
            self.def.name,
            self.def.cols[self.col - 1].name
        )
    }

    /// Append an Int64 value (or null).
    pub fn i64(&mut self, v: impl Into<Option<i64>>) -> &mut Self {
        self.buffered += 9;
        match self.next() {
            Builder::I64(b) => b.append_option(v.into()),
            _ => self.mismatch("i64"),
        }
        self
    }

    /// Append an Int64 from an unsigned value (saturating at `i64::MAX`).
    pub fn u64(&mut self, v: impl Into<Option<u64>>) -> &mut Self {
        self.i64(v.into().map(|v| i64::try_from(v).unwrap_or(i64::MAX)))
    }

    /// Append an Int32 value (or null).
    pub fn i32(&mut self, v: impl Into<Option<i32>>) -> &mut Self {
        self.buffered += 5;
        match self.next() {
            Builder::I32(b) => b.append_option(v.into()),
            _ => self.mismatch("i32"),
        }
        self
    }

    /// Append a Float64 value (or null).
    pub fn f64(&mut self, v: impl Into<Option<f64>>) -> &mut Self {
        self.buffered += 9;
        match self.next() {
            Builder::F64(b) => b.append_option(v.into()),
            _ => self.mismatch("f64"),
        }
        self
    }

    /// Append a Boolean value (or null).
    pub fn bool(&mut self, v: impl Into<Option<bool>>) -> &mut Self {
        self.buffered += 1;
        match self.next() {
            Builder::Bool(b) => b.append_option(v.into()),
            _ => self.mismatch("bool"),
        }
        self
    }

    /// Append a string (or null).
    pub fn str(&mut self, v: Option<&str>) -> &mut Self {
        self.buffered += 4 + v.map_or(0, str::len);
        match self.next() {
            Builder::Str(b) => b.append_option(v),
            _ => self.mismatch("string"),
        }
        self
    }

    /// Append a list of strings.
    pub fn str_list<'s>(&mut self, v: impl IntoIterator<Item = &'s str>) -> &mut Self {
        let mut n = 4;
        match self.next() {
            Builder::StrList(b) => {
                for s in v {
                    n += 4 + s.len();
                    b.values().append_value(s);
                }
                b.append(true);
            }
            _ => self.mismatch("list<string>"),
        }
        self.buffered += n;
        self
    }

    /// Append a list of Int64.
    pub fn i64_list(&mut self, v: impl IntoIterator<Item = i64>) -> &mut Self {
        let mut n = 4;
        match self.next() {
            Builder::I64List(b) => {
                for x in v {
                    n += 8;
                    b.values().append_value(x);
                }
                b.append(true);
            }
            _ => self.mismatch("list<int64>"),
        }
        self.buffered += n;
        self
    }

    /// End the current row; flushes a batch past [`BATCH_BYTES`].
    pub fn end(&mut self) -> Result<(), ExportError> {
        assert_eq!(
            self.col,
            self.cols.len(),
            "table {}: row has too few values",
            self.def.name
        );
        self.col = 0;
        self.rows += 1;
        if self.buffered >= BATCH_BYTES {
            self.flush_batch()?;
        }
        Ok(())
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    fn flush_batch(&mut self) -> Result<(), ExportError> {
        self.buffered = 0;
        let skip = self.skip;
        let arrays: Vec<ArrayRef> = self
            .cols
            .iter_mut()
            .enumerate()
            .map(|(i, b)| (i, b.finish()))
            .filter(|(i, _)| Some(*i) != skip)
            .map(|(_, a)| a)
            .collect();
        if arrays.first().is_none_or(|a| a.is_empty()) {
            return Ok(());
        }
        let name = self.def.name;
        let batch = RecordBatch::try_new(self.schema.clone(), arrays)
            .map_err(|e| ExportError::Arrow(name, e.to_string()))?;
        self.tx
            .send(Msg::Batch(self.slot, batch))
            .map_err(|_| stopped(name))
    }

    /// Flush what is buffered and have the writer thread close the files
    /// (its errors come from [`Writers::finish`]); the number of rows.
    pub fn close(mut self) -> Result<u64, ExportError> {
        self.flush_batch()?;
        self.tx
            .send(Msg::Close(self.slot))
            .map_err(|_| stopped(self.def.name))?;
        Ok(self.rows)
    }
}
