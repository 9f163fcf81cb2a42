//! The process's heap policy: chosen here, by the binary, and nowhere else.
//!
//! The libraries allocate through the global allocator and never tune it;
//! they only hint how big buffers are backed (`schedscope_trace::mem`:
//! transparent huge pages for the event and interval vectors, pages given
//! back once merged). What suits a one-shot command that builds and drops
//! hundreds of megabytes on two threads is the binary's call, measured
//! (docs/performance.md, "The allocator"):
//!
//! - glibc's malloc, with its heaps grown [`HEAP_STEP`] at a time
//!   ([`for_one_shot_command`]); mimalloc only behind the `mimalloc` cargo
//!   feature, to reproduce the measurement that kept glibc;
//! - free memory handed back between the export's phases
//!   ([`give_back_free_memory`]);
//! - no freeing at exit ([`leave_to_exit`]).

/// How much glibc grows its heaps by once [`for_one_shot_command`] ran.
pub const HEAP_STEP: usize = 64 << 20;

/// mimalloc instead of glibc's malloc, only to measure the choice.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Ask glibc's malloc to grow (and keep) its heaps [`HEAP_STEP`] at a time
/// instead of by what each allocation needs (`M_TOP_PAD`). By default every
/// worker thread's arena grows page by page with one `mprotect` per step,
/// and each `mprotect` of a multi-threaded process flushes the TLB of the
/// other CPUs: a `report` of a 1.7 M-event file made about 1,100 of them,
/// 12 with this. Address space only: pages are not touched (so not
/// resident) until used. A no-op where the C library is not glibc or the
/// allocator is not malloc.
pub fn for_one_shot_command() {
    #[cfg(all(target_os = "linux", target_env = "gnu", not(feature = "mimalloc")))]
    // SAFETY: mallopt only changes a malloc tuning parameter; it is called
    // with a valid parameter and value and has no memory-safety contract.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, HEAP_STEP as libc::c_int);
    }
}

/// Give the allocator's free memory back to the system. glibc keeps what a
/// worker thread freed in that thread's arena, where the main thread's next
/// allocations cannot reuse it: the export calls this between its phases
/// (through `ExportOptions::give_back_memory`), so that the timeline built
/// after the event tables raises the peak by its own size only.
pub fn give_back_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu", not(feature = "mimalloc")))]
    // SAFETY: malloc_trim only releases free heap memory; it has no
    // preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Leave `value`'s memory to the operating system at exit instead of
/// freeing it piece by piece: for the big structures of a command that
/// exits next (millions of events and intervals; freeing them one by one
/// took about 5% of a `report`).
pub fn leave_to_exit<T>(value: T) {
    std::mem::forget(value);
}
