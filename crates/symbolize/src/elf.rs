//! ELF files, the only place symbolization reads them: program headers
//! and build id ([`ElfInfo`]), function symbols at given addresses (to
//! choose among aliases as perf does), and blazesym's ELF symbolizer.

use std::collections::{HashMap, HashSet};

/// Look up virtual addresses (relative to the ELF's own base) in the ELF
/// symbols of `path`: per address the name and offset, or why not.
/// Per address: (name, offset into the symbol), or why there is none.
pub(super) type VirtSyms = Vec<Result<(String, u64), String>>;

pub(super) fn symbolize_virt(path: &str, virt: &[u64]) -> Result<VirtSyms, String> {
    use blazesym::symbolize::source::{Elf, Source};
    use blazesym::symbolize::{Input, Reason, Symbolized, Symbolizer};
    let mut elf = Elf::new(path);
    elf.debug_syms = false;
    let src = Source::Elf(elf);
    let symbolizer = Symbolizer::new();
    let out = symbolizer
        .symbolize(&src, Input::VirtOffset(virt))
        .map_err(|e| e.to_string())?;
    Ok(out
        .into_iter()
        .map(|s| match s {
            Symbolized::Sym(s) => Ok((s.name.to_string(), s.offset as u64)),
            Symbolized::Unknown(Reason::MissingSyms) => {
                Err("no symbol covers the address (stripped: dynamic symbols only)".to_string())
            }
            Symbolized::Unknown(w) => Err(format!("blazesym: {w}")),
        })
        .collect())
}

/// A function symbol of an ELF symbol table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ElfSym {
    pub(super) name: String,
    /// STB_LOCAL 0, STB_GLOBAL 1, STB_WEAK 2.
    pub(super) bind: u8,
    pub(super) size: u64,
}

/// perf's `choose_best_symbol` among symbols at one address: a sized one,
/// then not weak, then global, then fewer leading underscores, then the
/// longer name, then the first.
pub(super) fn perf_best_symbol<'s>(a: &'s ElfSym, b: &'s ElfSym) -> &'s ElfSym {
    let key = |s: &ElfSym| {
        (
            s.size > 0,
            s.bind != 2,
            s.bind == 1,
            std::cmp::Reverse(s.name.bytes().take_while(|&c| c == b'_').count()),
            s.name.len(),
        )
    };
    if key(b) > key(a) {
        b
    } else {
        a
    }
}

/// The function symbols (STT_FUNC, STT_GNU_IFUNC) of the `.symtab` and
/// `.dynsym` of `path` whose value is one of `addrs`. Empty when the file
/// cannot be read or is not a 64-bit little-endian ELF file.
pub(super) fn elf_symbols_at(path: &str, addrs: &HashSet<u64>) -> HashMap<u64, Vec<ElfSym>> {
    use std::os::unix::fs::FileExt;
    let mut out: HashMap<u64, Vec<ElfSym>> = HashMap::new();
    if addrs.is_empty() {
        return out;
    }
    let Ok(f) = std::fs::File::open(path) else {
        return out;
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let at = |off: u64, n: u64| -> Option<Vec<u8>> {
        if off.checked_add(n)? > len || n > 1 << 30 {
            return None;
        }
        let mut b = vec![0u8; usize::try_from(n).ok()?];
        f.read_exact_at(&mut b, off).ok()?;
        Some(b)
    };
    let u16_ = |b: &[u8], o: usize| -> Option<u16> {
        Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?))
    };
    let u32_ = |b: &[u8], o: usize| -> Option<u32> {
        Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?))
    };
    let u64_ = |b: &[u8], o: usize| -> Option<u64> {
        Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
    };
    let scan = |out: &mut HashMap<u64, Vec<ElfSym>>| -> Option<()> {
        let h = at(0, 64)?;
        if h.get(..4)? != b"\x7fELF" || h[4] != 2 || h[5] != 1 {
            return None;
        }
        let shoff = u64_(&h, 0x28)?;
        let shentsize = u16_(&h, 0x3a)? as u64;
        let shnum = u16_(&h, 0x3c)? as u64;
        if shentsize < 64 {
            return None;
        }
        let sh = at(shoff, shentsize * shnum)?;
        let sec = |i: u64| -> Option<(u32, u64, u64, u32)> {
            let o = usize::try_from(i * shentsize).ok()?;
            Some((
                u32_(&sh, o + 4)?,
                u64_(&sh, o + 24)?,
                u64_(&sh, o + 32)?,
                u32_(&sh, o + 40)?,
            ))
        };
        for i in 0..shnum {
            let (ty, off, size, link) = sec(i)?;
            if ty != 2 && ty != 11 {
                continue; // SHT_SYMTAB, SHT_DYNSYM
            }
            let (sty, soff, ssize, _) = sec(link as u64)?;
            if sty != 3 {
                continue; // SHT_STRTAB (NOBITS in a stripped file)
            }
            let (Some(syms), Some(strs)) = (at(off, size), at(soff, ssize)) else {
                continue;
            };
            for e in syms.chunks_exact(24) {
                let value = u64_(e, 8)?;
                let info = e[4];
                if !addrs.contains(&value) || !matches!(info & 0xf, 2 | 10) {
                    continue;
                }
                let name_at = u32_(e, 0)? as usize;
                let Some(rest) = strs.get(name_at..) else {
                    continue;
                };
                let name = &rest[..rest.iter().position(|&c| c == 0).unwrap_or(rest.len())];
                if name.is_empty() {
                    continue;
                }
                out.entry(value).or_default().push(ElfSym {
                    name: String::from_utf8_lossy(name).into_owned(),
                    bind: info >> 4,
                    size: u64_(e, 16)?,
                });
            }
        }
        Some(())
    };
    let _ = scan(&mut out);
    out
}

