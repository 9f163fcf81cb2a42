//! The only module with `unsafe`: the perf_event_open syscall, its ioctls,
//! the mmap'ed ring buffer, mount(2) and the signal handler.
//!
//! Struct layouts (`perf_event_attr`, `perf_event_mmap_page`), ioctl numbers
//! and flags come from `perf-event-open-sys`, whose bindgen layout tests
//! check them against the kernel headers; the tests below check that
//! schedscope's own ABI constants (`schedscope_perf_data::abi`, the attr
//! bytes the file stores) agree with those bindings.
//!
//! Why not the `perf-event-open` crate's high-level API: it cannot redirect
//! several events into one ring (PERF_EVENT_IOC_SET_OUTPUT), does not offer
//! PERF_SAMPLE_IDENTIFIER, and does not expose the attr it built, which the
//! file must store byte for byte.

use perf_event_open_sys::bindings::{self, perf_event_attr, perf_event_mmap_page};
use perf_event_open_sys::ioctls;
use schedscope_perf_data::attr::ATTR_SIZE;
use schedscope_perf_data::EventAttr;
use std::ffi::CString;
use std::io;
use std::mem::offset_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Offsets in struct perf_event_mmap_page.
const DATA_HEAD: usize = offset_of!(perf_event_mmap_page, data_head);
const DATA_TAIL: usize = offset_of!(perf_event_mmap_page, data_tail);
const DATA_OFFSET: usize = offset_of!(perf_event_mmap_page, data_offset);
const DATA_SIZE: usize = offset_of!(perf_event_mmap_page, data_size);

/// The bindgen struct holding `attr`'s ABI bytes (its fields past
/// [`ATTR_SIZE`] zero).
fn raw_attr(attr: &EventAttr) -> perf_event_attr {
    const { assert!(std::mem::size_of::<perf_event_attr>() >= ATTR_SIZE) };
    let bytes = attr.to_bytes();
    // SAFETY: perf_event_attr is plain integers and unions of integers,
    // for which all-zero bytes are a valid value.
    let mut raw: perf_event_attr = unsafe { std::mem::zeroed() };
    // SAFETY: `raw` is at least ATTR_SIZE bytes long (checked above at
    // compile time) and does not overlap `bytes`; every byte pattern is a
    // valid perf_event_attr.
    unsafe {
        std::ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            (&mut raw as *mut perf_event_attr).cast::<u8>(),
            ATTR_SIZE,
        );
    }
    raw
}

/// Map a -1 return of a syscall wrapper to the errno error.
fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// An open perf event.
#[derive(Debug)]
pub struct EventFd(OwnedFd);

impl EventFd {
    /// perf_event_open(attr, pid = -1 (all tasks), cpu, group = -1).
    pub fn open(attr: &EventAttr, cpu: u32) -> io::Result<EventFd> {
        let mut raw = raw_attr(attr);
        // SAFETY: `raw` is a valid perf_event_attr whose `size` field (128)
        // the kernel honours; it is alive for the duration of the call and
        // the kernel only reads it.
        let fd = check(unsafe {
            perf_event_open_sys::perf_event_open(
                &mut raw,
                -1,
                cpu as libc::c_int,
                -1,
                bindings::PERF_FLAG_FD_CLOEXEC as libc::c_ulong,
            )
        })?;
        // SAFETY: the syscall returned a fresh descriptor that nothing else owns.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd as RawFd) }))
    }

    /// The kernel's sample id of this event (PERF_EVENT_IOC_ID).
    pub fn id(&self) -> io::Result<u64> {
        let mut id = 0u64;
        // SAFETY: IOC_ID writes one u64 to the pointer, which points at `id`.
        check(unsafe { ioctls::ID(self.raw(), &mut id) })?;
        Ok(id)
    }

    /// Start counting.
    pub fn enable(&self) -> io::Result<()> {
        // SAFETY: PERF_EVENT_IOC_ENABLE takes an integer argument.
        check(unsafe { ioctls::ENABLE(self.raw(), 0) }).map(|_| ())
    }

    /// Stop counting.
    pub fn disable(&self) -> io::Result<()> {
        // SAFETY: PERF_EVENT_IOC_DISABLE takes an integer argument.
        check(unsafe { ioctls::DISABLE(self.raw(), 0) }).map(|_| ())
    }

    /// Send this event's records into `target`'s ring (same CPU).
    pub fn set_output(&self, target: &EventFd) -> io::Result<()> {
        // SAFETY: PERF_EVENT_IOC_SET_OUTPUT takes a descriptor, which we own.
        check(unsafe { ioctls::SET_OUTPUT(self.raw(), target.raw()) }).map(|_| ())
    }

