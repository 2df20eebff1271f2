"""docs/site.md, run as written (issue 56, item 4): every ```sh block of the page, in order, in
one bash with -e -o pipefail, from the top of this repository, as root in a private mount
namespace (unshare -m) in which /opt and /mnt are fresh tmpfs, so that `make install
PREFIX=/opt/plfs`, the site's plfsrc under /opt/plfs/etc and the "parallel file system" /mnt/pfs
are the page's own paths and nothing outlives the test. The module is loaded with Environment
Modules (Debian's environment-modules), the job runs under MPICH's mpirun. Then what the page
says the commands show is checked: the module set $LDPLFS and $PLFSRC, plfs stats counted the 4
writers, every rank printed its ldplfs report, fsck found the container clean."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import ROOT

PAGE = ROOT / "docs" / "site.md"


def sh_blocks(text):
    """The ```sh blocks of the page, in order (```console blocks are shown, not run)."""
    return re.findall(r"^```sh\n(.*?)^```$", text, flags=re.S | re.M)


def test_the_page_has_blocks_to_run_and_ones_it_only_shows():
    text = PAGE.read_text()
    assert len(sh_blocks(text)) >= 6
    # Every block says whether it is run (sh) or only shown (console): none is left unmarked,
    # which would leave it unclear whether this test ran it.
    openers = re.findall(r"^```(\S*)$", text, flags=re.M)[::2]
    assert set(openers) == {"sh", "console"}, openers


def test_the_site_page_runs_as_written(tmp_path):
    if os.geteuid() != 0:
        pytest.fail("docs/site.md's test needs root (a private mount namespace with tmpfs on /opt and /mnt)")
    for tool, pkg in [("unshare", "util-linux"), ("mpicc", "libmpich-dev"), ("mpirun", "mpich")]:
        if not shutil.which(tool):
            pytest.fail(f"{tool} is needed (scripts/install-deps.sh installs {pkg})")
    if not os.path.exists("/usr/share/modules/init/bash"):
        pytest.fail("Environment Modules is needed (scripts/install-deps.sh installs environment-modules)")
    script = tmp_path / "site.sh"
    script.write_text("set -e -o pipefail\n" + "\n".join(sh_blocks(PAGE.read_text()))
                      + '\necho "LDPLFS=$LDPLFS"\necho "PLFSRC=$PLFSRC"\n')
    inner = ("mount --make-rprivate / && mount -t tmpfs plfs-site-opt /opt && "
             f"mount -t tmpfs plfs-site-mnt /mnt && exec bash '{script}'")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PLFS", "LDPLFS", "LD_PRELOAD", "MODULE", "LOADEDMODULES"))}
    env["TMPDIR"] = str(tmp_path)
    r = subprocess.run(["unshare", "-m", "bash", "-c", inner], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=1200)
    out = r.stdout
    assert r.returncode == 0, f"docs/site.md failed ({r.returncode}):\n--- stdout\n{out}\n--- stderr\n{r.stderr}"
    assert "LDPLFS=/opt/plfs/lib/libldplfs.so" in out, out
    assert "PLFSRC=/opt/plfs/etc/plfsrc" in out, out
    assert re.search(r"check\.dat: 4 writers, 64 writes", out), out
    assert "pattern   strided, record 47008" in out, out
    reports = [line for line in out.splitlines() if line.startswith("ldplfs report, pid ")]
    assert len(reports) == 4 and all("opened through PLFS" in line for line in reports), out
    assert re.search(r"^(use plfs|do not use plfs)", out, flags=re.M), out
    # The installation and the backends lived in the namespace's tmpfs only.
    assert not os.path.exists("/opt/plfs/lib/libldplfs.so") or os.path.ismount("/opt")
    assert not os.path.exists("/mnt/pfs/plfs/ckpt")
