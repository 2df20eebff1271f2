//! `plfs._plfs`: the native half of the Python package. It links plfs-core directly (no C API,
//! no LD_PRELOAD) and exposes positional I/O on open files plus the namespace calls; the `io`
//! classes, path handling and `os.stat_result` live in `plfs/__init__.py`.
//!
//! Errors become `OSError(errno, strerror, path)`, which Python turns into the matching subclass
//! (FileNotFoundError, PermissionError, IsADirectoryError...). The GIL is released during I/O.

use plfs_core::{Config, FileKind, OpenFile, OpenFlags, Plfs};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The process's PLFS instance, from the same plfsrc as the other front ends ($PLFSRC,
/// ~/.plfsrc, /etc/plfsrc, or the zero-config default), built at first use.
static PLFS: OnceLock<Plfs> = OnceLock::new();
/// Serialises the first construction.
static INIT: Mutex<()> = Mutex::new(());

fn strerror(errno: i32) -> String {
    let s = std::io::Error::from_raw_os_error(errno).to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// `OSError(errno, strerror, path)`: Python picks the subclass from the errno. The core's own
/// message (which may name backend files) is kept as a note-like `__cause__`-free detail in
/// the strerror only when it adds something beyond the errno text.
fn os_error(e: plfs_core::Error, path: &Path) -> PyErr {
    let errno = e.raw_errno();
    let text = match &e {
        plfs_core::Error::Config(m) => format!("{}: {m}", strerror(errno)),
        plfs_core::Error::Corruption { what, .. } => format!("{}: damaged file ({what})", strerror(errno)),
        // The core's reason (e.g. "not under a PLFS mount point" for EXDEV), without the path
        // it starts with: OSError shows the path itself.
        plfs_core::Error::Errno { msg, .. } => {
            let shown = path.display().to_string();
            let why = msg
                .strip_prefix(&shown)
                .map_or(msg.as_str(), |m| m.trim_start_matches(": "));
            format!("{}: {why}", strerror(errno))
        }
        _ => strerror(errno),
    };
    PyOSError::new_err((errno, text, path.display().to_string()))
}

fn plfs() -> PyResult<&'static Plfs> {
    if let Some(p) = PLFS.get() {
        return Ok(p);
    }
    let _g = INIT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(p) = PLFS.get() {
        return Ok(p);
    }
    let cfg = Config::load().map_err(|e| os_error(e, Path::new("plfsrc")))?;
    let p = Plfs::new(cfg).map_err(|e| os_error(e, Path::new("plfsrc")))?;
    Ok(PLFS.get_or_init(|| p))
}

/// An open PLFS file: positional reads and writes (the Python side keeps the position).
#[pyclass(module = "plfs._plfs")]
struct File {
    f: Mutex<Option<OpenFile>>,
    path: PathBuf,
}

impl File {
    fn with<T>(&self, op: impl FnOnce(&OpenFile) -> plfs_core::Result<T>) -> PyResult<T> {
        let g = self.f.lock().unwrap_or_else(|p| p.into_inner());
        match g.as_ref() {
            Some(f) => op(f).map_err(|e| os_error(e, &self.path)),
            None => Err(PyValueError::new_err("I/O operation on closed file")),
        }
    }
}

