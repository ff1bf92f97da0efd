//! setuid safety (issue 21 item 6, must-show 5): a setuid-root program built with
//! `tdmap cc` (the runtime inside) and one linked with libmai, run by a temporary
//! unprivileged user with the runtime's and libmai's variables pointing into a folder
//! only root may write, create nothing there and write nothing on the announcement
//! descriptor: in secure-execution mode the variables are ignored (secure_getenv).
//!
//! The same programs without the setuid bit, run as root under umask 0, do create the
//! files (so the variables are right and the test can fail), with modes that are not
//! writable by others.
//!
//! Needs root and `useradd`/`userdel`; otherwise it says why and passes. The user is
//! removed at the end, also when an assertion fails.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TDMAP: &str = env!("CARGO_BIN_EXE_tdmap");

/// `name` in `PATH` or the usual sbin folders.
fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn id(args: &[&str]) -> u32 {
    let out = Command::new("id").args(args).output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// A system user that exists as long as this value does.
struct TempUser {
    name: String,
    userdel: PathBuf,
    uid: u32,
    gid: u32,
}

impl TempUser {
    fn create(useradd: &Path, userdel: PathBuf) -> TempUser {
        let name = format!("tdmapsu{}", std::process::id());
        let ok = Command::new(useradd)
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
            ])
            .arg(&name)
            .status()
            .unwrap()
            .success();
        assert!(ok, "useradd {name} failed");
        let mut user = TempUser {
            name,
            userdel,
            uid: 0,
            gid: 0,
        };
        user.uid = id(&["-u", &user.name]);
        user.gid = id(&["-g", &user.name]);
        assert_ne!(user.uid, 0);
        user
    }
}

impl Drop for TempUser {
    fn drop(&mut self) {
        let ok = Command::new(&self.userdel)
            .arg(&self.name)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("setuid test: could not remove user {}", self.name);
        }
    }
}

fn mkdir(p: &Path, mode: u32) {
    std::fs::create_dir_all(p).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn must(out: Output, what: &str) -> Output {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The two programs, built in `bin`: `rt` with `tdmap cc`, `mai` with gcc and libmai.so.
fn build(bin: &Path) -> [PathBuf; 2] {
    common::cargo_build("tdmap-rt");
    common::cargo_build("tdmap-mai");
    let src = bin.join("p.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\nstatic volatile long a[4096];\n\
         int main(void) { for (int i = 0; i < 4096; i++) a[i] = i; puts(\"ok\"); return 0; }\n",
    )
    .unwrap();
    let rt = bin.join("rt");
    must(
        Command::new(TDMAP)
            .args(["cc", "-O1", "-o"])
            .arg(&rt)
            .arg(&src)
            .output()
            .unwrap(),
        "tdmap cc",
    );
    // libmai.so beside the program, found through its run path (set-id programs ignore
    // LD_LIBRARY_PATH).
    let lib = Path::new(TDMAP).parent().unwrap().join("libmai.so");
    std::fs::copy(&lib, bin.join("libmai.so")).unwrap();
    let mai = bin.join("mai");
    must(
        Command::new("gcc")
            .args(["-O1", "-o"])
            .arg(&mai)
            .arg(&src)
            .arg(format!("-L{}", bin.display()))
            .arg(format!("-Wl,--no-as-needed,-rpath,{}", bin.display()))
            .arg("-lmai")
            .output()
            .unwrap(),
        "gcc with libmai",
    );
    [rt, mai]
}

/// Runs `prog` under umask 0 with every path and switch variable pointing into `out`;
/// the announcement descriptor in `TDMAP_INJECT` is its stderr (2). `as_user`: with
/// that uid and gid.
fn run(prog: &Path, out: &Path, as_user: Option<&TempUser>) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("umask 000; exec \"$0\"")
        .arg(prog)
        .env("TDMAP_RT_CTL", out.join("ctl"))
        .env("TDMAP_RT_DATA", out.join("data"))
        .env(
            "TDMAP_INJECT",
            format!("100,0.5,64,{},2", std::process::id()),
        )
        .env("MAI_AUTO", "1")
        .env("MAI_AUTO_LOG", out.join("mai.log"))
        .env("MAI_DEBUG", "1");
    if let Some(u) = as_user {
        cmd.uid(u.uid).gid(u.gid);
    }
    let o = common::output_within(cmd, std::time::Duration::from_secs(60));
    assert!(o.status.success(), "{} failed: {o:?}", prog.display());
    assert_eq!(String::from_utf8_lossy(&o.stdout), "ok\n");
    o
}

/// The names of the files in `dir` with their modes.
fn files(dir: &Path) -> Vec<(String, u32)> {
    let mut v: Vec<(String, u32)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let mode = e.metadata().unwrap().mode() & 0o7777;
            (e.file_name().to_string_lossy().into_owned(), mode)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn setuid_programs_ignore_the_runtimes_and_libmais_variables() {
    if id(&["-u"]) != 0 {
        eprintln!("skipped: the setuid test needs root (to make setuid-root programs and a user)");
        return;
    }
    let (Some(useradd), Some(userdel)) = (find_tool("useradd"), find_tool("userdel")) else {
        eprintln!("skipped: the setuid test needs useradd and userdel");
        return;
    };
    let root = common::TempDir::new("tdmap-setuid");
    let (bin, ctl, out) = (root.join("bin"), root.join("ctl"), root.join("out"));
    for d in [&*root, &bin, &ctl, &out] {
        mkdir(d, 0o755);
    }
    let progs = build(&bin);

    // Not set-id: the variables work, and nothing created is writable by others.
    for p in &progs {
        run(p, &ctl, None);
    }
    let made = files(&ctl);
    let names: Vec<&str> = made.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["ctl", "data", "data.maps", "mai.log"], "{made:?}");
    for (name, mode) in &made {
        assert_eq!(mode & 0o022, 0, "{name} has mode {mode:o} under umask 0");
    }

    // Set-id root, run by an unprivileged user: nothing in `out`, which only root may
    // write, and nothing on the announcement descriptor (stderr).
    let user = TempUser::create(&useradd, userdel);
    let mut stderr = Vec::new();
    for p in &progs {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o4755)).unwrap();
        stderr.push((p.clone(), run(p, &out, Some(&user)).stderr));
    }
    assert_eq!(files(&out), [], "files created by the setuid programs");
    for (p, e) in stderr {
        assert!(e.is_empty(), "{} wrote on stderr: {e:?}", p.display());
    }
}
