//! Real tools through a real mount: coreutils and shell patterns, each result compared byte for
//! byte with the same operations on plain files.

mod common;

use common::{fuse_available, pattern, sh, sh_out, Mounted};
use std::os::unix::fs::{MetadataExt, PermissionsExt};

#[test]
fn coreutils_round_trip() {
    if !fuse_available() {
        return;
    }
    let m = Mounted::new("tools");
    let plain = m.dir.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let src = plain.join("src.bin");
    std::fs::write(&src, pattern(1, 5 * 1024 * 1024 + 12345)).unwrap();
    let (s, mnt) = (src.display(), m.mnt.display());

    sh(&format!("cp {s} {mnt}/a.bin && cmp {s} {mnt}/a.bin"));
    let sums = sh_out(&format!("md5sum < {s}; md5sum < {mnt}/a.bin; cat {mnt}/a.bin | md5sum"));
    let lines: Vec<&str> = sums.lines().collect();
    assert_eq!(lines[0], lines[1]);
    assert_eq!(lines[0], lines[2]);
    // dd with odd block sizes, into and out of the mount.
    sh(&format!(
        "dd if={s} of={mnt}/dd.bin bs=47008 status=none && cmp {s} {mnt}/dd.bin"
    ));
    sh(&format!(
        "dd if={mnt}/dd.bin of={}/back.bin bs=3000 status=none && cmp {s} {}/back.bin",
        plain.display(),
        plain.display()
    ));
    sh(&format!(
        "dd if={s} of={mnt}/big.bin bs=4M status=none && cmp {s} {mnt}/big.bin"
    ));
    // ls -l shows the logical size.
    let ls = sh_out(&format!("ls -l {mnt}/a.bin"));
    assert!(ls.contains(&format!(" {} ", 5 * 1024 * 1024 + 12345)), "{ls}");
    assert_eq!(std::fs::metadata(m.p("a.bin")).unwrap().len(), 5 * 1024 * 1024 + 12345);

    // Appends and reading one's own writes at once.
    sh(&format!(
        "cd {mnt} && echo hi > f && echo there >> f && printf 'x%.0s' $(seq 1 100) >> f"
    ));
    let expect = format!("hi\nthere\n{}", "x".repeat(100));
    assert_eq!(sh_out(&format!("cat {mnt}/f")), expect);
    assert_eq!(std::fs::read(m.p("f")).unwrap(), expect.as_bytes());

    // Overwrite in the middle without truncating.
    sh(&format!(
        "printf ZZZ | dd of={mnt}/f bs=1 seek=3 conv=notrunc status=none"
    ));
    let mut e2 = expect.clone().into_bytes();
    e2[3..6].copy_from_slice(b"ZZZ");
    assert_eq!(std::fs::read(m.p("f")).unwrap(), e2);

    // truncate(1) both ways.
    sh(&format!("truncate -s 5 {mnt}/f"));
    assert_eq!(std::fs::read(m.p("f")).unwrap(), &e2[..5]);
    sh(&format!("truncate -s 10 {mnt}/f"));
    let mut e3 = e2[..5].to_vec();
    e3.resize(10, 0);
    assert_eq!(std::fs::read(m.p("f")).unwrap(), e3);

    // Directories: mkdir -p, cp -r, mv, rm -r, ls.
    let tree = plain.join("tree");
    sh(&format!(
        "mkdir -p {t}/x/y/z && for i in 1 2 3; do head -c $((i*70001)) {s} > {t}/x/f$i; done && cp {s} {t}/x/y/z/deep",
        t = tree.display()
    ));
    sh(&format!(
        "mkdir -p {mnt}/d1/d2 && cp -r {} {mnt}/d1/d2/ && diff -r {} {mnt}/d1/d2/tree",
        tree.display(),
        tree.display()
    ));
    sh(&format!(
        "mv {mnt}/d1/d2/tree {mnt}/moved && diff -r {} {mnt}/moved",
        tree.display()
    ));
    assert!(!m.p("d1/d2/tree").exists());
    let names = sh_out(&format!("ls {mnt}/moved/x"));
    assert_eq!(names.split_whitespace().collect::<Vec<_>>(), ["f1", "f2", "f3", "y"]);
    sh(&format!("mv {mnt}/moved/x/f1 {mnt}/moved/x/f2"));
    assert_eq!(std::fs::read(m.p("moved/x/f2")).unwrap().len(), 70001);
    sh(&format!("rm -r {mnt}/moved {mnt}/d1"));
    assert!(!m.p("moved").exists());
    let top = sh_out(&format!("ls -A {mnt}"));
    assert_eq!(
        top.split_whitespace().collect::<Vec<_>>(),
        ["a.bin", "big.bin", "dd.bin", "f"]
    );

    // Symlinks, chmod, touch, stat.
    sh(&format!("ln -s a.bin {mnt}/link && cmp {s} {mnt}/link"));
    assert_eq!(std::fs::read_link(m.p("link")).unwrap().to_str().unwrap(), "a.bin");
    sh(&format!("chmod 640 {mnt}/a.bin"));
    assert_eq!(
        std::fs::metadata(m.p("a.bin")).unwrap().permissions().mode() & 0o7777,
        0o640
    );
    sh(&format!("touch -d '2001-02-03 04:05:06 UTC' {mnt}/a.bin"));
    assert_eq!(std::fs::metadata(m.p("a.bin")).unwrap().mtime(), 981173106);
    sh(&format!(
        "mkdir {mnt}/dir && chmod 700 {mnt}/dir && chown 1234:5678 {mnt}/dir"
    ));
    let md = std::fs::metadata(m.p("dir")).unwrap();
    assert_eq!(
        (md.uid(), md.gid(), md.permissions().mode() & 0o7777),
        (1234, 5678, 0o700)
    );
    assert!(
        sh_out(&format!("stat -f -c %b {mnt}")).trim().parse::<u64>().unwrap() > 0,
        "statfs reports blocks"
    );

    // tar out and back in.
    sh(&format!("cd {mnt} && tar cf {p}/t.tar a.bin f dir link && mkdir {mnt}/untar && tar xf {p}/t.tar -C {mnt}/untar && cmp a.bin untar/a.bin && cmp f untar/f", p = plain.display()));
    drop(m);
}