#[pymethods]
impl File {
    /// Reads up to `n` bytes at offset `off`.
    fn pread<'py>(&self, py: Python<'py>, n: usize, off: u64) -> PyResult<Bound<'py, PyBytes>> {
        let mut buf = vec![0u8; n];
        let got = py.detach(|| self.with(|f| f.read(&mut buf, off)))?;
        Ok(PyBytes::new(py, &buf[..got]))
    }

    /// Reads into a writable, C-contiguous byte buffer at offset `off`; returns the bytes read.
    fn preadinto(&self, py: Python<'_>, buf: PyBuffer<u8>, off: u64) -> PyResult<usize> {
        if buf.readonly() || !buf.is_c_contiguous() {
            return Err(PyValueError::new_err("readinto needs a writable, contiguous buffer"));
        }
        let len = buf.len_bytes();
        let ptr = buf.buf_ptr() as usize;
        py.detach(|| {
            // SAFETY: `buf` is a writable, C-contiguous buffer of `len` bytes; the PyBuffer holds the
            // exporter's buffer view (its memory cannot be freed or moved) until it is dropped,
            // after this closure returns. Concurrent writes by another thread into the same array
            // can only tear bytes, as with read(2) into it.
            let s = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, len) };
            self.with(|f| f.read(s, off))
        })
    }

    /// Writes all of `data` (any C-contiguous bytes-like object) at offset `off`.
    fn pwrite(&self, py: Python<'_>, data: PyBuffer<u8>, off: u64) -> PyResult<usize> {
        if !data.is_c_contiguous() {
            return Err(PyValueError::new_err("write needs a contiguous buffer"));
        }
        let len = data.len_bytes();
        let ptr = data.buf_ptr() as usize;
        py.detach(|| {
            // SAFETY: `data` is a C-contiguous buffer of `len` bytes, pinned by the PyBuffer until it
            // is dropped after this closure returns; we only read it.
            let s = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
            self.with(|f| {
                let mut done = 0;
                while done < s.len() {
                    let n = f.write(&s[done..], off + done as u64)?;
                    if n == 0 {
                        break;
                    }
                    done += n;
                }
                Ok(done)
            })
        })
    }

    /// Appends `data` at the end of the file; returns (offset written at, bytes written).
    fn append(&self, py: Python<'_>, data: PyBuffer<u8>) -> PyResult<(u64, usize)> {
        let v = data.to_vec(py)?;
        py.detach(|| self.with(|f| f.append(&v)))
    }

    /// The file's size as this handle sees it.
    fn size(&self, py: Python<'_>) -> PyResult<u64> {
        py.detach(|| self.with(|f| f.size()))
    }

    /// Truncates (or extends) to `size` bytes.
    fn truncate(&self, py: Python<'_>, size: u64) -> PyResult<()> {
        py.detach(|| self.with(|f| f.truncate(size)))
    }

    /// Makes written data durable (data before index).
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.with(|f| f.sync()))
    }

    /// Closes the file (idempotent).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let f = self.f.lock().unwrap_or_else(|p| p.into_inner()).take();
        match f {
            Some(f) => py.detach(|| f.close()).map_err(|e| os_error(e, &self.path)),
            None => Ok(()),
        }
    }

    #[getter]
    fn closed(&self) -> bool {
        self.f.lock().unwrap_or_else(|p| p.into_inner()).is_none()
    }
}

/// Opens a logical file. `flags` are POSIX open flags (os.O_*); `pid` names the writer.
#[pyfunction]
fn open_file(py: Python<'_>, path: PathBuf, flags: i32, mode: u32, pid: u32) -> PyResult<File> {
    let p = plfs()?;
    let fl = OpenFlags::from_posix(flags).map_err(|e| os_error(e, &path))?;
    let f = py
        .detach(|| p.open(&path, fl, mode, pid))
        .map_err(|e| os_error(e, &path))?;
    Ok(File {
        f: Mutex::new(Some(f)),
        path,
    })
}

/// stat: (kind, mode, ino, dev, nlink, uid, gid, size, atime_ns, mtime_ns, ctime_ns, blksize, blocks).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn stat(py: Python<'_>, path: PathBuf) -> PyResult<(u32, u64, u64, u64, u32, u32, u64, i64, i64, i64, u64, u64)> {
    let p = plfs()?;
    let st = py.detach(|| p.stat(&path)).map_err(|e| os_error(e, &path))?;
    Ok((
        st.mode,
        st.ino,
        st.dev,
        st.nlink,
        st.uid,
        st.gid,
        st.size,
        st.atime_ns,
        st.mtime_ns,
        st.ctime_ns,
        st.blksize,
        st.blocks,
    ))
}

/// Names in a directory, sorted.
#[pyfunction]
fn listdir(py: Python<'_>, path: PathBuf) -> PyResult<Vec<PathBuf>> {
    let p = plfs()?;
    let v = py.detach(|| p.readdir(&path)).map_err(|e| os_error(e, &path))?;
    Ok(v.into_iter().map(|e| PathBuf::from(e.name)).collect())
}

