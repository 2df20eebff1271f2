//! `plfsrc(5)`: every key of the configuration file (the list the loader itself checks against,
//! `plfs_core::config::known_keys`, is what the page's test compares with), the search order,
//! the zero-config default and the validation rules. The long form is docs/config.md.

use super::roff::Page;

/// `global_params` keys that take effect: (key, default and range, meaning).
const GLOBAL: &[(&str, &str, &str)] = &[
    (
        "num_hostdirs",
        "1; 1 to 1024",
        "Number of hostdir.N subdirectories per container. With 1 a writer keeps its logs in the container \
         directory itself (format 3: one directory per file, the cheapest on a file system whose directories cost \
         an operation on every server, such as GlusterFS). Above 1, a writer on host H writes under \
         hostdir.(hash(H) % num_hostdirs), which spreads the directory entries of thousands of writers over \
         subdirectories, for a file system whose large directories are slow. Rule of thumb there: the smallest \
         prime at least the square root of the largest job size in processes (101 for 10,000 processes). Every \
         host sharing a mount point should use the same value.",
    ),
    (
        "container_format",
        "3; 2 or 3",
        "(ours) Format of the containers plfs makes. 3 (one directory per file: its marker, droppings and logs) \
         needs this version of plfs or a later one to read it; 2 (with meta/ and hostdirs) is also read by the \
         versions before, for a backend shared with them during an upgrade. Both are always read and written \
         into, whatever this says; plfs upgrade converts version 2 files to version 3.",
    ),
    (
        "threadpool_size",
        "8; 1 to 1024",
        "Threads used to read index logs when a reader merges a file's index. About 2 on the compute nodes of large \
         jobs, 16 on file-transfer nodes.",
    ),
    (
        "index_buffer_records",
        "1024; 1 to 16777216",
        "(ours) Index records (48 bytes each) a writer buffers in memory before appending them to its index log; \
         also written out on fsync and close.",
    ),
    (
        "data_checksums",
        "false",
        "(ours) Store a CRC-32C of each write's data in its index record, which `plfs verify` and every read check: \
         a read whose bytes fail their checksum fails with EIO. Costs one CRC pass over every write. A reader with \
         this set does not use the flattened index, which holds no checksums.",
    ),
    (
        "max_open_data_logs",
        "256; 1 to 65536",
        "(ours) Data-log descriptors a reader keeps open per file; beyond this the least recently used one is \
         closed. Keep it below the process's descriptor limit.",
    ),
    (
        "index_compression",
        "true",
        "(ours) Writers record each regular run of writes (same length, constant stride, at least 8 writes) as one \
         pattern record, and readers keep such runs compressed in memory. `false` writes one record per write.",
    ),
    (
        "auto_compaction",
        "true",
        "(ours) Compact files automatically once the thresholds below are passed: an N-1 file when the last writer \
         of a process closes it, or as a writer that stays open writes; a 1-N directory's packed logs as a process's \
         own log grows. Nothing is compacted automatically while writers of other processes have the file open. \
         `plfs compact` works whatever this says.",
    ),
    (
        "compaction_dead_ratio",
        "0.5; 0 to 1",
        "(ours) Share of a file's stored data that must be dead (overwritten, truncated away, deleted) before it is \
         compacted automatically: 0.5 lets a file grow to about twice its live data. A number (0.25) or a \
         percentage string (\"25%\").",
    ),
    (
        "compaction_min_bytes",
        "1048576; 0 or more",
        "(ours) Files (or packed directories) holding less stored data than this are never compacted \
         automatically; an open writer checks every half of it written. A file whose meta/ holds more than 48 \
         truncate droppings is compacted regardless.",
    ),
];

