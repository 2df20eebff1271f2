//! What the page of each command says beyond its options: the columns of what it prints, its
//! model (`advise`), examples, and the pages it refers to.

use super::roff::{unwrap, Page};

/// Paragraphs added to the DESCRIPTION of `plfs-NAME(1)`.
pub fn description(p: &mut Page, name: &str) {
    match name {
        "cp" | "sync" => {
            p.p(
                "With `-p` the mode (always kept) and the access and modification times are kept. With `-u` \
                 (`--update`, which implies `-p`), and always with `plfs sync`, a target file that is complete is \
                 skipped: a regular file of the same size and modification time as its source. Any other existing \
                 target is copied again. A file's times are set only after its data is complete and before it is \
                 renamed into place, so an interrupted copy is never taken for a complete one: running the same \
                 command again finishes it.",
            );
            p.p(
                "The files of a tree (and the sources named) are copied by a pool of `-j N` workers, by default one \
                 per CPU and at most 8; directories are made first, and get their mode and (with `-p`) times after \
                 their files. `plfs sync SRC DST` makes DST itself the copy of SRC (even when DST is an existing \
                 directory, SRC is not copied into it).",
            );
            if name == "cp" {
                description(p, "export");
            }
        }
        "mv" | "import" | "export" => {
            p.p(
                "Existing targets are never overwritten silently: an existing target file is an error (EEXIST, exit 1, \
                 the file untouched) unless `-f` (overwrite) or `-n` (skip it, exit 0) is given. Each file is \
                 written under a temporary name beside the target, `.plfs-cp.PID.NAME`, and renamed over it at the \
                 end: the target is the old file or the whole new one, never a partial copy.",
            );
            p.p(
                "A progress bar is drawn on standard error for copies of 8 MiB or more, only when standard error is a \
                 terminal and `--json` is not given.",
            );
        }
        "mount" => {
            p.p(
                "The mount point is a directory; `plfs mount` creates it (with its parents) when it is missing. It serves the plfsrc mount point of the same path, or the only one. The daemon returns once \
                 the mount is live; `plfs umount` waits until it has closed every file.",
            );
        }
        "stats" => {
            p.p(
                "Reads every write record of an N-1 file (its index logs, and for a writer killed before writing its \
                 index, the frames of its data log), overwritten writes included, and its writers' close droppings. \
                 Nothing is written.",
            );
        }
        _ => {}
    }
}

/// The command's own sections, after OPTIONS.
pub fn sections(p: &mut Page, name: &str, cmd: &clap::Command) {
    match name {
        "ls" => ls(p),
        "du" => du(p),
        "df" => df(p),
        "map" => map(p),
        "stats" => stats(p),
        "advise" => advise(p, cmd),
        "compact" => compact(p),
        "query" => query(p),
        "stat" => {
            p.sh("Output");
            p.p(
                "Every attribute of the file (type, mode, owner, size, blocks, times in UTC with nanoseconds, inode), \
                 its format (`plfs v3 (N-1 container)`, `plain file (N-N)`, `packed file (1-N)`, \
                 `plfs-2.5.1 (legacy, read-only)`) and, for an N-1 file, its space accounting: physical bytes, logs, \
                 files in meta/, live and dead bytes, writers open, retired logs still waiting for readers.",
            );
        }
        "fsck" => {
            p.sh("Output");
            p.p(
                "One line per finding: its kind (crash debris, a torn index tail, a missing log, a file written by \
                 PLFS 2.x, damage), the logical path and, with `--repair`, what was done. Then the counts.",
            );
        }
        _ => {}
    }
    if let Some(ex) = examples(name) {
        p.sh("Examples");
        p.pre(ex);
    }
}

/// Pages SEE ALSO names besides plfs(1) and plfsrc(5).
pub fn related(name: &str) -> &'static [&'static str] {
    match name {
        "ls" | "stat" | "cat" => &["plfs-du(1)", "plfs-stats(1)"],
        "mkdir" | "mv" | "rm" => &["plfs-cp(1)", "plfs-ls(1)"],
        "cp" | "import" | "export" => &[
            "plfs-import(1)",
            "plfs-export(1)",
            "plfs-cp(1)",
            "plfs-sync(1)",
            "plfs-mv(1)",
        ],
        "du" => &["plfs-df(1)", "plfs-compact(1)", "plfs-stat(1)", "plfs-stats(1)"],
        "df" => &["plfs-du(1)", "plfs-check-config(1)"],
        "sync" => &["plfs-cp(1)"],
        "compact" => &["plfs-du(1)", "plfs-stat(1)"],
        "map" => &["plfs-stats(1)", "plfs-query(1)", "plfs-flatten(1)"],
        "stats" => &["plfs-map(1)", "plfs-du(1)", "plfs-advise(1)"],
        "query" | "flatten" => &["plfs-map(1)", "plfs-fsck(1)"],
        "fsck" | "verify" => &["plfs-fsck(1)", "plfs-verify(1)", "plfs-upgrade(1)"],
        "upgrade" | "version" => &["plfs-fsck(1)", "plfs-version(1)"],
        "advise" | "demo" => &["plfs-stats(1)", "plfs-demo(1)"],
        "mount" | "umount" => &["plfs-mount(1)", "plfs-umount(1)", "ldplfs(8)"],
        "check-config" => &["ldplfs(8)"],
        _ => &[],
    }
}

