"""PLFS from Python, without LD_PRELOAD or FUSE.

``plfs.open(path, mode)`` returns a real :mod:`io` file object (``io.BufferedReader``,
``io.BufferedWriter``, ``io.BufferedRandom`` or ``io.TextIOWrapper``, like the built-in
``open``) over :class:`RawFile`, an ``io.RawIOBase``; ``stat``, ``exists``, ``listdir``,
``scandir``, ``walk``, ``unlink``, ``rename``, ``mkdir``, ``makedirs``, ``rmdir``, ``chmod``,
``symlink`` and ``readlink`` work on logical paths like their :mod:`os` namesakes. The
configuration is the same plfsrc as every other front end ($PLFSRC, ~/.plfsrc, /etc/plfsrc, or
the zero-config default, whose mount point is ``/tmp/plfs-$USER``); ``mount_points()`` lists its
mount points. Errors are ``OSError`` subclasses (``FileNotFoundError``, ``PermissionError``, ...)
with ``errno`` and ``filename`` set. With fsspec installed, ``plfs://`` URLs work in pandas,
dask and the rest (:mod:`plfs.fsspec`, found by fsspec without an import).

    import numpy, plfs
    m = plfs.mount_points()[0]          # /tmp/plfs-$USER with the zero-config default
    plfs.makedirs(m + "/run", exist_ok=True)
    with plfs.open(m + "/run/ckpt", "wb") as f:
        f.write(numpy.arange(1000, dtype="f8"))
    with plfs.open(m + "/run/ckpt", "rb") as f:
        a = numpy.frombuffer(f.read(), dtype="f8")
    for dirpath, dirnames, filenames in plfs.walk(m + "/run"):
        print(dirpath, dirnames, filenames)
"""

import errno as _errno
import io
import os
import stat as _st

from . import _plfs

__all__ = [
    "open", "RawFile", "stat", "listdir", "scandir", "DirEntry", "walk", "unlink", "remove",
    "rename", "mkdir", "makedirs", "rmdir", "chmod", "symlink", "readlink", "exists",
    "is_plfs_path", "mount_points",
]
__version__ = _plfs.__version__


def _path(p):
    """An absolute logical path (``.`` and ``..`` resolved lexically, as PLFS paths are not
    visible to the kernel)."""
    return os.path.abspath(os.fsdecode(os.fspath(p)))


def _flags(mode):
    """POSIX open flags for a Python mode string, checked as the built-in ``open`` checks it
    (the error names the mode as the caller wrote it)."""
    if not isinstance(mode, str) or set(mode) - set("rwxabt+") or len(set(mode)) != len(mode):
        raise ValueError(f"invalid mode: {mode!r}")
    m = mode.replace("b", "").replace("t", "")
    plus = "+" in m
    m = m.replace("+", "")
    if len(m) != 1 or m not in "rwxa":
        raise ValueError(f"invalid mode: {mode!r}")
    if m == "r":
        f = os.O_RDWR if plus else os.O_RDONLY
    elif m == "w":
        f = (os.O_RDWR if plus else os.O_WRONLY) | os.O_CREAT | os.O_TRUNC
    elif m == "x":
        f = (os.O_RDWR if plus else os.O_WRONLY) | os.O_CREAT | os.O_EXCL
    else:
        f = (os.O_RDWR if plus else os.O_WRONLY) | os.O_CREAT | os.O_APPEND
    return f, m, plus


