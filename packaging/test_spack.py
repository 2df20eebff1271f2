"""The Spack recipe parses, runs its directives against a stand-in for `spack.package` (Spack
itself is not installed here), and its version matches Cargo's [workspace.package] version."""

import ast
import importlib.util
import re
import sys
import tomllib
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "packaging" / "spack" / "plfs" / "package.py"


def cargo_version():
    with open(REPO / "Cargo.toml", "rb") as f:
        return tomllib.load(f)["workspace"]["package"]["version"]


def test_recipe_parses_and_its_version_is_cargos():
    tree = ast.parse(RECIPE.read_text(), filename=str(RECIPE))
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert [c.name for c in classes] == ["Plfs"]
    versions = [
        c.args[0].value
        for c in ast.walk(classes[0])
        if isinstance(c, ast.Call) and getattr(c.func, "id", None) == "version"
    ]
    numeric = [v for v in versions if re.fullmatch(r"\d+(\.\d+)*", v)]
    assert numeric, versions
    newest = max(numeric, key=lambda v: tuple(int(x) for x in v.split(".")))
    assert newest == cargo_version(), f"package.py {newest} != Cargo.toml {cargo_version()}"


def load_with_stand_in():
    """Executes package.py with a recording stand-in for the spack.package module."""
    rec = {"version": [], "variant": [], "depends_on": [], "license": []}
    fake = types.ModuleType("spack.package")

    def directive(name):
        def f(*args, **kw):
            rec[name].append((args, kw))
        return f

    for name in rec:
        setattr(fake, name, directive(name))

    class MakefilePackage:
        pass

    fake.MakefilePackage = MakefilePackage
    fake.run_after = lambda *a, **k: (lambda fn: fn)
    fake.on_package_attributes = lambda **k: (lambda fn: fn)
    fake.join_path = lambda *p: "/".join(p)
    fake.__all__ = [n for n in vars(fake) if not n.startswith("_")]
    spack = types.ModuleType("spack")
    spack.package = fake
    saved = {k: sys.modules.get(k) for k in ("spack", "spack.package")}
    sys.modules["spack"], sys.modules["spack.package"] = spack, fake
    try:
        spec = importlib.util.spec_from_file_location("plfs_spack_recipe", RECIPE)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return mod, rec


def test_recipe_directives():
    mod, rec = load_with_stand_in()
    assert issubclass(mod.Plfs, object) and mod.Plfs.build_targets == ["build"]
    assert ("0.1.0",) in [a for a, _ in rec["version"]] or cargo_version() in [a[0] for a, _ in rec["version"]]
    variants = {a[0]: kw for a, kw in rec["variant"]}
    assert set(variants) == {"fuse", "mpi"}
    deps = [(a[0], kw.get("when")) for a, kw in rec["depends_on"]]
    assert any(d.startswith("rust") for d, _ in deps), deps
    assert any(d.startswith("libfuse@3") and w == "+fuse" for d, w in deps), deps
    assert ("mpi", "+mpi") in deps, deps
    # The recipe installs with the Makefile's install target and PREFIX.
    src = RECIPE.read_text()
    assert 'make("install", f"PREFIX={prefix}")' in src
    mk = (REPO / "Makefile").read_text()
    assert re.search(r"^install:", mk, re.M) and "$(DESTDIR)$(PREFIX)" in mk
    # plfs.pc stays.
    assert (REPO / "crates" / "plfs-capi" / "plfs.pc.in").exists()
