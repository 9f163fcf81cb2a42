//! A small trace.dat writer, for tests only: versions 6 and 7 (zstd or
//! uncompressed), several instances, time extends, absolute timestamps and
//! stored lost-event counts, from this kernel's tracefs format files in
//! `fixtures/formats/`. What it writes is checked against `trace-cmd report`
//! before any decoder result is trusted.

use std::path::Path;

/// One event to write: a tracepoint payload (common fields included).
#[derive(Clone, Debug)]
pub struct Ev {
    pub cpu: u32,
    pub ts: u64,
    /// Write the time as an absolute time stamp instead of a delta.
    pub absolute: bool,
    pub payload: Vec<u8>,
}

/// A trace instance (buffer) and its events, per CPU in time order.
#[derive(Clone, Debug, Default)]
pub struct Instance {
    pub name: String,
    pub events: Vec<Ev>,
    /// (cpu, page index, lost count): mark that page as having lost events.
    pub lost: Vec<(u32, usize, u64)>,
}

pub struct Spec {
    pub version: u32,
    pub zstd: bool,
    pub page_size: usize,
    pub cpus: u32,
    pub instances: Vec<Instance>,
    pub cmdlines: String,
    /// Events per page at most (to make several pages).
    pub per_page: usize,
    /// Extra options (id, data), e.g. DATE (1) or OFFSET (7).
    pub options: Vec<(u16, Vec<u8>)>,
}

fn formats_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/formats")
}

/// The format text of `sched/<name>`.
pub fn format_text(name: &str) -> String {
    std::fs::read_to_string(formats_dir().join("sched").join(name).join("format")).unwrap()
}

