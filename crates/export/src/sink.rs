//! Table sinks: rows go into arrow builders, batches are flushed to a
//! Parquet writer (and/or a CSV file) when the buffered size passes a budget,
//! so that memory stays bounded whatever the number of rows.

use crate::error::ExportError;
use crate::schema::{ColType, TableDef, SCHEMA_VERSION};
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
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

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
    /// The first error of the current row ([`TableSink::next`]).
    error: Option<String>,
    buffered: usize,
    rows: u64,
    /// This table's slot in the [`Writers`].
    slot: usize,
    /// The [`Writers`]' queues.
    pool: Arc<Pool>,
}

/// Batches queued for the writer thread beyond the one it is writing:
/// past this, the row builder writes a queued batch itself instead of
/// building more rows, which bounds the memory held in batches to about
/// (2 + `QUEUED`) x [`BATCH_BYTES`] whatever the number of tables.
const QUEUED: usize = 2;

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

/// Work queued for one table.
enum Work {
    /// A batch of its rows.
    Batch(RecordBatch),
    /// Its last batch was sent: close its files.
    Close,
}

/// One table's queue.
struct Queue {
    name: &'static str,
    /// Its outputs; `None` while a thread writes them, and once closed.
    out: Option<Box<Outputs>>,
    pending: VecDeque<Work>,
    /// A thread is writing this table's front item.
    busy: bool,
    /// Time spent writing this table (`SCHEDSCOPE_TIMING`).
    time: std::time::Duration,
}

/// The queues, under [`Pool::state`].
struct State {
    tables: Vec<Queue>,
    /// Tables with work queued that no thread is writing, each once.
    ready: VecDeque<usize>,
    /// Batches queued (not yet taken).
    queued: usize,
    /// No more work will come ([`Writers::finish`]).
    done: bool,
    /// The first write error: everything stops.
    error: Option<ExportError>,
}

/// One item taken from a table's queue, to be written outside the lock.
struct Taken {
    slot: usize,
    work: Work,
    out: Box<Outputs>,
}

/// What the row builder and the writer thread share.
struct Pool {
    state: Mutex<State>,
    /// Signalled when a table becomes ready (or on done/error).
    work: Condvar,
    /// Signalled when a thread has written an item (or on error).
    room: Condvar,
    timing: bool,
}

impl Pool {
    fn lock(&self) -> MutexGuard<'_, State> {
        // (the lock is never held across a write, so a panic elsewhere
        // leaves the queues consistent)
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queue `work` for table `slot`. While too many batches are queued,
    /// write the oldest ready one on this thread first (the row builder
    /// would otherwise wait for the writer thread: the encoding is the
    /// slower half). Fails when a write has failed.
    fn push(&self, slot: usize, work: Work) -> Result<(), ()> {
        let mut st = self.lock();
        if matches!(work, Work::Batch(_)) {
            while st.queued >= QUEUED && st.error.is_none() {
                match Pool::take(&mut st) {
                    Some(t) => {
                        drop(st);
                        st = self.write(t);
                    }
                    // The writer thread is writing the table whose
                    // batches are queued: wait for it.
                    None => st = self.room.wait(st).unwrap_or_else(|e| e.into_inner()),
                }
            }
            st.queued += 1;
        }
        if st.error.is_some() {
            return Err(());
        }
        let q = &mut st.tables[slot];
        let was_idle = !q.busy && q.pending.is_empty();
        q.pending.push_back(work);
        if was_idle {
            st.ready.push_back(slot);
            self.work.notify_one();
        }
        Ok(())
    }

    /// The oldest ready table's front item, the table marked busy.
    fn take(st: &mut State) -> Option<Taken> {
        while let Some(slot) = st.ready.pop_front() {
            let q = &mut st.tables[slot];
            let Some(out) = q.out.take() else {
                // (not reached: work comes only for open tables) Drop the
                // queue, keeping the count of queued batches right so that
                // the row builder does not wait for them.
                let dropped = q.pending.drain(..).filter(|w| matches!(w, Work::Batch(_)));
                st.queued -= dropped.count();
                continue;
            };
            let Some(work) = q.pending.pop_front() else {
                // (not reached: a table is ready only with work queued)
                q.out = Some(out);
                continue;
            };
            q.busy = true;
            if matches!(work, Work::Batch(_)) {
                st.queued -= 1;
            }
            return Some(Taken { slot, work, out });
        }
        None
    }