/// `global_params` keys of PLFS 2.5 accepted for compatibility, with no effect.
const GLOBAL_COMPAT: &[(&[&str], &str)] = &[
    (
        &["lazy_stat"],
        "Boolean. stat is always exact, and fast whenever no writer is open.",
    ),
    (
        &["lazy_droppings"],
        "Boolean. A writer's logs always appear at its first write.",
    ),
    (
        &["compress_contiguous"],
        "Boolean. Index records are merged whenever that is safe; there is nothing to switch.",
    ),
    (
        &["index_buffer_mbs"],
        "Integer, 0 or more. Replaced by index_buffer_records.",
    ),
    (&["read_buffer_mbs"], "Integer, 0 or more. Not needed by this reader."),
    (&["global_summary_dir"], "Summary droppings are not written."),
    (&["test_metalink"], "A developer switch of PLFS 2.5."),
    (
        &[
            "mlog_defmask",
            "mlog_setmasks",
            "mlog_stderrmask",
            "mlog_stderr",
            "mlog_file",
            "mlog_msgbuf_size",
            "mlog_syslog",
            "mlog_syslogfac",
            "mlog_ucon",
            "fuse_crash_log",
        ],
        "Logging is set with the PLFS_LOG environment variable.",
    ),
];

/// mount_point keys of PLFS 2.5 accepted with any value, with no effect.
const MOUNT_COMPAT: &[&str] = &[
    "statfs",
    "glib_buffer_mbs",
    "syncer_ip",
    "max_writers",
    "max_smallfile_containers",
    "mount_type",
];

const MINIMAL: &str = "
- mount_point: /mnt/plfs
  backends:
    - location: /scratch/.plfs_store
";

const BURST: &str = "
- global_params:
    num_hostdirs: 101          # jobs of up to about 10,000 processes
    threadpool_size: 2
- include: plfsrc.d/site.yml   # relative to this file's directory
- mount_point: /mnt/plfs
  workload: shared_file
  backends:
    - location: posix:///lustre/global/.plfs_store
      type: canonical          # containers: the namespace
    - location: /bb/ssd0/.plfs_shadow_store
      type: shadow             # writers' logs, by hash(host) % 2
    - location: /bb/ssd1/.plfs_shadow_store
      type: shadow
";

