//! Tests of the plfsrc parser.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh directory under the system temp dir (tests may use std::fs).
pub(super) fn tempdir(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "plfs-config-test-{}-{}-{tag}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub(super) fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn parse(text: &str) -> Result<Config> {
    Config::from_str(text, Path::new("/nonexistent-dir/plfsrc"))
}

/// Parses `text` and returns the error message, asserting it contains each of `needles`.
#[track_caller]
fn fails(text: &str, needles: &[&str]) -> String {
    let msg = match parse(text) {
        Ok(c) => panic!("expected an error, got {c:?}"),
        Err(Error::Config(m)) => m,
        Err(e) => panic!("expected Error::Config, got {e:?}"),
    };
    assert!(
        msg.starts_with("/nonexistent-dir/plfsrc"),
        "message does not start with the file: {msg}"
    );
    for n in needles {
        assert!(msg.contains(n), "message {msg:?} does not contain {n:?}");
    }
    msg
}

const EXAMPLE: &str = "\
- global_params:
    num_hostdirs: 32
    threadpool_size: 16
- mount_point: /mnt/plfs
  workload: shared_file               # also \"n-1\", \"n-1:byterange\"
  backends:
    - location: /panfs/vol1/.plfs_store   # or posix:///panfs/... or posix:/panfs/...
    - location: /burst/.plfs_store
      type: shadow                        # canonical | shadow; absent = both roles
";

#[test]
fn config_example_parses() {
    let c = parse(EXAMPLE).unwrap();
    assert_eq!(c.files, vec![PathBuf::from("/nonexistent-dir/plfsrc")]);
    assert_eq!(c.global.num_hostdirs, 32);
    assert_eq!(c.global.threadpool_size, 16);
    assert_eq!(c.global.index_buffer_records, 1024);
    assert_eq!(c.mounts.len(), 1);
    let m = &c.mounts[0];
    assert_eq!(m.mount_point, PathBuf::from("/mnt/plfs"));
    assert_eq!(m.workload, Workload::SharedFile);
    assert_eq!(
        m.backends,
        vec![
            BackendSpec {
                location: "/panfs/vol1/.plfs_store".into(),
                role: BackendRole::Both
            },
            BackendSpec {
                location: "/burst/.plfs_store".into(),
                role: BackendRole::Shadow
            },
        ]
    );
    assert_eq!(m.canonical(), vec![Path::new("/panfs/vol1/.plfs_store")]);
    assert_eq!(
        m.shadows(),
        vec![Path::new("/panfs/vol1/.plfs_store"), Path::new("/burst/.plfs_store")]
    );
    assert!(c.warnings.is_empty());
}

/// The PLFS 2.5 man page example (parameters at the same indentation as `global_params:`),
/// with its hdfs backend replaced by a posix one.
#[test]
fn config_original_layout_parses() {
    let text = "\
- global_params:
  num_hostdirs: 16
  threadpool_size: 64
  index_buffer_mbs: 16
  lazy_stat: yes
  global_summary_dir: /mount/nfs/summary
  mlog_setmasks:
    INFO
    index=DEBUG
    container=DEBUG
  mlog_file: /tmp/logs/plfs-%p-%h-%t.log
- mount_point: /mount/example
  workload: n-1
  statfs: posix:///global/visible
  backends:
    - location: posix:///global/mount
      type: canonical
    - location: posix:/fast/storage1
      type: shadow
    - location: posix:///fast/storage2
      type: shadow
  syncer_ip: 192.168.0.1
";
    let c = parse(text).unwrap();
    assert_eq!(c.global.num_hostdirs, 16);
    assert_eq!(c.global.threadpool_size, 64);
    let m = &c.mounts[0];
    assert_eq!(m.mount_point, PathBuf::from("/mount/example"));
    assert_eq!(m.canonical(), vec![Path::new("/global/mount")]);
    assert_eq!(
        m.shadows(),
        vec![Path::new("/fast/storage1"), Path::new("/fast/storage2")]
    );
    // index_buffer_mbs, lazy_stat, global_summary_dir, mlog_setmasks, mlog_file, statfs, syncer_ip.
    assert_eq!(c.warnings.len(), 7, "{:#?}", c.warnings);
    assert!(c.warnings[1].contains("line 5: lazy_stat"), "{}", c.warnings[1]);
    assert!(c
        .warnings
        .iter()
        .any(|w| w.contains("mlog_file") && w.contains("PLFS_LOG")));
    assert!(c.warnings.iter().any(|w| w.contains("line 14: statfs")));
}

#[test]
fn config_all_keys() {
    let text = "\
- global_params:
    num_hostdirs: 1024
    container_format: 2
    threadpool_size: 1
    index_buffer_records: 16777216
    data_checksums: true
    index_compression: false
    max_open_data_logs: 65536
    auto_compaction: off
    compaction_dead_ratio: 0.25
    compaction_min_bytes: 4096
    lazy_stat: 0
    lazy_droppings: false
    compress_contiguous: 1
    index_buffer_mbs: 64
    read_buffer_mbs: 0
    global_summary_dir: /x
    test_metalink: 0
    mlog_defmask: WARN
    mlog_setmasks: [INFO, index=DEBUG]
    mlog_stderrmask: CRIT
    mlog_stderr: false
    mlog_file: /tmp/x
    mlog_msgbuf_size: 4096
    mlog_syslog: false
    mlog_syslogfac: LOCAL0
    mlog_ucon: false
    fuse_crash_log: /tmp/crash
- mount_point: /a
  workload: n-1:byterange
  statfs: /x
  glib_buffer_mbs: 16
  syncer_ip: 1.2.3.4
  max_writers: 4
  max_smallfile_containers: 32
  mount_type: posix
  backends:
    - location: /store/a
";
    let c = parse(text).unwrap();
    assert_eq!(
        c.global,
        GlobalParams {
            num_hostdirs: 1024,
            container_format: 2,
            threadpool_size: 1,
            index_buffer_records: 16777216,
            data_checksums: true,
            index_compression: false,
            max_open_data_logs: 65536,
            auto_compaction: false,
            compaction_dead_permille: 250,
            compaction_min_bytes: 4096,
        }
    );
    assert_eq!(c.warnings.len(), 17 + 6, "{:#?}", c.warnings);
}

#[test]
fn config_later_global_params_override_keys() {
    let text = "\
- global_params:
    num_hostdirs: 7
    threadpool_size: 3
- global_params:
    threadpool_size: 5
- mount_point: /a
  backends: [{location: /s}]
";
    let c = parse(text).unwrap();
    assert_eq!(c.global.num_hostdirs, 7);
    assert_eq!(c.global.threadpool_size, 5);
}

