//! `plfs __complete WORD` (hidden): the completions of a path argument that lies under a PLFS
//! mount point, which the shell cannot list itself (the kernel sees nothing there without
//! ldplfs or a FUSE mount). The bash completion script that `plfs generate completions bash`
//! writes ([`BASH_PATHS`]) asks it for every path-like word.
//!
//! It prints one candidate per line, in the form the word was typed (`DIR/` kept as typed,
//! directories with a trailing `/`) and exits with
//! - 0 when the word's directory is under a mount point: the candidates are the answer;
//! - 1 otherwise: the candidates (the mount points the word is a prefix of) go beside the
//!   shell's own file names.

use crate::globals::Globals;
use crate::util::{absolute, load_config};
use anyhow::Result;
use clap::Args;
use plfs_core::{FileKind, Plfs};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Arguments of `plfs __complete`.
#[derive(Debug, Args)]
pub struct CompleteArgs {
    /// The word being completed (a path, absolute or relative, possibly empty).
    #[arg(allow_hyphen_values = true, default_value = "")]
    word: OsString,
}

/// Runs `plfs __complete WORD`; never fails (a shell's completion must stay quiet).
pub fn complete(g: &Globals, a: &CompleteArgs) -> Result<()> {
    let word = a.word.as_bytes();
    // The directory part as typed (up to and with the last slash) and the name being typed.
    let cut = word.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1);
    let (typed_dir, base) = word.split_at(cut);
    let mut out = Vec::new();
    let Ok(cfg) = load_config(g) else { crate::out::exit(1) };
    let dir = if typed_dir.is_empty() {
        Path::new(".")
    } else {
        Path::new(std::ffi::OsStr::from_bytes(typed_dir))
    };
    let Ok(dir) = absolute(dir) else { crate::out::exit(1) };
    if cfg.mount_for(&dir).is_some() {
        if let Ok(entries) = Plfs::new(cfg).and_then(|p| p.readdir(&dir)) {
            for e in entries {
                let name = e.name.as_bytes();
                // Hidden names only when a dot was typed, as bash does by default.
                if !name.starts_with(base)
                    || (name.starts_with(b".") && !base.starts_with(b"."))
                    || name.contains(&b'\n')
                {
                    continue;
                }
                out.extend_from_slice(typed_dir);
                out.extend_from_slice(name);
                if e.kind == FileKind::Dir {
                    out.push(b'/');
                }
                out.push(b'\n');
            }
        }
        crate::out::bytes(&out);
        crate::out::exit(0)
    }
    // Not under a mount point: the mount points that begin with the word (typed absolute).
    if word.starts_with(b"/") {
        for m in &cfg.mounts {
            let mp = m.mount_point.as_os_str().as_bytes();
            if mp.len() > 1 && mp.starts_with(word) && !mp.contains(&b'\n') {
                out.extend_from_slice(mp);
                out.extend_from_slice(b"/\n");
            }
        }
    }
    crate::out::bytes(&out);
    crate::out::exit(1)
}

/// Appended to clap's bash completion script: path-like words under a mount point are completed
/// by `plfs __complete`, other words as before (by clap's `_plfs` and bash's file names), with
/// the mount points themselves offered beside the file names they prefix.
pub const BASH_PATHS: &str = r#"
# Paths under the PLFS mount points, which bash cannot list: asked of `plfs __complete WORD`
# (exit 0: the word is under a mount point and these are its completions; 1: not, and these
# mount points go beside the usual file names).
_plfs_paths() {
    _plfs "$@"
    local cur="${COMP_WORDS[COMP_CWORD]}"
    if [[ ${COMP_CWORD} -lt 2 || -z ${cur} || ${cur} == -* || ${cur} == '~'* ]]; then
        return 0
    fi
    local out rc
    out="$(command "${1:-plfs}" __complete "${cur}" 2>/dev/null)"
    rc=$?
    local -a found=()
    [[ -n ${out} ]] && mapfile -t found <<< "${out}"
    if [[ ${rc} -eq 0 ]]; then
        COMPREPLY=("${found[@]}")
    elif [[ ${rc} -eq 1 && ${#found[@]} -gt 0 ]]; then
        local -a files=() f m skip
        [[ ${#COMPREPLY[@]} -eq 0 ]] && mapfile -t files < <(compgen -f -- "${cur}")
        for f in "${files[@]}"; do
            skip=
            for m in "${found[@]}"; do [[ ${f}/ == "${m}" ]] && skip=1; done
            [[ -z ${skip} ]] && COMPREPLY+=("${f}")
        done
        COMPREPLY+=("${found[@]}")
    else
        return 0
    fi
    compopt -o filenames 2>/dev/null
    if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == */ ]]; then
        compopt -o nospace 2>/dev/null
    fi
    return 0
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _plfs_paths -o nosort -o bashdefault -o default plfs
else
    complete -F _plfs_paths -o bashdefault -o default plfs
fi
"#;