class RawFile(io.RawIOBase):
    """Unbuffered PLFS file: ``readinto``, ``write``, ``seek``, ``tell``, ``truncate``; usable
    directly or under ``io.BufferedReader``/``BufferedWriter``/``BufferedRandom``."""

    def __init__(self, path, mode="rb", perms=0o666):
        super().__init__()
        flags, kind, plus = _flags(mode)
        self.name = _path(path)
        self.mode = mode
        self._readable = kind == "r" or plus
        self._writable = kind != "r" or plus
        self._append = kind == "a"
        self._f = _plfs.open_file(self.name, flags, perms, os.getpid())
        self._pos = self._f.size() if self._append else 0

    def readable(self):
        return self._readable

    def writable(self):
        return self._writable

    def seekable(self):
        return True

    def _check(self, readable=False, writable=False):
        if self.closed:
            raise ValueError("I/O operation on closed file")
        if readable and not self._readable:
            raise io.UnsupportedOperation("not readable")
        if writable and not self._writable:
            raise io.UnsupportedOperation("not writable")

    def readinto(self, b):
        self._check(readable=True)
        mv = memoryview(b).cast("B")
        n = self._f.preadinto(mv, self._pos)
        self._pos += n
        return n

    def readall(self):
        self._check(readable=True)
        chunks = []
        while True:
            data = self._f.pread(max(1 << 20, self._f.size() - self._pos), self._pos)
            if not data:
                return b"".join(chunks)
            self._pos += len(data)
            chunks.append(data)

    def read(self, size=-1):
        if size is None or size < 0:
            return self.readall()
        self._check(readable=True)
        data = self._f.pread(size, self._pos)
        self._pos += len(data)
        return data

    def write(self, b):
        self._check(writable=True)
        mv = memoryview(b).cast("B")
        if self._append:
            off, n = self._f.append(mv)
            self._pos = off + n
            return n
        n = self._f.pwrite(mv, self._pos)
        self._pos += n
        return n

    def seek(self, pos, whence=io.SEEK_SET):
        if self.closed:
            raise ValueError("I/O operation on closed file")
        if whence == io.SEEK_SET:
            new = pos
        elif whence == io.SEEK_CUR:
            new = self._pos + pos
        elif whence == io.SEEK_END:
            new = self._f.size() + pos
        else:
            raise ValueError(f"invalid whence ({whence})")
        if new < 0:
            raise OSError(22, "Invalid argument", self.name)
        self._pos = new
        return new

    def tell(self):
        if self.closed:
            raise ValueError("I/O operation on closed file")
        return self._pos

    def truncate(self, size=None):
        self._check(writable=True)
        size = self._pos if size is None else size
        self._f.truncate(size)
        return size

    def flush(self):
        # Written bytes are in PLFS already; durability is sync().
        if self.closed:
            raise ValueError("I/O operation on closed file")

    def sync(self):
        """Makes the written data durable (like os.fsync)."""
        self._check()
        self._f.sync()

    def fileno(self):
        raise io.UnsupportedOperation("a PLFS file has no file descriptor")

    def close(self):
        if not self.closed:
            try:
                self._f.close()
            finally:
                super().close()

    def __repr__(self):
        return f"<plfs.RawFile name={self.name!r} mode={self.mode!r}>"


def open(path, mode="r", buffering=-1, encoding=None, errors=None, newline=None, perms=0o666):
    """Opens a PLFS file like the built-in ``open``: binary modes give a buffered binary file
    (or the :class:`RawFile` with ``buffering=0``), text modes an ``io.TextIOWrapper``."""
    if isinstance(mode, str) and "b" in mode and "t" in mode:
        raise ValueError("can't have text and binary mode at once")
    _, kind, plus = _flags(mode)
    raw = RawFile(path, kind + ("+" if plus else "") + "b", perms)
    try:
        if buffering == 0:
            if "b" not in mode:
                raise ValueError("can't have unbuffered text I/O")
            return raw
        size = io.DEFAULT_BUFFER_SIZE if buffering in (-1, 1) else buffering
        if size == io.DEFAULT_BUFFER_SIZE:
            size = 1 << 20  # PLFS favours large I/O (stat reports a 1 MiB blksize)
        if raw.readable() and raw.writable():
            buf = io.BufferedRandom(raw, size)
        elif raw.writable():
            buf = io.BufferedWriter(raw, size)
        else:
            buf = io.BufferedReader(raw, size)
        if "b" in mode:
            return buf
        text = io.TextIOWrapper(buf, encoding=encoding or "utf-8", errors=errors, newline=newline,
                                line_buffering=buffering == 1)
        text.mode = mode
        return text
    except BaseException:
        raw.close()
        raise


def stat(path, *, follow_symlinks=False):
    """``os.stat_result`` of a logical path. A final symlink is not followed (as ``os.lstat``)
    unless ``follow_symlinks=True``; a link that leads out of PLFS is then followed with
    ``os.stat``."""
    p = _path(path)
    if follow_symlinks and _plfs.is_plfs_path(p):
        return _stat_followed(p)
    return _stat_result(_plfs.stat(p))  # outside PLFS: an OSError that says so


