"""PLFS as an fsspec filesystem: ``plfs://`` URLs in pandas, pyarrow, dask, xarray...

    import pandas, plfs
    m = plfs.mount_points()[0]                  # /tmp/plfs-$USER with the zero-config default
    df.to_parquet(f"plfs://{m}/run/a.parquet")
    pandas.read_parquet(f"plfs://{m}/run/a.parquet")

fsspec finds this class through the ``fsspec.specs`` entry point of the package, so
``fsspec.filesystem("plfs")`` needs no import of :mod:`plfs` first; importing :mod:`plfs` does not
import fsspec (an optional dependency: ``pip install plfs[fsspec]``).

A URL holds a logical path: ``plfs:///tmp/plfs-alice/run/a.parquet`` (and ``plfs://tmp/...``,
read as the same absolute path). A path given without the ``plfs://`` prefix is resolved against
the working directory, as :func:`plfs.open` does. Files are the objects :func:`plfs.open`
returns (binary; fsspec wraps text modes). Writes go straight to the file: fsspec transactions
(``autocommit=False``) are refused.
"""

import datetime
import errno
import os
import shutil
import stat as _st

from fsspec.spec import AbstractFileSystem
from fsspec.utils import stringify_path

import plfs as _plfs

__all__ = ["PlfsFileSystem"]