#[test]
fn config_unknown_global_key() {
    let text = "\
# comment
- global_params:
    num_hostdirs: 32
    num_hostdir: 5
- mount_point: /a
  backends: [{location: /s}]
";
    let m = fails(text, &["line 4", "unknown key \"num_hostdir\" in global_params"]);
    assert_eq!(
        m,
        "/nonexistent-dir/plfsrc: line 4: unknown key \"num_hostdir\" in global_params; did you mean \"num_hostdirs\"?"
    );
    // The original layout, and a key whose value is on the next line.
    fails(
        "- global_params:\n  bogus:\n    3\n",
        &["line 2", "unknown key \"bogus\" in global_params"],
    );
}

#[test]
fn config_out_of_range() {
    let pre = "- mount_point: /a\n  backends: [{location: /s}]\n- global_params:\n";
    let m = fails(&format!("{pre}    num_hostdirs: 5000\n"), &["line 4"]);
    assert_eq!(
        m,
        "/nonexistent-dir/plfsrc: line 4: num_hostdirs: 5000 is out of range 1..=1024"
    );
    fails(
        &format!("{pre}    num_hostdirs: 0\n"),
        &["line 4", "num_hostdirs: 0 is out of range"],
    );
    fails(
        &format!("{pre}    num_hostdirs: -3\n"),
        &["line 4", "num_hostdirs: -3 is out of range"],
    );
    fails(
        &format!("{pre}    num_hostdirs: many\n"),
        &["line 4", "num_hostdirs: expected an integer", "\"many\""],
    );
    fails(
        &format!("{pre}    num_hostdirs: 1.5\n"),
        &["line 4", "num_hostdirs", "1.5"],
    );
    fails(
        &format!("{pre}    num_hostdirs:\n"),
        &["line 4", "num_hostdirs", "empty"],
    );
    fails(
        &format!("{pre}    threadpool_size: 1025\n"),
        &["line 4", "threadpool_size: 1025 is out of range 1..=1024"],
    );
    fails(
        &format!("{pre}    index_buffer_records: 16777217\n"),
        &["line 4", "index_buffer_records"],
    );
    fails(
        &format!("{pre}    index_buffer_records: 0\n"),
        &["line 4", "index_buffer_records: 0"],
    );
    fails(
        &format!("{pre}    max_open_data_logs: 65537\n"),
        &["line 4", "max_open_data_logs: 65537"],
    );
    fails(
        &format!("{pre}    data_checksums: maybe\n"),
        &["line 4", "data_checksums: expected true/false"],
    );
    fails(
        &format!("{pre}    lazy_stat: 2\n"),
        &["line 4", "lazy_stat: expected true/false"],
    );
    fails(
        &format!("{pre}    index_buffer_mbs: -1\n"),
        &["line 4", "index_buffer_mbs: -1 is out of range 0.."],
    );
    fails(
        &format!("{pre}    num_hostdirs: 99999999999999999999999999\n"),
        &["line 4", "num_hostdirs"],
    );
    // Quoted numbers are accepted, as the original parser did.
    let c = parse(&format!("{pre}    num_hostdirs: \"64\"\n")).unwrap();
    assert_eq!(c.global.num_hostdirs, 64);
    fails(
        &format!("{pre}    compaction_dead_ratio: 1.5\n"),
        &["line 4", "compaction_dead_ratio: 1.5 is out of range 0..=1"],
    );
    fails(
        &format!("{pre}    compaction_dead_ratio: -0.1\n"),
        &["line 4", "compaction_dead_ratio", "out of range"],
    );
    fails(
        &format!("{pre}    compaction_dead_ratio: half\n"),
        &["line 4", "compaction_dead_ratio: expected a ratio", "\"half\""],
    );
    fails(
        &format!("{pre}    compaction_min_bytes: -1\n"),
        &["line 4", "compaction_min_bytes: -1 is out of range 0.."],
    );
    fails(
        &format!("{pre}    auto_compaction: sometimes\n"),
        &["line 4", "auto_compaction: expected true/false"],
    );
    fails(
        &format!("{pre}    auto_compactoin: true\n"),
        &["line 4", "unknown key", "did you mean \"auto_compaction\""],
    );
    let c = parse(&format!("{pre}    compaction_dead_ratio: \"75%\"\n")).unwrap();
    assert_eq!(c.global.compaction_dead_permille, 750);
    let c = parse(&format!("{pre}    compaction_dead_ratio: 1\n")).unwrap();
    assert_eq!(c.global.compaction_dead_permille, 1000);
    let d = GlobalParams::default();
    assert_eq!(
        (d.auto_compaction, d.compaction_dead_permille, d.compaction_min_bytes),
        (true, 500, 1 << 20)
    );
}

#[test]
fn config_global_params_shape_errors() {
    fails(
        "- global_params: 3\n",
        &["line 1", "global_params: expected parameters"],
    );
    fails(
        "- global_params:\n    num_hostdirs: 3\n  num_hostdirs: 4\n",
        &["num_hostdirs: set twice", "line 3"],
    );
    fails(
        "- global_params:\n    1: 3\n",
        &["line 2", "global_params: key 1 is not a string"],
    );
}

#[test]
fn config_workloads() {
    let m = |w: &str| format!("- mount_point: /a\n  workload: {w}\n  backends: [{{location: /s}}]\n");
    for ok in ["shared_file", "n-1", "n-1:byterange", "N-1"] {
        assert_eq!(parse(&m(ok)).unwrap().mounts[0].workload, Workload::SharedFile, "{ok}");
    }
    for (name, w) in [
        ("file_per_proc", Workload::FilePerProc),
        ("n-n", Workload::FilePerProc),
        ("small_file", Workload::SmallFile),
        ("1-n", Workload::SmallFile),
    ] {
        assert_eq!(parse(&m(name)).unwrap().mounts[0].workload, w, "{name}");
    }
    fails(&m("random"), &["line 2", "workload: unknown workload \"random\""]);
    fails(&m("[a]"), &["line 2", "workload: expected shared_file"]);
}

