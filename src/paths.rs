//! The files a command reads and writes, and how it writes them, so that no output ever
//! destroys an input. Every command declares its inputs (the program it runs included)
//! and its outputs in a [`Files`] before any work; [`Files::check`] refuses (exit 2) an
//! output that is one of the inputs or another output, compared by device and inode, so
//! that no second name, hard link, symlink or `..` gets around it.
//!
//! Reports, images and JSON files are written with [`replace`]: a temporary file in the
//! same folder, renamed into place, so that a reader never sees half a file and a failed
//! write leaves the old one. Traces, which must stay readable while they grow, are opened
//! with [`create_new`]. Neither follows a symlink onto an existing file: a rename replaces
//! the link itself, and `O_CREAT|O_EXCL` refuses any existing name, dangling links
//! included. Character devices and FIFOs (`/dev/null`, a terminal, a pipe), and names
//! under `/dev` (but `/dev/shm`) or `/proc` such as `/dev/stderr`, are written where they
//! are, appended to: they lead to a device or to one of the process's descriptors (a log
//! file, say), and replacing the name would put a file in `/dev`.

use crate::exit::input;
use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A declared file and the words naming it in a message ("--mapping", "the program").
#[derive(Debug)]
struct Named {
    what: String,
    path: PathBuf,
    /// An output that may replace an existing trace (`tdmap trace -o`, which asks for
    /// --force itself).
    trace: bool,
}

impl std::fmt::Display for Named {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.what, self.path.display())
    }
}

/// The files one command reads and writes.
#[derive(Debug, Default)]
pub struct Files {
    inputs: Vec<Named>,
    outputs: Vec<Named>,
}

/// Which file a name leads to: its device and inode, or for a name that does not exist
/// (yet), its folder's canonical path joined with the file name.
#[derive(Debug, PartialEq, Eq)]
enum Identity {
    Inode(u64, u64),
    Name(PathBuf),
}

impl Files {
    /// No files yet.
    pub fn new() -> Files {
        Files::default()
    }

    /// Declares a file the command reads, if given; `what` names it ("--mapping").
    pub fn reads(mut self, what: &str, path: Option<&Path>) -> Files {
        if let Some(p) = path {
            self.inputs.push(named(what, p));
        }
        self
    }

    /// Declares the program the command runs, found through PATH as exec finds it. A
    /// program that cannot be found is left for the start to report.
    pub fn runs(self, program: &OsStr) -> Files {
        let exe = tdmap_sys::find_program(program);
        self.reads("the program", exe.as_deref())
    }

    /// Declares a file the command writes, if given; `what` names it ("--report"). It
    /// may replace any existing file but an input, another output or a trace.
    pub fn writes(mut self, what: &str, path: Option<&Path>) -> Files {
        if let Some(p) = path {
            self.outputs.push(named(what, p));
        }
        self
    }

    /// Declares the trace (or the model instead of it) that `tdmap trace` writes, which
    /// may replace a trace: that command asks for --force before replacing anything.
    pub fn writes_trace(mut self, what: &str, path: Option<&Path>) -> Files {
        if let Some(p) = path {
            self.outputs.push(Named {
                trace: true,
                ..named(what, p)
            });
        }
        self
    }

    /// Fails (exit 2, one line naming both) if an output is an input or another output,
    /// is a folder, lies in a folder that does not exist, or is a trace: a trace costs a
    /// traced run to make again, so no report or image replaces one.
    pub fn check(&self) -> anyhow::Result<()> {
        let mut seen: Vec<(&Named, Identity)> = Vec::new();
        for out in &self.outputs {
            let Some(id) = output_identity(out)? else {
                continue;
            };
            if let Some(inp) = self
                .inputs
                .iter()
                .find(|i| input_identity(&i.path).as_ref() == Some(&id))
            {
                return Err(input(format!(
                    "{out} would overwrite {inp}; name another file"
                )));
            }
            if !out.trace && is_trace(&out.path) {
                return Err(input(format!(
                    "{out} would overwrite a tdmap trace; name another file"
                )));
            }
            if let Some((other, _)) = seen.iter().find(|(_, o)| *o == id) {
                return Err(input(format!(
                    "{other} and {out} are the same file; give each output its own name"
                )));
            }
            seen.push((out, id));
        }
        Ok(())
    }
}

