//! `plfs mount` / `plfs umount`: a real FUSE mount started in the background by the CLI
//! (needs root and /dev/fuse; skipped otherwise).

mod common;

use common::test_root;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

#[test]
fn mount_write_read_umount() {
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    if !root || !Path::new("/dev/fuse").exists() {
        eprintln!("SKIPPED: needs root and /dev/fuse");
        return;
    }
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir = test_root().join(format!("plfs-cli-mount-{}-{n:x}", std::process::id()));
    let (mnt, be) = (dir.join("mnt"), dir.join("backend"));
    std::fs::create_dir_all(&mnt).unwrap();
    std::fs::create_dir_all(&be).unwrap();
    let rc = dir.join("plfsrc");
    std::fs::write(
        &rc,
        format!(
            "- mount_point: {}\n  backends:\n  - location: {}\n",
            mnt.display(),
            be.display()
        ),
    )
    .unwrap();
    let plfs = env!("CARGO_BIN_EXE_plfs");
    let st = Command::new(plfs)
        .arg("mount")
        .arg(&mnt)
        .arg("--config")
        .arg(&rc)
        .status()
        .unwrap();
    assert!(st.success());
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let w = std::fs::write(mnt.join("f"), &data);
    let r = std::fs::read(mnt.join("f"));
    let again = Command::new(plfs)
        .arg("mount")
        .arg(&mnt)
        .arg("--config")
        .arg(&rc)
        .output()
        .unwrap();
    let st = Command::new(plfs).arg("umount").arg(&mnt).status().unwrap();
    assert!(st.success(), "plfs umount");
    w.unwrap();
    assert_eq!(r.unwrap(), data);
    assert!(!again.status.success(), "mounting twice fails");
    assert!(String::from_utf8_lossy(&again.stderr).contains("already mounted"));
    // Unmounted: the directory is empty again, and the file is in the store.
    assert_eq!(std::fs::read_dir(&mnt).unwrap().count(), 0);
    let out = Command::new(plfs)
        .arg("--config")
        .arg(&rc)
        .arg("cat")
        .arg(mnt.join("f"))
        .output()
        .unwrap();
    assert_eq!(out.stdout, data);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A missing mount point is created (its parents too) and mounted; one that cannot be a
/// directory is an error that says why once.
#[test]
fn a_missing_mount_point_is_created_and_errors_say_why_once() {
    let plfs = env!("CARGO_BIN_EXE_plfs");
    // Under a regular file: no config needed to refuse it, and the cause is printed once.
    let o = Command::new(plfs).args(["mount", "/etc/passwd/x"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("Not a directory").count(), 1, "{err}");
    assert!(err.contains("/etc/passwd/x") && !err.contains("os error"), "{err}");
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    if !root || !Path::new("/dev/fuse").exists() {
        eprintln!("SKIPPED the mount: needs root and /dev/fuse");
        return;
    }
    let dir = test_root().join(format!("plfs-cli-mkmount-{}", std::process::id()));
    let (mnt, be) = (dir.join("not/yet/mnt"), dir.join("backend"));
    std::fs::create_dir_all(&be).unwrap();
    let rc = dir.join("plfsrc");
    std::fs::write(
        &rc,
        format!(
            "- mount_point: {}\n  backends:\n  - location: {}\n",
            mnt.display(),
            be.display()
        ),
    )
    .unwrap();
    let o = Command::new(plfs)
        .arg("mount")
        .arg(&mnt)
        .arg("--config")
        .arg(&rc)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let w = std::fs::write(mnt.join("f"), b"made");
    let st = Command::new(plfs).arg("umount").arg(&mnt).status().unwrap();
    assert!(st.success(), "plfs umount");
    w.unwrap();
    assert!(mnt.is_dir());
    std::fs::remove_dir_all(&dir).unwrap();
}
