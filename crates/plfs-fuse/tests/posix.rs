//! POSIX rules through the mount for several users (issue 17): the daemon, root with
//! `allow_other`, never serves a user what the user could not read or write; permissions and
//! set-ID bits behave as on a local file system; an unlinked file stays usable through the
//! descriptors that have it open; logical paths near PATH_MAX work.
//!
//! Users are made up with setpriv: A (2001) and B (2002) share group 3000, C (2003) is alone.

mod common;

use common::{as_user, fuse_available, pattern, sh, Mounted};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Output;

const GROUP: u32 = 3000;

fn a(cmd: &str) -> Output {
    as_user(2001, 2001, &[GROUP], cmd)
}
fn b(cmd: &str) -> Output {
    as_user(2002, 2002, &[GROUP], cmd)
}
fn c(cmd: &str) -> Output {
    as_user(2003, 2003, &[], cmd)
}

fn ok(out: Output) -> Vec<u8> {
    assert!(out.status.success(), "{out:?}");
    out.stdout
}

fn denied(out: Output) {
    assert!(!out.status.success(), "should have failed: {out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Permission denied") || err.contains("Operation not permitted"),
        "{out:?}"
    );
}

/// A mount whose root every user may create in (sticky, like /tmp).
fn shared_mount(tag: &str, args: &[&str]) -> Mounted {
    let m = Mounted::with_args(tag, 1, "", args);
    std::fs::set_permissions(&m.mnt, std::fs::Permissions::from_mode(0o1777)).unwrap();
    m
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

/// Every file under `dir` (recursively), with `dir` itself.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if out[i].is_dir() && !out[i].is_symlink() {
            let mut more: Vec<PathBuf> = std::fs::read_dir(&out[i]).unwrap().map(|e| e.unwrap().path()).collect();
            more.sort();
            out.extend(more);
        }
        i += 1;
    }
    out
}

/// A user who owns a file (so its container) plants, in place of its data log, a symbolic link
/// to a file only root may read: reading through the mount fails and never returns its bytes.
#[test]
fn a_planted_link_to_a_root_only_file_is_never_followed() {
    if !fuse_available() {
        return;
    }
    let m = shared_mount("planted", &[]);
    let secret = m.dir.join("secret");
    std::fs::write(&secret, vec![b'S'; 1 << 16]).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let f = m.p("mine");
    ok(a(&format!("head -c 20000 /dev/zero | tr '\\0' a > {}", f.display())));
    let logs = m.backend_files("data.");
    assert_eq!(logs.len(), 1, "{logs:?}");
    let log = &logs[0];
    let hostdir = log.parent().unwrap();
    let logname = log.file_name().unwrap().to_string_lossy().into_owned();
    // As the owner of the container, in the backend: the hostdir is swapped for one holding a
    // copy of the index log and, as the data log, a link to the secret.
    ok(a(&format!(
        "mkdir {h}.new && cp {h}/index.* {h}.new/ && ln -s {s} {h}.new/{logname} && mv {h} {h}.old && mv {h}.new {h}",
        h = hostdir.display(),
        s = secret.display(),
    )));
    // The read must never return the secret's bytes. (What it returns instead is the core's
    // business: an error, or, while the core takes a record pointing past the end of its data
    // log for a torn tail, nothing.)
    let out = a(&format!("cat {}", f.display()));
    assert!(!out.stdout.contains(&b'S'), "the secret's bytes were served");
    assert!(!out.stdout.contains(&b'a'), "a link was followed to some data: {out:?}");
    // The hostdir itself a link to a directory of the user's holding the same.
    let evil = m.dir.join("evil");
    std::fs::create_dir(&evil).unwrap();
    sh(&format!("chown 2001:2001 {}", evil.display()));
    ok(a(&format!(
        "cp {h}/index.* {e}/ && ln -s {s} {e}/{logname} && mv {h} {h}.new && ln -s {e} {h}",
        h = hostdir.display(),
        e = evil.display(),
        s = secret.display(),
    )));
    let out = a(&format!("cat {}", f.display()));
    assert!(!out.stdout.contains(&b'S'), "the secret's bytes were served: {out:?}");
    // Root reading it gets an error too (links are never followed), and the daemon serves on.
    let out = std::process::Command::new("cat").arg(&f).output().unwrap();
    assert!(!out.stdout.contains(&b'S'));
    ok(a(&format!("echo fine > {0}/other && cat {0}/other", m.mnt.display())));
}

