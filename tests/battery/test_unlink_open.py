"""Unlink while open (issue 17, item 4), with a shell and coreutils: POSIX keeps an unlinked file
readable and writable through the descriptors that have it open, `fstat` reports st_nlink 0, and
close succeeds; once the last descriptor is closed, its data is gone from the backend."""

from conftest import make_data, md5_plain


def test_unlinked_file_stays_usable_while_open(fs):
    # Under the preload, `cat` and `stat` are new images that inherit descriptor 3 across exec:
    # they reopen the file by its identity (docs/design.md "Unlink"), not by its vanished name.
    src = fs.plain / "src"
    make_data(src, 700_000, seed=17)
    out = fs.sh(
        f"""
        cp {src} {fs.mount}/f
        exec 3<>{fs.mount}/f
        rm {fs.mount}/f
        test ! -e {fs.mount}/f
        cat <&3 > {fs.plain}/got           # from offset 0: the old bytes
        stat -L -c %h /dev/fd/3            # fstat: no name left
        printf tail >&3                    # appends at the descriptor's offset
        stat -L -c %s /dev/fd/3
        exec 3>&-
        echo closed
        """
    )
    assert md5_plain(fs.plain / "got") == md5_plain(src)
    assert out.split() == ["0", str(700_000 + 4), "closed"]
    left = [p for p in fs.backend.rglob("*") if p.is_file()]
    assert left == [], left
