"""Programs, scripts and libraries stored under a mount run and load (issue 25, item 10), through
ldplfs as through FUSE. Before, under ldplfs `make` built `app` in the mount but `./app` gave "No
such file or directory", and importing a C extension installed there failed the same way: the
kernel cannot exec or map a logical path. ldplfs now hands it a sealed memfd of the file (a
script: its interpreter, with the logical path). Each test checks what ran against what a
plain file gives."""

import subprocess
import sys
import sysconfig
from pathlib import Path

HELLO = '#include <stdio.h>\nint main(int c, char **v) { printf("hello %d %s\\n", c, c > 1 ? v[1] : "-"); return 3; }\n'


def test_a_program_built_under_the_mount_runs(fs):
    proj = fs.mount / "proj"
    fs.sh(f"mkdir -p '{proj}'")
    fs.sh(f"cat > '{proj}/hello.c'", input=HELLO.encode())
    fs.sh(f"printf 'app: hello.c\\n\\tcc -o app hello.c\\nrun: app\\n\\t./app run || test $$? = 3\\n' > '{proj}/Makefile'")
    # Run as a top-level make: under `make test-glusterfs` the inherited MAKEFLAGS and MAKELEVEL
    # would make it print "Entering directory" lines.
    make = "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory run"
    out = fs.sh(make, cwd=proj) if fs.method == "fuse" else fs.sh(f"cd '{proj}' && {make}")
    assert out == "hello 2 run\n"
    # By absolute path, relative to a logical cwd, through PATH, through env and find -exec
    # (which does not pass the status on); the exit status comes back.
    out = fs.sh(
        f"'{proj}/app' a || echo rc=$?; (cd '{proj}' && ./app b || echo rc=$?); "
        f"PATH='{proj}':$PATH app c || echo rc=$?; env '{proj}/app' d || echo rc=$?; "
        f"find '{proj}' -name app -exec {{}} e \\;"
    )
    assert out == "".join(f"hello 2 {x}\nrc=3\n" for x in "abcd") + "hello 2 e\n"
    # What the kernel would refuse: not executable, a directory, a missing file.
    fs.sh(f"chmod 644 '{proj}/app'")
    p = fs.run(["bash", "-c", f"'{proj}/app'; echo rc=$?; '{proj}'; echo rc=$?; '{proj}/nope'; echo rc=$?"], check=False)
    assert p.stdout.decode() == "rc=126\nrc=126\nrc=127\n"
    err = p.stderr.decode()
    assert "Permission denied" in err and "Is a directory" in err and "No such file or directory" in err


def test_a_script_under_the_mount_runs_with_its_interpreter(fs):
    s = fs.mount / "tool.sh"
    fs.sh(f"printf '#!/bin/bash -e\\necho \"$0|$#|$*\"\\n' > '{s}' && chmod 755 '{s}'")
    assert fs.sh(f"'{s}' x 'y z'") == f"{s}|2|x y z\n"
    py = fs.mount / "tool.py"
    fs.sh(f"printf '#!/usr/bin/env python3\\nimport sys\\nprint(sys.argv[1:], open(sys.argv[0]).readline().strip())\\n' > '{py}' && chmod 755 '{py}'")
    assert fs.sh(f"'{py}' 1 2") == "['1', '2'] #!/usr/bin/env python3\n"