fn examples(name: &str) -> Option<&'static str> {
    Some(match name {
        "check-config" => "plfs check-config            # which plfsrc, are the backends there?\nplfs check-config --mkdir    # create the missing backend directories",
        "ls" => "plfs ls -l -h /mnt/plfs/run1\nplfs ls -R /mnt/plfs\nplfs --json ls /mnt/plfs | jq '.[].name'",
        "stat" => "plfs stat /mnt/plfs/run1/ckpt\nplfs --json stat /mnt/plfs/run1/ckpt | jq .usage.dead_ratio",
        "cat" => "plfs cat /mnt/plfs/run1/ckpt | md5sum",
        "mkdir" => "plfs mkdir -p /mnt/plfs/run1/ckpt",
        "cp" => "plfs cp -r results/ /mnt/plfs/run1/     # plain -> PLFS\nplfs cp -r -p /mnt/plfs/run1 ./back     # PLFS -> plain, times kept\nplfs cp -n -r results/ /mnt/plfs/run1/  # skip what is there\nplfs cp -r -u -j 8 results/ /mnt/plfs/run1/  # resume a copy",
        "sync" => "plfs sync results /mnt/plfs/run1/results  # rerun: the rest\nplfs sync -j 4 /mnt/plfs/run1 ./backup",
        "df" => "plfs df\nplfs df -h /mnt/plfs\nplfs --json df | jq '.backends[].entries'",
        "mv" => "plfs mv /mnt/plfs/run1/results /mnt/plfs/run1/old",
        "rm" => "plfs rm -r /mnt/plfs/run1/old",
        "du" => "plfs du -h /mnt/plfs/run1\nplfs du -s -h /mnt/plfs",
        "compact" => "plfs compact --dry-run -h /mnt/plfs/run1   # what would be reclaimed\nplfs compact -h /mnt/plfs/run1",
        "import" => "plfs import results.dat /mnt/plfs/run1/results.dat",
        "export" => "plfs export /mnt/plfs/run1/results.dat ./results.dat",
        "map" => "plfs map /mnt/plfs/run1/ckpt | head\nplfs map --rank 3 /mnt/plfs/run1/ckpt\nplfs map --writer 8c3f10a2 /mnt/plfs/run1/ckpt",
        "stats" => "plfs stats /mnt/plfs/run1/ckpt\nplfs --json stats /mnt/plfs/run1/ckpt | jq '.writers[].bytes'\nplfs stats /mnt/plfs/run1     # one line per directory",
        "query" => "plfs query /mnt/plfs/run1/ckpt\nplfs query --reverse /lustre/.plfs_store/run1/ckpt/hostdir.3/data.X",
        "flatten" => "plfs flatten /mnt/plfs/run1/ckpt",
        "version" => "plfs version\nplfs version /mnt/plfs/old/ckpt",
        "demo" => "plfs demo",
        "fsck" => "plfs fsck /mnt/plfs/run1\nplfs fsck --repair /mnt/plfs/run1",
        "verify" => "plfs verify /mnt/plfs/run1/ckpt",
        "upgrade" => "plfs upgrade /mnt/plfs/old",
        "advise" => "plfs advise /lustre/scratch --writers 64 --record 1M\nplfs advise --quick /scratch",
        "mount" => "plfs mount /mnt/plfs\nplfs umount /mnt/plfs",
        "umount" => "plfs umount /mnt/plfs",
        _ => return None,
    })
}

fn ls(p: &mut Page) {
    p.sh("Output");
    p.p("Without `-l`, one name per line. With `-l`, one line per entry, as ls(1) prints it:");
    p.tp(
        "mode",
        "Type and permissions (`-rw-r--r--`, `d` for a directory, `l` for a symbolic link).",
    );
    p.tp("links", "The link count.");
    p.tp(
        "owner, group",
        "Names from the system's user and group databases (getpwuid(3), getgrgid(3): /etc/passwd, LDAP, SSSD); the \
         number when there is none.",
    );
    p.tp("size", "The logical size in bytes (`-h`: K, M, G, powers of 1024).");
    p.tp(
        "time",
        "The modification time, `YYYY-MM-DD HH:MM`, in local time (`TZ`, else /etc/localtime).",
    );
    p.tp(
        "name",
        "Then `-> TARGET` for a symbolic link, and `[plfs-2.5.1 (legacy, read-only)]` for a file written by PLFS 2.x.",
    );
}

