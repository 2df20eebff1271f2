//! Builds and runs real C programs against `include/plfs.h` and the freshly built libplfs:
//! the API test (tests/c/test_capi.c), the example (examples/c/plfs_example.c), a static link,
//! and an install into a temporary prefix used only through `pkg-config`. Also checks that the
//! header's error values match the library's table and that every declared function is exported.
//!
//! Needs `cc` (and `pkg-config`, `nm` for the tests that use them): when a tool is missing the
//! test prints why it is skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// The directory holding the libplfs.so and libplfs.a that cargo built for this test run.
///
/// The test executable is target/<profile>/deps/c_api-<hash>. `cargo test` rebuilds the library
/// (every crate type) in deps/ but only `cargo build` copies it up to target/<profile>/, so the
/// newer of the two is the fresh one.
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("target/<profile>/deps").to_path_buf();
    let up = deps.parent().expect("target/<profile>").to_path_buf();
    let mtime = |d: &Path| std::fs::metadata(d.join("libplfs.so")).and_then(|m| m.modified()).ok();
    let dir = match (mtime(&deps), mtime(&up)) {
        (Some(a), Some(b)) if b > a => up,
        (Some(_), _) => deps,
        (None, Some(_)) => up,
        (None, None) => panic!(
            "libplfs.so was built neither in {} nor in {}",
            deps.display(),
            up.display()
        ),
    };
    assert!(dir.join("libplfs.a").exists(), "no libplfs.a in {}", dir.display());
    dir
}

/// True if `tool` runs; otherwise prints why the calling test is skipped.
fn have(tool: &str, test: &str) -> bool {
    let ok = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIPPED {test}: `{tool}` is not installed (CI installs it: see .ci/run)");
    }
    ok
}

/// Where the tests put their temporary directories: `$PLFS_TEST_ROOT` when set and not empty (e.g.
/// a directory on a GlusterFS mount, to run the tests on that backend), else the system temp dir.
fn test_root() -> PathBuf {
    std::env::var_os("PLFS_TEST_ROOT")
        .filter(|p| !p.is_empty())
        .map_or_else(std::env::temp_dir, PathBuf::from)
}