fn named(what: &str, path: &Path) -> Named {
    Named {
        what: what.to_string(),
        path: path.to_path_buf(),
        trace: false,
    }
}

/// Whether the file at `path` starts as a tdmap trace does.
fn is_trace(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0; 8];
    File::open(path).is_ok_and(|f| f.take(8).read_exact(&mut head).is_ok())
        && &head == tdmap_trace::MAGIC
}

/// The identity of an input: the file its name leads to (through links), else the name.
fn input_identity(path: &Path) -> Option<Identity> {
    match std::fs::metadata(path) {
        Ok(m) => Some(Identity::Inode(m.dev(), m.ino())),
        Err(_) => name_identity(path),
    }
}

/// The identity of an output, or None for a character device or FIFO, which is written
/// where it is (see [`replace`]) and holds nothing to destroy.
fn output_identity(out: &Named) -> anyhow::Result<Option<Identity>> {
    match std::fs::metadata(&out.path) {
        Ok(m) if m.is_dir() => Err(input(format!("{out} is a folder; name a file"))),
        Ok(m) if is_special(&m) => Ok(None),
        Ok(m) => Ok(Some(Identity::Inode(m.dev(), m.ino()))),
        Err(_) => match name_identity(&out.path) {
            Some(id) => Ok(Some(id)),
            None => Err(input(format!(
                "{out}: cannot write in {}, no such folder; create it or name another file",
                folder(&out.path).display()
            ))),
        },
    }
}

/// A name that does not exist: its folder's canonical path joined with its file name.
fn name_identity(path: &Path) -> Option<Identity> {
    let folder = folder(path).canonicalize().ok()?;
    Some(Identity::Name(folder.join(path.file_name()?)))
}

/// The folder holding `path` ("." for a bare file name).
fn folder(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn is_special(m: &std::fs::Metadata) -> bool {
    let t = m.file_type();
    t.is_char_device() || t.is_fifo()
}

/// A name whose file is written where it is, appended to, never replaced: a character
/// device or FIFO (through links), or a name under /dev (/dev/stderr leads through
/// /proc/self/fd to tdmap's stderr, which may be a log file) or /proc. /dev/shm is an
/// ordinary shared folder.
fn open_in_place(path: &Path) -> io::Result<Option<File>> {
    let system = |d: &str| path.starts_with(d);
    let named = (system("/dev") && !system("/dev/shm")) || system("/proc");
    match std::fs::metadata(path) {
        Ok(m) if is_special(&m) || (named && m.is_file()) => {
            OpenOptions::new().append(true).open(path).map(Some)
        }
        _ => Ok(None),
    }
}

/// Writes `bytes` to `path` through a temporary file in the same folder, renamed into
/// place: an existing file (or the symlink at `path`, never its target) is replaced only
/// once the new one is whole. Declare `path` in a checked [`Files`] first.
pub fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace_with(path, |w| w.write_all(bytes))
}

