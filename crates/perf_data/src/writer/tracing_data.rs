//! HEADER_TRACING_DATA: the tracefs format files, kallsyms, printk formats
//! and saved cmdlines, laid out as perf's trace-event-info.c writes them.

use super::put_u32;
use std::io;

/// Tracing data (HEADER_TRACING_DATA), laid out exactly as
/// tools/perf/util/trace-event-info.c writes it (version 0.6).
#[derive(Clone, Debug, Default)]
pub struct TracingData {
    /// Page size of the recording machine.
    pub page_size: u32,
    /// Contents of events/header_page.
    pub header_page: Vec<u8>,
    /// Contents of events/header_event.
    pub header_event: Vec<u8>,
    /// Format files of the `ftrace` system (usually none).
    pub ftrace_formats: Vec<Vec<u8>>,
    /// Per system (in file order): its name and the format files of the
    /// recorded events of that system.
    pub systems: Vec<(String, Vec<Vec<u8>>)>,
    /// Contents of /proc/kallsyms (may be empty).
    pub kallsyms: Vec<u8>,
    /// Contents of printk_formats (may be empty).
    pub printk_formats: Vec<u8>,
    /// Contents of saved_cmdlines (may be empty).
    pub saved_cmdlines: Vec<u8>,
}

impl TracingData {
    /// Add the format text of one event, grouping by system.
    pub fn add_event_format(&mut self, system: &str, format: Vec<u8>) {
        if system == "ftrace" {
            self.ftrace_formats.push(format);
            return;
        }
        match self.systems.iter_mut().find(|(s, _)| s == system) {
            Some((_, v)) => v.push(format),
            None => self.systems.push((system.to_string(), vec![format])),
        }
    }

    /// Serialize. Sizes that do not fit their field (kallsyms larger than
    /// 4 GiB) are an error.
    pub fn to_bytes(&self) -> io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(
            64 + self.header_page.len()
                + self.header_event.len()
                + self.kallsyms.len()
                + self.printk_formats.len()
                + self.saved_cmdlines.len()
                + self
                    .systems
                    .iter()
                    .flat_map(|(_, f)| f.iter().map(|x| x.len() + 8))
                    .sum::<usize>(),
        );
        out.extend_from_slice(&[23, 8, 68]);
        out.extend_from_slice(b"tracing");
        out.extend_from_slice(b"0.6\0");
        out.push(u8::from(cfg!(target_endian = "big")));
        out.push(std::mem::size_of::<std::ffi::c_long>() as u8);
        out.extend_from_slice(&self.page_size.to_ne_bytes());
        out.extend_from_slice(b"header_page\0");
        put_u64_blob(&mut out, &self.header_page);
        out.extend_from_slice(b"header_event\0");
        put_u64_blob(&mut out, &self.header_event);
        put_u32(&mut out, self.ftrace_formats.len(), "ftrace format count")?;
        for f in &self.ftrace_formats {
            put_u64_blob(&mut out, f);
        }
        put_u32(&mut out, self.systems.len(), "system count")?;
        for (sys, formats) in &self.systems {
            out.extend_from_slice(sys.as_bytes());
            out.push(0);
            put_u32(&mut out, formats.len(), "event count")?;
            for f in formats {
                put_u64_blob(&mut out, f);
            }
        }
        put_u32(&mut out, self.kallsyms.len(), "kallsyms size")?;
        out.extend_from_slice(&self.kallsyms);
        put_u32(&mut out, self.printk_formats.len(), "printk_formats size")?;
        out.extend_from_slice(&self.printk_formats);
        put_u64_blob(&mut out, &self.saved_cmdlines);
        Ok(out)
    }
}

fn put_u64_blob(out: &mut Vec<u8>, data: &[u8]) {
    out.extend_from_slice(&(data.len() as u64).to_ne_bytes());
    out.extend_from_slice(data);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer::tests::u64_at;

    #[test]
    fn tracing_data_layout() {
        let mut td = TracingData {
            page_size: 4096,
            header_page: b"hp".to_vec(),
            header_event: b"he".to_vec(),
            kallsyms: b"k".to_vec(),
            ..TracingData::default()
        };
        td.add_event_format("sched", b"F1".to_vec());
        td.add_event_format("sched", b"F2".to_vec());
        let b = td.to_bytes().unwrap();
        assert_eq!(&b[0..10], b"\x17\x08\x44tracing");
        assert_eq!(&b[10..14], b"0.6\0");
        assert_eq!(b[14], 0);
        assert_eq!(b[15] as usize, std::mem::size_of::<std::ffi::c_long>());
        assert_eq!(&b[20..32], b"header_page\0");
        assert_eq!(u64_at(&b, 32), 2);
        let mut p = 42;
        assert_eq!(&b[p..p + 13], b"header_event\0");
        p += 13 + 8 + 2;
        assert_eq!(
            u32::from_ne_bytes(b[p..p + 4].try_into().unwrap()),
            0,
            "no ftrace formats"
        );
        p += 4;
        assert_eq!(
            u32::from_ne_bytes(b[p..p + 4].try_into().unwrap()),
            1,
            "one system"
        );
        p += 4;
        assert_eq!(&b[p..p + 6], b"sched\0");
        p += 6;
        assert_eq!(u32::from_ne_bytes(b[p..p + 4].try_into().unwrap()), 2);
        p += 4 + 8 + 2 + 8 + 2;
        assert_eq!(
            u32::from_ne_bytes(b[p..p + 4].try_into().unwrap()),
            1,
            "kallsyms size"
        );
        p += 5;
        assert_eq!(
            u32::from_ne_bytes(b[p..p + 4].try_into().unwrap()),
            0,
            "printk size"
        );
        p += 4;
        assert_eq!(u64_at(&b, p), 0, "saved_cmdlines size");
        assert_eq!(b.len(), p + 8);
    }
}