/// Files belong to their creators; a group may read and write a group file, and what one
/// member wrote the owner reads; another user may list and stat but not read or write; the
/// backend objects each user made are that user's.
#[test]
fn owners_and_groups_are_the_callers() {
    if !fuse_available() {
        return;
    }
    let m = shared_mount("groups", &[]);
    let (mnt, dir) = (m.mnt.display().to_string(), m.p("proj"));
    ok(a(&format!(
        "mkdir {d} && chgrp {GROUP} {d} && chmod 2770 {d} && head -c 300000 /dev/urandom > {d}/data && chmod 660 {d}/data \
         && echo private > {mnt}/priv && chmod 600 {mnt}/priv",
        d = dir.display()
    )));
    let data = dir.join("data");
    let md = std::fs::metadata(&data).unwrap();
    assert_eq!((md.uid(), md.gid(), md.mode() & 0o7777), (2001, GROUP, 0o660));
    let mut want = std::fs::read(&data).unwrap();
    // B, a member, reads it and appends; A reads B's part.
    assert_eq!(ok(b(&format!("cat {}", data.display()))), want);
    ok(b(&format!("printf 'from B' >> {}", data.display())));
    want.extend_from_slice(b"from B");
    assert_eq!(ok(a(&format!("cat {}", data.display()))), want);
    // C, not a member, can see the file but not open it, nor the private one.
    denied(c(&format!("cat {}", data.display())));
    denied(c(&format!("ls {}", dir.display())));
    denied(c(&format!("cat {mnt}/priv")));
    denied(c(&format!("echo x >> {mnt}/priv")));
    denied(b(&format!("cat {mnt}/priv")));
    let ls = String::from_utf8(ok(c(&format!("ls -ln {mnt}")))).unwrap();
    assert!(ls.contains("-rw------- 1 2001 2001") && ls.contains("priv"), "{ls}");
    // The backend: B's logs are B's, in the file's group; A's are A's.
    let owners: std::collections::BTreeSet<(u32, u32)> = m
        .backend_files("data.")
        .iter()
        .filter(|p| p.starts_with(m.backends[0].join("proj")))
        .map(|p| std::fs::metadata(p).map(|md| (md.uid(), md.gid())).unwrap())
        .collect();
    assert_eq!(owners, [(2001, GROUP), (2002, GROUP)].into_iter().collect());
    // Root still reads everything; a new file of C's is C's through and through.
    assert_eq!(std::fs::read(&data).unwrap(), want);
    ok(c(&format!("echo c > {mnt}/cfile")));
    let container = m.backends[0].join("cfile");
    for p in tree(&container) {
        let md = std::fs::symlink_metadata(&p).unwrap();
        assert_eq!(md.uid(), 2003, "{}", p.display());
    }
}

/// Without `default_permissions` the kernel checks nothing; the daemon then checks opens and
/// runs every request as its caller, so the same rules hold, also while the owner has the file
/// open (the daemon has its index and data loaded then).
#[test]
fn without_default_permissions_the_daemon_checks() {
    if !fuse_available() {
        return;
    }
    let m = shared_mount("nodefperm", &["--no-default-permissions"]);
    let mnt = m.mnt.display().to_string();
    ok(a(&format!(
        "printf secret > {mnt}/priv && chmod 600 {mnt}/priv && mkdir -m 700 {mnt}/adir && echo x > {mnt}/adir/f"
    )));
    denied(c(&format!("cat {mnt}/priv")));
    denied(c(&format!("echo x >> {mnt}/priv")));
    denied(c(&format!("cat {mnt}/adir/f")));
    denied(c(&format!("stat {mnt}/adir/f")));
    denied(c(&format!("ls {mnt}/adir")));
    denied(c(&format!("chmod 666 {mnt}/priv")));
    assert!(!c(&format!("test -r {mnt}/priv")).status.success(), "access(R_OK)");
    assert!(c(&format!("test -e {mnt}/priv")).status.success(), "access(F_OK)");
    let ls = String::from_utf8(ok(c(&format!("ls -ln {mnt}")))).unwrap();
    assert!(ls.contains("priv"), "{ls}");
    // While A holds it open and has read it (so its data is loaded in the daemon).
    let script =
        format!("exec 3< {mnt}/priv; cat <&3 >/dev/null; printf ready; while [ ! -e {mnt}/done ]; do sleep 0.05; done");
    let mut holder = std::process::Command::new("setpriv")
        .args(["--reuid=2001", "--regid=2001", "--clear-groups", "sh", "-c", &script])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut buf = [0u8; 5];
    std::io::Read::read_exact(holder.stdout.as_mut().unwrap(), &mut buf).unwrap();
    let out = c(&format!("cat {mnt}/priv"));
    std::fs::write(m.p("done"), b"").unwrap();
    holder.wait().unwrap();
    denied(out);
    assert_eq!(ok(a(&format!("cat {mnt}/priv"))), b"secret");
}

