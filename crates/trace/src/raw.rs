//! The fields of events that have no typed decoder ([`crate::EventData::Other`]).
//!
//! A decoder asked to keep them (`schedscope_parser::LoadOptions::raw_fields`)
//! appends one record per such event and stores the record's index in
//! `EventData::Other(Some(index))`. The store is columnar so that the event
//! stays 56 bytes and a record costs a few words plus its text: field names
//! are interned once per part, values are kept as printed (text traces) or
//! formatted from the payload (perf.data: integers in decimal, strings as
//! text, other arrays as hex bytes) in one string arena per part; the
//! perf.data decoder's per-chunk parts are moved into the trace's store,
//! not copied. This is what the Parquet export's `raw_event` / `raw_arg`
//! tables are made from.

use crate::strings::{StrId, Strings};

/// Store of (name, value) pairs, one record per untyped event.
///
/// Made of parts, each a columnar store of consecutive records: a decoder
/// that fills one part per chunk hands them over with [`RawArgs::append`],
/// which moves them instead of copying, so that the load never holds the
/// records twice. Record `r` lives in the last part whose first record is
/// at most `r`.
#[derive(Clone, Debug, Default)]
pub struct RawArgs {
    /// The parts, in record order (none is empty).
    parts: Vec<Part>,
    /// Index of each part's first record.
    bases: Vec<u32>,
}

/// Consecutive records, stored column by column.
#[derive(Clone, Debug, Default)]
struct Part {
    /// Record `r`'s args are `arg_key[starts[r]..starts[r + 1]]`
    /// (`starts` has one more entry than there are records, once non-empty).
    starts: Vec<u32>,
    /// Field name of each arg.
    arg_key: Vec<StrId>,
    /// End offset in `text` of each arg's value (its start is the previous end).
    arg_end: Vec<u32>,
    /// Every value, concatenated.
    text: String,
    /// Field names.
    keys: Strings,
}

/// Why a record could not be stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawArgsFull;

impl RawArgs {
    /// An empty store.
    pub fn new() -> RawArgs {
        RawArgs::default()
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        match (self.bases.last(), self.parts.last()) {
            (Some(&b), Some(p)) => b as usize + p.len(),
            _ => 0,
        }
    }

    /// Whether no record is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of (name, value) pairs over all records.
    pub fn arg_count(&self) -> usize {
        self.parts.iter().map(|p| p.arg_key.len()).sum()
    }

    /// Append one record; returns its index (for `EventData::Other(Some(i))`).
    /// Fails, storing nothing, when a part would pass 4 GiB of text or
    /// 2^32 args, or the store 2^32 records (the caller counts the event
    /// as kept without its fields).
    pub fn push<'a>(
        &mut self,
        args: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<u32, RawArgsFull> {
        let r = self.len();
        if r >= u32::MAX as usize {
            return Err(RawArgsFull);
        }
        if self.parts.is_empty() {
            self.parts.push(Part::default());
            self.bases.push(0);
        }
        let Some(last) = self.parts.last_mut() else {
            return Err(RawArgsFull); // cannot happen: pushed above
        };
        last.push(args)?;
        Ok(r as u32)
    }

    /// The (name, value) pairs of record `r`, in the order stored (empty
    /// for an index past the end).
    pub fn get(&self, r: u32) -> impl Iterator<Item = (&str, &str)> + '_ {
        let i = self.bases.partition_point(|&b| b <= r).checked_sub(1);
        let found = i.and_then(|i| Some((self.parts.get(i)?, r - *self.bases.get(i)?)));
        found.into_iter().flat_map(|(part, local)| {
            part.range(local)
                .map(move |a| (part.keys.get(part.arg_key[a]), part.arg_value(a)))
        })
    }

    /// The value of field `name` in record `r`.
    pub fn value(&self, r: u32, name: &str) -> Option<&str> {
        self.get(r).find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    /// Append every record of `other`, moving its parts (nothing is
    /// copied); returns the index its record 0 got (records keep their
    /// order). Used to merge per-chunk stores. Fails, appending nothing,
    /// when the store would pass 2^32 records.
    pub fn append(&mut self, other: RawArgs) -> Result<u32, RawArgsFull> {
        let base = self.len();
        if base + other.len() > u32::MAX as usize {
            return Err(RawArgsFull);
        }
        let mut next = base as u32;
        for p in other.parts {
            if p.len() == 0 {
                continue;
            }
            self.bases.push(next);
            next += p.len() as u32;
            self.parts.push(p);
        }
        Ok(base as u32)
    }

    /// Bytes held (for memory accounting).
    pub fn heap_bytes(&self) -> usize {
        self.parts.iter().map(Part::heap_bytes).sum::<usize>()
            + self.parts.capacity() * std::mem::size_of::<Part>()
            + self.bases.capacity() * 4
    }
}