fn du(p: &mut Page) {
    p.sh("Output");
    p.p(
        "A header, one line per file (not with `-s`), a total per argument (`(total, N files)`) and, with several \
         arguments, a grand total. The columns:",
    );
    p.tp("logical", "The size stat reports.");
    p.tp(
        "physical",
        "Bytes of the backend files behind the file: for an N-1 container its marker, droppings, index and data \
         logs on every backend (shadow backends included) and its flattened index; for an N-N file the plain backend \
         file. Packed 1-N files share their directory's logs: their bytes appear once per directory, on a \
         `(packed logs)` line (`-` on the files' own lines).",
    );
    p.tp(
        "dead",
        "1 - live / physical data bytes: the share of stored data that was overwritten or truncated away (live \
         bytes are what a reader sees, holes excluded; physical data bytes are the data in the data logs, headers \
         excluded). `plfs compact` reclaims it.",
    );
    p.tp(
        "entries",
        "Backend directory entries behind the file, files and directories on every backend: for an N-1 container \
         what `plfs query` lists (its container and meta directories, marker, droppings, hostdirs, index and data \
         logs, shadow directories), 1 for an N-N file or a symbolic link, 0 for a packed 1-N file (its directory's \
         `(packed logs)` line counts their shared logs). The logical directories themselves are not counted. This \
         is what a metadata server or an inode quota sees, where `logical` is what the user sees.",
    );
    p.tp(
        "writers",
        "Writers that have the file open now (`-` for N-N and 1-N files, which do not record them).",
    );
}

fn df(p: &mut Page) {
    p.sh("Output");
    p.p(
        "A header, then one line per backend of each mount point (of PATH's mount point only, when given), in \
         plfsrc order. The columns:",
    );
    p.tp(
        "size, used, avail",
        "Of the file system the backend directory lies on (statvfs(3)): its capacity, the bytes in use, and the \
         bytes an unprivileged user may still write (`-h`: K, M, G). Backends on one file system show the same \
         numbers.",
    );
    p.tp("use%", "used / size, rounded up.");
    p.tp(
        "entries",
        "Directory entries below the backend directory (files, directories and links, counted by walking it): the \
         inodes PLFS uses there. Compare with `plfs du`, whose entries column splits them per file.",
    );
    p.tp("role", "`both`, `canonical` or `shadow` (plfsrc(5)).");
    p.tp("backend (mount point)", "The backend directory and its mount point.");
    p.sh("Layout policy");
    p.p(
        "Lustre users set a layout per directory (`lfs setstripe`). PLFS has no per-directory policy: the workload \
         mode and num_hostdirs are set per mount point in the plfsrc, and every file created under it follows them. \
         A policy for a subtree, inherited by new files, would need a policy record that the core reads on every \
         create; that is left for later. Use a second mount point with its own settings instead.",
    );
}

fn map(p: &mut Page) {
    p.sh("Output");
    p.p(
        "A comment line with the number of extents (`N of M extents` when filtered), a comment line with the column \
         names, then one line per extent of the merged index, in logical order (holes are absent):",
    );
    p.tp("logical", "Offset in the logical file.");
    p.tp("length", "Bytes of the extent.");
    p.tp(
        "physical",
        "Offset in the data log (its header and, in format 2, each write's frame included).",
    );
    p.tp(
        "pid",
        "The pid the writer opened the file with: an MPI rank for the C API's callers, else the process id.",
    );
    p.tp("host", "The writer's host.");
    p.tp("writer", "The writer id, 16 hex digits (one per open handle).");
    p.tp("data log", "The backend file holding the bytes.");
    p.p("Only the extents that are live now are shown: bytes overwritten later belong to the later write. `plfs stats` counts every write.");
}