/// A write or truncate by a process without CAP_FSETID clears set-user-ID, and set-group-ID if
/// group execute is set, as on a local file system; root's writes keep them.
#[test]
fn writes_clear_set_id_bits() {
    if !fuse_available() {
        return;
    }
    let m = shared_mount("setid", &[]);
    let f = m.p("prog");
    std::fs::write(&f, b"#!/bin/sh\n").unwrap();
    let set = |mode: u32| std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
    set(0o6777);
    ok(c(&format!("echo more >> {}", f.display())));
    assert_eq!(mode(&f), 0o777, "a write by another user");
    set(0o6777);
    ok(c(&format!("truncate -s 3 {}", f.display())));
    assert_eq!(mode(&f), 0o777, "a truncate by another user");
    set(0o2767);
    ok(c(&format!("echo more >> {}", f.display())));
    assert_eq!(mode(&f), 0o2767, "set-group-ID without group execute stays");
    set(0o6777);
    sh(&format!("echo root >> {}", f.display()));
    assert_eq!(mode(&f), 0o6777, "root keeps them");
    // Seen at once, also by a process that had the old mode cached (issue 25, item 7: the kernel
    // kept it for up to a second; pjdfstest chmod/12.t).
    for _ in 0..3 {
        set(0o6777);
        assert_eq!(mode(&f), 0o6777);
        ok(c(&format!(
            "python3 -c \"import os; fd = os.open('{}', os.O_WRONLY); os.write(fd, b'x'); os.close(fd)\"",
            f.display()
        )));
        // `stat -c %a` asks for the mode alone (statx), which the kernel answers from its copy
        // when only the size and times were invalidated by the write.
        let shown = ok(std::process::Command::new("stat")
            .args(["-c", "%a"])
            .arg(&f)
            .output()
            .unwrap());
        assert_eq!(
            String::from_utf8_lossy(&shown),
            "777\n",
            "stat right after another user's write"
        );
    }
    // The owner's own write clears them too (Linux: no CAP_FSETID).
    ok(a(&format!(
        "echo x > {0}/own && chmod 4755 {0}/own && echo y >> {0}/own",
        m.mnt.display()
    )));
    assert_eq!(mode(&m.p("own")), 0o755);
}

/// A 0600 file's container and everything in it is closed to others; a chmod opens them.
#[test]
fn containers_follow_the_file_mode() {
    if !fuse_available() {
        return;
    }
    let m = shared_mount("cmodes", &[]);
    ok(a(&format!("umask 077; echo data > {}", m.p("f").display())));
    let container = m.backends[0].join("f");
    let check = |file: u32, dir: u32, log: u32| {
        for p in tree(&container) {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let want = if p.is_dir() {
                dir
            } else if name.starts_with("data.") || name.starts_with("index.") {
                log
            } else if name == ".plfscontainer" {
                file
            } else {
                continue;
            };
            assert_eq!(mode(&p), want, "{}", p.display());
        }
    };
    check(0o600, 0o711, 0o600);
    ok(a(&format!("chmod 644 {}", m.p("f").display())));
    check(0o644, 0o755, 0o644);
    assert_eq!(ok(c(&format!("cat {}", m.p("f").display()))), b"data\n");
}

