//! perf.data (PERFILE2) layout constants shared by the reader (parser) and
//! the writer (collector, simulator). Values from linux/include/uapi/linux/perf_event.h and
//! tools/perf/util/header.h / event.h.

/// File magic, native endian ("PERFILE2" read as a little-endian u64).
pub const PERF_MAGIC2: &[u8; 8] = b"PERFILE2";
/// File magic written by a big-endian host.
pub const PERF_MAGIC2_SWAPPED: &[u8; 8] = b"2ELIFREP";

/// PERF_RECORD_* (kernel) and PERF_RECORD_USER_* (perf tool) record types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecordType(pub u32);

#[allow(missing_docs)]
impl RecordType {
    pub const MMAP: RecordType = RecordType(1);
    pub const LOST: RecordType = RecordType(2);
    pub const COMM: RecordType = RecordType(3);
    pub const EXIT: RecordType = RecordType(4);
    pub const THROTTLE: RecordType = RecordType(5);
    pub const UNTHROTTLE: RecordType = RecordType(6);
    pub const FORK: RecordType = RecordType(7);
    pub const READ: RecordType = RecordType(8);
    pub const SAMPLE: RecordType = RecordType(9);
    pub const MMAP2: RecordType = RecordType(10);
    pub const AUX: RecordType = RecordType(11);
    pub const ITRACE_START: RecordType = RecordType(12);
    pub const LOST_SAMPLES: RecordType = RecordType(13);
    pub const SWITCH: RecordType = RecordType(14);
    pub const SWITCH_CPU_WIDE: RecordType = RecordType(15);
    pub const NAMESPACES: RecordType = RecordType(16);
    pub const KSYMBOL: RecordType = RecordType(17);
    pub const BPF_EVENT: RecordType = RecordType(18);
    pub const CGROUP: RecordType = RecordType(19);
    pub const TEXT_POKE: RecordType = RecordType(20);
    pub const AUX_OUTPUT_HW_ID: RecordType = RecordType(21);
    // user (perf tool) records
    pub const HEADER_ATTR: RecordType = RecordType(64);
    pub const HEADER_EVENT_TYPE: RecordType = RecordType(65);
    pub const HEADER_TRACING_DATA: RecordType = RecordType(66);
    pub const HEADER_BUILD_ID: RecordType = RecordType(67);
    pub const FINISHED_ROUND: RecordType = RecordType(68);
    pub const ID_INDEX: RecordType = RecordType(69);
    pub const AUXTRACE_INFO: RecordType = RecordType(70);
    pub const AUXTRACE: RecordType = RecordType(71);
    pub const AUXTRACE_ERROR: RecordType = RecordType(72);
    pub const THREAD_MAP: RecordType = RecordType(73);
    pub const CPU_MAP: RecordType = RecordType(74);
    pub const STAT_CONFIG: RecordType = RecordType(75);
    pub const STAT: RecordType = RecordType(76);
    pub const STAT_ROUND: RecordType = RecordType(77);
    pub const EVENT_UPDATE: RecordType = RecordType(78);
    pub const TIME_CONV: RecordType = RecordType(79);
    pub const HEADER_FEATURE: RecordType = RecordType(80);
    pub const COMPRESSED: RecordType = RecordType(81);
    pub const FINISHED_INIT: RecordType = RecordType(82);
    /// perf 6.15+: like COMPRESSED with an explicit u64 data_size after the header.
    pub const COMPRESSED2: RecordType = RecordType(83);
}

/// perf_event_attr.sample_type bits (PERF_SAMPLE_*).
#[allow(missing_docs)]
pub mod sample {
    pub const IP: u64 = 1 << 0;
    pub const TID: u64 = 1 << 1;
    pub const TIME: u64 = 1 << 2;
    pub const ADDR: u64 = 1 << 3;
    pub const READ: u64 = 1 << 4;
    pub const CALLCHAIN: u64 = 1 << 5;
    pub const ID: u64 = 1 << 6;
    pub const CPU: u64 = 1 << 7;
    pub const PERIOD: u64 = 1 << 8;
    pub const STREAM_ID: u64 = 1 << 9;
    pub const RAW: u64 = 1 << 10;
    pub const BRANCH_STACK: u64 = 1 << 11;
    pub const REGS_USER: u64 = 1 << 12;
    pub const STACK_USER: u64 = 1 << 13;
    pub const WEIGHT: u64 = 1 << 14;
    pub const DATA_SRC: u64 = 1 << 15;
    pub const IDENTIFIER: u64 = 1 << 16;
    pub const TRANSACTION: u64 = 1 << 17;
    pub const REGS_INTR: u64 = 1 << 18;
    pub const PHYS_ADDR: u64 = 1 << 19;
    pub const AUX: u64 = 1 << 20;
    pub const CGROUP: u64 = 1 << 21;
    pub const DATA_PAGE_SIZE: u64 = 1 << 22;
    pub const CODE_PAGE_SIZE: u64 = 1 << 23;
    pub const WEIGHT_STRUCT: u64 = 1 << 24;
}