#[test]
fn config_backend_errors() {
    fails(
        "- mount_point: /a\n  workload: n-1\n",
        &["line 1", "mount_point /a: missing required key \"backends\""],
    );
    fails(
        "- mount_point: /a\n  backends: []\n",
        &["line 2", "backends: no locations listed"],
    );
    fails(
        "- mount_point: /a\n  backends:\n",
        &["line 2", "backends: no locations listed"],
    );
    fails(
        "- mount_point: /a\n  backends: 3\n",
        &["line 2", "backends: expected a list"],
    );
    fails(
        "- mount_point: /a\n  backends:\n    - location: /s\n    - type: shadow\n",
        &["line 4", "backends: entry has no \"location\" key"],
    );
    fails(
        "- mount_point: /a\n  backends:\n    - location: /s\n      type: fast\n",
        &["line 4", "type: expected canonical or shadow, found \"fast\""],
    );
    fails(
        "- mount_point: /a\n  backends:\n    - location: /s\n      typ: shadow\n",
        &["line 4", "unknown key \"typ\" in backends entry"],
    );
    fails(
        "- mount_point: /a\n  backends:\n    - location: 7\n",
        &["line 3", "location: expected a directory, found 7"],
    );
    fails(
        "- mount_point: /a\n  backends:\n    - [x]\n",
        &["line 3", "backends: expected \"- location"],
    );
}

#[test]
fn config_backend_schemes() {
    for (scheme, loc) in [
        ("hdfs", "hdfs:///fast/storage1"),
        ("glib", "glib:///x"),
        ("pvfs", "pvfs://server/x"),
        ("iofsl", "iofsl:host:/x"),
    ] {
        let text = format!("- mount_point: /a\n  backends:\n    - location: /s\n    - location: {loc}\n");
        fails(
            &text,
            &[
                "line 4",
                "location",
                &format!("backend type \"{scheme}\""),
                "not supported",
            ],
        );
    }
    let text = "\
- mount_point: /a
  backends:
    - location: posix:///p1
    - location: posix:/p2
    - location: /p3/./x/../y//
    - location: posix:///p4/
";
    let c = parse(text).unwrap();
    let locs: Vec<_> = c.mounts[0].backends.iter().map(|b| b.location.clone()).collect();
    assert_eq!(
        locs,
        vec![PathBuf::from("/p1"), "/p2".into(), "/p3/y".into(), "/p4".into()]
    );
    fails(
        "- mount_point: /a\n  backends:\n    - location: relative/dir\n",
        &["line 3", "location", "absolute"],
    );
    fails(
        "- mount_point: /a\n  backends:\n    - location: posix://relative\n",
        &["line 3", "absolute"],
    );
    fails(
        "- mount_point: /a\n  backends:\n    - location: \"\"\n",
        &["line 3", "location: empty path"],
    );
}

#[test]
fn config_tilde_expansion() {
    let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty() && Path::new(h).is_absolute()) else {
        return;
    };
    let c = parse("- mount_point: /a\n  backends:\n    - location: ~/store\n").unwrap();
    assert_eq!(
        c.mounts[0].backends[0].location,
        normalize_path(&Path::new(&home).join("store")).unwrap()
    );
}

#[test]
fn config_backends_comma_string() {
    let c = parse("- mount_point: /a\n  backends: /s1, posix:///s2\n").unwrap();
    let b = &c.mounts[0].backends;
    assert_eq!(b.len(), 2);
    assert_eq!(
        b[1],
        BackendSpec {
            location: "/s2".into(),
            role: BackendRole::Both
        }
    );
    fails(
        "- mount_point: /a\n  backends: /s1,,/s2\n",
        &["line 2", "backends: empty location"],
    );
    fails(
        "- mount_point: /a\n  backends: /s1,rel\n",
        &["line 2", "backends", "absolute"],
    );
    // A list of plain strings.
    let c = parse("- mount_point: /a\n  backends:\n    - /s1\n    - /s2\n").unwrap();
    assert_eq!(c.mounts[0].backends.len(), 2);
}

#[test]
fn config_mount_point_errors() {
    fails(
        "- mount_point: mnt/plfs\n  backends: [/s]\n",
        &["line 1", "mount_point", "not an absolute path"],
    );
    fails(
        "- mount_point:\n  backends: [/s]\n",
        &["line 1", "mount_point: expected an absolute path"],
    );
    fails(
        "- mount_point: /a\n  backend: [/s]\n",
        &["line 2", "unknown key \"backend\" in mount_point /a"],
    );
    let m = fails(
        "- mount_point: /a\n  backends: [/s]\n- mount_point: /a/\n  backends: [/t]\n",
        &[
            "line 3",
            "mount_point: /a is defined twice",
            "first at /nonexistent-dir/plfsrc: line 1",
        ],
    );
    assert!(m.starts_with("/nonexistent-dir/plfsrc: line 3:"), "{m}");
    fails(
        "- mount_point: /a\n  backends: [/s]\n- mount_point: /a/b/../c\n  backends: [/t]\n",
        &["line 3", "mount_point: /a/c is inside mount point /a", "nested"],
    );
    fails(
        "- mount_point: /a/c\n  backends: [/s]\n- mount_point: /a\n  backends: [/t]\n",
        &["line 3", "mount_point: /a/c is inside mount point /a"],
    );
    // Not nested: /mnt/plfsx is not under /mnt/plfs.
    parse("- mount_point: /mnt/plfs\n  backends: [/s]\n- mount_point: /mnt/plfsx\n  backends: [/t]\n").unwrap();
}

#[test]
fn config_backend_inside_mount_point() {
    fails(
        "- mount_point: /mnt/plfs\n  backends:\n    - location: /mnt/plfs/store\n",
        &[
            "line 3",
            "location: /mnt/plfs/store is inside mount point /mnt/plfs",
            "loop",
        ],
    );
    fails(
        "- mount_point: /mnt/plfs\n  backends:\n    - location: /mnt/plfs\n",
        &["line 3", "location: /mnt/plfs is mount point /mnt/plfs"],
    );
    // Inside another mount point, defined later.
    fails(
            "- mount_point: /a\n  backends:\n    - location: /s\n    - location: /b/x\n- mount_point: /b\n  backends: [/t]\n",
            &["line 4", "location: /b/x is inside mount point /b (defined at /nonexistent-dir/plfsrc: line 5)"],
        );
    // Only a prefix of the name: fine.
    parse("- mount_point: /mnt/plfs\n  backends: [/mnt/plfs_store]\n").unwrap();
}

