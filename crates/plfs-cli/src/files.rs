//! File commands on the logical namespace: `plfs ls`, `stat`, `cat`, `import` and `export`.
//! Bulk copies use [`BUF_SIZE`] buffers; import and export preserve the permission bits.

use crate::util::{absolute, format_time, format_time_short, id_name, mode_string, open_plfs, require_plfs_path};
use crate::util::{CoreContext, BUF_SIZE};
use crate::Cli;
use anyhow::{bail, Context, Result};
use clap::Args;
use plfs_core::{FileKind, OpenFlags, Plfs, Stat};
use serde_json::json;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Arguments of `plfs ls`.
#[derive(Debug, Args)]
pub struct LsArgs {
    /// Long listing: mode, links, owner, group, size, modification time (UTC).
    #[arg(short = 'l')]
    long: bool,
    /// Print a JSON array of entries (with every stat field) instead of text.
    #[arg(long)]
    json: bool,
    /// Logical files or directories (default: the first mount point).
    paths: Vec<PathBuf>,
}

/// Arguments of `plfs stat`.
#[derive(Debug, Args)]
pub struct StatArgs {
    /// The logical file.
    file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Arguments of `plfs cat`.
#[derive(Debug, Args)]
pub struct CatArgs {
    /// Logical files, written to standard output in order.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

/// Arguments of `plfs import` and `plfs export`.
#[derive(Debug, Args)]
pub struct CopyArgs {
    /// Source file.
    src: PathBuf,
    /// Destination file, or an existing directory to copy into.
    dst: PathBuf,
}

fn kind_name(k: FileKind) -> &'static str {
    match k {
        FileKind::File => "file",
        FileKind::Dir => "directory",
        FileKind::Symlink => "symlink",
    }
}

fn stat_json(path: &Path, st: &Stat) -> serde_json::Value {
    json!({
        "path": path.display().to_string(),
        "kind": kind_name(st.kind),
        "mode": st.mode, "perm": format!("{:04o}", st.mode & 0o7777),
        "uid": st.uid, "gid": st.gid,
        "size": st.size, "blocks": st.blocks, "blksize": st.blksize,
        "atime_ns": st.atime_ns, "mtime_ns": st.mtime_ns, "ctime_ns": st.ctime_ns,
        "ino": st.ino, "dev": st.dev, "nlink": st.nlink,
    })
}

fn long_line(plfs: &Plfs, path: &Path, name: &str, st: &Stat) -> String {
    let mut s = format!(
        "{} {:>3} {:<8} {:<8} {:>12} {} {name}",
        mode_string(st.mode),
        st.nlink,
        id_name("/etc/passwd", st.uid),
        id_name("/etc/group", st.gid),
        st.size,
        format_time_short(st.mtime_ns)
    );
    if st.kind == FileKind::Symlink {
        if let Ok(t) = plfs.readlink(path) {
            s.push_str(&format!(" -> {}", Path::new(&t).display()));
        }
    }
    s
}

/// Runs `plfs ls`.
pub fn ls(cli: &Cli, a: &LsArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let paths: Vec<PathBuf> = if a.paths.is_empty() {
        let m = plfs
            .config()
            .mounts
            .first()
            .context("the configuration has no mount point")?;
        vec![m.mount_point.clone()]
    } else {
        a.paths.iter().map(|p| absolute(p)).collect::<Result<_>>()?
    };
    let mut out = Vec::new();
    let mut text = String::new();
    for (i, path) in paths.iter().enumerate() {
        require_plfs_path(&plfs, path)?;
        let st = plfs.stat(path).ctx(|| format!("cannot access {}", path.display()))?;
        let mut entries: Vec<(PathBuf, String, Option<Stat>)> = Vec::new();
        if st.kind == FileKind::Dir {
            for e in plfs
                .readdir(path)
                .ctx(|| format!("reading directory {}", path.display()))?
            {
                let full = path.join(&e.name);
                // An entry removed since readdir is skipped, as ls does.
                let est = if a.long || a.json { plfs.stat(&full).ok() } else { None };
                if (a.long || a.json) && est.is_none() {
                    continue;
                }
                entries.push((full, String::from_utf8_lossy(e.name.as_bytes()).into_owned(), est));
            }
        } else {
            entries.push((path.clone(), path.display().to_string(), Some(st)));
        }
        if paths.len() > 1 && st.kind == FileKind::Dir && !a.json {
            text.push_str(&format!("{}{}:\n", if i > 0 { "\n" } else { "" }, path.display()));
        }
        for (full, name, est) in entries {
            if a.json {
                let mut v = stat_json(&full, est.as_ref().expect("stat taken for --json"));
                v["name"] = json!(name);
                out.push(v);
            } else if a.long {
                text.push_str(&long_line(
                    &plfs,
                    &full,
                    &name,
                    est.as_ref().expect("stat taken for -l"),
                ));
                text.push('\n');
            } else {
                text.push_str(&name);
                text.push('\n');
            }
        }
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        std::io::stdout().lock().write_all(text.as_bytes())?;
    }
    Ok(())
}

/// Runs `plfs stat`.
pub fn stat(cli: &Cli, a: &StatArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let path = absolute(&a.file)?;
    require_plfs_path(&plfs, &path)?;
    let st = plfs.stat(&path).ctx(|| format!("cannot stat {}", path.display()))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&stat_json(&path, &st))?);
        return Ok(());
    }
    println!("  path: {}", path.display());
    println!("  kind: {}", kind_name(st.kind));
    println!("  mode: {:06o} ({})", st.mode, mode_string(st.mode));
    println!("   uid: {} ({})", st.uid, id_name("/etc/passwd", st.uid));
    println!("   gid: {} ({})", st.gid, id_name("/etc/group", st.gid));
    println!("  size: {}", st.size);
    println!("blocks: {} (512-byte)", st.blocks);
    println!("blksize: {}", st.blksize);
    println!(" atime: {}", format_time(st.atime_ns));
    println!(" mtime: {}", format_time(st.mtime_ns));
    println!(" ctime: {}", format_time(st.ctime_ns));
    println!("   ino: {}", st.ino);
    println!("   dev: {}", st.dev);
    println!(" nlink: {}", st.nlink);
    Ok(())
}

