//! Moving ring-buffer bytes into the file: records are copied unchanged;
//! only their headers are read, to count samples per event and losses.

use crate::open::CpuRing;
use schedscope_perf_data::abi;
use schedscope_perf_data::{AttrSpec, PerfDataWriter};
use std::fs::File;
use std::io;

/// In-stream losses of one ring (one CPU).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RingLoss {
    /// Samples lost (sum of its PERF_RECORD_LOST counts).
    pub(crate) lost: u64,
    /// Time of the first and the last PERF_RECORD_LOST (the events' clock).
    pub(crate) first_ns: u64,
    pub(crate) last_ns: u64,
}

/// Sample and loss counters, filled while scanning drained bytes.
pub(crate) struct Counts {
    /// (id, event index), sorted by id.
    pub(crate) by_id: Vec<(u64, usize)>,
    pub(crate) per_event: Vec<u64>,
    pub(crate) samples: u64,
    pub(crate) lost_in_stream: u64,
    pub(crate) lost_records: u64,
    /// Per ring, in ring (online CPU) order.
    pub(crate) lost_by_ring: Vec<RingLoss>,
    /// The fullest a ring was when drained: (parts per million of its
    /// size, ring index). How close the recording came to losing events.
    pub(crate) fullest: (u64, usize),
}

impl Counts {
    pub(crate) fn new(specs: &[AttrSpec], rings: usize) -> Counts {
        let mut by_id: Vec<(u64, usize)> = specs
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.ids.iter().map(move |&id| (id, i)))
            .collect();
        by_id.sort_unstable();
        Counts {
            by_id,
            per_event: vec![0; specs.len()],
            samples: 0,
            lost_in_stream: 0,
            lost_records: 0,
            lost_by_ring: vec![RingLoss::default(); rings],
            fullest: (0, 0),
        }
    }

    /// Walk the record headers of ring `ring`'s bytes `a` followed by `b`.
    pub(crate) fn scan(&mut self, ring: usize, a: &[u8], b: &[u8]) {
        let len = a.len() + b.len();
        let byte = |i: usize| if i < a.len() { a[i] } else { b[i - a.len()] };
        let read = |i: usize, n: usize| -> u64 {
            let mut v = [0u8; 8];
            if i + n <= a.len() {
                v[..n].copy_from_slice(&a[i..i + n]);
            } else {
                for (k, slot) in v.iter_mut().enumerate().take(n) {
                    *slot = byte(i + k);
                }
            }
            u64::from_ne_bytes(v)
        };
        let mut pos = 0usize;
        while pos + 8 <= len {
            let ty = read(pos, 4) as u32;
            let size = ((read(pos, 8) >> 48) & 0xffff) as usize;
            if size < 8 || pos + size > len {
                break;
            }
            if ty == abi::RecordType::SAMPLE.0 && size >= 16 {
                let id = read(pos + 8, 8);
                self.samples += 1;
                if let Ok(k) = self.by_id.binary_search_by_key(&id, |&(i, _)| i) {
                    self.per_event[self.by_id[k].1] += 1;
                }
            } else if ty == abi::RecordType::LOST.0 && size >= 24 {
                let lost = read(pos + 16, 8);
                self.lost_records += 1;
                self.lost_in_stream += lost;
                // sample_id trailer: pid/tid, then time (every attr we
                // open has TID and TIME).
                let ts = if size >= 40 { read(pos + 32, 8) } else { 0 };
                if let Some(r) = self.lost_by_ring.get_mut(ring) {
                    if r.lost == 0 {
                        r.first_ns = ts;
                    }
                    r.lost += lost;
                    r.last_ns = ts;
                }
            }
            pos += size;
        }
    }
}

/// Copy everything pending in every ring to the file. Returns bytes moved.
pub(crate) fn drain(
    rings: &mut [CpuRing],
    w: &mut PerfDataWriter<File>,
    counts: &mut Counts,
) -> io::Result<u64> {
    let mut moved = 0;
    for (i, r) in rings.iter_mut().enumerate() {
        let new_tail = {
            let (a, b, new_tail) = r.ring.pending();
            if a.is_empty() {
                continue;
            }
            let len = (a.len() + b.len()) as u64;
            let ppm = len.saturating_mul(1_000_000) / r.ring.size().max(1);
            if ppm > counts.fullest.0 {
                counts.fullest = (ppm, i);
            }
            counts.scan(i, a, b);
            w.write_records(a)?;
            w.write_records(b)?;
            moved += (a.len() + b.len()) as u64;
            new_tail
        };
        r.ring.consume(new_tail);
    }
    if moved > 0 {
        w.finished_round()?;
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedscope_perf_data::EventAttr;

    #[test]
    fn scan_counts_records_split_across_the_wrap() {
        let specs = vec![AttrSpec {
            attr: EventAttr::tracepoint(1),
            name: "a:b".into(),
            ids: vec![42],
        }];
        let mut c = Counts::new(&specs, 2);
        let mut bytes = Vec::new();
        // SAMPLE with id 42, 24 bytes.
        bytes.extend_from_slice(&9u32.to_ne_bytes());
        bytes.extend_from_slice(&0u16.to_ne_bytes());
        bytes.extend_from_slice(&24u16.to_ne_bytes());
        bytes.extend_from_slice(&42u64.to_ne_bytes());
        bytes.extend_from_slice(&0u64.to_ne_bytes());
        // LOST: id, lost = 5, sample_id: pid/tid, time 1234.
        bytes.extend_from_slice(&2u32.to_ne_bytes());
        bytes.extend_from_slice(&0u16.to_ne_bytes());
        bytes.extend_from_slice(&40u16.to_ne_bytes());
        bytes.extend_from_slice(&42u64.to_ne_bytes());
        bytes.extend_from_slice(&5u64.to_ne_bytes());
        bytes.extend_from_slice(&0u64.to_ne_bytes());
        bytes.extend_from_slice(&1234u64.to_ne_bytes());
        for split in 0..bytes.len() {
            let mut c2 = Counts::new(&specs, 2);
            c2.scan(1, &bytes[..split], &bytes[split..]);
            assert_eq!(
                (c2.samples, c2.per_event[0], c2.lost_in_stream),
                (1, 1, 5),
                "split {split}"
            );
        }
        c.scan(1, &bytes, &[]);
        c.scan(1, &bytes, &[]);
        assert_eq!(c.lost_records, 2);
        assert_eq!(c.lost_by_ring[0], RingLoss::default(), "other CPU");
        assert_eq!(
            c.lost_by_ring[1],
            RingLoss {
                lost: 10,
                first_ns: 1234,
                last_ns: 1234
            }
        );
    }
}
