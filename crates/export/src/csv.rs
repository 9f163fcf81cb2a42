//! CSV output of a batch (RFC 4180 quoting; lists as `[a;b;c]`; nulls empty).

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use std::io::{self, Write};

fn quote(out: &mut impl Write, s: &str) -> io::Result<()> {
    if s.contains([',', '"', '\n', '\r']) {
        write!(out, "\"{}\"", s.replace('"', "\"\""))
    } else {
        out.write_all(s.as_bytes())
    }
}

fn cell(out: &mut impl Write, a: &dyn Array, row: usize) -> io::Result<()> {
    if a.is_null(row) {
        return Ok(());
    }
    match a.data_type() {
        DataType::Int64 => write!(out, "{}", a.as_primitive::<Int64Type>().value(row)),
        DataType::Int32 => write!(out, "{}", a.as_primitive::<Int32Type>().value(row)),
        DataType::Float64 => write!(out, "{}", a.as_primitive::<Float64Type>().value(row)),
        DataType::Boolean => write!(out, "{}", a.as_boolean().value(row)),
        DataType::Utf8 => quote(out, a.as_string::<i32>().value(row)),
        DataType::List(_) => {
            let items = a.as_list::<i32>().value(row);
            let mut s = Vec::new();
            s.push(b'[');
            for i in 0..items.len() {
                if i > 0 {
                    s.push(b';');
                }
                cell(&mut s, items.as_ref(), i)?;
            }
            s.push(b']');
            quote(out, &String::from_utf8_lossy(&s))
        }
        other => write!(out, "<{other}>"),
    }
}

/// Append the rows of `batch` to `out`.
pub(crate) fn write_batch(out: &mut impl Write, batch: &RecordBatch) -> io::Result<()> {
    for row in 0..batch.num_rows() {
        for (i, col) in batch.columns().iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            cell(out, col.as_ref(), row)?;
        }
        out.write_all(b"\n")?;
    }
    Ok(())
}