/// [`replace`], with `fill` writing the content.
pub fn replace_with(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    if let Some(f) = open_in_place(path)? {
        let mut w = BufWriter::new(f);
        fill(&mut w)?;
        return w.flush();
    }
    let (tmp, file) = temp_beside(path)?;
    let written = (|| {
        let mut w = BufWriter::new(file);
        fill(&mut w)?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        // rename(2) replaces the name `path`: a symlink there is replaced, not followed.
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A new, exclusively created temporary file in `path`'s folder.
fn temp_beside(path: &Path) -> io::Result<(PathBuf, File)> {
    let dir = folder(path);
    let pid = std::process::id();
    let mut n = 0;
    loop {
        let tmp = dir.join(format!(".tdmap-{pid}-{n}.tmp"));
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 100 => n += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Whether anything is at `path`, a dangling symlink included.
pub fn exists(path: &Path) -> bool {
    path.symlink_metadata().is_ok()
}

/// Opens a new file at `path` to be written in place as it grows (a trace). An existing
/// name is refused unless `force`, which removes it first: a symlink is removed itself,
/// its target is left alone. The file is created with `O_EXCL`, so a name that appears
/// in between is refused, not followed. Declare `path` in a checked [`Files`] first.
pub fn create_new(path: &Path, force: bool) -> io::Result<File> {
    if force {
        if let Some(f) = open_in_place(path)? {
            return Ok(f);
        }
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    OpenOptions::new().write(true).create_new(true).open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> crate::temp_dir::TempDir {
        crate::temp_dir::TempDir::new(&format!("tdmap-paths-{tag}"))
    }

    #[test]
    fn a_second_name_of_an_input_clashes_but_a_new_file_does_not() {
        let d = dir("names");
        let input = d.join("in.json");
        std::fs::write(&input, "{}").unwrap();
        std::fs::hard_link(&input, d.join("hard")).unwrap();
        std::os::unix::fs::symlink(&input, d.join("soft")).unwrap();
        std::fs::create_dir(d.join("sub")).unwrap();
        for out in ["hard", "soft", "sub/../in.json"] {
            let files = Files::new()
                .reads("--mapping", Some(&input))
                .writes("--report", Some(&d.join(out)));
            let err = files.check().unwrap_err().to_string();
            assert!(
                err.contains("--mapping") && err.contains("--report"),
                "{err}"
            );
        }
        let files = Files::new()
            .reads("--mapping", Some(&input))
            .writes("--report", Some(&d.join("new.txt")));
        files.check().unwrap();
    }

    #[test]
    fn two_outputs_that_do_not_exist_yet_clash_by_folder_and_name() {
        let d = dir("outs");
        std::fs::create_dir(d.join("sub")).unwrap();
        let files = Files::new()
            .writes("--report", Some(&d.join("x.svg")))
            .writes("--heatmap", Some(&d.join("sub/../x.svg")));
        let err = files.check().unwrap_err().to_string();
        assert!(err.contains("same file"), "{err}");
    }

    #[test]
    fn special_files_are_written_in_place_and_never_clash() {
        let null = Path::new("/dev/null");
        let files = Files::new()
            .writes("--report", Some(null))
            .writes("--heatmap", Some(null));
        files.check().unwrap();
        replace(null, b"x").unwrap();
        assert!(null.metadata().unwrap().file_type().is_char_device());
    }

    /// `--report /dev/stderr` with stderr sent to a log: the log gets the report after
    /// what it held, and no file replaces the name in /dev. Tested on /dev/fd/N, where a
    /// wrong rename fails (the folder is /proc/self/fd) instead of replacing /dev/stderr.
    #[test]
    fn a_descriptor_name_is_appended_to_not_replaced() {
        use std::os::fd::AsRawFd;
        let d = dir("fd");
        let log = d.join("log");
        std::fs::write(&log, "before\n").unwrap();
        let f = File::open(&log).unwrap();
        let name = PathBuf::from(format!("/dev/fd/{}", f.as_raw_fd()));
        Files::new()
            .writes("--report", Some(&name))
            .check()
            .unwrap();
        replace(&name, b"report\n").unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "before\nreport\n");
    }

    #[test]
    fn create_new_refuses_a_dangling_link_and_force_replaces_the_link_only() {
        let d = dir("create");
        let target = d.join("target");
        let link = d.join("out.trace");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(create_new(&link, false).is_err());
        assert!(!exists(&target), "the link was not followed");
        std::fs::write(&target, "keep").unwrap();
        create_new(&link, true).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert!(!link.symlink_metadata().unwrap().file_type().is_symlink());
    }
}