#[test]
fn config_roles() {
    fails(
        "- mount_point: /a\n  backends:\n    - location: /s\n      type: shadow\n",
        &["line 2", "backends", "type: shadow", "at least one must be canonical"],
    );
    fails(
        "- mount_point: /a\n  backends:\n    - location: /s\n      type: canonical\n",
        &["line 2", "backends", "type: canonical", "shadow"],
    );
    let c = parse(
            "- mount_point: /a\n  backends:\n    - location: /s\n      type: canonical\n    - location: /t\n      type: shadow\n",
        )
        .unwrap();
    assert_eq!(c.mounts[0].canonical(), vec![Path::new("/s")]);
    assert_eq!(c.mounts[0].shadows(), vec![Path::new("/t")]);
}

#[test]
fn config_duplicate_and_overlapping_backends() {
    fails(
        "- mount_point: /a\n  backends:\n    - location: /s\n    - location: posix:///s/\n",
        &["line 4", "location: /s is listed twice", "mount_point /a"],
    );
    fails(
        "- mount_point: /a\n  backends:\n    - location: /s\n    - location: /s/sub\n",
        &["line 4", "location: /s/sub and /s overlap"],
    );
    // The same store in two mount points is allowed (an alias, like a bind mount).
    parse("- mount_point: /a\n  backends: [/s]\n- mount_point: /b\n  backends: [/s]\n").unwrap();
}

#[test]
fn config_entry_shape_errors() {
    fails("- global_params:\n    num_hostdirs: 3\n", &["no mount_point entries"]);
    fails("", &["empty"]);
    fails("\n  \n", &["empty"]);
    fails("# only a comment\n", &["no entries"]);
    fails("[]\n", &["no entries"]);
    fails(
        "global_params:\n  num_hostdirs: 3\n",
        &["line 1", "YAML list of entries"],
    );
    fails("hello\n", &["line 1", "YAML list of entries", "\"hello\""]);
    fails("- /a\n", &["line 1", "entry 1 is \"/a\""]);
    fails("- {}\n", &["line 1", "empty entry"]);
    fails(
        "- mount_point: /a\n  backends: [/s]\n- num_hostdirs: 3\n",
        &["line 3", "unknown key \"num_hostdirs\""],
    );
    fails(
        "- mount_point: /a\n  global_params:\n  backends: [/s]\n",
        &["line 2", "global_params: this entry already has a mount_point key"],
    );
    fails(
        "- include: x\n  num_hostdirs: 3\n",
        &["line 2", "unknown key \"num_hostdirs\" in include entry"],
    );
    fails("- ? [a]\n  : b\n", &["line 1", "is not a string"]);
}

#[test]
fn config_yaml_errors() {
    let m = fails("- mount_point: /a\n  backends: [\n", &["line 3", "invalid YAML"]);
    assert!(!m.contains("at line"), "{m}");
    fails(
        "- mount_point: /a\n\t backends: [/s]\n",
        &["line 2", "invalid YAML", "tabs"],
    );
    fails(
        "- mount_point: /a\n  mount_point: /b\n",
        &["line 1", "duplicate key \"mount_point\""],
    );
    fails("- mount_point: *x\n", &["line 1", "unknown anchor"]);
    fails("--- []\n--- []\n", &["more than one document"]);
}

#[test]
fn config_yaml_features_still_work() {
    // Anchors, aliases, merge keys and flow style.
    let text = "\
- mount_point: /a
  backends: &b
    - location: /s1
    - location: /s2
      type: shadow
- mount_point: /b
  backends: [{location: /t1}]
- {mount_point: /c, backends: [/u]}
";
    let c = parse(text).unwrap();
    assert_eq!(c.mounts.len(), 3);
    assert_eq!(c.mounts[2].backends[0].location, PathBuf::from("/u"));
    // Line lookups work in flow style too.
    fails(
        "- {mount_point: /c, backends: [/u]}\n- {mount_point: /c,\n   backends: [/v]}\n",
        &["line 2", "twice"],
    );
}

/// Scalars are read as they always were (the rules of serde_yaml 0.9, the parser before): how a
/// count, size, ratio or boolean may be written, and what stays a string.
#[test]
fn config_yaml_scalars_read_as_before() {
    let pre = "- mount_point: /a\n  backends: [/s]\n- global_params:\n";
    let with = |k: &str, v: &str| parse(&format!("{pre}    {k}: {v}\n")).map(|c| c.global);
    for v in [
        "32",
        "+32",
        "0x20",
        "0o40",
        "0b100000",
        "\"32\"",
        "' 32 '",
        "!!int 32",
        "!!int \"32\"",
        "!!str 32",
    ] {
        assert_eq!(with("num_hostdirs", v).unwrap().num_hostdirs, 32, "{v}");
    }
    // A leading zero makes a string, read as a decimal number: 040 is 40, not octal.
    assert_eq!(with("num_hostdirs", "040").unwrap().num_hostdirs, 40);
    for (v, found) in [
        ("3_2", "found \"3_2\""),
        ("0X20", "found \"0X20\""),
        ("32.0", "found 32.0"),
        ("1e3", "found 1000.0"),
        ("1e16", "found 1e16"),
        ("-1.5e-7", "found -1.5e-7"),
        ("0.00001", "found 0.00001"),
        (".inf", "found .inf"),
        ("1e400", "found \"1e400\""),
        ("yes", "found \"yes\""),
        ("true", "found true"),
        ("~", "found nothing (an empty value)"),
        ("!x 32", "found a value tagged !x"),
        ("[32]", "found a list"),
    ] {
        let e = with("num_hostdirs", v).unwrap_err().to_string();
        assert!(
            e.contains("line 4: num_hostdirs: expected an integer in 1..=1024") && e.contains(found),
            "{v}: {e}"
        );
    }
    // Integers beyond 64 bits are out of range (serde_yaml refused them as YAML it could not read).
    let e = with("num_hostdirs", "99999999999999999999").unwrap_err().to_string();
    assert!(
        e.contains("line 4: num_hostdirs: 99999999999999999999 is out of range 1..=1024"),
        "{e}"
    );
    let e = with("compaction_min_bytes", "-0x8000000000000001")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("compaction_min_bytes: -9223372036854775809 is out of range 0.."),
        "{e}"
    );
    assert_eq!(
        with("compaction_min_bytes", "0x100000").unwrap().compaction_min_bytes,
        1 << 20
    );
    assert_eq!(with("compaction_min_bytes", "-0").unwrap().compaction_min_bytes, 0);
    for (v, b) in [
        ("yes", true),
        ("ON", true),
        ("y", true),
        ("True", true),
        ("1", true),
        ("\"1\"", true),
        ("!!bool true", true),
        ("no", false),
        ("off", false),
        ("N", false),
        ("FALSE", false),
        ("0", false),
    ] {
        assert_eq!(with("data_checksums", v).unwrap().data_checksums, b, "{v}");
    }
    for (v, permille) in [
        (".5", 500),
        ("5e-1", 500),
        ("\"50%\"", 500),
        ("1", 1000),
        ("0", 0),
        ("0.0625", 63),
    ] {
        assert_eq!(
            with("compaction_dead_ratio", v).unwrap().compaction_dead_permille,
            permille,
            "{v}"
        );
    }
    // Core tags check their scalar.
    fails(
        &format!("{pre}    num_hostdirs: !!int many\n"),
        &[
            "line 4: invalid YAML (column 19)",
            "\"many\" is not an integer (it is tagged !!int)",
        ],
    );
    fails(
        &format!("{pre}    data_checksums: !!bool yes\n"),
        &["line 4", "\"yes\" is not a boolean"],
    );
    // A tagged string is read as the string, as before.
    let c = parse("- mount_point: !path /a\n  backends: [{location: !dir /s}]\n").unwrap();
    assert_eq!(c.mounts[0].backends[0].location, PathBuf::from("/s"));
}