    /// Write a taken item (without the lock), give its table back; the
    /// lock again.
    fn write(&self, t: Taken) -> MutexGuard<'_, State> {
        let Taken {
            slot,
            work,
            mut out,
        } = t;
        let t0 = self.timing.then(std::time::Instant::now);
        // A panic in the encoder stops the export like an error.
        let name = out.name;
        let panicked = |_| ExportError::Arrow(name, "writer panicked".into());
        let (out, result) = match work {
            Work::Batch(b) => match std::panic::catch_unwind(AssertUnwindSafe(|| out.write(&b))) {
                Ok(r) => (Some(out), r),
                // (its writer is left half-written: not closed)
                Err(p) => (None, Err(panicked(p))),
            },
            Work::Close => {
                let r = std::panic::catch_unwind(AssertUnwindSafe(|| out.close()));
                (None, r.unwrap_or_else(|p| Err(panicked(p))))
            }
        };
        let mut st = self.lock();
        let q = &mut st.tables[slot];
        q.busy = false;
        q.out = out;
        if let Some(t0) = t0 {
            q.time += t0.elapsed();
        }
        let more = !q.pending.is_empty();
        self.room.notify_all();
        match result {
            Err(e) => {
                st.error.get_or_insert(e);
                self.work.notify_all();
            }
            Ok(()) if more => {
                st.ready.push_back(slot);
                self.work.notify_one();
            }
            Ok(()) => {}
        }
        st
    }

    /// The writer thread: write ready items until done or failed.
    fn run(&self) {
        let mut st = self.lock();
        while st.error.is_none() {
            match Pool::take(&mut st) {
                Some(t) => {
                    drop(st);
                    st = self.write(t);
                }
                None if st.done => return,
                None => st = self.work.wait(st).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }
}

/// The thread that encodes, compresses and writes the tables' batches,
/// beside the code that builds the rows, which writes batches itself
/// rather than wait when more than two are queued. One table's
/// batches are written in order, by one thread at a time. One writer
/// thread for all tables (not one per table): a table's writer holds its
/// row group and a thread keeps its own allocator arena, and with two
/// dozen of them alive at once the export of a 1.75 M-event recording held
/// about 65 MiB more than with one.
pub struct Writers {
    pool: Arc<Pool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writers {
    /// Start the writer thread.
    pub fn spawn() -> Result<Writers, ExportError> {
        let pool = Arc::new(Pool {
            state: Mutex::new(State {
                tables: Vec::new(),
                ready: VecDeque::new(),
                queued: 0,
                done: false,
                error: None,
            }),
            work: Condvar::new(),
            room: Condvar::new(),
            timing: std::env::var_os("SCHEDSCOPE_TIMING").is_some(),
        });
        let p = pool.clone();
        let thread = std::thread::Builder::new()
            .name("export writer".into())
            .spawn(move || p.run())
            .map_err(|e| ExportError::Io {
                path: PathBuf::from("<export writer thread>"),
                source: e,
            })?;
        Ok(Writers {
            pool,
            thread: Some(thread),
        })
    }

    /// Wait until every table queued is written and closed; the first
    /// write error, if one failed.
    pub fn finish(mut self) -> Result<(), ExportError> {
        self.pool.lock().done = true;
        self.pool.work.notify_all();
        let panicked = self.thread.take().is_some_and(|t| t.join().is_err());
        let mut st = self.pool.lock();
        if self.pool.timing {
            for q in &st.tables {
                eprintln!(
                    "timing: writing {} {:.1} ms",
                    q.name,
                    q.time.as_secs_f64() * 1e3
                );
            }
        }
        // Tables not closed (an export that stopped on an error): close
        // them so that their files are at least readable.
        let mut first = st.error.take();
        for q in &mut st.tables {
            if let Some(out) = q.out.take() {
                if let Err(e) = out.close() {
                    first.get_or_insert(e);
                }
            }
        }
        if panicked {
            first.get_or_insert(ExportError::Arrow(
                "(writer)",
                "writer thread panicked".into(),
            ));
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for Writers {
    /// Not finished (an early return): let the thread end once the work
    /// queued so far is written.
    fn drop(&mut self) {
        self.pool.lock().done = true;
        self.pool.work.notify_all();
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
        let out = Outputs {
            name: def.name,
            parquet,
            csv,
        };
        let pool = writers.pool.clone();
        let slot = {
            let mut st = pool.lock();
            st.tables.push(Queue {
                name: def.name,
                out: Some(Box::new(out)),
                pending: VecDeque::new(),
                busy: false,
                time: Default::default(),
            });
            st.tables.len() - 1
        };
        Ok(TableSink {
            def,
            schema,
            cols: def.cols.iter().map(|c| Builder::new(c.ty)).collect(),
            skip,
            col: 0,
            error: None,
            buffered: 0,
            rows: 0,
            slot,
            pool,
        })
    }

    /// The builder of column `name`, which must be the row's next column:
    /// every value names its column and the name is checked against the
    /// schema, so that two swapped columns of one type fail instead of
    /// exchanging their values. The check is a pointer comparison when
    /// the names are the same literal, a string comparison otherwise. A
    /// wrong name records the error that [`TableSink::end`] returns and
    /// drops the value.
    fn next(&mut self, name: &'static str) -> Option<&mut Builder> {
        let i = self.col;
        self.col += 1;
        match self.def.cols.get(i) {
            Some(c) if std::ptr::eq(c.name, name) || c.name == name => self.cols.get_mut(i),
            Some(c) => {
                let c = c.name;
                self.wrong(|| {
                    format!("value for column {name} written where column {c} is declared")
                });
                None
            }
            None => {
                let n = self.def.cols.len();
                self.wrong(|| {
                    format!("value for column {name} written after the last of the {n} columns")
                });
                None
            }
        }
    }

    /// Record the first error of the current row (returned by
    /// [`TableSink::end`]).
    fn wrong(&mut self, what: impl FnOnce() -> String) {
        if self.error.is_none() {
            self.error = Some(what());
        }
    }

    fn mismatch(&mut self, name: &str, want: &str) {
        self.wrong(|| format!("column {name} is not {want}"));
    }

    /// Append an Int64 value (or null) to column `name`.
    pub fn i64(&mut self, name: &'static str, v: impl Into<Option<i64>>) -> &mut Self {
        self.buffered += 9;
        match self.next(name) {
            Some(Builder::I64(b)) => b.append_option(v.into()),
            Some(_) => self.mismatch(name, "i64"),
            None => {}
        }
        self
    }

    /// Append an Int64 from an unsigned value (saturating at `i64::MAX`)
    /// to column `name`.
    pub fn u64(&mut self, name: &'static str, v: impl Into<Option<u64>>) -> &mut Self {
        self.i64(name, v.into().map(|v| i64::try_from(v).unwrap_or(i64::MAX)))
    }

    /// Append an Int32 value (or null) to column `name`.
    pub fn i32(&mut self, name: &'static str, v: impl Into<Option<i32>>) -> &mut Self {
        self.buffered += 5;
        match self.next(name) {
            Some(Builder::I32(b)) => b.append_option(v.into()),
            Some(_) => self.mismatch(name, "i32"),
            None => {}
        }
        self
    }

    /// Append a Float64 value (or null) to column `name`.
    pub fn f64(&mut self, name: &'static str, v: impl Into<Option<f64>>) -> &mut Self {
        self.buffered += 9;
        match self.next(name) {
            Some(Builder::F64(b)) => b.append_option(v.into()),
            Some(_) => self.mismatch(name, "f64"),
            None => {}
        }
        self
    }

    /// Append a Boolean value (or null) to column `name`.
    pub fn bool(&mut self, name: &'static str, v: impl Into<Option<bool>>) -> &mut Self {
        self.buffered += 1;
        match self.next(name) {
            Some(Builder::Bool(b)) => b.append_option(v.into()),
            Some(_) => self.mismatch(name, "bool"),
            None => {}
        }
        self
    }

    /// Append a string (or null) to column `name`.
    pub fn str(&mut self, name: &'static str, v: Option<&str>) -> &mut Self {
        self.buffered += 4 + v.map_or(0, str::len);
        match self.next(name) {
            Some(Builder::Str(b)) => b.append_option(v),
            Some(_) => self.mismatch(name, "string"),
            None => {}
        }
        self
    }

    /// Append a list of strings to column `name`.
    pub fn str_list<'s>(
        &mut self,
        name: &'static str,
        v: impl IntoIterator<Item = &'s str>,
    ) -> &mut Self {
        let mut n = 4;
        match self.next(name) {
            Some(Builder::StrList(b)) => {
                for s in v {
                    n += 4 + s.len();
                    b.values().append_value(s);
                }
                b.append(true);
            }
            Some(_) => self.mismatch(name, "list<string>"),
            None => {}
        }
        self.buffered += n;
        self
    }

    /// Append a list of Int64 to column `name`.
    pub fn i64_list(&mut self, name: &'static str, v: impl IntoIterator<Item = i64>) -> &mut Self {
        let mut n = 4;
        match self.next(name) {
            Some(Builder::I64List(b)) => {
                for x in v {
                    n += 8;
                    b.values().append_value(x);
                }
                b.append(true);
            }
            Some(_) => self.mismatch(name, "list<int64>"),
            None => {}
        }
        self.buffered += n;
        self
    }

    /// End the current row; flushes a batch past [`BATCH_BYTES`].
    /// A row whose values do not name the schema's columns in order, or
    /// that has too few of them, is an error ([`ExportError::Column`]).
    pub fn end(&mut self) -> Result<(), ExportError> {
        if self.col < self.cols.len() {
            let (n, c) = (self.col, self.def.cols[self.col].name);
            self.wrong(|| format!("row ends after {n} values, before column {c}"));
        }
        if let Some(e) = self.error.take() {
            return Err(ExportError::Column(self.def.name, e));
        }
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
        self.pool
            .push(self.slot, Work::Batch(batch))
            .map_err(|()| stopped(name))
    }

    /// Flush what is buffered and have the writer thread close the files
    /// (its errors come from [`Writers::finish`]); the number of rows.
    pub fn close(mut self) -> Result<u64, ExportError> {
        self.flush_batch()?;
        self.pool
            .push(self.slot, Work::Close)
            .map_err(|()| stopped(self.def.name))?;
        Ok(self.rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    /// A table of two Int64 columns, for the name checks.
    static TWO_I64: crate::schema::TableDef = crate::schema::TableDef {
        name: "two_i64",
        doc: "",
        sort: &[],
        cols: &[
            crate::schema::ColDef {
                name: "first_ns",
                ty: ColType::I64,
                unit: "ns",
                doc: "",
            },
            crate::schema::ColDef {
                name: "second_ns",
                ty: ColType::I64,
                unit: "ns",
                doc: "",
            },
        ],
    };

    /// Write rows with `row` into a CSV of [`TWO_I64`]: `end`'s results and
    /// the file's text.
    fn two_i64(
        tag: &str,
        row: impl Fn(&mut TableSink, i64),
    ) -> (Vec<Result<(), ExportError>>, String) {
        let dir =
            std::env::temp_dir().join(format!("schedscope-sink-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut w = Writers::spawn().unwrap();
        let target = Target {
            parquet: None,
            csv: Some(dir.join("t.csv")),
            skip: None,
        };
        let mut t = TableSink::open(&TWO_I64, target, "run", &mut w).unwrap();
        let ends = (0..2)
            .map(|r| {
                row(&mut t, r);
                t.end()
            })
            .collect();
        let _ = t.close();
        let _ = w.finish();
        let text = std::fs::read_to_string(dir.join("t.csv")).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&dir);
        (ends, text)
    }

    /// Two columns of one type written in the wrong order: the count and
    /// the types agree with the schema, the names do not, and the error
    /// names both columns; in the right order the rows are written.
    #[test]
    fn swapped_columns_of_one_type_are_an_error() {
        let (ends, _) = two_i64("swap", |t, r| {
            t.i64("second_ns", r).i64("first_ns", 10 + r);
        });
        let e = ends[0].as_ref().unwrap_err().to_string();
        assert!(e.contains("two_i64"), "{e}");
        assert!(e.contains("second_ns") && e.contains("first_ns"), "{e}");
        let (ends, text) = two_i64("right", |t, r| {
            t.i64("first_ns", r).i64("second_ns", 10 + r);
        });
        assert!(ends.iter().all(Result::is_ok));
        assert_eq!(text, "first_ns,second_ns\n0,10\n1,11\n");
    }

    /// Too few values, too many, or a right name with a wrong type: errors
    /// naming the column, no panic.
    #[test]
    fn short_long_and_mistyped_rows_are_errors() {
        let (ends, _) = two_i64("short", |t, r| {
            t.i64("first_ns", r);
        });
        let e = ends[0].as_ref().unwrap_err().to_string();
        assert!(e.contains("before column second_ns"), "{e}");
        let (ends, _) = two_i64("long", |t, r| {
            t.i64("first_ns", r).i64("second_ns", r).i64("third_ns", r);
        });
        let e = ends[0].as_ref().unwrap_err().to_string();
        assert!(e.contains("third_ns") && e.contains("last of the 2"), "{e}");
        let (ends, _) = two_i64("type", |t, r| {
            t.i64("first_ns", r).i32("second_ns", r as i32);
        });
        let e = ends[0].as_ref().unwrap_err().to_string();
        assert!(e.contains("column second_ns is not i32"), "{e}");
    }

    /// Three tables written at once, with enough rows for many batches
    /// each, so that both the writer thread and the row builder (when the
    /// queue is full) write batches: every file holds its rows in order.
    #[test]
    fn interleaved_tables_keep_their_row_order() {
        let dir = std::env::temp_dir().join(format!("schedscope-sink-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let def = crate::schema::table("raw_arg").unwrap();
        let mut w = Writers::spawn().unwrap();
        let mut sinks: Vec<TableSink> = (0..3)
            .map(|i| {
                let target = Target {
                    parquet: Some(dir.join(format!("t{i}.parquet"))),
                    csv: None,
                    skip: None,
                };
                TableSink::open(def, target, "run", &mut w).unwrap()
            })
            .collect();
        const ROWS: i64 = 150_000;
        for r in 0..ROWS {
            for (i, t) in sinks.iter_mut().enumerate() {
                // (table i gets i + 1 times the bytes: batches at
                // different rows)
                let v = "x".repeat(i + 1);
                t.i64("event_id", r)
                    .str("key", Some("k"))
                    .str("value", Some(&v));
                t.end().unwrap();
            }
        }
        for t in sinks {
            assert_eq!(t.close().unwrap(), ROWS as u64);
        }
        w.finish().unwrap();
        for i in 0..3 {
            let f = File::open(dir.join(format!("t{i}.parquet"))).unwrap();
            let reader = ParquetRecordBatchReaderBuilder::try_new(f)
                .unwrap()
                .build()
                .unwrap();
            let mut next = 0i64;
            for b in reader {
                let b = b.unwrap();
                for v in b.column(0).as_primitive::<Int64Type>().values() {
                    assert_eq!(*v, next, "table {i}");
                    next += 1;
                }
            }
            assert_eq!(next, ROWS, "table {i}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