/// POSIX: a file unlinked by another process stays readable and writable through the
/// descriptors that have it open, fstat reports st_nlink 0, close succeeds; then its data is
/// gone from the backend. Unlinked through the mount, and by a process outside the daemon.
#[test]
fn an_unlinked_file_stays_usable_while_open() {
    if !fuse_available() {
        return;
    }
    let m = Mounted::new("unlinkopen");
    for outside in [false, true] {
        let f = m.p(if outside { "out" } else { "in" });
        let body = pattern(7, 300_000);
        std::fs::write(&f, &body).unwrap();
        let script = format!(
            r#"
import os, subprocess, sys
p = '{p}'
fd = os.open(p, os.O_RDWR)
sys.stdout.write('open\n'); sys.stdout.flush()
if {inside}:
    subprocess.run(['rm', p], check=True)
else:
    sys.stdin.readline()
assert not {inside} or not os.path.exists(p), 'the name is gone'
head = os.pread(fd, 100, 0)
st = os.fstat(fd)
assert st.st_nlink == 0, st
assert st.st_size == {n}, st
assert os.pwrite(fd, b'XYZ', 10) == 3
back = os.pread(fd, 20, 0)
os.fsync(fd)
os.close(fd)
sys.stdout.write(head.hex() + ' ' + back.hex() + '\n')
"#,
            p = f.display(),
            inside = if outside { "False" } else { "True" },
            n = body.len()
        );
        let mut child = std::process::Command::new("python3")
            .args(["-c", &script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = child.stdout.take().unwrap();
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while std::io::Read::read(&mut out, &mut byte).unwrap() == 1 && byte[0] != b'\n' {
            line.push(byte[0]);
        }
        assert_eq!(line, b"open");
        if outside {
            // The tools' own PLFS instance, in this process: not the daemon.
            m.plfs().unlink(&f).unwrap();
            std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"go\n").unwrap();
        }
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
        let res = child.wait_with_output().unwrap();
        assert!(res.status.success(), "{}", String::from_utf8_lossy(&res.stderr));
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let mut back = body[..20].to_vec();
        back[10..13].copy_from_slice(b"XYZ");
        assert_eq!(
            rest.trim(),
            format!("{} {}", hex(&body[..100]), hex(&back)),
            "outside: {outside}"
        );
        // Once closed, nothing of it is left in the backend. The kernel sends the last RELEASE
        // after close(2) has returned, without waiting for it: the daemon deletes the file's data
        // then, a moment after the process is gone (seen half done under load: the index log
        // removed, the data log not yet).
        let mut left: Vec<PathBuf> = Vec::new();
        for _ in 0..500 {
            left = tree(&m.backends[0]).into_iter().skip(1).collect();
            if left.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(left.is_empty(), "outside: {outside}: {left:?}");
    }
}

/// A logical path of about 4000 bytes (PATH_MAX is 4096) works through the mount: its backend
/// paths are longer than PATH_MAX, which works only relative to directory descriptors.
#[test]
fn logical_paths_near_path_max_work() {
    if !fuse_available() {
        return;
    }
    // Backends deeper than the mount point: their paths are the longer ones.
    let m = Mounted::with_backends_in("longpath", 1, "", &[], &"b".repeat(120));
    // Components of at most 200 bytes (NAME_MAX is 255), the whole path through the mount
    // 3995 bytes.
    let mut rel = PathBuf::new();
    let name = loop {
        let left = 3995 - m.mnt.join(&rel).as_os_str().len() - 1;
        if left <= 250 {
            break "f".repeat(left);
        }
        rel.push("d".repeat((left - 201).min(200)));
    };
    let dir = m.mnt.join(&rel);
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join(&name);
    assert_eq!(f.as_os_str().len(), 3995);
    let backend_log_len = m.backends[0].join(&rel).join(&name).as_os_str().len() + 40;
    assert!(
        backend_log_len > 4096,
        "the backend paths exceed PATH_MAX: {backend_log_len}"
    );
    let body = pattern(3, 200_000);
    std::fs::write(&f, &body).unwrap();
    assert_eq!(std::fs::read(&f).unwrap(), body);
    assert_eq!(std::fs::metadata(&f).unwrap().len(), body.len() as u64);
    let listed: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(listed, vec![std::ffi::OsString::from(&name)]);
    std::fs::rename(&f, dir.join("short")).unwrap();
    assert_eq!(std::fs::read(dir.join("short")).unwrap(), body);
    std::fs::remove_file(dir.join("short")).unwrap();
    assert!(std::fs::read_dir(&dir).unwrap().next().is_none());
}

/// A create applies the caller's umask and nothing else, as mkdir does (issue 25, item 5): the
/// daemon applied its own 022 on top, so umask 0 with mode 0777 gave 0755 and umask 002 with
/// 0666 gave 0644, which breaks group-writable shared directories.
#[test]
fn create_applies_the_callers_umask_only() {
    if !fuse_available() {
        return;
    }
    let m = shared_mount("umask", &[]);
    let py = |name: &str, mode: &str| {
        format!(
            "python3 -c \"import os; os.close(os.open('{}', os.O_CREAT | os.O_WRONLY, {mode}))\"",
            m.p(name).display()
        )
    };
    ok(a(&format!("umask 0; {}", py("open777", "0o777"))));
    ok(a(&format!(
        "umask 002; touch {}; mkdir {}",
        m.p("touched").display(),
        m.p("dir").display()
    )));
    ok(a(&format!("umask 027; {}", py("open666", "0o666"))));
    assert_eq!(mode(&m.p("open777")), 0o777);
    assert_eq!(mode(&m.p("touched")), 0o664);
    assert_eq!(mode(&m.p("dir")), 0o775);
    assert_eq!(mode(&m.p("open666")), 0o640);
}

/// A relative path of PATH_MAX - 1 bytes from a cwd in the mount (pjdfstest's `dirgen_max`:
/// components of 127 bytes) can be created, changed, stat'ed and removed, as on ext4 (issue 25,
/// item 7). Before, the daemon's look-ups appended a container's own names to such a path
/// and the kernel refused the result: ENAMETOOLONG.
#[test]
fn a_path_of_path_max_bytes_from_the_cwd_works() {
    if !fuse_available() {
        return;
    }
    let m = shared_mount("longpath", &[]);
    let script = r#"
import os
comps, total = [], 0
while True:
    room = 4095 - total - (1 if comps else 0)
    if room <= 127:
        comps.append("f" * room)
        break
    comps.append("d%02d" % len(comps) + "x" * 124)
    total += 127 + (1 if len(comps) > 1 else 0)
f = "/".join(comps)
assert len(f) == 4095
os.makedirs(os.path.dirname(f))
os.close(os.open(f, os.O_CREAT | os.O_WRONLY, 0o644))
os.chmod(f, 0o642)
print(oct(os.stat(f).st_mode & 0o7777))
os.truncate(f, 5)
print(os.stat(f).st_size)
os.unlink(f)
os.mkdir(f)
os.rmdir(f)
print("done")
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .current_dir(&m.mnt)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&ok(out)), "0o642\n5\ndone\n");
}