def _stat_result(t):
    mode, ino, dev, nlink, uid, gid, size, at, mt, ct, blksize, blocks = t
    s = 1_000_000_000
    return os.stat_result(
        (mode, ino, dev, nlink, uid, gid, size, at // s, mt // s, ct // s),
        {"st_atime": at / s, "st_mtime": mt / s, "st_ctime": ct / s,
         "st_atime_ns": at, "st_mtime_ns": mt, "st_ctime_ns": ct,
         "st_blksize": blksize, "st_blocks": blocks},
    )


def _follow(p):
    """The absolute path ``p`` with its final symlinks followed while they stay in PLFS (PLFS
    resolves paths lexically: links in the directories above are not followed). A path that
    cannot be looked at is returned as it is, for the caller's operation to fail on."""
    first = p
    for _ in range(40):
        if not _plfs.is_plfs_path(p):
            return p
        try:
            mode = _plfs.stat(p)[0]
        except OSError:
            return p
        if not _st.S_ISLNK(mode):
            return p
        target = os.fsdecode(_plfs.readlink(p))
        p = os.path.normpath(os.path.join(os.path.dirname(p), target))
    raise OSError(_errno.ELOOP, os.strerror(_errno.ELOOP), first)


def _stat_followed(p):
    """stat of the absolute path ``p``, final symlinks followed, in PLFS and out of it."""
    q = _follow(p)
    if not _plfs.is_plfs_path(q):
        return os.stat(q)
    return _stat_result(_plfs.stat(q))


def exists(path):
    """Whether a logical path exists, as ``os.path.exists`` (symlinks followed): False, never
    an error, for a path that does not exist, cannot be looked at, or is not under a PLFS mount
    point (a plain file outside PLFS is not a PLFS path)."""
    try:
        p = _path(path)
        if not _plfs.is_plfs_path(p):
            return False
        _stat_followed(p)
        return True
    except (OSError, ValueError):
        return False


def listdir(path):
    """Names in a logical directory, sorted."""
    return [os.fsdecode(n) for n in _plfs.listdir(_path(path))]


class DirEntry:
    """An entry of :func:`scandir`, like ``os.DirEntry``: ``name``, ``path`` (the scanned path
    joined with the name), ``is_dir()``, ``is_file()``, ``is_symlink()``, ``stat()``,
    ``inode()``. The kind comes from the directory listing; ``stat()`` (cached) asks PLFS, and
    following a symlink (the default of ``is_dir``, ``is_file`` and ``stat``, as in ``os``)
    reads it."""

    __slots__ = ("name", "path", "_kind", "_abs", "_lstat", "_stat")

    def __init__(self, dirpath, name, kind, absdir):
        self.name = name
        self.path = os.path.join(dirpath, name)
        self._kind = kind
        self._abs = os.path.join(absdir, os.fsdecode(name))
        self._lstat = None
        self._stat = None

    def is_symlink(self):
        return self._kind == "symlink"

    def _followed_kind(self, follow_symlinks):
        if self._kind != "symlink" or not follow_symlinks:
            return self._kind
        try:
            m = self.stat().st_mode
        except OSError:
            return None  # a dangling link: neither a file nor a directory
        return "dir" if _st.S_ISDIR(m) else "file" if _st.S_ISREG(m) else None

    def is_dir(self, *, follow_symlinks=True):
        return self._followed_kind(follow_symlinks) == "dir"

    def is_file(self, *, follow_symlinks=True):
        return self._followed_kind(follow_symlinks) == "file"

    def stat(self, *, follow_symlinks=True):
        if self._lstat is None:
            self._lstat = _stat_result(_plfs.stat(self._abs))
        if not follow_symlinks or self._kind != "symlink":
            return self._lstat
        if self._stat is None:
            self._stat = _stat_followed(self._abs)
        return self._stat

    def inode(self):
        return self.stat(follow_symlinks=False).st_ino

    def __fspath__(self):
        return self.path

    def __repr__(self):
        return f"<plfs.DirEntry {self.name!r}>"


class _ScandirIterator:
    """What :func:`scandir` returns: an iterator of :class:`DirEntry`, usable in ``with``."""

    def __init__(self, entries):
        self._it = iter(entries)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._it)

    def close(self):
        self._it = iter(())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _scan(shown, real):
    """The directory ``real`` (absolute) with a final symlink followed, and its entries, their
    paths under ``shown``."""
    real = _follow(real)
    entries = _plfs.scandir(real)
    if isinstance(shown, bytes):
        return real, [DirEntry(shown, os.fsencode(n), k, real) for n, k in entries]
    return real, [DirEntry(shown, os.fsdecode(n), k, real) for n, k in entries]