/// The page.
pub fn page() -> Page {
    let mut p = Page::new("plfsrc", 5);
    p.sh("Name");
    p.raw("plfsrc \\- the configuration file of PLFS: mount points, backends, global parameters");
    p.sh("Synopsis");
    p.raw(".PP\n\\fB$PLFSRC\\fR, \\fB~/.plfsrc\\fR, \\fB/etc/plfsrc\\fR");
    p.sh("Description");
    p.p(
        "The plfsrc maps logical mount points to backend directories and sets a few global parameters. Every \
         front end reads it: the `plfs` tool, the C library, ldplfs(8), the FUSE daemon and the Python package. It \
         has the syntax of PLFS 2.5: a YAML list whose entries each start with a dash and are one of `global_params`, \
         `include` or `mount_point`. Indent with spaces (YAML does not allow tabs); comments start with #. Any YAML \
         spelling of the same data works (flow style, anchors, merge keys).",
    );
    p.p(
        "Unknown keys and bad values are errors naming the file, the line and the key (with the nearest known key \
         when it looks like a typo); plfs never falls back to another file or to the default when a file exists but \
         is invalid. Keys of PLFS 2.5 that have no effect here are accepted with a warning (`plfs check-config` \
         shows it). `plfs check-config` loads the configuration the way every front end does and checks the backends.",
    );
    p.sh("Entries");
    p.tp(
        "global_params",
        "Global parameters (below), nested under it or, as in the PLFS 2.5 manual, at its own indentation with \
         `global_params:` left empty. Several entries apply in reading order, key by key: a later one overrides only \
         the keys it sets.",
    );
    p.tp(
        "include",
        "A file (or a list of files) of the same format, read at this point. A relative path is relative to the \
         directory of the including file; `~/` is $HOME. Cycles, including one file twice, and chains deeper than 32 \
         are errors. An include entry has no other key.",
    );
    p.tp(
        "mount_point",
        "One logical mount point, its workload and its backends (below).",
    );
    p.sh("Global parameters");
    p.p("Default and range after each name; (ours) marks keys PLFS 2.5 did not have.");
    for (k, d, text) in GLOBAL {
        p.tp(k, &format!("Default {d}. {text}"));
    }
    p.p(
        "Integers may be quoted (\"32\"); out-of-range values are errors. Booleans: true/false, yes/no, on/off, \
         y/n (any case), 1/0.",
    );
    p.ss("Accepted for compatibility, no effect");
    for (keys, text) in GLOBAL_COMPAT {
        p.tp_many(keys, text);
    }
    p.sh("Mount points");
    p.tp(
        "mount_point",
        "Required. The logical directory programs use: absolute (a leading `~/` is expanded), normalised lexically. \
         A path belongs to the mount point that is its longest component-wise prefix (/mnt/plfsx is not under \
         /mnt/plfs). Mount points may not nest or repeat.",
    );
    p.tp(
        "workload",
        "Optional. `shared_file` (also `n-1`, `n-1:byterange`; the default): N processes write one file, stored as \
         a container. `file_per_proc` (`n-n`): each file is a plain file on backend hash(name) % N, spreading files \
         and metadata load over the backends. `small_file` (`1-n`): the files of a directory are packed into one log \
         per writing process (creates become appends).",
    );
    p.tp(
        "backends",
        "Required. A non-empty list of backend entries (below); also accepted: a list of plain directories, or a \
         comma-separated string, each a backend with both roles.",
    );
    p.ss("Backend entries");
    p.tp(
        "location",
        "Required. An absolute directory; a `posix://` or `posix:` prefix is removed, `~/` expanded. Other PLFS 2.5 \
         backend types (hdfs://, pvfs://, glib:, iofsl:) are errors. The directory must exist (`plfs check-config \
         --mkdir` creates it); it may not be, or be inside, a mount point, nor overlap another location of the same \
         mount point.",
    );
    p.tp(
        "type",
        "Optional: `canonical` (holds containers: a file lives on canonical backend hash(name) % N) or `shadow` (holds \
         writers' logs: a host writes on shadow hash(host) % N, under .plfs_shadow/ unless it is the container's own \
         backend). Absent: both roles. A mount point needs at least one backend of each role. Readers look on every \
         shadow backend listed, so every host must list the same backends in the same order, and the list must not \
         change once files exist.",
    );
    p.ss("Accepted for compatibility, no effect");
    p.tp_many(MOUNT_COMPAT, "Any value, with a warning.");
    p.sh("Zero-config default");
    p.p(
        "With no plfsrc at all (and PLFSRC unset): one mount point, `/tmp/plfs-$USER` (when USER is unset or empty, the \
         login name of the real user id from the user database, as `id -un` prints it, else the uid), workload shared_file, one \
         backend with both roles, `${XDG_DATA_HOME:-$HOME/.local/share}/plfs/store` (XDG_DATA_HOME only if it is \
         absolute; without HOME, /tmp/plfs-data-$USER/plfs/store), created with mode 0700 when needed. Every \
         global parameter has its default.",
    );
    super::shared::files(&mut p);
    p.sh("Environment");
    p.tp(
        "PLFSRC",
        "The file to use, first in the search order; it must exist if set and not empty.",
    );
    p.tp("HOME", "Locates ~/.plfsrc and expands `~/` in paths.");
    p.tp("USER, XDG_DATA_HOME", "The zero-config mount point and store.");
    p.tp(
        "PLFS_LOG, PLFS_HOSTNAME",
        "Logging, which replaces the mlog_* keys, and the host name writers use: see plfs(1).",
    );
    p.sh("Examples");
    p.p("The smallest file:");
    p.pre(MINIMAL);
    p.p("A large machine with a burst buffer: containers on global storage, writers' logs on fast storage:");
    p.pre(BURST);
    p.see_also(&[
        "plfs(1)".into(),
        "plfs-check-config(1)".into(),
        "ldplfs(8)".into(),
        "plfs-mount(1)".into(),
    ]);
    p
}
