//! The feature sections [`PerfDataWriter::finish`] writes: what the
//! caller gives ([`Features`]) and their bytes, in feature-bit order.

#[cfg(doc)]
use super::TracingData;
use super::{put32, put64, put_u32, PerfDataWriter};
use crate::abi::{self, put_string};
use crate::attr::ATTR_SIZE;
use std::io::{self, Read, Seek, Write};

/// Contents of the feature sections written by [`PerfDataWriter::finish`].
/// `None`/empty fields are left out of the file.
#[derive(Clone, Debug, Default)]
pub struct Features {
    /// HEADER_TRACING_DATA bytes (see [`TracingData::to_bytes`](super::TracingData::to_bytes)).
    pub tracing_data: Option<Vec<u8>>,
    /// A smaller HEADER_TRACING_DATA (e.g. without kallsyms) used instead of
    /// `tracing_data` when, after a write error, the full sections do not fit.
    pub compact_tracing_data: Option<Vec<u8>>,
    /// HEADER_HOSTNAME.
    pub hostname: Option<String>,
    /// HEADER_OSRELEASE.
    pub osrelease: Option<String>,
    /// HEADER_VERSION (perf version string; we write ours).
    pub version: Option<String>,
    /// HEADER_ARCH.
    pub arch: Option<String>,
    /// HEADER_NRCPUS: (available, online).
    pub nr_cpus: Option<(u32, u32)>,
    /// HEADER_CMDLINE: argv (`argv[0]` first).
    pub cmdline: Vec<String>,
    /// HEADER_CPU_TOPOLOGY (see [`crate::topology`]).
    pub cpu_topology: Option<crate::topology::CpuTopology>,
    /// HEADER_CLOCK_DATA (see [`crate::clock`]): the events' clock at a
    /// known time of day, so that readers can print wall-clock times.
    pub clock_data: Option<crate::clock::WallClock>,
    /// HEADER_CLOCKID: the events' clock resolution in ns, written beside
    /// `clock_data` as perf does.
    pub clockid_res_ns: Option<u64>,
    /// HEADER_EVENT_DESC is always written from the attrs.
    /// Extra sections at schedscope's own bits (>= `abi::feature::SCHEDSCOPE_FIRST`),
    /// as (bit, bytes).
    pub extra: Vec<(u32, Vec<u8>)>,
}

impl<W: Read + Write + Seek> PerfDataWriter<W> {
    /// The sections of `f` as (feature bit, bytes), in bit order; with
    /// `compact`, the compact tracing data when there is one.
    pub(super) fn feature_sections(
        &self,
        f: &Features,
        compact: bool,
    ) -> io::Result<Vec<(u32, Vec<u8>)>> {
        use abi::feature as ft;
        let mut v: Vec<(u32, Vec<u8>)> = Vec::new();
        let td = if compact {
            f.compact_tracing_data.as_ref().or(f.tracing_data.as_ref())
        } else {
            f.tracing_data.as_ref()
        };
        if let Some(td) = td {
            v.push((ft::TRACING_DATA, td.clone()));
        }
        let mut string = |bit: u32, s: &Option<String>| {
            if let Some(s) = s {
                let mut b = Vec::new();
                put_string(&mut b, s);
                v.push((bit, b));
            }
        };
        string(ft::HOSTNAME, &f.hostname);
        string(ft::OSRELEASE, &f.osrelease);
        string(ft::VERSION, &f.version);
        string(ft::ARCH, &f.arch);
        if let Some((avail, online)) = f.nr_cpus {
            let mut b = Vec::new();
            put32(&mut b, avail);
            put32(&mut b, online);
            v.push((ft::NRCPUS, b));
        }
        if let Some(t) = &f.cpu_topology {
            v.push((ft::CPU_TOPOLOGY, crate::topology::encode_cpu_topology(t)));
        }
        if let Some(w) = &f.clock_data {
            v.push((ft::CLOCK_DATA, crate::clock::encode_clock_data(w)));
        }
        if let Some(res) = f.clockid_res_ns {
            let mut b = Vec::new();
            put64(&mut b, res);
            v.push((ft::CLOCKID, b));
        }
        if !f.cmdline.is_empty() {
            let mut b = Vec::new();
            put_u32(&mut b, f.cmdline.len(), "cmdline argument count")?;
            for a in &f.cmdline {
                put_string(&mut b, a);
            }
            v.push((ft::CMDLINE, b));
        }
        // EVENT_DESC: u32 nr, u32 attr size, then per event attr, u32
        // nr_ids, name string, ids.
        let mut b = Vec::new();
        put_u32(&mut b, self.attrs.len(), "event count")?;
        put32(&mut b, ATTR_SIZE as u32);
        for a in &self.attrs {
            b.extend_from_slice(&a.attr.to_bytes());
            put_u32(&mut b, a.ids.len(), "id count")?;
            put_string(&mut b, &a.name);
            for id in &a.ids {
                put64(&mut b, *id);
            }
        }
        v.push((ft::EVENT_DESC, b));
        for (bit, bytes) in &f.extra {
            if *bit < ft::SCHEDSCOPE_FIRST || *bit >= ft::FEAT_BITS {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "extra feature bit {bit} is outside schedscope's range {}..{}",
                        ft::SCHEDSCOPE_FIRST,
                        ft::FEAT_BITS
                    ),
                ));
            }
            v.push((*bit, bytes.clone()));
        }
        v.sort_by_key(|(b, _)| *b);
        v.dedup_by_key(|(b, _)| *b);
        Ok(v)
    }
}