    /// Tracepoint filter (ftrace filter syntax, e.g. `vec == 7`).
    pub fn set_filter(&self, filter: &str) -> io::Result<()> {
        let c = CString::new(filter).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "filter contains a NUL byte")
        })?;
        // SAFETY: the kernel copies the NUL-terminated string before
        // returning and does not write to it.
        check(unsafe { ioctls::SET_FILTER(self.raw(), c.as_ptr().cast_mut()) }).map(|_| ())
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

    /// Bytes of the data area.
    pub fn size(&self) -> u64 {
        self.size
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

/// A descriptor that polls readable when process `pid` exits
/// (pidfd_open(2), Linux 5.3).
pub fn pidfd_open(pid: u32) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `r` is a descriptor we just got and own.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(r as RawFd) })
}

/// Run `f` on a new thread that never receives the stop signals, so that
/// SIGINT/SIGTERM/SIGHUP always reach (and interrupt the poll of) the
/// recording thread. The signals are blocked in the caller while the
/// thread is created (it inherits the mask) and unblocked after; one that
/// arrives meanwhile stays pending and is delivered to the caller then.
pub fn spawn_quiet<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    // SAFETY: the sigset_t values are initialised by sigemptyset before
    // use, and pthread_sigmask only reads/writes them.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        let h = std::thread::spawn(f);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        h
    }
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
/// failures are ignored: the recording works, only with more risk of loss)
/// and return the nice value it had. On Linux the nice value is per thread
/// and children inherit it: start commands with [`spawn_with_nice`].
pub fn raise_priority(nice: i32) -> i32 {
    // SAFETY: getpriority/setpriority have no memory-safety preconditions;
    // who = 0 is the calling thread. -1 is a valid nice value, so errno
    // tells a failure apart; on failure the default 0 is assumed.
    unsafe {
        *libc::__errno_location() = 0;
        let old = libc::getpriority(libc::PRIO_PROCESS, 0);
        let old = if old == -1 && *libc::__errno_location() != 0 {
            0
        } else {
            old
        };
        libc::setpriority(libc::PRIO_PROCESS, 0, nice);
        old
    }
}