/// Errors found by the YAML reader name their line too (the merge errors of serde_yaml had none),
/// and keys that come from a merge are checked at their own line.
#[test]
fn config_yaml_errors_name_their_line() {
    let mount = "- mount_point: /a\n  backends: [/s]\n";
    let m = fails(&format!("{mount}  <<: 3\n"), &[]);
    assert_eq!(
        m,
        "/nonexistent-dir/plfsrc: line 3: invalid YAML (column 7): <<: expected a mapping or a list of mappings \
         to merge, found 3"
    );
    fails(
        &format!("{mount}  <<: [{{workload: n-n}},\n    [x]]\n"),
        &["line 4", "<<: expected a mapping to merge, found a list"],
    );
    fails(
        &format!("{mount}  <<: !x {{workload: n-n}}\n"),
        &["line 3", "found a value tagged !x"],
    );
    fails(
        &format!("{mount}- global_params:\n    <<: {{num_hostdirs: 7000}}\n"),
        &["line 4: num_hostdirs: 7000 is out of range 1..=1024"],
    );
    fails(
        &format!("{mount}  <<:\n    colour: blue\n"),
        &["line 4: unknown key \"colour\""],
    );
    let m = fails("- mount_point: /a\n  backends: [/s]\n  backends: [/t]\n", &[]);
    assert!(
        m.ends_with(
            "line 1: invalid YAML (column 3): duplicate key \"backends\" in the mapping that starts on this line \
             (on line 2 and again on line 3)"
        ),
        "{m}"
    );
    fails("- {1: a, 0x1: b}\n", &["line 1", "duplicate key 1"]);
    fails(
        &format!("{mount}--- []\n"),
        &["line 3: invalid YAML (column 1): more than one document"],
    );
    fails(
        "- &a [x, *a]\n",
        &[
            "line 1: invalid YAML (column 10)",
            "alias names a node that contains it",
        ],
    );
    // Nesting, aliases included, is limited as before.
    let nested = |n: usize| format!("- {}{}\n", "[".repeat(n), "]".repeat(n));
    fails(&nested(127), &["line 1", "entry 1 is a list"]);
    fails(
        &nested(128),
        &["line 1: invalid YAML (column 130)", "recursion limit exceeded"],
    );
    let deep = format!(
        "- &a {}{}\n- {}*a{}\n",
        "[".repeat(64),
        "]".repeat(64),
        "[".repeat(63),
        "]".repeat(63)
    );
    fails(&deep, &["line 1", "entry 1 is a list"]);
    let deeper = deep.replace(&format!("{}*a", "[".repeat(63)), &format!("{}*a", "[".repeat(64)));
    let deeper = deeper.replacen(&format!("*a{}", "]".repeat(63)), &format!("*a{}", "]".repeat(64)), 1);
    fails(
        &deeper,
        &["line 2: invalid YAML (column 67)", "recursion limit exceeded"],
    );
    // A block scalar's line is that of its `|` or `>`, also when it is empty.
    fails(
        &format!("{mount}- global_params:\n    num_hostdirs: |\n    threadpool_size: 3\n"),
        &["line 4: num_hostdirs: expected an integer in 1..=1024, found \"\""],
    );
    fails(
        &format!("{mount}- global_params:\n    num_hostdirs: # a | and a >\n      >\n      many\n"),
        &["line 5: num_hostdirs", "found \"many\\n\""],
    );
    // Where the parser stumbles after a tab-indented line, the message names that line.
    fails(
        &format!("{mount}- global_params:\n   \t num_hostdirs: 32\n    threadpool_size: 16\n"),
        &["line 5: invalid YAML", "line 4 is indented with a tab"],
    );
    // The end of a text without a final newline is on its last line.
    fails(
        "- mount_point: /a\n  backends: [",
        &["line 2: invalid YAML (column 14)"],
    );
}

/// Merge keys apply inside mappings that are themselves merged (serde_yaml left the inner `<<`
/// behind as a key, refused as unknown), and the mapping's own keys win over merged ones.
#[test]
fn config_yaml_nested_merges() {
    let text = "\
- global_params: &g
    num_hostdirs: 7
    threadpool_size: 2
- global_params: &h
    <<: *g
    threadpool_size: 3
- global_params:
    <<: *h
    index_buffer_records: 5
- mount_point: /a
  backends: [/s]
";
    let c = parse(text).unwrap();
    assert_eq!(
        (
            c.global.num_hostdirs,
            c.global.threadpool_size,
            c.global.index_buffer_records
        ),
        (7, 3, 5)
    );
}

#[test]
fn config_non_utf8() {
    let d = tempdir("utf8");
    let p = d.join("plfsrc");
    std::fs::write(&p, b"- mount_point: /a\n  backends: [/s\xff]\n").unwrap();
    let e = Config::from_file(&p).unwrap_err().to_string();
    assert!(e.contains(&format!("{}: line 2: not valid UTF-8", p.display())), "{e}");
}

#[test]
fn config_from_file_and_errors() {
    let d = tempdir("fromfile");
    let p = write(&d, "plfsrc", EXAMPLE);
    let c = Config::from_file(&p).unwrap();
    assert_eq!(c.files, vec![p.clone()]);
    assert_eq!(c.mounts[0].mount_point, PathBuf::from("/mnt/plfs"));
    let missing = d.join("missing");
    let e = Config::from_file(&missing).unwrap_err().to_string();
    assert!(e.contains(&format!("{}: cannot read", missing.display())), "{e}");
    let e = Config::from_file(&d).unwrap_err().to_string();
    assert!(e.contains("cannot read"), "{e}");
    let empty = write(&d, "empty", "");
    let e = Config::from_file(&empty).unwrap_err().to_string();
    assert!(e.contains(&format!("{}: the file is empty", empty.display())), "{e}");
}