/// A fresh directory, removed by [`TempDir::drop`] unless the test failed.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let d = test_root().join(format!("plfs-capi-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept {} for inspection", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Runs a command, panicking with its output if it fails.
#[track_caller]
fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    if !out.status.success() {
        panic!(
            "{cmd:?} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

/// Writes a plfsrc for mount point `<dir>/mnt` backed by `<dir>/backend`; returns (plfsrc, mnt).
fn plfsrc(dir: &Path) -> (PathBuf, PathBuf) {
    let backend = dir.join("backend");
    std::fs::create_dir_all(&backend).unwrap();
    let mnt = dir.join("mnt");
    let rc = dir.join("plfsrc");
    let text = format!(
        "- mount_point: {}\n  backends:\n    - location: {}\n",
        mnt.display(),
        backend.display()
    );
    std::fs::write(&rc, text).unwrap();
    (rc, mnt)
}

/// Compiler flags every C build here uses.
fn cflags() -> Vec<&'static str> {
    vec!["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1"]
}

/// Extracts the containers written by PLFS 2.5.1 (tests/fixtures) into `dir`: returns the
/// directory holding their `store/` backend and `.expected` files.
fn legacy_fixtures(dir: &Path) -> PathBuf {
    let x = dir.join("legacy-fixtures");
    std::fs::create_dir_all(&x).unwrap();
    run(Command::new("tar")
        .arg("xzf")
        .arg(root().join("tests/fixtures/plfs-2.5.1-containers.tar.gz"))
        .arg("-C")
        .arg(&x));
    x
}

/// Builds tests/c/test_capi.c linked as `link` says, runs it and checks its summary line.
fn build_and_run_api_test(tag: &str, link: &[String]) {
    let t = TempDir::new(tag);
    let legacy = legacy_fixtures(&t.0);
    let exe = t.0.join("test_capi");
    run(Command::new("cc")
        .args(cflags())
        .arg("-I")
        .arg(root().join("include"))
        .arg(root().join("tests/c/test_capi.c"))
        .args(link)
        .arg("-o")
        .arg(&exe));
    let out = run(Command::new(&exe)
        .env("TMPDIR", &t.0)
        .env("LD_LIBRARY_PATH", lib_dir())
        .env("PLFS_TEST_LEGACY_STORE", legacy.join("store"))
        .env("PLFS_TEST_LEGACY_EXPECTED", &legacy)
        .env("PLFS_HOSTNAME", "capi-test-host")
        .env_remove("PLFSRC"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let summary = stdout.lines().last().unwrap_or("");
    assert!(summary.ends_with(" passed, 0 failed"), "unexpected summary {summary:?}");
    let n: usize = summary.split(' ').next().unwrap().parse().unwrap();
    assert!(n > 300, "only {n} checks ran");
}

#[test]
fn c_api_test_program_passes() {
    if !have("cc", "c_api_test_program_passes") {
        return;
    }
    let dir = lib_dir();
    let link = vec![
        format!("-L{}", dir.display()),
        format!("-Wl,-rpath,{}", dir.display()),
        "-lplfs".into(),
        "-lpthread".into(),
    ];
    build_and_run_api_test("shared", &link);
}

/// The `Libs.private` line of plfs.pc.in, as arguments.
fn libs_private() -> Vec<String> {
    let pc = std::fs::read_to_string(root().join("crates/plfs-capi/plfs.pc.in")).unwrap();
    let line = pc
        .lines()
        .find_map(|l| l.strip_prefix("Libs.private:"))
        .expect("plfs.pc.in has Libs.private");
    line.split_whitespace().map(String::from).collect()
}

#[test]
fn c_api_test_program_passes_statically_linked() {
    if !have("cc", "c_api_test_program_passes_statically_linked") {
        return;
    }
    let mut link = vec![lib_dir().join("libplfs.a").display().to_string()];
    link.extend(libs_private());
    build_and_run_api_test("static", &link);
}

#[test]
fn cxx_readdir_test_program_passes() {
    if !have("g++", "cxx_readdir_test_program_passes") {
        assert!(std::env::var_os("CI").is_none(), "g++ is missing in CI");
        return;
    }
    let t = TempDir::new("cxx");
    let (rc, mnt) = plfsrc(&t.0);
    let exe = t.0.join("test_readdir");
    let dir = lib_dir();
    for std in ["-std=c++98", "-std=c++17"] {
        run(Command::new("g++")
            .args([std, "-Wall", "-Wextra", "-Werror", "-O1"])
            .arg("-I")
            .arg(root().join("include"))
            .arg(root().join("tests/c/test_readdir.cpp"))
            .arg(format!("-L{}", dir.display()))
            .arg(format!("-Wl,-rpath,{}", dir.display()))
            .arg("-lplfs")
            .arg("-o")
            .arg(&exe));
        let _ = std::fs::remove_dir_all(t.0.join("backend"));
        std::fs::create_dir_all(t.0.join("backend")).unwrap();
        let out = run(Command::new(&exe).arg(mnt.join("d")).env("PLFSRC", &rc));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.trim_end().ends_with(" passed, 0 failed"), "{std}: {stdout}");
        let n: usize = stdout
            .trim_end()
            .rsplit('\n')
            .next()
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(n >= 50, "{std}: only {n} checks ran");
    }
}

#[test]
fn example_builds_and_runs() {
    if !have("cc", "example_builds_and_runs") {
        return;
    }
    let t = TempDir::new("example");
    let (rc, mnt) = plfsrc(&t.0);
    let exe = t.0.join("plfs_example");
    let dir = lib_dir();
    run(Command::new("cc")
        .args(cflags())
        .arg("-I")
        .arg(root().join("include"))
        .arg(root().join("examples/c/plfs_example.c"))
        .arg(format!("-L{}", dir.display()))
        .arg("-lplfs")
        .arg("-o")
        .arg(&exe));
    let file = mnt.join("hello.txt");
    let out = run(Command::new(&exe)
        .arg(&file)
        .env("PLFSRC", &rc)
        .env("LD_LIBRARY_PATH", &dir));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Hello from the PLFS C API!"), "{stdout}");
    assert!(
        stdout.contains(&format!("{}: 27 bytes, mode 644", file.display())),
        "{stdout}"
    );
    // The data went to the backend, not to the (nonexistent) mount point directory.
    assert!(!mnt.exists());
    assert!(t.0.join("backend/hello.txt").is_dir(), "no container in the backend");
}

/// A program making several calls under an invalid plfsrc: each returns `PLFS_EINVAL`.
const BAD_CONFIG_PROGRAM: &str = r#"
#include <plfs.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
int main(void) {
    Plfs_fd *fd = NULL;
    struct stat st;
    int bad = 0;
    bad += plfs_open(&fd, "/mnt/x/f", O_RDONLY, 1, 0, NULL) != PLFS_EINVAL;
    bad += plfs_getattr(NULL, "/mnt/x/f", &st, 0) != PLFS_EINVAL;
    bad += plfs_mkdir("/mnt/x/d", 0755) != PLFS_EINVAL;
    bad += is_plfs_path("/mnt/x/f") != 0;
    bad += strstr(plfs_last_error(), "plfsrc") == NULL;
    printf("%d bad\n", bad);
    return bad != 0;
}
"#;

/// Compiles `source` into `dir/name`, linked with the shared libplfs.
fn build_with_lib(dir: &TempDir, name: &str, source: &str) -> PathBuf {
    let src = dir.0.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let exe = dir.0.join(name);
    run(Command::new("cc")
        .args(cflags())
        .arg("-I")
        .arg(root().join("include"))
        .arg(&src)
        .arg(format!("-L{}", lib_dir().display()))
        .arg("-lplfs")
        .arg("-o")
        .arg(&exe));
    exe
}

#[test]
fn config_error_is_einval_and_reported_once() {
    if !have("cc", "config_error_is_einval_and_reported_once") {
        return;
    }
    let t = TempDir::new("badconfig");
    let rc = t.0.join("plfsrc");
    std::fs::write(
        &rc,
        "- mount_point: /mnt/x\n  backends:\n    - location: relative/dir\n",
    )
    .unwrap();
    let exe = build_with_lib(&t, "bad", BAD_CONFIG_PROGRAM);
    let dir = lib_dir();
    let out = run(Command::new(&exe).env("PLFSRC", &rc).env("LD_LIBRARY_PATH", &dir));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0 bad");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "the error is printed exactly once: {stderr}");
    assert!(
        stderr.starts_with("plfs: ") && stderr.contains(rc.to_str().unwrap()),
        "{stderr}"
    );
}

/// Prints this process's descriptor table size (FDSize in /proc/self/status) as main starts.
const FD_TABLE_PROGRAM: &str = r#"
#include <plfs.h>
#include <stdio.h>
#include <string.h>
int main(void) {
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "FDSize:", 7) == 0)
            printf("%s", line + 7);
    return is_plfs_path("/nowhere") != 0;
}
"#;

