"""Metadata and index figures, through metabench (the C API) beside plain files:

- stat of a file held open for writing by 1..64 processes, and after they closed it;
- files created per second: plain files, and plfs in its shared_file (N-1), file_per_proc (N-N)
  and small_file (1-N) modes (a mode the build does not support shows "not available" with the
  configuration error);
- index merge: how long a fresh reader needs to merge W writers' index logs, and after
  flattening (records merged per second), for constant-stride writes (which the index may keep
  as patterns) and irregular ones (which it cannot)."""

import os

from .util import result_lines, run

COLUMNS = ["section", "test", "iface", "state", "flattened", "writers", "records", "count",
           "seconds", "per_s", "size", "want_size", "status", "note"]


def _na(test, iface, note):
    return {"section": "meta", "test": test, "iface": iface, "status": "n/a", "note": note}


def run_meta(ws, api, bindir, profile, log, timeout):
    metab = os.path.join(bindir, "metabench")
    if not api.available or not os.path.exists(metab):
        why = api.note() if not api.available else f"{metab} not built"
        return [_na(t, "plfs", why) for t in ("stat", "create", "index")]
    rows = []
    env = dict(os.environ, PLFSRC=ws.plfsrc)
    pdir = os.path.join(ws.plfs_mnt, "meta")
    os.makedirs(os.path.join(ws.store, "meta", "creates"), exist_ok=True)  # logical dirs
    os.makedirs(os.path.join(ws.plain, "meta", "creates"), exist_ok=True)

    def collect(cmd, what, env=env):
        res = run(cmd, env=env, timeout=timeout)
        got = result_lines(res.out, "META_RESULT")
        status = "ok" if res.ok and got else "fail"
        note = "" if status == "ok" else res.why()
        for g in got:
            row = {"section": "meta", "status": status, "note": note}
            row.update({k: g.get(k) for k in COLUMNS if k in g and k not in row})
            if g.get("test") == "stat" and g.get("size") != g.get("want_size"):
                row.update(status="fail", note=f"size {g.get('size')}, want {g.get('want_size')}")
            rows.append(row)
        if not got:
            rows.append({"section": "meta", "test": what, "status": "fail", "note": res.why()})
        return got

    for w in profile["meta_writers"]:
        for iface, d in (("plfs", pdir), ("plain", os.path.join(ws.plain, "meta"))):
            got = collect([metab, "stat", os.path.join(d, f"stat-{w}"), str(w),
                           str(profile["meta_records"]), str(profile["meta_reps"])], "stat")
            log(f"meta stat {iface:5} writers={w:3}: " +
                ", ".join(f"{g.get('state')} {float(g.get('seconds', 0)) * 1e3:.3f} ms" for g in got))
    n = str(profile["creates"])
    for iface, d in (("plfs", pdir), ("plain", os.path.join(ws.plain, "meta"))):
        got = collect([metab, "create", os.path.join(d, "creates"), n], "create")
        log(f"meta create {iface:5}: " + ", ".join(f"{g.get('per_s')}/s" for g in got))
    # The file_per_proc (N-N) and small_file (1-N) modes, each on a mount of its own.
    for iface, mnt, store, rc in (("plfs-file-per-proc", ws.nn_mnt, ws.nn_store, ws.plfsrc_nn),
                                  ("plfs-small-file", ws.small_mnt, ws.small_store, ws.plfsrc_small)):
        os.makedirs(os.path.join(store, "creates"), exist_ok=True)
        res = run([metab, "create", os.path.join(mnt, "creates"), n],
                  env=dict(os.environ, PLFSRC=rc), timeout=timeout)
        got = result_lines(res.out, "META_RESULT")
        if res.ok and got and got[0].get("iface") == "plfs":
            row = {"section": "meta", "test": "create", "iface": iface, "status": "ok"}
            row.update({k: got[0].get(k) for k in ("count", "seconds", "per_s")})
            rows.append(row)
        else:
            rows.append(_na("create", iface, f"{iface[5:]} mode: " + res.why()))
        log(f"meta create {iface}: {rows[-1].get('per_s') or rows[-1]['note']}")
    for kind in ("strided", "irregular"):
        for w in profile["index_writers"]:
            per = max(1, profile["index_records"] // w)
            got = collect([metab, "index", os.path.join(pdir, f"idx-{w}"), str(w), str(per),
                           str(profile["meta_reps"])] + (["irregular"] if kind == "irregular" else []),
                          "index")
            log(f"meta index {kind:9} writers={w:3}: " + ", ".join(
                f"flat={g.get('flattened')} {float(g.get('seconds', 0)) * 1e3:.1f} ms" for g in got))
    return rows
