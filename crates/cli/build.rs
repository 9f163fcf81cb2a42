//! Sets `SCHEDSCOPE_VERSION` for `--version`: the package version, followed
//! by the git commit it was built from (`0.1.0 (7e7406a1b)`) when the
//! sources are a git checkout with git installed; the package version
//! alone otherwise (a source tarball, a vendored copy). Only a repository
//! that tracks this crate counts, so a copy unpacked inside some other
//! repository does not take that repository's commit.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `git ARGS` run in `dir`: its trimmed standard output, or `None` when git
/// is missing or fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let tracked = git(&dir, &["ls-files", "--error-unmatch", "Cargo.toml"]).is_some();
    let commit = tracked
        .then(|| git(&dir, &["rev-parse", "--short=9", "HEAD"]))
        .flatten()
        .filter(|c| c.bytes().all(|b| b.is_ascii_hexdigit()));
    if commit.is_some() {
        // Run again when HEAD moves: a commit or checkout rewrites the
        // branch's ref and appends to HEAD's reflog.
        let mut watch = vec!["HEAD".to_string(), "logs/HEAD".to_string()];
        watch.extend(git(&dir, &["symbolic-ref", "-q", "HEAD"]));
        for name in watch {
            if let Some(p) = git(&dir, &["rev-parse", "--git-path", &name]) {
                let p = dir.join(p);
                if p.exists() {
                    println!("cargo:rerun-if-changed={}", p.display());
                }
            }
        }
    }
    let full = match commit {
        Some(c) => format!("{version} ({c})"),
        None => version,
    };
    println!("cargo:rustc-env=SCHEDSCOPE_VERSION={full}");
}