#[test]
fn config_includes() {
    let d = tempdir("include");
    std::fs::create_dir_all(d.join("plfsrc.d/sub")).unwrap();
    write(
        &d,
        "plfsrc.d/global.yml",
        "- global_params:\n    threadpool_size: 4\n- include: sub/mounts.yml\n",
    );
    write(&d, "plfsrc.d/sub/mounts.yml", "- mount_point: /b\n  backends: [/t]\n");
    let top = write(
        &d,
        "plfsrc",
        "- include: plfsrc.d/global.yml\n- mount_point: /a\n  backends: [/s]\n- global_params:\n    num_hostdirs: 5\n",
    );
    let c = Config::from_file(&top).unwrap();
    assert_eq!(c.global.threadpool_size, 4);
    assert_eq!(c.global.num_hostdirs, 5);
    let mps: Vec<_> = c.mounts.iter().map(|m| m.mount_point.clone()).collect();
    assert_eq!(mps, vec![PathBuf::from("/b"), "/a".into()]);
    assert_eq!(c.files.len(), 3);
    assert_eq!(c.files[0], top);
    assert!(c.files[2].ends_with("plfsrc.d/sub/mounts.yml"));

    // from_str resolves relative includes against the name's directory.
    let c = Config::from_str("- include: plfsrc.d/sub/mounts.yml\n", &d.join("virtual")).unwrap();
    assert_eq!(c.mounts[0].mount_point, PathBuf::from("/b"));

    // Absolute includes, and a list of includes.
    let abs = d.join("plfsrc.d/sub/mounts.yml");
    let c = Config::from_str(&format!("- include: [{}]\n", abs.display()), Path::new("/x/y")).unwrap();
    assert_eq!(c.mounts.len(), 1);

    // Errors inside an included file name that file and its line.
    write(
        &d,
        "bad.yml",
        "- mount_point: /c\n  backends: [/u]\n- global_params:\n    threads: 3\n",
    );
    let top = write(
        &d,
        "top-bad",
        "- mount_point: /a\n  backends: [/s]\n- include: bad.yml\n",
    );
    let e = Config::from_file(&top).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "{}: line 4: unknown key \"threads\"",
            d.join("bad.yml").display()
        )),
        "{e}"
    );

    // Missing include: names the including file, line and key.
    let top = write(
        &d,
        "top-missing",
        "- mount_point: /a\n  backends: [/s]\n- include: nope.yml\n",
    );
    let e = Config::from_file(&top).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "{}: line 3: include: cannot read {}",
            top.display(),
            d.join("nope.yml").display()
        )),
        "{e}"
    );

    // A mount point defined in the top file and again in an include.
    write(&d, "dup.yml", "- mount_point: /a\n  backends: [/t]\n");
    let top = write(
        &d,
        "top-dup",
        "- mount_point: /a\n  backends: [/s]\n- include: dup.yml\n",
    );
    let e = Config::from_file(&top).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "{}: line 1: mount_point: /a is defined twice (first at {}: line 1)",
            d.join("dup.yml").display(),
            top.display()
        )),
        "{e}"
    );

    // Include errors in general.
    fails("- include:\n", &["line 1", "include: expected a file name"]);
    fails(
        "- include: [3]\n",
        &["line 1", "include: expected a file name, found 3"],
    );
    fails("- include: \"\"\n", &["line 1", "include: empty file name"]);
}

#[test]
fn config_include_cycles() {
    let d = tempdir("cycle");
    let a = write(&d, "a.yml", "- mount_point: /a\n  backends: [/s]\n- include: b.yml\n");
    write(&d, "b.yml", "- include: ./a.yml\n");
    let e = Config::from_file(&a).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "{}: line 1: include: include cycle:",
            d.join("b.yml").display()
        )),
        "{e}"
    );
    assert!(e.contains("a.yml -> "), "{e}");

    let s = write(
        &d,
        "self.yml",
        "- mount_point: /a\n  backends: [/s]\n- include: self.yml\n",
    );
    let e = Config::from_file(&s).unwrap_err().to_string();
    assert!(e.contains("line 3: include: include cycle"), "{e}");

    // from_str under the name of an existing file: including that file is a cycle too.
    let e = Config::from_str("- include: self.yml\n", &s).unwrap_err().to_string();
    assert!(e.contains("include cycle"), "{e}");

    // Through a symbolic link.
    std::os::unix::fs::symlink(d.join("a.yml"), d.join("link.yml")).unwrap();
    write(
        &d,
        "c.yml",
        "- mount_point: /c\n  backends: [/u]\n- include: link.yml\n",
    );
    write(&d, "a2.yml", "- include: c.yml\n");
    std::fs::write(d.join("a.yml"), "- include: c.yml\n").unwrap();
    let e = Config::from_file(&d.join("a.yml")).unwrap_err().to_string();
    assert!(e.contains("include cycle"), "{e}");

    // The same file included twice (not a cycle) is an error too, as in PLFS 2.5.
    write(&d, "g.yml", "- global_params:\n    num_hostdirs: 3\n");
    let t = write(
        &d,
        "twice.yml",
        "- include: g.yml\n- mount_point: /a\n  backends: [/s]\n- include: g.yml\n",
    );
    let e = Config::from_file(&t).unwrap_err().to_string();
    assert!(e.contains("line 4: include:") && e.contains("already included"), "{e}");
}

#[test]
fn config_include_depth_limit() {
    let d = tempdir("depth");
    for n in 0..40 {
        write(&d, &format!("{n}.yml"), &format!("- include: {}.yml\n", n + 1));
    }
    write(&d, "40.yml", "- mount_point: /a\n  backends: [/s]\n");
    let e = Config::from_file(&d.join("0.yml")).unwrap_err().to_string();
    assert!(e.contains("nested more than"), "{e}");
    let c = Config::from_file(&d.join("20.yml")).unwrap();
    assert_eq!(c.files.len(), 21);
}