#[test]
fn errors_map_to_errno_and_the_daemon_survives() {
    if !fuse_available() {
        return;
    }
    let m = Mounted::new("errors");
    let err = |r: std::io::Result<()>| r.unwrap_err().raw_os_error().unwrap();
    assert_eq!(err(std::fs::read(m.p("nope")).map(|_| ())), libc::ENOENT);
    std::fs::create_dir(m.p("d")).unwrap();
    assert_eq!(err(std::fs::create_dir(m.p("d"))), libc::EEXIST);
    std::fs::write(m.p("d/f"), b"x").unwrap();
    assert_eq!(err(std::fs::remove_dir(m.p("d"))), libc::ENOTEMPTY);
    assert_eq!(err(std::fs::remove_file(m.p("d"))), libc::EISDIR);
    assert_eq!(err(std::fs::read_dir(m.p("d/f")).map(|_| ())), libc::ENOTDIR);
    assert_eq!(err(std::fs::hard_link(m.p("d/f"), m.p("hl"))), libc::EPERM);
    assert_eq!(err(std::fs::rename(m.p("d"), m.p("d/sub"))), libc::EINVAL);
    assert_eq!(err(std::fs::write(m.p("missing/f"), b"x")), libc::ENOENT);
    let r = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(m.p("d/f"));
    assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EEXIST));

    // A corrupt container: reads fail with EIO, everything else keeps working.
    std::fs::write(m.p("c"), pattern(2, 100_000)).unwrap();
    // Replace its marker by a directory: the core reports the container as corrupt.
    let marker: Vec<_> = m
        .backend_files(".plfscontainer")
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("/c/"))
        .collect();
    assert_eq!(marker.len(), 1);
    std::fs::remove_file(&marker[0]).unwrap();
    std::fs::create_dir(&marker[0]).unwrap();
    // Wait for the kernel's attribute cache (1 s) so the open re-reads the container.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let r = std::fs::read(m.p("c"));
    assert_eq!(
        r.unwrap_err().raw_os_error(),
        Some(libc::EIO),
        "a corrupt index gives EIO"
    );
    assert_eq!(std::fs::read(m.p("d/f")).unwrap(), b"x", "the daemon still serves");
    assert_eq!(std::fs::metadata(m.p("c")).unwrap_err().raw_os_error(), Some(libc::EIO));
    std::fs::write(m.p("c2"), b"still fine").unwrap();
    assert_eq!(std::fs::read(m.p("c2")).unwrap(), b"still fine");
}

#[test]
fn permissions_are_checked_for_other_users() {
    if !fuse_available() {
        return;
    }
    let m = Mounted::new("perm");
    std::fs::set_permissions(&m.mnt, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::write(m.p("secret"), b"root only").unwrap();
    std::fs::set_permissions(m.p("secret"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let as_nobody = |cmd: &str| {
        std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", cmd])
            .output()
            .unwrap()
    };
    let out = as_nobody(&format!("cat {}", m.p("secret").display()));
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
        "{out:?}"
    );
    let out = as_nobody(&format!("echo mine > {0}/own && cat {0}/own", m.mnt.display()));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, b"mine\n");
    let md = std::fs::metadata(m.p("own")).unwrap();
    assert_eq!(
        (md.uid(), md.gid()),
        (65534, 65534),
        "new files belong to their creator"
    );
}

#[test]
fn mmap_and_cached_readers_see_direct_writes() {
    if !fuse_available() {
        return;
    }
    let m = Mounted::new("mmap");
    let script = format!(
        r#"
import mmap, os
p = '{p}'
with open(p, 'wb') as f:
    f.write(b'a' * 100000)
r = open(p, 'rb')                      # read-only: page cache and readahead
assert r.read() == b'a' * 100000
w = os.open(p, os.O_WRONLY)            # writable: direct I/O
os.pwrite(w, b'B' * 5000, 4000)
r.seek(0)
d = r.read()
assert d[4000:9000] == b'B' * 5000 and d[:4000] == b'a' * 4000, 'cached reader sees the write'
with open(p, 'r+b') as f:              # shared writable mapping
    mm = mmap.mmap(f.fileno(), 0)
    mm[0:3] = b'XYZ'
    mm.flush()
    mm.close()
with open(p, 'rb') as f:
    mm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    assert mm[0:3] == b'XYZ', mm[0:3]
    assert mm[4000:4005] == b'BBBBB'
    mm.close()
os.close(w)
print('ok')
"#,
        p = m.p("mm").display()
    );
    let out = sh_out(&format!("timeout 60 python3 -c \"{}\"", script.replace('"', "\\\"")));
    assert_eq!(out.trim(), "ok");
    let mut want = vec![b'a'; 100000];
    want[4000..9000].fill(b'B');
    want[..3].copy_from_slice(b"XYZ");
    assert_eq!(std::fs::read(m.p("mm")).unwrap(), want);
}