/// Spawn `cmd` with nice value `nice` (the caller's before
/// [`raise_priority`]), so the recorded command runs as it would unrecorded.
pub fn spawn_with_nice(
    cmd: &mut std::process::Command,
    nice: i32,
) -> io::Result<std::process::Child> {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and only
    // makes the async-signal-safe setpriority syscall; a failure (no
    // CAP_SYS_NICE to go back up) is ignored, the command then keeps the
    // recorder's nice value.
    unsafe {
        cmd.pre_exec(move || {
            libc::setpriority(libc::PRIO_PROCESS, 0, nice);
            Ok(())
        });
    }
    cmd.spawn()
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

/// clock_gettime(`id`) in ns (0 if the clock does not exist).
fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// clock_gettime(CLOCK_MONOTONIC) in ns: the clock the events are stamped with.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// The events' clock (CLOCK_MONOTONIC) against the time of day, for
/// HEADER_CLOCK_DATA: the monotonic clock read between two CLOCK_REALTIME
/// reads, the time of day taken as their midpoint (perf reads
/// gettimeofday, microseconds, then the clock). `None` if a clock fails.
pub fn wall_clock_anchor() -> Option<schedscope_trace::WallClock> {
    let before = clock_ns(libc::CLOCK_REALTIME);
    let mono = monotonic_ns();
    // never before `before`: a step backwards between the reads would
    // underflow the midpoint
    let after = clock_ns(libc::CLOCK_REALTIME).max(before);
    (before > 0 && mono > 0).then_some(schedscope_trace::WallClock {
        clockid: libc::CLOCK_MONOTONIC as u32,
        tod_ns: before + (after - before) / 2,
        clock_ns: mono,
    })
}

/// clock_getres(CLOCK_MONOTONIC) in ns, for HEADER_CLOCKID.
pub fn monotonic_res_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into.
    let rc = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedscope_perf_data::{abi, attr_flag};

    /// `EventAttr::to_bytes` read back through the bindgen struct: every
    /// field lands where the kernel header puts it.
    #[test]
    fn attr_bytes_match_the_bindgen_layout() {
        let a = EventAttr {
            kind: 7,
            config: 0x1111,
            sample_period: 0x2222,
            sample_type: 0x3333,
            read_format: 0x4444,
            flags: attr_flag::DISABLED,
            wakeup: 0x5555,
            clockid: 6,
            sample_max_stack: 0x77,
        };
        let raw = raw_attr(&a);
        assert_eq!(raw.type_, 7);
        assert_eq!(raw.size, bindings::PERF_ATTR_SIZE_VER7);
        assert_eq!(raw.config, 0x1111);
        // SAFETY: reading an integer member of a union of integers.
        assert_eq!(unsafe { raw.__bindgen_anon_1.sample_period }, 0x2222);
        assert_eq!(raw.sample_type, 0x3333);
        assert_eq!(raw.read_format, 0x4444);
        assert_eq!(raw.disabled(), 1);
        assert_eq!(raw.inherit(), 0);
        // SAFETY: as above.
        assert_eq!(unsafe { raw.__bindgen_anon_2.wakeup_watermark }, 0x5555);
        assert_eq!(raw.clockid, 6);
        assert_eq!(raw.sample_max_stack, 0x77);
    }

    /// Each flag bit schedscope sets is the bindgen bitfield of that name.
    #[test]
    fn attr_flag_bits_match_the_bindgen_bitfields() {
        type Set = fn(&mut perf_event_attr, u64);
        let cases: [(u64, Set); 13] = [
            (attr_flag::DISABLED, perf_event_attr::set_disabled),
            (attr_flag::INHERIT, perf_event_attr::set_inherit),
            (attr_flag::EXCLUDE_HV, perf_event_attr::set_exclude_hv),
            (attr_flag::MMAP, perf_event_attr::set_mmap),
            (attr_flag::COMM, perf_event_attr::set_comm),
            (attr_flag::FREQ, perf_event_attr::set_freq),
            (attr_flag::TASK, perf_event_attr::set_task),
            (attr_flag::WATERMARK, perf_event_attr::set_watermark),
            (attr_flag::SAMPLE_ID_ALL, perf_event_attr::set_sample_id_all),
            (
                attr_flag::EXCLUDE_CALLCHAIN_USER,
                perf_event_attr::set_exclude_callchain_user,
            ),
            (attr_flag::MMAP2, perf_event_attr::set_mmap2),
            (attr_flag::COMM_EXEC, perf_event_attr::set_comm_exec),
            (attr_flag::USE_CLOCKID, perf_event_attr::set_use_clockid),
        ];
        for (bit, set) in cases {
            // SAFETY: all-zero bytes are a valid perf_event_attr.
            let mut raw: perf_event_attr = unsafe { std::mem::zeroed() };
            set(&mut raw, 1);
            let ours = EventAttr {
                flags: bit,
                ..EventAttr::default()
            }
            .to_bytes();
            // SAFETY: `raw` is a plain struct of at least ATTR_SIZE bytes.
            let theirs = unsafe {
                std::slice::from_raw_parts((&raw as *const perf_event_attr).cast::<u8>(), 48)
            };
            assert_eq!(&ours[40..48], &theirs[40..48], "flag bit {bit:#x}");
        }
    }

    #[test]
    fn abi_constants_match_the_bindings() {
        use abi::{read_format as rf, sample as s};
        let pairs: &[(u64, u64)] = &[
            (s::IP, bindings::PERF_SAMPLE_IP as u64),
            (s::TID, bindings::PERF_SAMPLE_TID as u64),
            (s::TIME, bindings::PERF_SAMPLE_TIME as u64),
            (s::CALLCHAIN, bindings::PERF_SAMPLE_CALLCHAIN as u64),
            (s::ID, bindings::PERF_SAMPLE_ID as u64),
            (s::CPU, bindings::PERF_SAMPLE_CPU as u64),
            (s::PERIOD, bindings::PERF_SAMPLE_PERIOD as u64),
            (s::RAW, bindings::PERF_SAMPLE_RAW as u64),
            (s::IDENTIFIER, bindings::PERF_SAMPLE_IDENTIFIER as u64),
            (s::CGROUP, bindings::PERF_SAMPLE_CGROUP as u64),
            (rf::ID, bindings::PERF_FORMAT_ID as u64),
            (rf::LOST, bindings::PERF_FORMAT_LOST as u64),
            (
                abi::attr_type::TRACEPOINT as u64,
                bindings::PERF_TYPE_TRACEPOINT as u64,
            ),
            (
                abi::attr_type::SOFTWARE as u64,
                bindings::PERF_TYPE_SOFTWARE as u64,
            ),
            (
                abi::RecordType::SAMPLE.0 as u64,
                bindings::PERF_RECORD_SAMPLE as u64,
            ),
            (
                abi::RecordType::LOST.0 as u64,
                bindings::PERF_RECORD_LOST as u64,
            ),
            (
                abi::RecordType::LOST_SAMPLES.0 as u64,
                bindings::PERF_RECORD_LOST_SAMPLES as u64,
            ),
            (
                abi::MISC_KERNEL as u64,
                bindings::PERF_RECORD_MISC_KERNEL as u64,
            ),
            (
                abi::MISC_USER as u64,
                bindings::PERF_RECORD_MISC_USER as u64,
            ),
            (abi::context::USER, bindings::PERF_CONTEXT_USER),
            (abi::context::KERNEL, bindings::PERF_CONTEXT_KERNEL),
        ];
        for (i, (ours, theirs)) in pairs.iter().enumerate() {
            assert_eq!(ours, theirs, "pair {i}");
        }
        assert_eq!(ATTR_SIZE as u32, bindings::PERF_ATTR_SIZE_VER7);
    }
}