#[test]
fn config_load_search_order() {
    let d = tempdir("load");
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let etc = d.join("etc-plfsrc");
    // Nothing anywhere: zero config.
    let c = load_from(None, Some(home.clone().into()), &etc).unwrap();
    assert_eq!(c, Config::zero_config());
    let c = load_from(Some(OsString::new()), None, &etc).unwrap();
    assert_eq!(c, Config::zero_config());
    // /etc/plfsrc.
    write(&d, "etc-plfsrc", "- mount_point: /etc-mount\n  backends: [/s]\n");
    let c = load_from(None, Some(home.clone().into()), &etc).unwrap();
    assert_eq!(c.mounts[0].mount_point, PathBuf::from("/etc-mount"));
    // ~/.plfsrc wins over /etc/plfsrc.
    write(&home, ".plfsrc", "- mount_point: /home-mount\n  backends: [/s]\n");
    let c = load_from(None, Some(home.clone().into()), &etc).unwrap();
    assert_eq!(c.mounts[0].mount_point, PathBuf::from("/home-mount"));
    assert_eq!(c.files, vec![home.join(".plfsrc")]);
    // $PLFSRC wins over both.
    let env = write(&d, "env-plfsrc", "- mount_point: /env-mount\n  backends: [/s]\n");
    let c = load_from(Some(env.clone().into()), Some(home.clone().into()), &etc).unwrap();
    assert_eq!(c.mounts[0].mount_point, PathBuf::from("/env-mount"));
    // $PLFSRC naming a missing file is an error naming it, even though others exist.
    let missing = d.join("nope");
    let e = load_from(Some(missing.clone().into()), Some(home.clone().into()), &etc)
        .unwrap_err()
        .to_string();
    assert!(e.contains(&format!("{} (from $PLFSRC)", missing.display())), "{e}");
    // An invalid file found in the search is an error, never a silent fallback.
    write(&home, ".plfsrc", "- mount_point: /home-mount\n");
    let e = load_from(None, Some(home.clone().into()), &etc)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(".plfsrc: line 1: mount_point /home-mount: missing required key"),
        "{e}"
    );
    // load() itself never panics.
    let _ = Config::load();
}

#[test]
fn config_zero_config() {
    let c = Config::zero_config();
    assert!(c.files.is_empty());
    assert!(c.warnings.is_empty());
    assert_eq!(c.global, GlobalParams::default());
    assert_eq!(c.global.num_hostdirs, 1);
    assert_eq!(c.global.container_format, 3);
    assert_eq!(c.global.threadpool_size, 8);
    assert_eq!(c.global.index_buffer_records, 1024);
    assert!(!c.global.data_checksums);
    assert_eq!(c.global.max_open_data_logs, 256);
    assert_eq!(c.mounts.len(), 1);
    let m = &c.mounts[0];
    let uid = rustix::process::getuid().as_raw();
    let user = std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty() && !u.contains('/'))
        .or_else(|| crate::sys::user_name(uid))
        .unwrap_or_else(|| uid.to_string());
    assert_eq!(m.mount_point, PathBuf::from(format!("/tmp/plfs-{user}")));
    assert_eq!(Config::zero_config_user(), user);
    assert_eq!(m.workload, Workload::SharedFile);
    assert_eq!(m.backends.len(), 1);
    assert_eq!(m.backends[0].role, BackendRole::Both);
    assert!(m.backends[0].location.ends_with("plfs/store"));
    assert!(m.backends[0].location.is_absolute());
    if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|x| Path::new(x).is_absolute()) {
        assert_eq!(m.backends[0].location, Path::new(&x).join("plfs/store"));
    } else if let Some(h) = std::env::var_os("HOME") {
        assert_eq!(m.backends[0].location, Path::new(&h).join(".local/share/plfs/store"));
    }
    assert_eq!(
        c.mount_for(&m.mount_point.join("f")).map(|(_, r)| r),
        Some(PathBuf::from("f"))
    );
}

#[test]
fn config_normalize_path() {
    let n = |s: &str| normalize_path(Path::new(s));
    assert_eq!(n("/"), Some(PathBuf::from("/")));
    assert_eq!(n("//a///b/"), Some(PathBuf::from("/a/b")));
    assert_eq!(n("/a/./b/."), Some(PathBuf::from("/a/b")));
    assert_eq!(n("/a/b/../c"), Some(PathBuf::from("/a/c")));
    assert_eq!(n("/../../a/.."), Some(PathBuf::from("/")));
    assert_eq!(n("/a/../../b"), Some(PathBuf::from("/b")));
    assert_eq!(n("a/b"), None);
    assert_eq!(n(""), None);
    assert_eq!(n("./a"), None);
}

#[test]
fn config_mount_for() {
    let text = "\
- mount_point: /mnt/plfs
  backends: [/s1]
- mount_point: /mnt/other
  backends: [/s2]
- mount_point: /mnt/plfsx
  backends: [/s3]
";
    let c = parse(text).unwrap();
    let f = |p: &str| {
        c.mount_for(Path::new(p))
            .map(|(m, r)| (m.mount_point.display().to_string(), r))
    };
    let r = |m: &str, rel: &str| Some((m.to_string(), PathBuf::from(rel)));
    assert_eq!(f("/mnt/plfs"), r("/mnt/plfs", ""));
    assert_eq!(f("/mnt/plfs/"), r("/mnt/plfs", ""));
    assert_eq!(f("/mnt/plfs/a/b"), r("/mnt/plfs", "a/b"));
    assert_eq!(f("/mnt/plfs/a/../b"), r("/mnt/plfs", "b"));
    assert_eq!(f("/mnt/plfs//a/./b/"), r("/mnt/plfs", "a/b"));
    assert_eq!(f("/mnt/plfsx"), r("/mnt/plfsx", ""));
    assert_eq!(f("/mnt/plfsx/f"), r("/mnt/plfsx", "f"));
    assert_eq!(f("/mnt/plfs/../other/f"), r("/mnt/other", "f"));
    assert_eq!(f("/mnt/plfs/.."), None);
    assert_eq!(f("/mnt/plfs/../../../mnt/plfs/z"), r("/mnt/plfs", "z"));
    assert_eq!(f("/mnt"), None);
    assert_eq!(f("/mnt/pl"), None);
    assert_eq!(f("/"), None);
    assert_eq!(f("mnt/plfs/a"), None);
    assert_eq!(f(""), None);

    // Longest match wins (nested mounts are rejected by the parser, but mount_for does not
    // rely on that).
    let mut c2 = c.clone();
    let mut inner = c2.mounts[0].clone();
    inner.mount_point = "/mnt/plfs/deep".into();
    c2.mounts.insert(0, inner);
    let (m, rel) = c2.mount_for(Path::new("/mnt/plfs/deep/x")).unwrap();
    assert_eq!(
        (m.mount_point.as_path(), rel.as_path()),
        (Path::new("/mnt/plfs/deep"), Path::new("x"))
    );
    let (m, rel) = c2.mount_for(Path::new("/mnt/plfs/deeper")).unwrap();
    assert_eq!(
        (m.mount_point.as_path(), rel.as_path()),
        (Path::new("/mnt/plfs"), Path::new("deeper"))
    );
}

