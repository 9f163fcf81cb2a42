//! The only `unsafe` of the workload: anonymous mmap/munmap and getrusage.

use std::io;

/// An anonymous private mapping, unmapped on drop.
pub struct Chunk {
    ptr: *mut u64,
    len: usize,
}

impl Chunk {
    /// Map `bytes` (rounded down to whole u64 words, at least one).
    pub fn map(bytes: usize) -> io::Result<Chunk> {
        let len = (bytes / 8).max(1);
        // SAFETY: anonymous private mapping with no address hint; the result
        // is checked against MAP_FAILED before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len * 8,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Chunk { ptr: p.cast(), len })
    }

    /// The mapping as words.
    pub fn as_mut_slice(&mut self) -> &mut [u64] {
        // SAFETY: the mapping is `len` u64s, page-aligned, zero-filled, and
        // exclusively borrowed through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the region mapped in `map`; no slice of
        // it outlives `self`.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len * 8);
        }
    }
}

/// User and system CPU time of this process in seconds.
pub fn cpu_times() -> (f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}
