//! The lane cache: what the CPU lanes draw from (every CPU's runs with
//! their processes, the waiting steps, the latency, preemption,
//! wasted-idle and repaired-run overlays, the tasks' names and the CPU
//! groups), written to the user's cache directory after a load so that
//! the next open of the same file draws the whole trace at once, while the
//! full load (analyses, events) runs behind it as before.
//!
//! One file per trace path, `$XDG_CACHE_HOME/schedscope/tui/HASH.lanes`
//! (else `~/.cache/...`). It holds, in order: the magic [`MAGIC`], the
//! format version [`VERSION`] (u32 LE) and a CRC-32 of everything after
//! it (u32 LE); then, as varints, the schedscope version, the key of the
//! trace it was made from (canonical path, size, mtime, CRC-32 of its
//! first [`HEAD_BYTES`] bytes) and the lanes (`codec`). A file whose
//! magic, version, checksum or key does not match, or that does not decode
//! to its last byte, is ignored (and replaced after the load): a stale or
//! damaged cache costs a normal load, never a panic or a wrong lane.
//!
//! The directory keeps the caches of the [`KEEP`] traces written or read
//! last.
//!
//! Bump [`VERSION`] whenever what the lanes hold or how a timeline builds
//! them changes.

mod codec;

use crate::groups::CpuGroups;
use crate::index::{Lanes, Tid};
use codec::{Reader, Writer};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The file's first bytes.
pub const MAGIC: &[u8; 8] = b"SSLANES\0";

/// Format version; see the module docs.
pub const VERSION: u32 = 1;

/// The cache keeps the lanes of this many traces, the most recently
/// written or read ones ([`prune`]).
pub const KEEP: usize = 16;

/// How many of the trace file's first bytes the key hashes (the perf.data
/// header and attributes, or a text trace's first lines).
pub const HEAD_BYTES: usize = 64 * 1024;

/// What identifies the trace a cache was made from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    /// Canonical path.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Modification time: seconds and nanoseconds since the epoch.
    pub mtime: (u64, u32),
    /// CRC-32 of the first [`HEAD_BYTES`] bytes.
    pub head: u32,
}

impl Key {
    /// The key of the file at `path` as it is now; None when it cannot be
    /// read (standard input, a missing file, a time before 1970).
    pub fn of(path: &Path) -> Option<Key> {
        let path = std::fs::canonicalize(path).ok()?;
        let mut f = std::fs::File::open(&path).ok()?;
        let m = f.metadata().ok()?;
        if !m.is_file() {
            return None;
        }
        let t = m
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        let mut head = Vec::with_capacity(HEAD_BYTES);
        (&mut f)
            .take(HEAD_BYTES as u64)
            .read_to_end(&mut head)
            .ok()?;
        Some(Key {
            path: path.to_str()?.to_string(),
            size: m.len(),
            mtime: (t.as_secs(), t.subsec_nanos()),
            head: crc32fast::hash(&head),
        })
    }

    fn write(&self, w: &mut Writer) {
        w.str(&self.path);
        w.u(self.size);
        w.u(self.mtime.0);
        w.u(u64::from(self.mtime.1));
        w.u(u64::from(self.head));
    }

    fn read(r: &mut Reader) -> Option<Key> {
        Some(Key {
            path: r.str()?,
            size: r.u()?,
            mtime: (r.u()?, r.u32()?),
            head: r.u32()?,
        })
    }
}

/// What the lanes need besides [`Lanes`] itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Meta {
    /// First event time (ns).
    pub start: u64,
    /// Last event time (ns).
    pub end: u64,
    /// Events decoded.
    pub events: u64,
    /// The timeline's threads in order: tid, tgid, comm (the task codes
    /// follow this order).
    pub threads: Vec<(Tid, Option<Tid>, String)>,
    /// How the CPU lanes group.
    pub groups: CpuGroups,
}

/// The cache directory: `$XDG_CACHE_HOME/schedscope/tui` when that is set
/// to an absolute path, else `$HOME/.cache/schedscope/tui`.
pub fn default_dir() -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let base = xdg.or_else(|| {
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(".cache"))
    })?;
    Some(base.join("schedscope").join("tui"))
}

/// The cache file of the trace `key` names, in `dir`.
pub fn file_in(dir: &Path, key: &Key) -> PathBuf {
    // FNV-1a of the canonical path: stable across builds and platforms
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key.path.as_bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    dir.join(format!("{h:016x}.lanes"))
}

/// The whole cache file's bytes for the lanes of the trace `key` names.
pub fn encode(key: &Key, meta: &Meta, lanes: &Lanes) -> Vec<u8> {
    let mut w = Writer::default();
    w.str(env!("CARGO_PKG_VERSION"));
    key.write(&mut w);
    codec::encode(&mut w, meta, lanes);
    let mut out = Vec::with_capacity(w.0.len() + 16);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&w.0).to_le_bytes());
    out.extend_from_slice(&w.0);
    out
}

/// The lanes in `bytes`, when they are a whole cache file of this format
/// and schedscope version made from the trace `key` names.
pub fn decode(bytes: &[u8], key: &Key) -> Option<(Meta, Lanes)> {
    let rest = bytes.strip_prefix(MAGIC)?;
    let (version, rest) = rest.split_first_chunk::<4>()?;
    let (crc, body) = rest.split_first_chunk::<4>()?;
    if u32::from_le_bytes(*version) != VERSION || u32::from_le_bytes(*crc) != crc32fast::hash(body)
    {
        return None;
    }
    let mut r = Reader::new(body);
    if r.str()? != env!("CARGO_PKG_VERSION") || Key::read(&mut r)? != *key {
        return None;
    }
    let out = codec::decode(&mut r)?;
    r.at_end().then_some(out)
}

/// Read the cache of the trace `key` names from `dir`; None when there is
/// none or it does not hold that trace's lanes.
pub fn load(dir: &Path, key: &Key) -> Option<(Meta, Lanes)> {
    let file = file_in(dir, key);
    let bytes = std::fs::read(&file).ok()?;
    let out = decode(&bytes, key)?;
    // used: the newest for [`prune`]
    if let Ok(f) = std::fs::File::options().write(true).open(&file) {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
    Some(out)
}

/// Write `bytes` (from [`encode`]) as the cache of the trace `key` names
/// in `dir` (created if needed), through a temporary file renamed into
/// place so that a reader never sees half a file.
pub fn store(dir: &Path, key: &Key, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let dest = file_in(dir, key);
    let tmp = dest.with_extension(format!("tmp{}", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.flush()
    });
    match written.and_then(|()| std::fs::rename(&tmp, &dest)) {
        Ok(()) => {
            prune(dir, KEEP);
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Keep the `keep` most recently written caches in `dir` and delete the
/// others, and any temporary file older than an hour (left by a writer
/// that was killed). Other files are left alone; errors are ignored.
pub fn prune(dir: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let hour_ago = std::time::SystemTime::now()
        .checked_sub(std::time::Duration::from_secs(3600))
        .unwrap_or(std::time::UNIX_EPOCH);
    let mut caches = Vec::new();
    for e in entries.flatten() {
        let (path, Ok(m)) = (e.path(), e.metadata()) else {
            continue;
        };
        let Ok(t) = m.modified() else { continue };
        match path.extension().and_then(|x| x.to_str()) {
            Some("lanes") => caches.push((t, path)),
            Some(x) if x.starts_with("tmp") && t < hour_ago => {
                let _ = std::fs::remove_file(&path);
            }
            _ => {}
        }
    }
    caches.sort_unstable_by(|a, b| b.cmp(a));
    for (_, path) in caches.into_iter().skip(keep) {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests;