/// The owner of a directory it may not read or search still changes its mode and times, and
/// another user renames a directory it cannot search within a directory it may write, as on
/// ext4 (pjdfstest open/06, rename/21). Before, the look-up stat-ed the container marker inside
/// the directory as the caller, and chmod opened the directory: EACCES. (rmdir of an empty
/// directory its owner may not read is still refused: the daemon lists it first.)
#[test]
fn a_directory_its_owner_cannot_search_still_changes() {
    if !fuse_available() {
        return;
    }
    let m = shared_mount("nosearch", &[]);
    let d = m.p("d");
    let shown = ok(a(&format!(
        "mkdir {0} && chmod 0060 {0} && chmod 0006 {0} && touch -d 2020-01-02 {0} && chmod 0000 {0} && stat -c %a.%y {0} && chmod 0770 {0} && rmdir {0}",
        d.display()
    )));
    let shown = String::from_utf8_lossy(&shown);
    assert!(shown.starts_with("0.2020-01-02 00:00:00"), "{shown}");
    assert!(!d.exists());
    // Root's 0700 directory, renamed by another user in a 0777 directory.
    let pub_dir = m.p("pub");
    std::fs::create_dir(&pub_dir).unwrap();
    std::fs::set_permissions(&pub_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let x = pub_dir.join("x");
    std::fs::create_dir(&x).unwrap();
    std::fs::set_permissions(&x, std::fs::Permissions::from_mode(0o700)).unwrap();
    ok(a(&format!("mv -T {} {}", x.display(), pub_dir.join("y").display())));
    assert!(pub_dir.join("y").is_dir() && !x.exists());
}

/// A rename of a file over a symbolic link that the backend refuses leaves the link in place
/// (pjdfstest rename/10). A container cannot replace a link in one rename(2), so the link is
/// moved aside first; before, it was unlinked, and the refused move (another user's file to
/// another directory: EACCES, a documented limit) lost it.
#[test]
fn a_refused_rename_over_a_symlink_keeps_the_link() {
    if !fuse_available() {
        return;
    }
    let m = shared_mount("renamelink", &[]);
    for d in ["d1", "d2"] {
        std::fs::create_dir(m.p(d)).unwrap();
        std::fs::set_permissions(m.p(d), std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    ok(a(&format!("echo data > {}", m.p("d1/f").display())));
    ok(b(&format!("ln -s somewhere {}", m.p("d2/l").display())));
    let out = b(&format!("mv -T {} {}", m.p("d1/f").display(), m.p("d2/l").display()));
    assert!(!out.status.success(), "the move is refused: {out:?}");
    assert_eq!(std::fs::read_link(m.p("d2/l")).unwrap(), Path::new("somewhere"));
    assert_eq!(std::fs::read(m.p("d1/f")).unwrap(), b"data\n");
    let names: Vec<_> = std::fs::read_dir(m.p("d2"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["l"]);
    // By its owner the same rename works and replaces the link.
    ok(a(&format!("mv -T {} {}", m.p("d1/f").display(), m.p("d2/l").display())));
    assert_eq!(std::fs::read(m.p("d2/l")).unwrap(), b"data\n");
}