class PlfsFileSystem(AbstractFileSystem):
    """The logical namespace of the PLFS mount points of the configuration (the same plfsrc as
    every other front end)."""

    protocol = "plfs"
    root_marker = "/"

    @classmethod
    def _strip_protocol(cls, path):
        if isinstance(path, (list, tuple)):
            return [cls._strip_protocol(p) for p in path]
        path = stringify_path(path)
        if path.startswith("plfs://"):
            # A URL names an absolute path, with or without the third slash.
            path = "/" + path[len("plfs://"):].lstrip("/")
        elif path.startswith("plfs::"):
            path = path[len("plfs::"):]
        return _plfs._path(path)

    @classmethod
    def _parent(cls, path):
        return os.path.dirname(cls._strip_protocol(path))

    def unstrip_protocol(self, name):
        return "plfs://" + self._strip_protocol(name)

    # Reading the namespace.

    def _info(self, path, lst):
        """The info dict of ``path`` from its (not followed) stat ``lst``."""
        link = _st.S_ISLNK(lst.st_mode)
        s = lst
        dest = None
        if link:
            dest = _plfs.readlink(path)
            try:
                s = _plfs.stat(path, follow_symlinks=True)
            except OSError:
                s = lst  # dangling: "other", the link's own size
        if _st.S_ISDIR(s.st_mode):
            kind = "directory"
        elif _st.S_ISREG(s.st_mode):
            kind = "file"
        else:
            kind = "other"
        out = {
            "name": path,
            "size": s.st_size,
            "type": kind,
            # POSIX has no creation time; like fsspec's LocalFileSystem, the change time.
            "created": s.st_ctime,
            "mtime": s.st_mtime,
            "islink": link,
            "mode": s.st_mode,
            "uid": s.st_uid,
            "gid": s.st_gid,
            "ino": s.st_ino,
            "nlink": s.st_nlink,
        }
        if link:
            out["destination"] = dest
        return out

    def info(self, path, **kwargs):
        p = self._strip_protocol(path)
        return self._info(p, _plfs.stat(p))

    def ls(self, path, detail=True, **kwargs):
        p = self._strip_protocol(path)
        top = self.info(p)
        if top["type"] != "directory":
            return [top] if detail else [p]
        with _plfs.scandir(p) as it:
            entries = list(it)
        if not detail:
            return [e.path for e in entries]
        out = []
        for e in entries:
            try:
                out.append(self._info(e.path, e.stat(follow_symlinks=False)))
            except FileNotFoundError:
                continue  # removed since the listing
        return out

    def exists(self, path, **kwargs):
        return _plfs.exists(self._strip_protocol(path))

    def lexists(self, path, **kwargs):
        p = self._strip_protocol(path)
        try:
            _plfs.stat(p)
            return True
        except (OSError, ValueError):
            return False

    def created(self, path):
        """The change time (st_ctime), as fsspec's LocalFileSystem gives: POSIX keeps no
        creation time."""
        return datetime.datetime.fromtimestamp(self.info(path)["created"], tz=datetime.timezone.utc)

    def modified(self, path):
        return datetime.datetime.fromtimestamp(self.info(path)["mtime"], tz=datetime.timezone.utc)

    # Files.

    def _open(self, path, mode="rb", block_size=None, autocommit=True, cache_options=None,
              **kwargs):
        p = self._strip_protocol(path)
        if not autocommit:
            raise NotImplementedError(
                "PLFS files are written in place: fsspec transactions are not supported")
        if "b" not in mode:
            mode += "b"
        buffering = block_size if isinstance(block_size, int) and block_size > 1 else -1
        return _plfs.open(p, mode, buffering=buffering)

    def cp_file(self, path1, path2, **kwargs):
        p1, p2 = self._strip_protocol(path1), self._strip_protocol(path2)
        if self.isdir(p1):
            self.makedirs(p2, exist_ok=True)
            return
        with _plfs.open(p1, "rb") as src, _plfs.open(p2, "wb") as dst:
            shutil.copyfileobj(src, dst, 4 << 20)

    # Changing the namespace.

    def mkdir(self, path, create_parents=True, **kwargs):
        p = self._strip_protocol(path)
        mode = kwargs.get("mode", 0o777)
        if create_parents:
            if _plfs.exists(p):
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), p)
            _plfs.makedirs(p, mode, exist_ok=True)
        else:
            _plfs.mkdir(p, mode)

    def makedirs(self, path, exist_ok=False):
        _plfs.makedirs(self._strip_protocol(path), exist_ok=exist_ok)

    def rmdir(self, path):
        _plfs.rmdir(self._strip_protocol(path))

    def rm_file(self, path):
        _plfs.unlink(self._strip_protocol(path))

    _rm = rm_file

    def rm(self, path, recursive=False, maxdepth=None):
        """Removes files, and with ``recursive=True`` directory trees; a directory without it is
        an ``IsADirectoryError``."""
        paths = self.expand_path(path, recursive=recursive, maxdepth=maxdepth)
        # Sorted: a directory comes before everything below it, so reversed removes it last.
        for p in reversed(paths):
            is_dir = _st.S_ISDIR(_plfs.stat(p).st_mode)  # FileNotFoundError for a missing path
            if not is_dir:
                _plfs.unlink(p)
            elif recursive:
                _plfs.rmdir(p)
            else:
                raise IsADirectoryError(errno.EISDIR, "Is a directory (use recursive=True)", p)

    def mv(self, path1, path2, recursive=False, maxdepth=None, **kwargs):
        """Renames within PLFS (a directory with all it holds, whatever ``recursive`` says);
        into ``path2`` if it is an existing directory. Globs, lists and moves between mount
        points go through fsspec's copy and remove."""
        if isinstance(path1, (list, tuple)) or isinstance(path2, (list, tuple)):
            return super().mv(path1, path2, recursive=recursive, maxdepth=maxdepth, **kwargs)
        p1, p2 = self._strip_protocol(path1), self._strip_protocol(path2)
        if any(c in p1 for c in "*?["):
            return super().mv(path1, path2, recursive=recursive, maxdepth=maxdepth, **kwargs)
        if p1 == p2:
            return None
        if self.isdir(p2):
            p2 = os.path.join(p2, os.path.basename(p1))
        try:
            _plfs.rename(p1, p2)
        except OSError as e:
            if e.errno != errno.EXDEV or not _plfs.is_plfs_path(p2):
                raise
            super().mv(p1, p2, recursive=True, **kwargs)
        return None