def test_programs_started_by_python_and_by_the_variadic_execs(fs, progs):
    app = fs.mount / "echo2"
    fs.sh(f"cp /bin/echo '{app}' && chmod 755 '{app}'")
    s = fs.mount / "s.sh"
    fs.sh(f"printf '#!/bin/sh\\necho script \"$@\"\\n' > '{s}' && chmod 755 '{s}'")
    # subprocess: a vfork child that closed every other descriptor (close_fds) before its exec,
    # posix_spawn, a fork with preexec_fn, a PATH search.
    code = (
        "import subprocess, os\n"
        f"r = lambda argv, **kw: subprocess.run(argv, capture_output=True, check=True, **kw).stdout.decode()\n"
        f"print(r(['{app}', 'vfork']), end='')\n"
        f"print(r(['{s}', 'vfork']), end='')\n"
        f"print(r(['{app}', 'preexec'], preexec_fn=lambda: None), end='')\n"
        f"print(r(['{app}', 'spawn'], close_fds=False), end='')\n"
        f"print(r(['echo2', 'path'], env=dict(os.environ, PATH='{fs.mount}:/usr/bin:/bin')), end='')\n"
        f"pid = os.posix_spawn('{app}', ['echo2', 'posix_spawn'], os.environ); os.waitpid(pid, 0)\n"
    )
    out = fs.run([sys.executable, "-c", code]).stdout.decode()
    assert out == "vfork\nscript vfork\npreexec\nspawn\npath\nposix_spawn\n"
    ex = progs["execl"]
    assert fs.run([ex, "l", app, "execl"]).stdout == b"execl\n"
    assert fs.run([ex, "l", s, "execl"]).stdout == b"script execl\n"
    env = dict(fs.env, PATH=f"{fs.mount}:/usr/bin:/bin")
    assert subprocess.run([ex, "p", "echo2", "execlp"], env=env, capture_output=True, check=True).stdout == b"execlp\n"
    # A bare name is searched in PATH only, never in the (logical) cwd.
    p = subprocess.run([ex, "p", "s.sh", "x"], env=dict(fs.env, PATH="/usr/bin:/bin"), cwd=str(fs.root), capture_output=True)
    assert p.returncode == 1 and b"No such file or directory" in p.stderr


def test_a_library_and_a_python_extension_under_the_mount_load(fs, tmp_path):
    lib_c = tmp_path / "lib.c"
    lib_c.write_text("int plfs_answer(void) { return 42; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "libanswer.so"), str(lib_c)], check=True)
    ext_c = tmp_path / "spam.c"
    ext_c.write_text(
        "#include <Python.h>\n"
        "static PyObject *seven(PyObject *s, PyObject *a) { return PyLong_FromLong(7); }\n"
        'static PyMethodDef m[] = {{"seven", seven, METH_NOARGS, ""}, {0}};\n'
        'static struct PyModuleDef d = {PyModuleDef_HEAD_INIT, "spam", 0, -1, m};\n'
        "PyMODINIT_FUNC PyInit_spam(void) { return PyModule_Create(&d); }\n"
    )
    ext = tmp_path / ("spam" + sysconfig.get_config_var("EXT_SUFFIX"))
    inc = sysconfig.get_paths()["include"]
    assert (Path(inc) / "Python.h").exists(), f"Python.h missing in {inc}: install python3-dev"
    subprocess.run(["cc", "-shared", "-fPIC", f"-I{inc}", "-o", str(ext), str(ext_c)], check=True)
    lib = fs.mount / "lib"
    fs.sh(f"mkdir -p '{lib}' && cp '{tmp_path}/libanswer.so' '{ext}' '{lib}/'")
    code = (
        "import ctypes, sys\n"
        f"a = ctypes.CDLL('{lib}/libanswer.so'); b = ctypes.CDLL('{lib}/libanswer.so')\n"
        "print(a.plfs_answer(), a._handle == b._handle)\n"
        f"sys.path.insert(0, '{lib}')\n"
        "import spam\n"
        "print(spam.seven(), spam.__file__)\n"
    )
    out = fs.run([sys.executable, "-c", code]).stdout.decode()
    assert out == f"42 True\n7 {lib}/{ext.name}\n"


def test_plfs_works_on_after_a_program_closes_every_descriptor(fs):
    """A process that closes every descriptor it does not know (os.closerange, close_range(2),
    closefrom: daemons, job launchers) took ldplfs's own with them: every later call on a PLFS
    file failed with EBADF."""
    f = fs.mount / "kept"
    code = (
        "import os\n"
        f"open('{f}', 'w').write('before')\n"
        "os.closerange(3, 1 << 20)\n"
        f"print(open('{f}').read())\n"
        f"open('{f}', 'a').write(' after')\n"
        f"print(open('{f}').read())\n"
    )
    assert fs.run([sys.executable, "-c", code]).stdout == b"before\nbefore after\n"
