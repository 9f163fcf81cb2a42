//! `schedscope completions SHELL`, `schedscope man` and `--version`: what
//! a user installing the tool sees. The bash script is also run by bash,
//! the way bash's programmable completion calls it; zsh, fish and groff
//! check the other outputs when they are installed (and say so when not).

use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_schedscope");

const SUBCOMMANDS: [&str; 9] = [
    "record",
    "report",
    "info",
    "demo",
    "tui",
    "export",
    "diff",
    "completions",
    "man",
];

fn run(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn completions(shell: &str) -> String {
    let (code, out, err) = run(&["completions", shell]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "");
    out
}

/// Whether `prog` runs (`prog --version`).
fn have(prog: &str) -> bool {
    Command::new(prog)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Check `script` with `shell -n` (parse only) when that shell is installed.
fn parses_in(shell: &str, script: &str) {
    if !have(shell) {
        eprintln!("SKIPPED: {shell} -n (no {shell} installed)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("schedscope-compl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join(format!("schedscope.{shell}"));
    std::fs::write(&f, script).unwrap();
    let o = Command::new(shell).arg("-n").arg(&f).output().unwrap();
    assert!(
        o.status.success(),
        "{shell} -n: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The words bash offers after typing `line` (words split on spaces; the
/// last one is the word being completed), from the script as installed.
fn bash_complete(script: &str, line: &[&str]) -> Vec<String> {
    let words: Vec<String> = line.iter().map(|w| format!("'{w}'")).collect();
    let cword = line.len() - 1;
    let prog = format!(
        "{script}\nCOMP_WORDS=({words})\nCOMP_CWORD={cword}\nCOMP_LINE='{joined}'\nCOMP_POINT=${{#COMP_LINE}}\n\
         _schedscope schedscope '{cur}' '{prev}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        words = words.join(" "),
        joined = line.join(" "),
        cur = line[cword],
        prev = if cword > 0 { line[cword - 1] } else { "" },
    );
    let o = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &prog])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn bash_completes_subcommands_and_their_flags() {
    let script = completions("bash");
    assert!(script.contains("complete -F _schedscope"), "{script}");
    parses_in("bash", &script);
    let all = bash_complete(&script, &["schedscope", ""]);
    for s in SUBCOMMANDS {
        assert!(all.iter().any(|w| w == s), "{s} not offered: {all:?}");
    }
    assert_eq!(
        bash_complete(&script, &["schedscope", "rep"]),
        ["report"],
        "a prefix completes to its subcommand"
    );
    let record = bash_complete(&script, &["schedscope", "record", "--"]);
    for flag in [
        "--output",
        "--event",
        "--duration",
        "--buffer-size",
        "--call-graph",
        "--profile",
        "--cgroup",
    ] {
        assert!(record.iter().any(|w| w == flag), "{flag}: {record:?}");
    }
    let export = bash_complete(&script, &["schedscope", "export", "--"]);
    for flag in ["--parquet", "--csv", "--flat", "--tables", "--gang-of"] {
        assert!(export.iter().any(|w| w == flag), "{flag}: {export:?}");
    }
    let shells = bash_complete(&script, &["schedscope", "completions", ""]);
    for s in ["bash", "zsh", "fish"] {
        assert!(shells.iter().any(|w| w == s), "{s}: {shells:?}");
    }
    let formats = bash_complete(&script, &["schedscope", "report", "--format", ""]);
    assert_eq!(formats, ["text", "json"]);
}

#[test]
fn zsh_completion_names_subcommands_and_flags() {
    let script = completions("zsh");
    assert!(script.starts_with("#compdef schedscope"), "{script}");
    for s in SUBCOMMANDS {
        assert!(script.contains(&format!("'{s}:")), "{s}");
    }
    for flag in [
        "--event=",
        "--output=",
        "--parquet=",
        "--gang-of=",
        "--top=",
    ] {
        assert!(script.contains(flag), "{flag}");
    }
    parses_in("zsh", &script);
}

#[test]
fn fish_completion_names_subcommands_and_flags() {
    let script = completions("fish");
    for s in SUBCOMMANDS {
        assert!(
            script
                .lines()
                .any(|l| l.starts_with("complete -c schedscope")
                    && l.contains(&format!("-a \"{s}\""))),
            "{s}"
        );
    }
    for flag in [
        "-l event",
        "-l output",
        "-l parquet",
        "-l gang-of",
        "-l top",
    ] {
        assert!(script.contains(flag), "{flag}");
    }
    parses_in("fish", &script);
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let (code, out, err) = run(&["completions", "tcsh"]);
    assert_eq!(code, 2);
    assert_eq!(out, "");
    assert!(err.contains("tcsh") && err.contains("bash"), "{err}");
}

#[test]
fn man_page_is_roff_with_every_subcommand() {
    let (code, page, err) = run(&["man"]);
    assert_eq!(code, 0, "{err}");
    assert!(page.starts_with(".ie \\n(.g .ds Aq"), "{page}");
    let th = page
        .lines()
        .find(|l| l.starts_with(".TH "))
        .expect(".TH line");
    assert!(th.starts_with(".TH schedscope 1 "), "{th}");
    assert!(
        th.contains(&format!("schedscope {}", env!("CARGO_PKG_VERSION"))),
        "{th}"
    );
    for section in [
        ".SH NAME",
        ".SH SYNOPSIS",
        ".SH DESCRIPTION",
        ".SH OPTIONS",
        ".SH SUBCOMMANDS",
        ".SH VERSION",
    ] {
        assert!(page.contains(section), "{section}");
    }
    for s in SUBCOMMANDS {
        assert!(page.contains(&format!("schedscope\\-{s}(1)")), "{s}");
    }
    assert!(
        !page.contains("schedscope\\-help(1)"),
        "no page for clap's help"
    );

    let (code, rec, err) = run(&["man", "record"]);
    assert_eq!(code, 0, "{err}");
    let th = rec
        .lines()
        .find(|l| l.starts_with(".TH "))
        .expect(".TH line");
    assert!(
        th.starts_with(".TH schedscope-record 1 ") && th.contains(env!("CARGO_PKG_VERSION")),
        "{th}"
    );
    assert!(rec.contains("\\-\\-event"), "{rec}");
    assert!(rec.contains("sched:*"), "the -e help reaches the page");

    let (code, _, err) = run(&["man", "nosuch"]);
    assert_eq!(code, 2);
    assert!(err.contains("'nosuch'") && err.contains("record"), "{err}");

    // rendered by groff, the page reads as a man page
    if !have("groff") {
        eprintln!("SKIPPED: groff rendering (no groff installed)");
        return;
    }
    let mut g = Command::new("groff")
        .args(["-man", "-Tascii", "-P-cbou"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut g.stdin.take().unwrap(), page.as_bytes()).unwrap();
    let o = g.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("SUBCOMMANDS"), "{text}");
    assert!(text.contains("schedscope-record(1)"), "{text}");
    assert!(text.contains("-V, --version"), "{text}");
}

#[test]
fn man_dir_writes_one_page_per_subcommand() {
    let dir = std::env::temp_dir().join(format!("schedscope-man-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (code, out, err) = run(&["man", "--dir", dir.to_str().unwrap()]);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    let mut want: Vec<String> = SUBCOMMANDS
        .iter()
        .map(|s| format!("schedscope-{s}.1"))
        .collect();
    want.push("schedscope.1".into());
    want.sort();
    assert_eq!(pages, want);
    let (_, stdout_page, _) = run(&["man"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("schedscope.1")).unwrap(),
        stdout_page
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `git ARGS` in this crate's directory, when git and the repository are there.
fn git(args: &[&str]) -> Option<String> {
    let o = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(Stdio::null())
        .output()
        .ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

#[test]
fn version_names_the_commit_when_built_from_git() {
    let (code, out, err) = run(&["--version"]);
    assert_eq!(code, 0, "{err}");
    let pkg = env!("CARGO_PKG_VERSION");
    match git(&["rev-parse", "--short=9", "HEAD"]) {
        // (built from this checkout: the commit it was built at, which a
        // test run right after the build still has)
        Some(commit) if git(&["ls-files", "--error-unmatch", "Cargo.toml"]).is_some() => {
            assert_eq!(out, format!("schedscope {pkg} ({commit})\n"));
        }
        _ => assert_eq!(out, format!("schedscope {pkg}\n")),
    }
    let (_, short, _) = run(&["-V"]);
    assert_eq!(short, out);
}