/// The library grows the descriptor table at load, before the program can start threads: the
/// core keeps its descriptors at 512 and up, and growing the table to that in a process with
/// several threads waits for an RCU grace period (6 ms in an MPI rank's first open).
#[test]
fn descriptor_table_is_grown_at_load() {
    if !have("cc", "descriptor_table_is_grown_at_load") {
        return;
    }
    let t = TempDir::new("fdtable");
    let exe = build_with_lib(&t, "fdsize", FD_TABLE_PROGRAM);
    let out = run(Command::new(&exe).env("LD_LIBRARY_PATH", lib_dir()));
    let size: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(
        size > plfs_core::HIGH_FD,
        "descriptor table of {size} at main: the library did not grow it past {}",
        plfs_core::HIGH_FD
    );
}

#[test]
fn install_and_build_with_pkg_config_only() {
    if !have("cc", "install_and_build_with_pkg_config_only")
        || !have("pkg-config", "install_and_build_with_pkg_config_only")
        || !have("sed", "install_and_build_with_pkg_config_only")
    {
        return;
    }
    let t = TempDir::new("install");
    let prefix = t.0.join("prefix");
    for d in ["include", "lib/pkgconfig"] {
        std::fs::create_dir_all(prefix.join(d)).unwrap();
    }
    // What `make install` does (see the top-level Makefile).
    std::fs::copy(root().join("include/plfs.h"), prefix.join("include/plfs.h")).unwrap();
    for lib in ["libplfs.so", "libplfs.a"] {
        std::fs::copy(lib_dir().join(lib), prefix.join("lib").join(lib)).unwrap();
    }
    let pc = run(Command::new("sed")
        .arg("-e")
        .arg(format!("s|@PREFIX@|{}|g", prefix.display()))
        .arg(root().join("crates/plfs-capi/plfs.pc.in")));
    std::fs::write(prefix.join("lib/pkgconfig/plfs.pc"), &pc.stdout).unwrap();

    let pkg = |args: &[&str]| {
        let out = run(Command::new("pkg-config")
            .args(args)
            .arg("plfs")
            .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig")));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    assert_eq!(
        pkg(&["--modversion"]),
        env!("CARGO_PKG_VERSION"),
        "plfs.pc.in Version is stale"
    );
    let flags = pkg(&["--cflags", "--libs"]);
    assert!(
        flags.contains(&format!("-I{}", prefix.join("include").display())),
        "{flags}"
    );
    assert!(flags.contains("-lplfs"), "{flags}");

    // Build the example with nothing but the pkg-config flags.
    let exe = t.0.join("plfs_example");
    run(Command::new("cc")
        .args(cflags())
        .arg(root().join("examples/c/plfs_example.c"))
        .args(flags.split_whitespace())
        .arg("-o")
        .arg(&exe));
    let (rc, mnt) = plfsrc(&t.0);
    let out = run(Command::new(&exe)
        .arg(mnt.join("f"))
        .env("PLFSRC", &rc)
        .env("LD_LIBRARY_PATH", prefix.join("lib")));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Hello from the PLFS C API!"));
}

#[test]
fn header_compiles_as_c99_c11_and_cxx() {
    if !have("cc", "header_compiles_as_c99_c11_and_cxx") {
        return;
    }
    let t = TempDir::new("header");
    let src = t.0.join("h.c");
    std::fs::write(&src, "#include <plfs.h>\nint main(void) { Plfs_fd *fd = 0; Plfs_dirp *d = 0; (void)fd; (void)d; return PLFS_SUCCESS; }\n").unwrap();
    for std in ["-std=c99", "-std=c11", "-std=gnu17"] {
        run(Command::new("cc")
            .args([std, "-pedantic", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-I"])
            .arg(root().join("include"))
            .arg(&src));
    }
    if have("c++", "header_compiles_as_c99_c11_and_cxx (C++ part)") {
        let cpp = t.0.join("h.cpp");
        std::fs::write(&cpp, "#include <plfs.h>\nint main() { Plfs_fd *fd = nullptr; size_t w; return plfs_query(fd, &w, nullptr, nullptr, nullptr) == PLFS_EBADF ? 0 : 1; }\n").unwrap();
        run(Command::new("c++")
            .args(["-std=c++11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-I"])
            .arg(root().join("include"))
            .arg(&cpp));
    }
}

/// `PLFS_X = N` lines of the header.
fn header_codes() -> Vec<(i32, String)> {
    let h = std::fs::read_to_string(root().join("include/plfs.h")).unwrap();
    h.lines()
        .filter_map(|l| {
            let (name, rest) = l.trim().split_once(" = ")?;
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            let v = digits.parse().ok()?;
            name.starts_with("PLFS_").then(|| (v, name.to_string()))
        })
        .collect()
}

#[test]
fn header_error_values_match_the_library() {
    let header = header_codes();
    let lib: Vec<(i32, String)> = plfs::error::named_codes().map(|(v, n)| (v, n.to_string())).collect();
    assert_eq!(header, lib);
}

#[test]
fn every_declared_function_is_exported() {
    if !have("nm", "every_declared_function_is_exported") {
        return;
    }
    let h = std::fs::read_to_string(root().join("include/plfs.h")).unwrap();
    // Declarations: a line starting with a type, then `name(`; skip comments, macros and the
    // header-only inline C++ functions (plfs_readdir), which are defined in the header itself.
    let declared: Vec<String> = h
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with('#') && !l.starts_with('/') && !l.starts_with('*'))
        .filter(|l| !l.starts_with("inline ") && !l.starts_with("extern \"C\" inline "))
        .filter_map(|l| {
            let before = l.split_once('(')?.0;
            let name = before.rsplit([' ', '*']).next()?;
            (name.contains("plfs") || name.contains("plfserr")).then(|| name.to_string())
        })
        .collect();
    assert!(declared.len() >= 30, "found only {declared:?}");
    let out = run(Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib_dir().join("libplfs.so")));
    let syms = String::from_utf8_lossy(&out.stdout);
    let exported: Vec<&str> = syms.lines().filter_map(|l| l.split_whitespace().nth(2)).collect();
    let missing: Vec<&String> = declared.iter().filter(|d| !exported.contains(&d.as_str())).collect();
    assert!(missing.is_empty(), "declared in plfs.h but not exported: {missing:?}");
}