fn stats(p: &mut Page) {
    p.sh("Output");
    p.p("For a file: a summary line (writers, writes, bytes written, size), then");
    p.tp(
        "pattern",
        "The file's access pattern, the most common write size (`record`, when at least half the writes have it), \
         the `stride`, and `overlap`: bytes written more than once.",
    );
    p.tp(
        "span",
        "Seconds from the first write's start to the end of the last write (when its writer closed, its close \
         dropping says when that write returned; otherwise its start), the local time of the first write, and the \
         bandwidth: bytes written / span, in MiB/s.",
    );
    p.tp(
        "sizes",
        "Write sizes in power-of-two buckets: `32K-64K:40` is 40 writes of 32 KiB up to, not including, 64 KiB.",
    );
    p.p("and one line per writer (one open handle):");
    p.tp(
        "writer",
        "The first 8 hex digits of its id (`plfs map --writer` takes them).",
    );
    p.tp(
        "host, rank",
        "Its host and the pid it opened the file with (an MPI rank, or the process id).",
    );
    p.tp("writes, bytes", "What it wrote, overwritten bytes included.");
    p.tp(
        "first s, last s",
        "Its first and last write, in seconds after the file's first write.",
    );
    p.tp("sizes", "Its most common size bucket, `+N` for more buckets.");
    p.ss("Patterns");
    p.p(
        "A writer's writes, in the order it made them, are `sequential` when at least 90% start where its previous \
         one ended (one write counts as sequential), `strided` when at least 90% start the same distance (the stride) \
         after its previous one, `random` otherwise. The file is `sequential` (one writer, sequential), `segmented` \
         (several writers, each sequential in its own region), `strided` (every writer with more than one write \
         strided, all with the same stride), `random` (anything else) or `empty`.",
    );
    p.ss("Directories");
    p.p(
        "For a directory: one line per directory of the tree, for its own files: N-1 files, writers, writes, bytes \
         written, MiB/s over the directory's span, the files' pattern (`mixed` when they differ), and the path. N-N \
         and 1-N files and symbolic links have no index: they are counted as `other_files` in JSON; `plfs stats` of \
         one of them is an error.",
    );
    p.ss("Limits");
    p.p(
        "A file compacted by `plfs compact` shows the compaction as one writer holding the live data; a file written \
         by PLFS 2.x shows the extents of its merged index as its writes. Times come from each writer's clock: \
         across hosts they are as good as the hosts' clock synchronisation.",
    );
}

fn compact(p: &mut Page) {
    p.sh("Output");
    p.p("One line per file, or per directory of packed 1-N files, then a total:");
    p.tp("before, after", "Physical bytes before and after.");
    p.tp("reclaimed", "Bytes given back (`reclaimable` with `--dry-run`).");
    p.tp("dead", "The dead ratio before (see plfs-du(1)).");
    p.tp(
        "meta",
        "Files in meta/ before and after (for packed logs: the number of logs).",
    );
    p.tp(
        "status",
        "`compacted`, `dry-run`, `nothing-to-do` (one log already holding only live data), `busy` (another \
         compaction, or a truncate to zero, holds the file: try again) or `writers-open` (processes are still \
         appending to the packed logs it would retire). `busy` and `writers-open` are not failures.",
    );
}

fn query(p: &mut Page) {
    p.sh("Output");
    p.p(
        "One line per backend file or directory: its kind, its size and its path. Kinds: `container`, `marker`, \
         `meta`, `dropping`, `hostdir`, `index log`, `data log`, `flat index`, `shadow dir`, `xattrs`, `unknown`; for a \
         file written by PLFS 2.x also `legacy container`, `access file`, `version tag` and `metalink`. With \
         `--reverse`, the logical path a backend path belongs to.",
    );
}

fn advise(p: &mut Page, cmd: &clap::Command) {
    // The long help holds the model's inputs, outputs and limits, one paragraph each, each
    // beginning with its heading ("What it measures (...): ...").
    let help = cmd.get_after_long_help().map(|s| s.to_string()).unwrap_or_default();
    for para in help.split("\n\n") {
        let para = unwrap(para);
        let (head, body) = match para.split_once(':') {
            Some((h, b)) => (h.trim(), b.trim()),
            None => ("", para.as_str()),
        };
        let (title, text) = match head.split_once(" (") {
            // "What it measures (in DIR/..., removed at the end): median ..." ->
            // WHAT IT MEASURES, "In DIR/..., removed at the end: median ...".
            Some((t, aside)) => {
                let aside = aside.trim_end_matches(')');
                (t, capitalised(&format!("{aside}: {body}")))
            }
            None => (head, capitalised(body)),
        };
        p.sh(if title.is_empty() { "Model" } else { title });
        p.p(&text);
    }
    p.sh("Output");
    p.p(
        "The recommendation on the first line (use plfs, with the workload, num_hostdirs and auto_compaction to \
         put in the plfsrc, or stay with a plain shared file), then one line per factor (the N-1 penalty, metadata, \
         index, predicted write bandwidths, read-back) with its numbers, then the probe's duration. DIR is a plain \
         directory of the file system to judge, not a PLFS path; the probe's temporary directory \
         `DIR/.plfs-advise.PID.N` is removed at the end, also on error (not when the process is killed: remove it by \
         hand then).",
    );
}

/// `s` with its first letter in upper case.
fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