/// perf_event_attr.type values.
#[allow(missing_docs)]
pub mod attr_type {
    pub const HARDWARE: u32 = 0;
    pub const SOFTWARE: u32 = 1;
    pub const TRACEPOINT: u32 = 2;
}

/// perf_event_attr.read_format bits.
#[allow(missing_docs)]
pub mod read_format {
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    pub const ID: u64 = 1 << 2;
    pub const GROUP: u64 = 1 << 3;
    pub const LOST: u64 = 1 << 4;
}

/// Bit 18 of the attr flags word: sample_id_all.
pub const ATTR_FLAG_SAMPLE_ID_ALL: u64 = 1 << 18;

/// Callchain context markers (PERF_CONTEXT_*), as u64.
#[allow(missing_docs)]
pub mod context {
    pub const HV: u64 = (-32i64) as u64;
    pub const KERNEL: u64 = (-128i64) as u64;
    pub const USER: u64 = (-512i64) as u64;
    pub const GUEST: u64 = (-2048i64) as u64;
    pub const GUEST_KERNEL: u64 = (-2176i64) as u64;
    pub const GUEST_USER: u64 = (-2560i64) as u64;
    pub const MAX: u64 = (-4095i64) as u64;
}

/// Header feature bits (HEADER_*), indexes into the feature bitmap.
#[allow(missing_docs)]
pub mod feature {
    pub const TRACING_DATA: u32 = 1;
    pub const BUILD_ID: u32 = 2;
    pub const HOSTNAME: u32 = 3;
    pub const OSRELEASE: u32 = 4;
    pub const VERSION: u32 = 5;
    pub const ARCH: u32 = 6;
    pub const NRCPUS: u32 = 7;
    pub const CPUDESC: u32 = 8;
    pub const CPUID: u32 = 9;
    pub const TOTAL_MEM: u32 = 10;
    pub const CMDLINE: u32 = 11;
    pub const EVENT_DESC: u32 = 12;
    pub const CPU_TOPOLOGY: u32 = 13;
    pub const NUMA_TOPOLOGY: u32 = 14;
    pub const BRANCH_STACK: u32 = 15;
    pub const PMU_MAPPINGS: u32 = 16;
    pub const GROUP_DESC: u32 = 17;
    pub const AUXTRACE: u32 = 18;
    pub const STAT: u32 = 19;
    pub const CACHE: u32 = 20;
    pub const SAMPLE_TIME: u32 = 21;
    pub const MEM_TOPOLOGY: u32 = 22;
    pub const CLOCKID: u32 = 23;
    pub const DIR_FORMAT: u32 = 24;
    pub const BPF_PROG_INFO: u32 = 25;
    pub const BPF_BTF: u32 = 26;
    pub const COMPRESSED: u32 = 27;
    pub const CPU_PMU_CAPS: u32 = 28;
    pub const CLOCK_DATA: u32 = 29;
    pub const HYBRID_TOPOLOGY: u32 = 30;
    pub const PMU_CAPS: u32 = 31;
    /// First bit perf 6.x does not know: schedscope's own sections live at
    /// and above this (perf skips unknown feature bits).
    pub const SCHEDSCOPE_FIRST: u32 = 200;
    /// schedscope: cgroup CFS-bandwidth samples (see collector docs).
    pub const SCHEDSCOPE_CGROUP_SAMPLES: u32 = 200;
    /// schedscope: each thread's CPU-controller cgroup at record start and
    /// end (see the collector's `cgroup` module docs).
    pub const SCHEDSCOPE_TASK_CGROUPS: u32 = 201;
    /// One past the last bit of the feature bitmap (HEADER_FEAT_BITS).
    pub const FEAT_BITS: u32 = 256;
}

/// Size of the file header (struct perf_file_header).
pub const FILE_HEADER_SIZE: u64 = 104;
/// Size of a record header (struct perf_event_header).
pub const RECORD_HEADER_SIZE: usize = 8;

/// perf_event_header.misc: the record belongs to the kernel (PERF_RECORD_MISC_KERNEL).
pub const MISC_KERNEL: u16 = 1;
/// perf_event_header.misc: the record belongs to user space (PERF_RECORD_MISC_USER).
pub const MISC_USER: u16 = 2;
/// PERF_RECORD_MISC_COMM_EXEC: a COMM record caused by exec.
pub const MISC_COMM_EXEC: u16 = 1 << 13;
/// PERF_SAMPLE_BRANCH_HW_INDEX bit of branch_sample_type.
pub const BRANCH_HW_INDEX: u64 = 1 << 17;

/// Strings in feature sections are padded to this alignment (NAME_ALIGN).
pub(crate) const NAME_ALIGN: usize = 64;

/// perf's `do_write_string`: u32 padded length, then the NUL-terminated
/// string padded to [`NAME_ALIGN`].
pub(crate) fn put_string(out: &mut Vec<u8>, s: &str) {
    let olen = s.len() + 1;
    let len = olen.div_ceil(NAME_ALIGN) * NAME_ALIGN;
    out.extend_from_slice(&(len as u32).to_ne_bytes());
    out.extend_from_slice(s.as_bytes());
    out.resize(out.len() + (len - s.len()), 0);
}
