//! The tokenizer of one CPU's ring-buffer pages, read the way libtraceevent's
//! kbuffer reads them: a page is a timestamp, a `commit` word (the number of
//! data bytes, with the missed-events flags in its top bits) and events, each
//! a 32-bit header of `type_len` (5 bits) and `time_delta` (27 bits).
//!
//! * `type_len` 1..=28: a data event of `type_len * 4` bytes.
//! * 0: a data event whose length (plus 4) is the next 32-bit word.
//! * 29 (padding): a discarded event, skipped; `time_delta` 0 ends the page.
//! * 30 (time extend): the next word holds bits 27.. of a larger delta.
//! * 31 (time stamp): an absolute timestamp (59 bits, the top ones taken
//!   from the page timestamp).
//!
//! Every length is checked against the page before it is used; a page whose
//! header or events do not fit is counted and skipped, and a page whose
//! timestamp goes back in time against its neighbours is taken as damage.

use super::meta::PageLayout;

const PADDING: u32 = 29;
const TIME_EXTEND: u32 = 30;
const TIME_STAMP: u32 = 31;
const TS_SHIFT: u32 = 27;
/// Bits of `commit` that count data bytes (kbuffer's COMMIT_MASK).
const COMMIT_MASK: u64 = (1 << 27) - 1;
/// The kernel lost events before this page.
const MISSED_EVENTS: u64 = 1 << 31;
/// ... and stored how many after the data.
const MISSED_STORED: u64 = 1 << 30;
/// Top bits of an absolute timestamp that the event does not store.
const TS_MSB: u64 = 0xf8 << 56;
/// Largest gap taken as real between a CPU's last page and the events
/// before it (about 9.8 hours); beyond it the last page's time is damage.
/// Pages with a successor are checked against it instead.
const MAX_GAP: u64 = 1 << 45;

/// What walking a CPU's pages found besides events.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    /// Events the kernel reported lost (when it stored the count).
    pub lost: u64,
    /// Pages that report lost events without a count.
    pub lost_unknown: u64,
    /// Pages skipped as damaged, and the offset (in the CPU's data) of the first.
    pub bad_pages: u64,
    /// Offset in the CPU's data of the first damaged page.
    pub first_bad: Option<u64>,
    /// Events dropped because their time went back on this CPU.
    pub backwards: u64,
    /// A partial page at the end of the data.
    pub partial_tail: bool,
}

/// Read little-endian `n` (4 or 8) bytes at `at`.
fn word(b: &[u8], at: usize, n: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(n)?)?;
    let mut a = [0u8; 8];
    a[..n].copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    word(b, at, 4).map(|v| v as u32)
}