impl Part {
    /// Number of records.
    fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// Append one record (see [`RawArgs::push`]).
    fn push<'a>(
        &mut self,
        args: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<(), RawArgsFull> {
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        let (keys_before, text_before) = (self.arg_key.len(), self.text.len());
        for (k, v) in args {
            let end = self.text.len() + v.len();
            if end > u32::MAX as usize || self.arg_key.len() >= u32::MAX as usize {
                self.arg_key.truncate(keys_before);
                self.arg_end.truncate(keys_before);
                self.text.truncate(text_before);
                return Err(RawArgsFull);
            }
            let key = self.keys.intern(k);
            self.text.push_str(v);
            self.arg_key.push(key);
            self.arg_end.push(end as u32);
        }
        self.starts.push(self.arg_key.len() as u32);
        Ok(())
    }

    /// Arg indices of record `r`.
    fn range(&self, r: u32) -> std::ops::Range<usize> {
        let r = r as usize;
        match (self.starts.get(r), self.starts.get(r + 1)) {
            (Some(&a), Some(&b)) => a as usize..b as usize,
            _ => 0..0,
        }
    }

    /// The value of arg `i`.
    fn arg_value(&self, i: usize) -> &str {
        let start = match i.checked_sub(1) {
            Some(p) => self.arg_end[p] as usize,
            None => 0,
        };
        self.text.get(start..self.arg_end[i] as usize).unwrap_or("")
    }

    /// Bytes held.
    fn heap_bytes(&self) -> usize {
        self.starts.capacity() * 4
            + self.arg_key.capacity() * 4
            + self.arg_end.capacity() * 4
            + self.text.capacity()
            + self.keys.len() * 64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let mut s = RawArgs::new();
        assert!(s.is_empty());
        assert_eq!(s.get(0).count(), 0);
        let a = s.push([("ip", "0xffff"), ("comm", "a b")]).unwrap();
        let b = s.push([]).unwrap();
        let c = s.push([("comm", ""), ("x", "1")]).unwrap();
        assert_eq!((a, b, c), (0, 1, 2));
        assert_eq!(s.len(), 3);
        assert_eq!(s.arg_count(), 4);
        assert_eq!(
            s.get(a).collect::<Vec<_>>(),
            vec![("ip", "0xffff"), ("comm", "a b")]
        );
        assert_eq!(s.get(b).count(), 0);
        assert_eq!(s.get(c).collect::<Vec<_>>(), vec![("comm", ""), ("x", "1")]);
        assert_eq!(s.get(99).count(), 0);
        assert_eq!(s.value(c, "x"), Some("1"));
        assert_eq!(s.value(a, "x"), None);
    }

    #[test]
    fn append_moves_parts_and_keeps_record_numbers() {
        let mut one = RawArgs::new();
        one.push([("ip", "0xffff"), ("comm", "a b")]).unwrap();
        one.push([]).unwrap();
        one.push([("comm", ""), ("x", "1")]).unwrap();
        let want: Vec<Vec<(String, String)>> = (0..3)
            .map(|r| {
                one.get(r)
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            })
            .collect();
        let mut t = RawArgs::new();
        assert_eq!(t.append(RawArgs::new()).unwrap(), 0);
        assert!(t.is_empty());
        t.push([("y", "2")]).unwrap();
        assert_eq!(t.append(one).unwrap(), 1);
        assert_eq!(t.append(RawArgs::new()).unwrap(), 4);
        // (a push after an append goes on after the moved records)
        assert_eq!(t.push([("z", "3")]).unwrap(), 4);
        let mut two = RawArgs::new();
        two.push([("w", "4"), ("v", "5")]).unwrap();
        assert_eq!(t.append(two).unwrap(), 5);
        assert_eq!(t.len(), 6);
        assert_eq!(t.arg_count(), 1 + 4 + 1 + 2);
        assert_eq!(t.get(0).collect::<Vec<_>>(), vec![("y", "2")]);
        for (r, w) in want.iter().enumerate() {
            let got: Vec<(String, String)> = t
                .get(r as u32 + 1)
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert_eq!(&got, w, "record {}", r + 1);
        }
        assert_eq!(t.get(4).collect::<Vec<_>>(), vec![("z", "3")]);
        assert_eq!(t.get(5).collect::<Vec<_>>(), vec![("w", "4"), ("v", "5")]);
        assert_eq!(t.get(6).count(), 0);
        assert_eq!(t.value(5, "v"), Some("5"));
    }
}
