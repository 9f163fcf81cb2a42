//! The fields of events that have no typed decoder ([`crate::EventData::Other`]).
//!
//! A decoder asked to keep them (`schedscope_parser::LoadOptions::raw_fields`)
//! appends one record per such event and stores the record's index in
//! `EventData::Other(Some(index))`. The store is columnar so that the event
//! stays 56 bytes and a record costs a few words plus its text: field names
//! are interned once in [`RawArgs::keys`], values are kept as printed (text
//! traces) or formatted from the payload (perf.data: integers in decimal,
//! strings as text, other arrays as hex bytes) in one string arena. This is
//! what the Parquet export's `raw_event` / `raw_arg` tables are made from.

use crate::strings::{StrId, Strings};

/// Columnar store of (name, value) pairs, one record per untyped event.
#[derive(Clone, Debug, Default)]
pub struct RawArgs {
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
        self.starts.len().saturating_sub(1)
    }

    /// Whether no record is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of (name, value) pairs over all records.
    pub fn arg_count(&self) -> usize {
        self.arg_key.len()
    }

    /// The field names, interned once (the `raw_arg` table's dictionary).
    pub fn keys(&self) -> &Strings {
        &self.keys
    }

    /// The name of `key` (`""` for an id this store did not make).
    pub fn key(&self, key: StrId) -> &str {
        self.keys.get(key)
    }

    /// The field-name id of each arg of record `r`, with its value.
    pub fn get_ids(&self, r: u32) -> impl Iterator<Item = (StrId, &str)> + '_ {
        self.range(r)
            .map(move |i| (self.arg_key[i], self.arg_value(i)))
    }

    /// Append one record; returns its index (for `EventData::Other(Some(i))`).
    /// Fails, storing nothing, when the store would pass 4 GiB of text or
    /// 2^32 args (the caller counts the event as kept without its fields).
    pub fn push<'a>(
        &mut self,
        args: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<u32, RawArgsFull> {
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
        let r = self.len();
        if r >= u32::MAX as usize {
            self.arg_key.truncate(keys_before);
            self.arg_end.truncate(keys_before);
            self.text.truncate(text_before);
            return Err(RawArgsFull);
        }
        self.starts.push(self.arg_key.len() as u32);
        Ok(r as u32)
    }

    /// The (name, value) pairs of record `r`, in the order stored (empty
    /// for an index past the end).
    pub fn get(&self, r: u32) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.get_ids(r).map(|(k, v)| (self.keys.get(k), v))
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

    /// The value of field `name` in record `r`.
    pub fn value(&self, r: u32, name: &str) -> Option<&str> {
        self.get(r).find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    /// Append every record of `other`; returns the index its record 0 got
    /// (records keep their order). Used to merge per-chunk stores.
    pub fn append(&mut self, other: &RawArgs) -> Result<u32, RawArgsFull> {
        let base = self.len() as u32;
        for r in 0..other.len() as u32 {
            let pairs: Vec<(&str, &str)> = other.get(r).collect();
            self.push(pairs)?;
        }
        Ok(base)
    }

    /// Bytes held (for memory accounting).
    pub fn heap_bytes(&self) -> usize {
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
    fn records_round_trip_and_share_keys() {
        let mut s = RawArgs::new();
        assert!(s.is_empty());
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
        let keys: Vec<&str> = s.get_ids(c).map(|(k, _)| s.key(k)).collect();
        assert_eq!(keys, vec!["comm", "x"]);
        assert_eq!(s.keys().len(), 4); // "", ip, comm, x
        assert_eq!(s.value(c, "x"), Some("1"));
        assert_eq!(s.value(a, "x"), None);
        let mut t = RawArgs::new();
        t.push([("y", "2")]).unwrap();
        assert_eq!(t.append(&s).unwrap(), 1);
        assert_eq!(t.get(2).count(), 0);
        assert_eq!(t.get(1).collect::<Vec<_>>(), s.get(0).collect::<Vec<_>>());
        assert_eq!(t.get(3).collect::<Vec<_>>(), s.get(2).collect::<Vec<_>>());
    }
}