/// Call `on_event(ts, payload, offset)` for every data event in `data`
/// (a CPU's pages of `page_size` bytes), in order; `offset` is the event's
/// offset in `data`.
pub fn walk<'a>(
    data: &'a [u8],
    page_size: usize,
    layout: PageLayout,
    mut on_event: impl FnMut(u64, &'a [u8], u64),
) -> Stats {
    let mut st = Stats::default();
    if page_size <= layout.data_offset {
        st.bad_pages = 1;
        st.first_bad = Some(0);
        return st;
    }
    let pages: Vec<&'a [u8]> = data.chunks(page_size).collect();
    if pages.last().is_some_and(|p| p.len() < page_size) {
        st.partial_tail = true;
    }
    let page_ts: Vec<u64> = pages.iter().map(|p| word(p, 0, 8).unwrap_or(0)).collect();
    let bad = |st: &mut Stats, at: usize| {
        st.bad_pages += 1;
        st.first_bad.get_or_insert(at as u64);
    };
    let mut last_ts = 0u64; // the last event's time on this CPU
    for (n, page) in pages.iter().enumerate() {
        let at = n * page_size;
        let Some(commit) = word(page, 8, layout.commit_size) else {
            bad(&mut st, at);
            continue;
        };
        let size = (commit & COMMIT_MASK) as usize;
        let end = layout.data_offset + size;
        if size == 0 {
            continue;
        }
        if end > page.len() {
            bad(&mut st, at);
            continue;
        }
        let ts0 = page_ts[n];
        // a page whose time is before the events already read, or after
        // the next page's while that one follows on, is damaged
        let next_ok = page_ts
            .get(n + 1)
            .is_none_or(|&nx| ts0 <= nx || nx < last_ts);
        let last_page_jump =
            n + 1 == pages.len() && last_ts > 0 && ts0 - last_ts.min(ts0) > MAX_GAP;
        if ts0 < last_ts || !next_ok || last_page_jump {
            bad(&mut st, at);
            continue;
        }
        // no event of this page is later than the next page's start
        let limit = match page_ts.get(n + 1) {
            Some(&nx) if nx >= ts0 => nx,
            _ => ts0.saturating_add(MAX_GAP),
        };
        if commit & MISSED_EVENTS != 0 {
            if commit & MISSED_STORED != 0 {
                let lost = word(page, end, layout.commit_size).unwrap_or(0);
                // a count beyond the bytes a page could hold is damage
                st.lost = st.lost.saturating_add(lost.min(1 << 32));
            } else {
                st.lost_unknown += 1;
            }
        }
        let body = &page[layout.data_offset..end];
        let mut ts = ts0;
        let mut pos = 0usize;
        let mut page_bad = false;
        while pos + 4 <= body.len() {
            let Some(h) = u32_at(body, pos) else { break };
            let type_len = h & 0x1f;
            let delta = (h >> 5) as u64;
            match type_len {
                PADDING => {
                    if delta == 0 {
                        break; // the rest of the page is empty
                    }
                    let Some(len) = u32_at(body, pos + 4) else {
                        page_bad = true;
                        break;
                    };
                    ts = ts.saturating_add(delta);
                    pos = pos + 4 + len as usize;
                }
                TIME_EXTEND | TIME_STAMP => {
                    let Some(ext) = u32_at(body, pos + 4) else {
                        page_bad = true;
                        break;
                    };
                    let v = ((ext as u64) << TS_SHIFT) + delta;
                    if type_len == TIME_EXTEND {
                        ts = ts.saturating_add(v);
                    } else {
                        let mut abs = v;
                        if ts0 & TS_MSB != 0 {
                            abs |= ts0 & TS_MSB;
                            if abs < ts0 {
                                abs = abs.wrapping_add(1 << 59);
                            }
                        }
                        ts = abs;
                    }
                    pos += 8;
                }
                _ => {
                    let (start, len) = if type_len == 0 {
                        let Some(l) = u32_at(body, pos + 4) else {
                            page_bad = true;
                            break;
                        };
                        if l < 4 {
                            page_bad = true;
                            break;
                        }
                        (pos + 8, ((l as usize - 4) + 3) & !3)
                    } else {
                        (pos + 4, type_len as usize * 4)
                    };
                    let Some(payload) = body.get(start..start + len) else {
                        page_bad = true;
                        break;
                    };
                    ts = ts.saturating_add(delta);
                    if ts > limit {
                        page_bad = true;
                        break;
                    }
                    if ts < last_ts {
                        st.backwards += 1;
                    } else {
                        last_ts = ts;
                        on_event(ts, payload, (at + layout.data_offset + start) as u64);
                    }
                    pos = start + len;
                }
            }
        }
        if page_bad {
            bad(&mut st, at);
        }
    }
    st
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: PageLayout = PageLayout {
        commit_size: 8,
        data_offset: 16,
    };

    fn page(ts: u64, body: &[u8], size: usize) -> Vec<u8> {
        let mut p = ts.to_le_bytes().to_vec();
        p.extend_from_slice(&(body.len() as u64).to_le_bytes());
        p.extend_from_slice(body);
        p.resize(size, 0);
        p
    }

    fn hdr(type_len: u32, delta: u32) -> [u8; 4] {
        (type_len | (delta << 5)).to_le_bytes()
    }

    fn events(data: &[u8], page_size: usize) -> (Vec<(u64, Vec<u8>)>, Stats) {
        let mut out = Vec::new();
        let st = walk(data, page_size, L, |ts, p, _| out.push((ts, p.to_vec())));
        (out, st)
    }

    /// Deltas, a time extend, an absolute stamp, a long event and padding,
    /// each with its hand-computed time.
    #[test]
    fn event_kinds_and_times() {
        let mut b = Vec::new();
        b.extend_from_slice(&hdr(1, 5)); // +5: 4-byte event
        b.extend_from_slice(&[1, 0, 0, 0]);
        b.extend_from_slice(&hdr(TIME_EXTEND, 3)); // + (2<<27)+3
        b.extend_from_slice(&2u32.to_le_bytes());
        b.extend_from_slice(&hdr(0, 1)); // +1: long event, 6 bytes rounded to 8
        b.extend_from_slice(&10u32.to_le_bytes());
        b.extend_from_slice(&[2, 0, 0, 0, 0, 0, 0, 0]);
        // a discarded event, +7: its length word counts itself and 4 bytes
        b.extend_from_slice(&hdr(PADDING, 7));
        b.extend_from_slice(&8u32.to_le_bytes());
        b.extend_from_slice(&[9, 9, 9, 9]);
        b.extend_from_slice(&hdr(TIME_STAMP, 100)); // absolute (3<<27)+100
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&hdr(1, 0));
        b.extend_from_slice(&[3, 0, 0, 0]);
        assert!(b.len() <= 112);
        let data = page(1000, &b, 128);
        let (ev, st) = events(&data, 128);
        let t2 = 1005 + (2 << 27) + 3 + 1;
        assert_eq!(
            ev,
            vec![
                (1005, vec![1, 0, 0, 0]),
                (t2, vec![2, 0, 0, 0, 0, 0, 0, 0]),
                ((3 << 27) + 100, vec![3, 0, 0, 0]),
            ]
        );
        assert_eq!(st.backwards, 0);
        assert_eq!(st.bad_pages, 0);
    }

    #[test]
    fn damaged_pages_are_skipped_and_counted() {
        let mut data = page(10, &[hdr(1, 1), [7, 0, 0, 0]].concat(), 64);
        // a commit beyond the page
        let mut p2 = page(20, &[], 64);
        p2[8..16].copy_from_slice(&1000u64.to_le_bytes());
        data.extend_from_slice(&p2);
        // a page whose time goes back
        data.extend_from_slice(&page(5, &[hdr(1, 1), [8, 0, 0, 0]].concat(), 64));
        data.extend_from_slice(&page(30, &[hdr(1, 1), [9, 0, 0, 0]].concat(), 64));
        // a truncated tail
        data.extend_from_slice(&[1, 2, 3]);
        let (ev, st) = events(&data, 64);
        assert_eq!(ev, vec![(11, vec![7, 0, 0, 0]), (31, vec![9, 0, 0, 0])]);
        assert_eq!(st.bad_pages, 3);
        assert_eq!(st.first_bad, Some(64));
        assert!(st.partial_tail);
    }

    /// A damaged time extend that throws an event past the next page's
    /// start blames its own page, not the next one; a last page far beyond
    /// the others is damage too.
    #[test]
    fn times_beyond_the_neighbours_are_damage() {
        let mut b = hdr(1, 1).to_vec();
        b.extend_from_slice(&[7, 0, 0, 0]);
        b.extend_from_slice(&hdr(TIME_EXTEND, 0));
        b.extend_from_slice(&0xffffu32.to_le_bytes());
        b.extend_from_slice(&hdr(1, 1));
        b.extend_from_slice(&[8, 0, 0, 0]);
        let mut data = page(10, &b, 64);
        data.extend_from_slice(&page(100, &[hdr(1, 1), [9, 0, 0, 0]].concat(), 64));
        data.extend_from_slice(&page(
            100 + MAX_GAP * 2,
            &[hdr(1, 1), [10, 0, 0, 0]].concat(),
            64,
        ));
        let (ev, st) = events(&data, 64);
        assert_eq!(ev, vec![(11, vec![7, 0, 0, 0]), (101, vec![9, 0, 0, 0])]);
        assert_eq!(st.bad_pages, 2);
        assert_eq!(st.first_bad, Some(0));
    }

    #[test]
    fn stored_lost_count() {
        let mut p = page(10, &[hdr(1, 1), [7, 0, 0, 0]].concat(), 64);
        let commit = 8u64 | MISSED_EVENTS | MISSED_STORED;
        p[8..16].copy_from_slice(&commit.to_le_bytes());
        p[24..32].copy_from_slice(&42u64.to_le_bytes());
        let (ev, st) = events(&p, 64);
        assert_eq!(ev.len(), 1);
        assert_eq!(st.lost, 42);
    }
}
