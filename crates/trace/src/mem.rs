//! Memory for the big vectors: events, timeline intervals, CPU runs.
//!
//! Page-level hints only, and every one of the workspace's (madvise): how
//! a big buffer is backed and when its pages can go. The allocator itself
//! is never tuned by a library; that is the binary's heap policy
//! (`schedscope`'s `heap` module).
//!
//! On the VMs this project runs on, the first touch of a fresh 4 KiB page
//! costs about as much as decoding the events that fill it (a fault, the
//! kernel zeroing the page, often the host backing it). Vectors of tens of
//! megabytes are therefore asked to be backed by transparent huge pages:
//! one fault per 2 MiB instead of 512. Better still is memory that is
//! already faulted in: a stage that is done with a big buffer leaves it in
//! a [`Spare`] for a later stage to reuse.

use std::mem::MaybeUninit;
use std::sync::Mutex;

/// Transparent huge page size (x86-64, arm64 with 4 KiB pages).
pub const HUGE_PAGE: usize = 2 << 20;

/// An empty vector with room for `n` elements whose memory the kernel is
/// asked to back with transparent huge pages (the whole huge pages inside
/// it: none when it is shorter than two). Empty (growing on demand) when
/// the room cannot be reserved.
pub fn vec_with_huge_pages<T>(n: usize) -> Vec<T> {
    let mut v = Vec::new();
    if v.try_reserve_exact(n).is_err() {
        return Vec::new();
    }
    let len = v.capacity().saturating_mul(std::mem::size_of::<T>());
    advise_huge_pages(v.as_mut_ptr() as usize, len);
    v
}

/// Make room in `v` for `additional` more elements, doubling its capacity
/// when it is full (as `Vec::reserve`), with the kernel asked to back the
/// new room with transparent huge pages (as [`vec_with_huge_pages`]).
pub fn reserve_with_huge_pages<T>(v: &mut Vec<T>, additional: usize) {
    if v.capacity() - v.len() >= additional {
        return;
    }
    let old = v.capacity();
    v.reserve(additional);
    let size = std::mem::size_of::<T>();
    // SAFETY of the range: the new capacity's elements past the old ones
    // lie inside the vector's allocation and are not yet in use.
    let from = v.as_mut_ptr() as usize + old.saturating_mul(size);
    advise_huge_pages(from, (v.capacity() - old).saturating_mul(size));
}