def scandir(path="."):
    """Entries of a logical directory (sorted by name) as :class:`DirEntry` objects, like
    ``os.scandir`` (a final symlink is followed; bytes in, bytes names out). One listing, no
    stat per entry."""
    shown = os.fspath(path)
    return _ScandirIterator(_scan(shown, _path(shown))[1])


def walk(top, topdown=True, onerror=None, followlinks=False):
    """Walks a logical directory tree like ``os.walk``: yields ``(dirpath, dirnames,
    filenames)``, top-down (the caller may prune ``dirnames`` in place) or bottom-up. Symlinks
    to directories are listed in ``dirnames`` but entered only with ``followlinks=True``. A
    directory that cannot be listed is skipped, its ``OSError`` passed to ``onerror`` if
    given. Names within a directory are sorted."""
    top = os.fspath(top)
    # Pending work, last in first out: a directory to list as (shown path, absolute path), or
    # (bottom-up) a finished triple, marked by None.
    todo = [(top, _path(top))]
    while todo:
        item = todo.pop()
        if item[0] is None:
            yield item[1]
            continue
        shown, real = item
        try:
            real, entries = _scan(shown, real)
        except OSError as e:
            if onerror is not None:
                onerror(e)
            continue
        dirs, files, links = [], [], set()
        for e in entries:
            (dirs if e.is_dir() else files).append(e.name)
            if e.is_symlink():
                links.add(e.name)
        listed = {e.name for e in entries}
        if not topdown:
            todo.append((None, (shown, dirs, files)))
        else:
            yield shown, dirs, files
        # Top-down: dirnames as the caller left it; a name it added is looked at afresh.
        for name in reversed(dirs):
            child = os.path.join(real, os.fsdecode(name))
            if followlinks or not (name in links if name in listed else _islink(child)):
                todo.append((os.path.join(shown, name), child))


def _islink(p):
    try:
        return _st.S_ISLNK(stat(p).st_mode)
    except OSError:
        return False


def unlink(path):
    _plfs.unlink(_path(path))


remove = unlink


def rename(src, dst):
    _plfs.rename(_path(src), _path(dst))


def mkdir(path, mode=0o777):
    _plfs.mkdir(_path(path), mode)


def makedirs(path, mode=0o777, exist_ok=False):
    p = _path(path)
    parent = os.path.dirname(p)
    if parent != p and _plfs.is_plfs_path(parent) and not exists(parent):
        makedirs(parent, mode, exist_ok=True)
    try:
        mkdir(p, mode)
    except FileExistsError:
        if not exist_ok or not _is_dir(p):
            raise


def _is_dir(p):
    import stat as _st
    return _st.S_ISDIR(stat(p).st_mode)


def rmdir(path):
    _plfs.rmdir(_path(path))


def chmod(path, mode):
    _plfs.chmod(_path(path), mode)


def symlink(src, dst):
    """Creates the symbolic link ``dst`` (a logical path) holding ``src`` verbatim, as
    ``os.symlink``."""
    _plfs.symlink(os.fsdecode(os.fspath(src)), _path(dst))


def readlink(path):
    """The contents of a symbolic link, as ``os.readlink``."""
    return os.fsdecode(_plfs.readlink(_path(path)))


def is_plfs_path(path):
    """True if the path lies under a PLFS mount point of the configuration."""
    return _plfs.is_plfs_path(_path(path))


def mount_points():
    return [os.fsdecode(p) for p in _plfs.mount_points()]
