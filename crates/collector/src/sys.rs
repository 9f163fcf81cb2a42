//! The only module with `unsafe`: the perf_event_open syscall, its ioctls,
//! the mmap'ed ring buffer, mount(2) and the signal handler.
//!
//! Why not the `perf-event-open` crate's high-level API: it cannot redirect
//! several events into one ring (PERF_EVENT_IOC_SET_OUTPUT), does not offer
//! PERF_SAMPLE_IDENTIFIER, and does not expose the attr it built, which the
//! file must store byte for byte. Its raw layer is private, so this module
//! issues the few syscalls itself.

use schedscope_parser::perf_data::writer::EventAttr;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_SET_OUTPUT: libc::c_ulong = 0x2405;
const IOC_SET_FILTER: libc::c_ulong = 0x4008_2406;
const IOC_ID: libc::c_ulong = 0x8008_2407;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// Offsets in struct perf_event_mmap_page.
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;
const DATA_OFFSET: usize = 1040;
const DATA_SIZE: usize = 1048;

/// An open perf event.
#[derive(Debug)]
pub struct EventFd(OwnedFd);

impl EventFd {
    /// perf_event_open(attr, pid = -1 (all tasks), cpu, group = -1).
    pub fn open(attr: &EventAttr, cpu: u32) -> io::Result<EventFd> {
        let bytes = attr.to_bytes();
        // SAFETY: `bytes` is a valid perf_event_attr of the size it declares
        // (128), alive for the duration of the call; the kernel only reads it.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                bytes.as_ptr(),
                -1 as libc::pid_t,
                cpu as libc::c_int,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the syscall returned a fresh descriptor that nothing else owns.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd as RawFd) }))
    }

    fn ioctl(&self, req: libc::c_ulong, arg: libc::c_ulong) -> io::Result<libc::c_int> {
        // SAFETY: plain ioctl on a descriptor we own; callers pass either an
        // integer argument or a pointer to memory valid for the request.
        let r = unsafe { libc::ioctl(self.0.as_raw_fd(), req as _, arg) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r)
        }
    }

    /// The kernel's sample id of this event (PERF_EVENT_IOC_ID).
    pub fn id(&self) -> io::Result<u64> {
        let mut id = 0u64;
        // SAFETY: IOC_ID writes one u64 to the pointer, which points at `id`.
        let r = unsafe { libc::ioctl(self.0.as_raw_fd(), IOC_ID as _, &mut id as *mut u64) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(id)
    }

    /// Start counting.
    pub fn enable(&self) -> io::Result<()> {
        self.ioctl(IOC_ENABLE, 0).map(|_| ())
    }

    /// Stop counting.
    pub fn disable(&self) -> io::Result<()> {
        self.ioctl(IOC_DISABLE, 0).map(|_| ())
    }

    /// Send this event's records into `target`'s ring (same CPU).
    pub fn set_output(&self, target: &EventFd) -> io::Result<()> {
        self.ioctl(IOC_SET_OUTPUT, target.0.as_raw_fd() as libc::c_ulong)
            .map(|_| ())
    }

    /// Tracepoint filter (ftrace filter syntax, e.g. `vec == 7`).
    pub fn set_filter(&self, filter: &str) -> io::Result<()> {
        let c = CString::new(filter).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "filter contains a NUL byte")
        })?;
        // SAFETY: the kernel copies the NUL-terminated string before returning.
        let r = unsafe { libc::ioctl(self.0.as_raw_fd(), IOC_SET_FILTER as _, c.as_ptr()) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// read(2) the counter: `words` u64 values (layout per read_format).
    pub fn read_values(&self, out: &mut [u64]) -> io::Result<usize> {
        let len = std::mem::size_of_val(out);
        // SAFETY: `out` is valid writable memory of `len` bytes.
        let r = unsafe { libc::read(self.0.as_raw_fd(), out.as_mut_ptr().cast(), len) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(r as usize / 8)
    }

    /// Raw descriptor (for poll).
    pub fn raw(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// A mapped perf ring buffer: one metadata page + 2^n data pages.
pub struct Ring {
    base: *mut u8,
    map_len: usize,
    data: *const u8,
    size: u64,
}

// SAFETY: the mapping is owned by this value and only accessed through
// &self/&mut self; the kernel side is synchronised through data_head/tail.
unsafe impl Send for Ring {}

impl Ring {
    /// Map `data_pages` (a power of two) data pages of `fd`'s ring.
    pub fn map(fd: &EventFd, data_pages: usize) -> io::Result<Ring> {
        let page = page_size();
        let map_len = (data_pages + 1) * page;
        // SAFETY: a fresh shared mapping of the event fd, as the perf ABI
        // prescribes; the result is checked against MAP_FAILED.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.raw(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = base.cast::<u8>();
        // SAFETY: the metadata page is mapped; these fields are plain u64s
        // the kernel sets at mmap time.
        let (off, size) = unsafe {
            (
                std::ptr::read_volatile(base.add(DATA_OFFSET).cast::<u64>()),
                std::ptr::read_volatile(base.add(DATA_SIZE).cast::<u64>()),
            )
        };
        let (off, size) = if size == 0 {
            (page as u64, (data_pages * page) as u64)
        } else {
            (off, size)
        };
        // SAFETY: data_offset lies inside the mapping (kernel contract).
        let data = unsafe { base.add(off as usize) };
        Ok(Ring {
            base,
            map_len,
            data,
            size,
        })
    }

    fn head_atomic(&self) -> &AtomicU64 {
        // SAFETY: data_head is an 8-byte aligned u64 in the mapped metadata
        // page, written by the kernel; atomic access is the documented way.
        unsafe { &*(self.base.add(DATA_HEAD).cast::<AtomicU64>()) }
    }

    fn tail_atomic(&self) -> &AtomicU64 {
        // SAFETY: as above, for data_tail, which user space writes.
        unsafe { &*(self.base.add(DATA_TAIL).cast::<AtomicU64>()) }
    }

    /// The unread bytes as up to two slices (the second after the wrap),
    /// and the head position to pass to [`Ring::consume`].
    pub fn pending(&self) -> (&[u8], &[u8], u64) {
        let head = self.head_atomic().load(Ordering::Acquire);
        let tail = self.tail_atomic().load(Ordering::Relaxed);
        let len = head.wrapping_sub(tail).min(self.size);
        let start = (tail % self.size) as usize;
        let first = len.min(self.size - start as u64) as usize;
        let second = len as usize - first;
        // SAFETY: [start, start+first) and [0, second) are inside the data
        // area; the kernel does not overwrite bytes between tail and head
        // until we advance data_tail.
        unsafe {
            (
                std::slice::from_raw_parts(self.data.add(start), first),
                std::slice::from_raw_parts(self.data, second),
                tail.wrapping_add(len),
            )
        }
    }

    /// Release the bytes up to `new_tail` to the kernel.
    pub fn consume(&mut self, new_tail: u64) {
        self.tail_atomic().store(new_tail, Ordering::Release);
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the region mapped in `map`.
        unsafe {
            libc::munmap(self.base.cast(), self.map_len);
        }
    }
}

/// System page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// poll(2) the descriptors for input; returns normally on timeout or EINTR.
pub fn poll_in(fds: &[RawFd], timeout_ms: i32) -> io::Result<()> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `p` is a valid array of p.len() pollfd structs.
    let r = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// mount -t tracefs nodev `target`.
pub fn mount_tracefs(target: &str) -> io::Result<()> {
    let src = CString::new("nodev").map_err(io::Error::other)?;
    let fstype = CString::new("tracefs").map_err(io::Error::other)?;
    let tgt = CString::new(target)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path has a NUL byte"))?;
    // SAFETY: all strings are NUL-terminated and outlive the call.
    let r = unsafe {
        libc::mount(
            src.as_ptr(),
            tgt.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Lower the calling thread's nice value to `nice` (needs CAP_SYS_NICE;
/// failures are ignored: the recording works, only with more risk of loss).
/// On Linux the nice value is per thread, and children forked later inherit
/// it, so call this after starting the command.
pub fn raise_priority(nice: i32) {
    // SAFETY: setpriority has no memory-safety preconditions; who = 0 is
    // the calling thread.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, nice);
    }
}

/// Effective user id.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

static STOP: AtomicBool = AtomicBool::new(false);
static STOP_SIGNAL: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    STOP_SIGNAL.store(sig as u64, Ordering::Relaxed);
    STOP.store(true, Ordering::Release);
}

/// Install SIGINT/SIGTERM/SIGHUP handlers that request a clean stop
/// (without SA_RESTART, so a blocked poll returns at once).
pub fn install_stop_handlers() -> io::Result<()> {
    STOP.store(false, Ordering::Release);
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction with a handler that only stores
        // atomics (async-signal-safe) is a valid argument.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) < 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// Whether a stop signal arrived, and which.
pub fn stop_requested() -> Option<i32> {
    if STOP.load(Ordering::Acquire) {
        Some(STOP_SIGNAL.load(Ordering::Relaxed) as i32)
    } else {
        None
    }
}

/// Send `sig` to process `pid`.
pub fn kill(pid: u32, sig: i32) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// clock_gettime(CLOCK_MONOTONIC) in ns: the clock the events are stamped with.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