/// madvise(MADV_HUGEPAGE) on the whole 2 MiB pages inside `[addr, addr+len)`.
fn advise_huge_pages(addr: usize, len: usize) {
    #[cfg(target_os = "linux")]
    {
        let start = addr.next_multiple_of(HUGE_PAGE);
        let end = addr.saturating_add(len) / HUGE_PAGE * HUGE_PAGE;
        if end > start {
            // SAFETY: the range lies inside an allocation this process owns
            // and is not yet in use; MADV_HUGEPAGE only changes how the
            // kernel backs it, never its contents or validity. A failure
            // (THP disabled) only costs speed.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (addr, len);
}

/// Give back the whole 2 MiB pages inside `[addr, addr + len)`
/// (madvise MADV_DONTNEED): for a buffer some of whose parts are done with
/// before the whole is freed (the merge's input runs). The pages then read
/// as zeros.
///
/// # Safety
///
/// The range must lie inside one allocation of the caller's, and nothing
/// may read the released pages' former contents afterwards (they read as
/// zeros; writing to them is fine).
pub unsafe fn release_huge_pages(addr: usize, len: usize) {
    #[cfg(target_os = "linux")]
    {
        let start = addr.next_multiple_of(HUGE_PAGE);
        let end = addr.saturating_add(len) / HUGE_PAGE * HUGE_PAGE;
        if end > start {
            // SAFETY: the caller's contract; MADV_DONTNEED on private
            // anonymous memory only drops its contents. Failure only
            // costs memory.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (addr, len);
}

/// Ask the CPU to bring the cache lines of `item` in (its first and last
/// byte), for a load or store a little later; nothing on CPUs without a
/// prefetch instruction.
#[inline(always)]
pub fn prefetch<T>(item: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = (item as *const T).cast::<i8>();
        // SAFETY: SSE is part of the x86_64 baseline; a prefetch has no
        // effect but on the caches, and both addresses are inside `item`.
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(p);
            _mm_prefetch::<_MM_HINT_T0>(p.add(std::mem::size_of::<T>().saturating_sub(1)));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = item;
}

/// An 8-byte word of a reusable buffer.
pub type Word = MaybeUninit<u64>;

/// A buffer one stage is done with, kept for the next one (see the module
/// docs). Holds at most one buffer: the largest put. Cloning gives an
/// empty one.
#[derive(Default)]
pub struct Spare(Mutex<Vec<Word>>);

impl Spare {
    /// Keep `v`'s memory for reuse (when it is larger than what is kept;
    /// element types of any size that is a multiple of 8 bytes and of
    /// alignment 8, like the event and interval types).
    pub fn put<T>(&self, v: Vec<MaybeUninit<T>>) {
        let Some(words) = into_words(v) else {
            return;
        };
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if words.capacity() > kept.capacity() {
            *kept = words;
        }
    }

    /// The kept buffer, when it has room for at least `words` words
    /// (its length is 0, its capacity at least `words`).
    pub fn take(&self, words: usize) -> Option<Vec<Word>> {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        (kept.capacity() >= words).then(|| std::mem::take(&mut *kept))
    }

    /// Size of the kept buffer in bytes (0: none).
    pub fn bytes(&self) -> usize {
        self.0.lock().map_or(0, |k| k.capacity() * 8)
    }
}

impl Clone for Spare {
    fn clone(&self) -> Spare {
        Spare::default()
    }
}

impl std::fmt::Debug for Spare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Spare({} bytes)", self.bytes())
    }
}

/// The memory of `v` as words (its length dropped; nothing in it is
/// initialised as far as the words are concerned). `None` when `T` is not
/// a whole number of 8-byte words aligned to 8.
fn into_words<T>(v: Vec<MaybeUninit<T>>) -> Option<Vec<Word>> {
    let size = std::mem::size_of::<T>();
    if std::mem::align_of::<T>() != 8 || !whole_words::<T>() {
        return None;
    }
    let mut v = std::mem::ManuallyDrop::new(v);
    let (ptr, cap) = (v.as_mut_ptr(), v.capacity());
    // SAFETY: the allocation was made for `cap` elements of `T` with
    // alignment 8, i.e. `cap * size` bytes aligned to 8, which is exactly
    // the layout of `cap * size / 8` words; the words are MaybeUninit, so
    // whatever the bytes hold is valid, and `v` is not used again.
    Some(unsafe { Vec::from_raw_parts(ptr.cast::<Word>(), 0, cap * (size / 8)) })
}

/// Whether `T` fills whole words and needs no more than word alignment.
fn whole_words<T>() -> bool {
    let size = std::mem::size_of::<T>();
    std::mem::align_of::<T>() <= 8 && size.is_multiple_of(8) && size > 0
}

/// How many slots of `T` fit in `words` words (`T`: alignment at most 8,
/// not zero-sized).
fn slots_in<T>(words: usize) -> usize {
    let size = std::mem::size_of::<T>();
    assert!(
        std::mem::align_of::<T>() <= 8 && size > 0,
        "slots need at most word alignment and a size"
    );
    words * 8 / size
}

/// `words` seen as slots of `T` (alignment at most 8, not zero-sized): as
/// many whole slots as fit.
pub fn words_as_slots<T>(words: &mut [Word]) -> &mut [MaybeUninit<T>] {
    let n = slots_in::<T>(words.len());
    // SAFETY: the words are aligned to 8 >= align_of::<T>() and span
    // `n * size` bytes or more; MaybeUninit<T> accepts any bytes; the
    // result borrows `words` mutably, so nothing else aliases it.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<MaybeUninit<T>>(), n) }
}

/// [`words_as_slots`] for reading.
pub fn words_as_slots_ref<T>(words: &[Word]) -> &[MaybeUninit<T>] {
    let n = slots_in::<T>(words.len());
    // SAFETY: as in words_as_slots, shared.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<MaybeUninit<T>>(), n) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_reserved_and_usable() {
        for n in [0usize, 1, 1000, 3 << 20] {
            let mut v: Vec<u64> = vec_with_huge_pages(n);
            assert!(v.capacity() >= n && v.is_empty());
            v.extend((0..n as u64).map(|i| i * 3));
            assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64 * 3));
        }
        // an impossible size gives an empty vector instead of aborting
        let v: Vec<u64> = vec_with_huge_pages(usize::MAX / 4);
        assert_eq!(v.capacity(), 0);
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Six([u64; 6]);

    #[test]
    fn spare_memory_is_reused_as_other_slots() {
        let spare = Spare::default();
        assert!(spare.take(1).is_none());
        // a 7-word element type, as Event is
        let v: Vec<MaybeUninit<[u64; 7]>> = Vec::with_capacity(100);
        let addr = v.as_ptr() as usize;
        spare.put(v);
        // a smaller buffer does not replace the kept one
        spare.put(Vec::<MaybeUninit<[u64; 7]>>::with_capacity(10));
        assert!(spare.take(701).is_none());
        let mut words = spare.take(700).expect("700 words kept");
        assert_eq!(words.as_ptr() as usize, addr);
        assert!(spare.take(1).is_none(), "taken once");
        words.resize(words.capacity(), MaybeUninit::uninit());
        let slots = words_as_slots::<Six>(&mut words);
        assert_eq!(slots.len(), 700 / 6);
        for (i, s) in slots.iter_mut().enumerate() {
            s.write(Six([i as u64; 6]));
        }
        let read = words_as_slots_ref::<Six>(&words);
        let all_written = read.iter().enumerate().all(|(i, s)| {
            // SAFETY: every slot was written in the loop above.
            let v = unsafe { s.assume_init() };
            v == Six([i as u64; 6])
        });
        assert!(all_written);
        // types that are not whole aligned words are not kept
        spare.put(Vec::<MaybeUninit<u32>>::with_capacity(1000));
        assert!(spare.take(1).is_none());
        assert_eq!(format!("{:?}", spare.clone()), "Spare(0 bytes)");
    }
}