/// The event id in a format text.
pub fn format_id(text: &str) -> u16 {
    text.lines()
        .find_map(|l| l.strip_prefix("ID: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// (offset, size, is `__data_loc`) of field `name` in a format text.
fn field(text: &str, name: &str) -> (usize, usize, bool) {
    for l in text.lines() {
        let Some(decl) = l.trim().strip_prefix("field:") else {
            continue;
        };
        let decl_name = decl.split(';').next().unwrap().trim();
        let base = decl_name
            .rsplit(' ')
            .next()
            .unwrap()
            .split('[')
            .next()
            .unwrap();
        if base == name {
            let num = |k: &str| -> usize {
                let r = &l[l.find(k).unwrap() + k.len()..];
                r[..r.find(';').unwrap()].parse().unwrap()
            };
            return (
                num("offset:"),
                num("size:"),
                decl_name.starts_with("__data_loc"),
            );
        }
    }
    panic!("no field {name}")
}

/// A payload for format `text` with the given field values (integers or
/// strings; `__data_loc` strings go after the fixed fields).
pub fn payload(text: &str, pid: i32, vals: &[(&str, Val)]) -> Vec<u8> {
    let mut end = 8;
    for l in text.lines().filter(|l| l.trim().starts_with("field:")) {
        let o: usize = {
            let r = &l[l.find("offset:").unwrap() + 7..];
            r[..r.find(';').unwrap()].parse().unwrap()
        };
        let s: usize = {
            let r = &l[l.find("size:").unwrap() + 5..];
            r[..r.find(';').unwrap()].parse().unwrap()
        };
        end = end.max(o + s);
    }
    let mut p = vec![0u8; end];
    p[0..2].copy_from_slice(&format_id(text).to_le_bytes());
    p[4..8].copy_from_slice(&pid.to_le_bytes());
    for (name, v) in vals {
        let (o, s, loc) = field(text, name);
        match v {
            Val::Int(x) => p[o..o + s].copy_from_slice(&x.to_le_bytes()[..s]),
            Val::Str(x) if loc => {
                let at = p.len();
                p.extend_from_slice(x.as_bytes());
                p.push(0);
                let l = (at as u32) | (((x.len() + 1) as u32) << 16);
                p[o..o + 4].copy_from_slice(&l.to_le_bytes());
            }
            Val::Str(x) => {
                let b = x.as_bytes();
                p[o..o + b.len().min(s - 1)].copy_from_slice(&b[..b.len().min(s - 1)]);
            }
        }
    }
    p
}

pub enum Val {
    Int(i64),
    Str(String),
}

fn u32le(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn u64le(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_le_bytes());
}

/// One CPU's events as ring-buffer pages.
fn pages(events: &[&Ev], page_size: usize, per_page: usize, lost: &[(usize, u64)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (pi, chunk) in events.chunks(per_page.max(1)).enumerate() {
        let mut body = Vec::new();
        let page_ts = chunk[0].ts;
        let mut prev = page_ts;
        for e in chunk {
            if e.absolute {
                let v = e.ts;
                u32le(&mut body, 31 | (((v & ((1 << 27) - 1)) as u32) << 5));
                u32le(&mut body, (v >> 27) as u32);
            } else {
                let mut d = e.ts - prev;
                if d >= 1 << 27 {
                    u32le(&mut body, 30 | (((d & ((1 << 27) - 1)) as u32) << 5));
                    u32le(&mut body, (d >> 27) as u32);
                    d = 0;
                }
                let mut p = e.payload.clone();
                while p.len() % 4 != 0 {
                    p.push(0);
                }
                if p.len() <= 112 {
                    u32le(&mut body, (p.len() / 4) as u32 | ((d as u32) << 5));
                } else {
                    u32le(&mut body, (d as u32) << 5);
                    u32le(&mut body, p.len() as u32 + 4);
                }
                body.extend_from_slice(&p);
                prev = e.ts;
                continue;
            }
            // after an absolute stamp, the event itself with delta 0
            let mut p = e.payload.clone();
            while p.len() % 4 != 0 {
                p.push(0);
            }
            u32le(&mut body, (p.len() / 4) as u32);
            body.extend_from_slice(&p);
            prev = e.ts;
        }
        let mut commit = body.len() as u64;
        if let Some((_, n)) = lost.iter().find(|(i, _)| *i == pi) {
            commit |= (1 << 31) | (1 << 30);
            u64le(&mut body, *n);
        }
        let start = out.len();
        u64le(&mut out, page_ts);
        u64le(&mut out, commit);
        out.extend_from_slice(&body);
        assert!(out.len() - start <= page_size, "page overflow");
        out.resize(start + page_size, 0);
    }
    out
}

/// (CPU, its pages) of an instance.
type CpuPages = Vec<(u32, Vec<u8>)>;

fn cpu_pages(spec: &Spec, inst: &Instance) -> CpuPages {
    (0..spec.cpus)
        .map(|c| {
            let evs: Vec<&Ev> = inst.events.iter().filter(|e| e.cpu == c).collect();
            let lost: Vec<(usize, u64)> = inst
                .lost
                .iter()
                .filter(|l| l.0 == c)
                .map(|l| (l.1, l.2))
                .collect();
            (c, pages(&evs, spec.page_size, spec.per_page, &lost))
        })
        .collect()
}

fn metadata_parts() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let hp = std::fs::read(formats_dir().join("header_page")).unwrap();
    let he = std::fs::read(formats_dir().join("header_event")).unwrap();
    let mut header = Vec::new();
    header.extend_from_slice(b"header_page\0");
    u64le(&mut header, hp.len() as u64);
    header.extend_from_slice(&hp);
    header.extend_from_slice(b"header_event\0");
    u64le(&mut header, he.len() as u64);
    header.extend_from_slice(&he);
    let mut ftrace = Vec::new();
    u32le(&mut ftrace, 0);
    let mut events = Vec::new();
    u32le(&mut events, 1);
    events.extend_from_slice(b"sched\0");
    let names = ["sched_switch", "sched_wakeup", "sched_migrate_task"];
    u32le(&mut events, names.len() as u32);
    for n in names {
        let t = format_text(n);
        u64le(&mut events, t.len() as u64);
        events.extend_from_slice(t.as_bytes());
    }
    (header, ftrace, events)
}

const KALLSYMS: &str = "ffffffff81000000 T _stext\nffffffff81000100 T schedule\n";

fn zstd(b: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(b, ruzstd::encoding::CompressionLevel::Fastest)
}

/// Write the file.
pub fn write(spec: &Spec) -> Vec<u8> {
    let mut f = b"\x17\x08\x44tracing".to_vec();
    f.extend_from_slice(format!("{}\0", spec.version).as_bytes());
    f.push(0);
    f.push(8);
    u32le(&mut f, spec.page_size as u32);
    let (header, ftrace, events) = metadata_parts();
    let mut kall = Vec::new();
    u32le(&mut kall, KALLSYMS.len() as u32);
    kall.extend_from_slice(KALLSYMS.as_bytes());
    let mut printk = Vec::new();
    u32le(&mut printk, 0);
    let mut cmd = Vec::new();
    u64le(&mut cmd, spec.cmdlines.len() as u64);
    cmd.extend_from_slice(spec.cmdlines.as_bytes());
    if spec.version == 6 {
        assert!(!spec.zstd);
        for p in [&header, &ftrace, &events, &kall, &printk, &cmd] {
            f.extend_from_slice(p);
        }
        u32le(&mut f, spec.cpus);
        // options: one BUFFER per named instance, offsets patched below
        let named: Vec<&Instance> = spec
            .instances
            .iter()
            .filter(|i| !i.name.is_empty())
            .collect();
        let mut patch = Vec::new();
        f.extend_from_slice(b"options  \0");
        for (id, d) in &spec.options {
            f.extend_from_slice(&id.to_le_bytes());
            u32le(&mut f, d.len() as u32);
            f.extend_from_slice(d);
        }
        for i in &named {
            f.extend_from_slice(&3u16.to_le_bytes());
            u32le(&mut f, 8 + i.name.len() as u32 + 1);
            patch.push(f.len());
            u64le(&mut f, 0);
            f.extend_from_slice(i.name.as_bytes());
            f.push(0);
        }
        f.extend_from_slice(&0u16.to_le_bytes());
        f.extend_from_slice(b"flyrecord\0");
        let top = spec.instances.iter().find(|i| i.name.is_empty()).unwrap();
        let mut blocks: Vec<(usize, CpuPages)> = Vec::new();
        let at = f.len();
        for _ in 0..spec.cpus {
            u64le(&mut f, 0);
            u64le(&mut f, 0);
        }
        blocks.push((at, cpu_pages(spec, top)));
        for (n, i) in named.iter().enumerate() {
            let off = f.len() as u64;
            f[patch[n]..patch[n] + 8].copy_from_slice(&off.to_le_bytes());
            f.extend_from_slice(b"flyrecord\0");
            let at = f.len();
            for _ in 0..spec.cpus {
                u64le(&mut f, 0);
                u64le(&mut f, 0);
            }
            blocks.push((at, cpu_pages(spec, i)));
        }
        for (at, cpus) in blocks {
            for (c, data) in cpus {
                while !f.len().is_multiple_of(spec.page_size) {
                    f.push(0);
                }
                let off = f.len() as u64;
                f.extend_from_slice(&data);
                let e = at + c as usize * 16;
                f[e..e + 8].copy_from_slice(&off.to_le_bytes());
                f[e + 8..e + 16].copy_from_slice(&(data.len() as u64).to_le_bytes());
            }
        }
        return f;
    }
    // version 7
    if spec.zstd {
        f.extend_from_slice(b"zstd\x001.5.4\0");
    } else {
        f.extend_from_slice(b"none\0\0");
    }
    let first_opt = f.len();
    u64le(&mut f, 0);
    let section = |f: &mut Vec<u8>, id: u16, content: &[u8], compress: bool| -> u64 {
        let off = f.len() as u64;
        f.extend_from_slice(&id.to_le_bytes());
        f.extend_from_slice(&(compress as u16).to_le_bytes());
        u32le(f, 0);
        if compress {
            let c = zstd(content);
            u64le(f, c.len() as u64 + 8);
            u32le(f, c.len() as u32);
            u32le(f, content.len() as u32);
            f.extend_from_slice(&c);
        } else {
            u64le(f, content.len() as u64);
            f.extend_from_slice(content);
        }
        off
    };
    let mut meta_offsets = Vec::new();
    for (id, content) in [
        (16u16, &header),
        (17, &ftrace),
        (18, &events),
        (19, &kall),
        (20, &printk),
        (21, &cmd),
    ] {
        meta_offsets.push((id, section(&mut f, id, content, spec.zstd)));
    }
    // flyrecord sections (after the options that name them: offsets known)
    let mut buffer_opts = Vec::new();
    for inst in &spec.instances {
        let sec = f.len() as u64;
        f.extend_from_slice(&3u16.to_le_bytes());
        f.extend_from_slice(&(spec.zstd as u16).to_le_bytes());
        u32le(&mut f, 0);
        let size_at = f.len();
        u64le(&mut f, 0);
        let body_start = f.len();
        let mut cpus = Vec::new();
        for (c, data) in cpu_pages(spec, inst) {
            while !f.len().is_multiple_of(spec.page_size) {
                f.push(0);
            }
            let off = f.len() as u64;
            let size = if spec.zstd {
                // one chunk per page pair
                let chunks: Vec<&[u8]> = data.chunks(spec.page_size * 2).collect();
                u32le(&mut f, chunks.len() as u32);
                let start = f.len();
                for ch in chunks {
                    let z = zstd(ch);
                    u32le(&mut f, z.len() as u32);
                    u32le(&mut f, ch.len() as u32);
                    f.extend_from_slice(&z);
                }
                (f.len() - start) as u64
            } else {
                f.extend_from_slice(&data);
                data.len() as u64
            };
            cpus.push((c, off, size));
        }
        let size = (f.len() - body_start) as u64;
        f[size_at..size_at + 8].copy_from_slice(&size.to_le_bytes());
        let mut o = Vec::new();
        u64le(&mut o, sec);
        o.extend_from_slice(inst.name.as_bytes());
        o.push(0);
        o.extend_from_slice(b"local\0");
        u32le(&mut o, spec.page_size as u32);
        u32le(&mut o, cpus.len() as u32);
        for (c, off, size) in cpus {
            u32le(&mut o, c);
            u64le(&mut o, off);
            u64le(&mut o, size);
        }
        buffer_opts.push(o);
    }
    // options: the metadata offsets and CPU count, then the buffers
    let mut opts = Vec::new();
    for (id, off) in &meta_offsets {
        opts.extend_from_slice(&id.to_le_bytes());
        u32le(&mut opts, 8);
        u64le(&mut opts, *off);
    }
    opts.extend_from_slice(&8u16.to_le_bytes());
    u32le(&mut opts, 4);
    u32le(&mut opts, spec.cpus);
    for (id, d) in &spec.options {
        opts.extend_from_slice(&id.to_le_bytes());
        u32le(&mut opts, d.len() as u32);
        opts.extend_from_slice(d);
    }
    opts.extend_from_slice(&0u16.to_le_bytes());
    u32le(&mut opts, 8);
    let opt2_placeholder = opts.len();
    u64le(&mut opts, 0);
    let opt1 = f.len() as u64;
    // the second options section follows the first, whose size is known
    let opt1_size = 16 + opts.len() as u64;
    let opt2 = opt1 + opt1_size;
    opts[opt2_placeholder..opt2_placeholder + 8].copy_from_slice(&opt2.to_le_bytes());
    section(&mut f, 0, &opts, false);
    let mut o2 = Vec::new();
    for b in &buffer_opts {
        o2.extend_from_slice(&3u16.to_le_bytes());
        u32le(&mut o2, b.len() as u32);
        o2.extend_from_slice(b);
    }
    o2.extend_from_slice(&0u16.to_le_bytes());
    u32le(&mut o2, 8);
    u64le(&mut o2, 0);
    section(&mut f, 0, &o2, false);
    f[first_opt..first_opt + 8].copy_from_slice(&opt1.to_le_bytes());
    f
}