/// What the symbolizer needs from an ELF file's headers: its loadable
/// segments (to turn file offsets into virtual addresses) and build id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ElfInfo {
    /// PT_LOAD segments: (file offset, virtual address, size in the file).
    pub loads: Vec<(u64, u64, u64)>,
    /// NT_GNU_BUILD_ID, if present.
    pub build_id: Option<Vec<u8>>,
}

impl ElfInfo {
    /// Read the program headers and build-id note of a 64-bit
    /// little-endian ELF file (`None` if it is not one or is truncated).
    pub fn read(path: &str) -> Option<ElfInfo> {
        use std::os::unix::fs::FileExt;
        let f = std::fs::File::open(path).ok()?;
        let at = |off: u64, len: usize| -> Option<Vec<u8>> {
            let mut b = vec![0u8; len];
            f.read_exact_at(&mut b, off).ok()?;
            Some(b)
        };
        let h = at(0, 64)?;
        // ELFCLASS64, ELFDATA2LSB
        if h.get(..4)? != b"\x7fELF" || h[4] != 2 || h[5] != 1 {
            return None;
        }
        let u16_ = |b: &[u8], o: usize| Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?));
        let u32_ = |b: &[u8], o: usize| Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?));
        let u64_ = |b: &[u8], o: usize| Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?));
        let phoff = u64_(&h, 32)?;
        let phentsize = u16_(&h, 54)? as usize;
        let phnum = u16_(&h, 56)? as usize;
        if phentsize < 56 || phnum > 4096 {
            return None;
        }
        let ph = at(phoff, phentsize * phnum)?;
        let mut info = ElfInfo::default();
        for i in 0..phnum {
            let p = &ph[i * phentsize..(i + 1) * phentsize];
            let (ty, off, vaddr, filesz) = (u32_(p, 0)?, u64_(p, 8)?, u64_(p, 16)?, u64_(p, 32)?);
            match ty {
                1 => info.loads.push((off, vaddr, filesz)), // PT_LOAD
                4 if info.build_id.is_none() && filesz <= 1 << 16 => {
                    // PT_NOTE: namesz, descsz, type, name (4-aligned), desc (4-aligned)
                    let n = at(off, filesz as usize)?;
                    let mut pos = 0usize;
                    while pos + 12 <= n.len() {
                        let namesz = u32_(&n, pos)? as usize;
                        let descsz = u32_(&n, pos + 4)? as usize;
                        let nty = u32_(&n, pos + 8)?;
                        let name_at = pos + 12;
                        let desc_at = name_at + namesz.div_ceil(4) * 4;
                        let next = desc_at + descsz.div_ceil(4) * 4;
                        if nty == 3 && n.get(name_at..name_at + namesz) == Some(b"GNU\0") {
                            info.build_id = n.get(desc_at..desc_at + descsz).map(<[u8]>::to_vec);
                            break;
                        }
                        pos = next;
                    }
                }
                _ => {}
            }
        }
        Some(info)
    }

    /// The virtual address of file offset `off` (in a PT_LOAD segment).
    pub fn virt(&self, off: u64) -> Option<u64> {
        self.loads
            .iter()
            .find(|&&(o, _, sz)| off >= o && off - o < sz)
            .map(|&(o, v, _)| off - o + v)
    }

    /// The separate debug file for this build id, if installed
    /// (`/usr/lib/debug/.build-id/xx/rest.debug`, e.g. from libc6-dbg).
    pub fn debug_file(&self) -> Option<String> {
        let id = self.build_id.as_ref().filter(|b| b.len() >= 2)?;
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let p = format!("/usr/lib/debug/.build-id/{}/{}.debug", &hex[..2], &hex[2..]);
        std::path::Path::new(&p).is_file().then_some(p)
    }
}