#[test]
fn config_weird_inputs_never_panic() {
    let inputs = [
        "- !tag {mount_point: /a}\n",
        "- mount_point: !path /a\n  backends: [/s]\n",
        "- mount_point: /a\n  backends: !!str /s\n",
        "- mount_point: /a\n  backends: [!x {location: /s}]\n",
        "- &a [*a]\n",
        "- mount_point: /a\n  <<: {backends: [/s]}\n",
        "- mount_point: /a\n  <<: 3\n",
        &"[".repeat(10_000),
        &format!("{}1{}", "- ".repeat(300), ""),
        "- mount_point: /a\n  backends: [{location: /s, type: }]\n",
        "- mount_point: 1e9\n",
        "- ~: 1\n",
        "- mount_point: /a\n  backends:\n    - {? [x] : y}\n",
        "\u{feff}- mount_point: /a\n  backends: [/s]\n",
        "- mount_point: /a\n  backends: [/s]\n...\n",
        "%YAML 1.2\n---\n- mount_point: /a\n  backends: [/s]\n",
    ];
    for t in inputs {
        let _ = parse(t);
    }
    // Merge keys are applied.
    let c = parse("- mount_point: /a\n  <<: {backends: [/s]}\n").unwrap();
    assert_eq!(c.mounts[0].backends.len(), 1);
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(512))]
    #[test]
    fn config_fuzz_never_panics(s in "[-:\\[\\]{}/a-z0-9 \n#&*!|>,'\"~.]{0,200}") {
        let _ = parse(&s);
        let _ = parse(&format!("- mount_point: /a\n  backends: [/s]\n- global_params:\n    {s}\n"));
    }

    /// Every node read, and every YAML error, names a line of the text.
    #[test]
    fn config_fuzz_yaml_lines(s in "[-:\\[\\]{}/a-z0-9 \n\t#&*!|>,'\"~.<]{0,160}") {
        let last = s.split('\n').count();
        match yaml::parse(&s) {
            Ok(root) => {
                let mut todo: Vec<&yaml::Node> = root.iter().map(|n| &**n).collect();
                while let Some(n) = todo.pop() {
                    proptest::prop_assert!((1..=last).contains(&n.line), "line {} of {:?}", n.line, s);
                    match &n.value {
                        Value::Sequence(items) => todo.extend(items.iter().map(|n| &**n)),
                        Value::Mapping(pairs) => todo.extend(pairs.iter().flat_map(|(k, v)| [&**k, &**v])),
                        Value::Tagged(_, inner) => todo.push(inner),
                        _ => {}
                    }
                }
            }
            Err(e) => proptest::prop_assert!((1..=last).contains(&e.line), "{e:?} in {s:?}"),
        }
    }
}

#[test]
fn config_unknown_keys_suggest_the_nearest_known_key() {
    let m = |body: &str| format!("- mount_point: /a\n  backends: [{{location: /s}}]\n{body}");
    fails(
        "- global_params:\n    threadpool_sise: 4\n",
        &[
            "line 2",
            "unknown key \"threadpool_sise\"",
            "did you mean \"threadpool_size\"?",
        ],
    );
    fails(
        &m("  workloads: n-1\n"),
        &["line 3", "unknown key \"workloads\"", "did you mean \"workload\"?"],
    );
    fails(
        "- mount_point: /a\n  backends:\n    - locaton: /s\n",
        &["line 3", "unknown key \"locaton\"", "did you mean \"location\"?"],
    );
    fails("- mountpoint: /a\n", &["line 1", "did you mean \"mount_point\"?"]);
    // Nothing near: no suggestion.
    let e = fails("- global_params:\n    bogus: 1\n", &["unknown key \"bogus\""]);
    assert!(!e.contains("did you mean"), "{e}");
}

/// A plfsrc that names a FIFO (or includes one) is refused at once with a clear error: opening it
/// waited for a writer, and every preloaded program hung at start-up (issue 25, item 12).
#[test]
fn a_fifo_is_never_read_as_a_configuration() {
    let dir = tempdir("fifo");
    let fifo = dir.join("plfsrc");
    let ok = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(ok.success());
    let t0 = std::time::Instant::now();
    let e = Config::from_file(&fifo).unwrap_err().to_string();
    assert!(e.contains("not a regular file") && e.contains("plfsrc"), "{e}");
    let main = write(&dir, "main", &format!("- include: {}\n", fifo.display()));
    let e = Config::from_file(&main).unwrap_err().to_string();
    assert!(e.contains("include") && e.contains("not a regular file"), "{e}");
    assert!(t0.elapsed() < std::time::Duration::from_secs(5), "waited on the FIFO");
}

/// `known_keys()` (what plfsrc(5) documents) lists exactly the keys the loader reads: each is
/// accepted where it is listed, and a key that is not listed is refused there.
#[test]
fn known_keys_are_the_keys_the_loader_reads() {
    let keys = known_keys();
    let unknown = |text: &str| match parse(text) {
        Err(Error::Config(m)) => m.contains("unknown key"),
        _ => false,
    };
    for &(section, k) in &keys {
        let text = match section {
            "global_params" => format!("- global_params:\n    {k}: 1\n"),
            "mount_point" => format!("- mount_point: /m\n  {k}: 1\n  backends:\n    - location: /b\n"),
            "backends" => format!("- mount_point: /m\n  backends:\n    - {k}: 1\n"),
            _ => format!("- {k}: 1\n"),
        };
        assert!(!unknown(&text), "{section} key {k} is listed but refused as unknown");
    }
    assert!(unknown("- global_params:\n    not_a_key: 1\n"));
    assert!(unknown("- mount_point: /m\n  not_a_key: 1\n  backends: [/b]\n"));
    assert!(unknown("- mount_point: /m\n  backends:\n    - not_a_key: 1\n"));
    for k in [
        "num_hostdirs",
        "compaction_dead_ratio",
        "include",
        "workload",
        "type",
        "statfs",
    ] {
        assert!(keys.iter().any(|&(_, x)| x == k), "{k} missing from known_keys()");
    }
}