/// Entries of a directory, sorted: (name, kind) with kind "dir", "file" or "symlink", from the
/// listing itself (no stat per entry: a container's stat reads its index).
#[pyfunction]
fn scandir(py: Python<'_>, path: PathBuf) -> PyResult<Vec<(PathBuf, &'static str)>> {
    let p = plfs()?;
    let v = py.detach(|| p.readdir(&path)).map_err(|e| os_error(e, &path))?;
    Ok(v.into_iter()
        .map(|e| {
            let kind = match e.kind {
                FileKind::Dir => "dir",
                FileKind::File => "file",
                FileKind::Symlink => "symlink",
            };
            (PathBuf::from(e.name), kind)
        })
        .collect())
}

/// The contents of a symbolic link.
#[pyfunction]
fn readlink(py: Python<'_>, path: PathBuf) -> PyResult<PathBuf> {
    let p = plfs()?;
    let t = py.detach(|| p.readlink(&path)).map_err(|e| os_error(e, &path))?;
    Ok(PathBuf::from(t))
}

/// Creates the symbolic link `link` holding `target` (stored verbatim).
#[pyfunction]
fn symlink(py: Python<'_>, target: PathBuf, link: PathBuf) -> PyResult<()> {
    let p = plfs()?;
    py.detach(|| p.symlink(&target, &link)).map_err(|e| os_error(e, &link))
}

#[pyfunction]
fn unlink(py: Python<'_>, path: PathBuf) -> PyResult<()> {
    let p = plfs()?;
    py.detach(|| p.unlink(&path)).map_err(|e| os_error(e, &path))
}

#[pyfunction]
fn rename(py: Python<'_>, src: PathBuf, dst: PathBuf) -> PyResult<()> {
    let p = plfs()?;
    py.detach(|| p.rename(&src, &dst)).map_err(|e| os_error(e, &src))
}

#[pyfunction]
fn mkdir(py: Python<'_>, path: PathBuf, mode: u32) -> PyResult<()> {
    let p = plfs()?;
    py.detach(|| p.mkdir(&path, mode)).map_err(|e| os_error(e, &path))
}

#[pyfunction]
fn rmdir(py: Python<'_>, path: PathBuf) -> PyResult<()> {
    let p = plfs()?;
    py.detach(|| p.rmdir(&path)).map_err(|e| os_error(e, &path))
}

#[pyfunction]
fn chmod(py: Python<'_>, path: PathBuf, mode: u32) -> PyResult<()> {
    let p = plfs()?;
    py.detach(|| p.chmod(&path, mode)).map_err(|e| os_error(e, &path))
}

/// True if the path lies under a PLFS mount point of the configuration.
#[pyfunction]
fn is_plfs_path(path: PathBuf) -> PyResult<bool> {
    Ok(plfs()?.is_plfs_path(&path))
}

/// The mount points of the configuration.
#[pyfunction]
fn mount_points() -> PyResult<Vec<PathBuf>> {
    Ok(plfs()?.config().mounts.iter().map(|m| m.mount_point.clone()).collect())
}

#[pymodule]
fn _plfs(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<File>()?;
    m.add_function(wrap_pyfunction!(open_file, m)?)?;
    m.add_function(wrap_pyfunction!(stat, m)?)?;
    m.add_function(wrap_pyfunction!(listdir, m)?)?;
    m.add_function(wrap_pyfunction!(scandir, m)?)?;
    m.add_function(wrap_pyfunction!(readlink, m)?)?;
    m.add_function(wrap_pyfunction!(symlink, m)?)?;
    m.add_function(wrap_pyfunction!(unlink, m)?)?;
    m.add_function(wrap_pyfunction!(rename, m)?)?;
    m.add_function(wrap_pyfunction!(mkdir, m)?)?;
    m.add_function(wrap_pyfunction!(rmdir, m)?)?;
    m.add_function(wrap_pyfunction!(chmod, m)?)?;
    m.add_function(wrap_pyfunction!(is_plfs_path, m)?)?;
    m.add_function(wrap_pyfunction!(mount_points, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