const READ_ONLY: OpenFlags = OpenFlags {
    read: true,
    write: false,
    create: false,
    excl: false,
    trunc: false,
    append: false,
};

/// Streams a logical file into `out`; returns the bytes copied.
fn copy_out(plfs: &Plfs, path: &Path, out: &mut dyn Write, what: &str) -> Result<u64> {
    let f = plfs
        .open(path, READ_ONLY, 0, std::process::id())
        .ctx(|| format!("cannot open {}", path.display()))?;
    let mut buf = vec![0u8; BUF_SIZE];
    let mut off = 0u64;
    loop {
        let n = f
            .read(&mut buf, off)
            .ctx(|| format!("reading {} at offset {off}", path.display()))?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n]).with_context(|| format!("writing {what}"))?;
        off += n as u64;
    }
    f.close().ctx(|| format!("closing {}", path.display()))?;
    Ok(off)
}

/// Runs `plfs cat`.
pub fn cat(cli: &Cli, a: &CatArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for f in &a.files {
        let path = absolute(f)?;
        require_plfs_path(&plfs, &path)?;
        copy_out(&plfs, &path, &mut out, "standard output")?;
    }
    out.flush().context("writing standard output")?;
    Ok(())
}

/// The destination of a copy: `dst`, or `dst/<basename of src>` when `dst` is a directory.
fn into_dir(dst: PathBuf, src: &Path, dst_is_dir: bool) -> Result<PathBuf> {
    if !dst_is_dir {
        return Ok(dst);
    }
    let name = src
        .file_name()
        .with_context(|| format!("{}: has no file name", src.display()))?;
    Ok(dst.join(name))
}

/// Reads until `buf` is full or end of file.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Runs `plfs import SRC DST`.
pub fn import(cli: &Cli, a: &CopyArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let mut src = std::fs::File::open(&a.src).with_context(|| format!("cannot open {}", a.src.display()))?;
    let meta = src
        .metadata()
        .with_context(|| format!("cannot stat {}", a.src.display()))?;
    if meta.is_dir() {
        bail!("{}: is a directory (import copies one file)", a.src.display());
    }
    let mode = meta.permissions().mode() & 0o7777;
    let dst = absolute(&a.dst)?;
    require_plfs_path(&plfs, &dst)?;
    let dst_is_dir = match plfs.stat(&dst) {
        Ok(st) => st.kind == FileKind::Dir,
        Err(e) if e.is_not_found() => a.dst.as_os_str().as_bytes().ends_with(b"/"),
        Err(e) => return Err(anyhow::Error::new(e).context(format!("cannot stat {}", dst.display()))),
    };
    let dst = into_dir(dst, &a.src, dst_is_dir)?;
    let flags = OpenFlags {
        read: false,
        write: true,
        create: true,
        excl: false,
        trunc: true,
        append: false,
    };
    let f = plfs
        .open(&dst, flags, mode, std::process::id())
        .ctx(|| format!("cannot create {}", dst.display()))?;
    let mut buf = vec![0u8; BUF_SIZE];
    let mut off = 0u64;
    loop {
        let n = read_full(&mut src, &mut buf).with_context(|| format!("reading {}", a.src.display()))?;
        if n == 0 {
            break;
        }
        f.write(&buf[..n], off)
            .ctx(|| format!("writing {} at offset {off}", dst.display()))?;
        off += n as u64;
    }
    f.close().ctx(|| format!("closing {}", dst.display()))?;
    // The umask applied at create: set the exact source mode.
    plfs.chmod(&dst, mode)
        .ctx(|| format!("setting the mode of {}", dst.display()))?;
    println!("{} -> {} ({off} bytes)", a.src.display(), dst.display());
    Ok(())
}

/// Runs `plfs export SRC DST`.
pub fn export(cli: &Cli, a: &CopyArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let src = absolute(&a.src)?;
    require_plfs_path(&plfs, &src)?;
    let st = plfs.stat(&src).ctx(|| format!("cannot stat {}", src.display()))?;
    if st.kind == FileKind::Dir {
        bail!("{}: is a directory (export copies one file)", src.display());
    }
    let mode = st.mode & 0o7777;
    let dst = into_dir(a.dst.clone(), &src, a.dst.is_dir())?;
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode | 0o200)
        .open(&dst)
        .with_context(|| format!("cannot create {}", dst.display()))?;
    let what = dst.display().to_string();
    let n = copy_out(&plfs, &src, &mut out, &what)?;
    drop(out);
    std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("setting the mode of {}", dst.display()))?;
    println!("{} -> {} ({n} bytes)", src.display(), dst.display());
    Ok(())
}
