# Spack recipe for plfs. Use it from a local Spack repository:
#   spack repo create myrepo && cp -r packaging/spack/plfs myrepo/packages/
#   spack install plfs@develop +fuse +mpi
# Its version must match [workspace.package] version in Cargo.toml (packaging/test_spack.py).

from spack.package import *


class Plfs(MakefilePackage):
    """PLFS, the Parallel Log-structured File System: one N-1 checkpoint file becomes a container
    of per-writer logs on an existing file system. Provides the plfs tool (man pages and shell
    completions included), libplfs (the PLFS 2.5 C API, plfs.h, plfs.pc), libldplfs (LD_PRELOAD)
    and a FUSE daemon (plfs mount)."""

    homepage = "https://example.invalid/plfs"
    git = "https://example.invalid/plfs.git"

    license("BSD-3-Clause")

    version("develop", branch="main")
    version("0.1.0", tag="v0.1.0")

    variant("fuse", default=True, description="Run the FUSE tests, and use the FUSE mount (needs fusermount3)")
    variant("mpi", default=False, description="Run the MPI tests (N-1 writes from MPI ranks through ldplfs)")

    depends_on("rust@1.85:", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("python@3.11:", type=("build", "test"))
    # The FUSE daemon speaks the kernel protocol itself; it needs fusermount3 at run time.
    depends_on("libfuse@3:", type=("build", "run"), when="+fuse")
    depends_on("mpi", type=("build", "test"), when="+mpi")

    build_targets = ["build"]

    def setup_build_environment(self, env):
        # Cargo's downloads and caches stay in the stage.
        env.set("CARGO_HOME", join_path(self.stage.path, ".cargo"))

    def install(self, spec, prefix):
        make("install", f"PREFIX={prefix}")

    @run_after("build")
    @on_package_attributes(run_tests=True)
    def check_build(self):
        cargo = which("cargo")
        # The FUSE tests mount for real (root and /dev/fuse); without +fuse they are left out.
        if self.spec.satisfies("+fuse"):
            cargo("test", "--release", "--workspace")
        else:
            cargo("test", "--release", "--workspace", "--exclude", "plfs-fuse")
        # The real-program battery: with +mpi it includes N-1 writes from MPI ranks (mpicc, mpirun).
        pytest = which("pytest", required=False)
        if pytest and self.spec.satisfies("+mpi"):
            pytest("tests/battery", "-q", "-k", "mpi")
