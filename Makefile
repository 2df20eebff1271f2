# plfs: build, demo, test, check, install, bench. See README.md.
PREFIX ?= /usr/local
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
CARGO ?= cargo
PYTHON ?= python3
RELEASE_DIR := target/release

.PHONY: all build demo test test-rust test-battery test-python test-glusterfs test-moosefs test-cephfs test-cephfs-ci check fmt install uninstall bench deps clean

all: build

build:
	$(CARGO) build --release --workspace

deps:
	scripts/install-deps.sh

# The main job: several processes write one N-1 file through PLFS on the zero-config default,
# a different number of processes read it back and verify it, and the container is shown.
demo: build
	$(RELEASE_DIR)/plfs demo

# Every test: unit, integration, differential, multi-process, C API, real-tool battery, MPI.
test: deps build
	$(CARGO) test --release --workspace
	$(PYTHON) -m pytest tests/battery -q -p no:cacheprovider
	$(MAKE) test-python
	$(MAKE) test-glusterfs
	$(MAKE) test-moosefs
	$(MAKE) test-cephfs-ci

# The concurrency, crash, repair and real-tool tests again with the backends on a live 3-brick
# GlusterFS volume started (and stopped) on this machine: needs root, /dev/fuse, netns. Then a
# volume of its own whose bricks fill up: a write the volume accepted and could not keep is
# reported at close through ldplfs, as for a plain file (loop devices too).
test-glusterfs: build
	scripts/test-glusterfs.sh
	scripts/test-full-brick.sh

# The multi-process and repair tests and plfs advise's check again on a live MooseFS
# (master and 3 chunkservers) started (and stopped) on this machine: needs root, /dev/fuse, netns.
test-moosefs: build
	scripts/test-moosefs.sh

# The same again on a live CephFS (one mon, one mgr, two memstore OSDs, one MDS, two ceph-fuse
# clients, all on 127.0.0.1) started (and stopped) on this machine, with the cross-client tests
# (tests/battery/test_cross_client.py): needs root and /dev/fuse.
test-cephfs: build
	scripts/test-cephfs.sh

# The part of test-cephfs that only two clients of one file system can show (the core's
# multi-process tests with fresh readers on the other client, and the battery's cross-client,
# append and MPI-IO tests): part of make test, about 7 minutes here.
test-cephfs-ci: build
	scripts/test-cephfs.sh --ci

test-rust:
	$(CARGO) test --release --workspace

test-battery: build
	$(PYTHON) -m pytest tests/battery -q -p no:cacheprovider

# The Python package (python/): built by pip (maturin from PyPI) into a venv under target/,
# with its `test` extra (pytest, numpy, and fsspec, pandas and pyarrow for the plfs:// tests,
# which fail when those are missing), then its tests, the packaging checks and the example.
PYVENV := target/pyvenv
test-python: build
	$(CARGO) clippy --manifest-path python/Cargo.toml -- -D warnings
	$(PYTHON) -m venv $(PYVENV)
	$(PYVENV)/bin/pip install -q './python[test]'
	PLFS_BIN=$(CURDIR)/$(RELEASE_DIR)/plfs $(PYVENV)/bin/python -m pytest python/tests packaging -q -p no:cacheprovider

# fuzz/ is a workspace of its own: its targets are linted on the stable toolchain (clippy only
# checks them; libfuzzer-sys's build script compiles libFuzzer with g++, from build-essential,
# which scripts/install-deps.sh installs). Running them needs nightly and cargo-fuzz.
check:
	$(CARGO) fmt --all -- --check
	$(CARGO) fmt --manifest-path python/Cargo.toml -- --check
	$(CARGO) fmt --manifest-path fuzz/Cargo.toml -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings
	$(PYTHON) scripts/check-architecture.py

fmt:
	$(CARGO) fmt --all
	$(CARGO) fmt --manifest-path fuzz/Cargo.toml

install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 755 $(RELEASE_DIR)/plfs $(DESTDIR)$(PREFIX)/bin/plfs
	install -m 755 $(RELEASE_DIR)/libplfs.so $(DESTDIR)$(PREFIX)/lib/libplfs.so
	install -m 644 $(RELEASE_DIR)/libplfs.a $(DESTDIR)$(PREFIX)/lib/libplfs.a
	install -m 755 $(RELEASE_DIR)/libldplfs.so $(DESTDIR)$(PREFIX)/lib/libldplfs.so
	install -m 644 include/plfs.h $(DESTDIR)$(PREFIX)/include/plfs.h
	sed -e 's|@PREFIX@|$(PREFIX)|g' crates/plfs-capi/plfs.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/plfs.pc
	# An environment module (Environment Modules, Lmod): `module use $(PREFIX)/share/modulefiles`.
	install -d $(DESTDIR)$(PREFIX)/share/modulefiles
	sed -e 's|@PREFIX@|$(PREFIX)|g' packaging/modules/plfs.in > $(DESTDIR)$(PREFIX)/share/modulefiles/plfs
	# Man pages (plfs(1), plfs-COMMAND(1), plfsrc(5), ldplfs(8)) and shell completions, generated
	# from the binary's own argument definitions.
	$(RELEASE_DIR)/plfs generate man --tree $(DESTDIR)$(MANDIR) >/dev/null
	$(RELEASE_DIR)/plfs generate completions bash $(DESTDIR)$(BASHCOMPDIR) >/dev/null
	$(RELEASE_DIR)/plfs generate completions zsh $(DESTDIR)$(ZSHCOMPDIR) >/dev/null
	$(RELEASE_DIR)/plfs generate completions fish $(DESTDIR)$(FISHCOMPDIR) >/dev/null

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/plfs $(DESTDIR)$(PREFIX)/lib/libplfs.so $(DESTDIR)$(PREFIX)/lib/libplfs.a \
	      $(DESTDIR)$(PREFIX)/lib/libldplfs.so $(DESTDIR)$(PREFIX)/include/plfs.h $(DESTDIR)$(PREFIX)/lib/pkgconfig/plfs.pc \
	      $(DESTDIR)$(PREFIX)/share/modulefiles/plfs
	rm -f $(DESTDIR)$(MANDIR)/man1/plfs.1 $(DESTDIR)$(MANDIR)/man1/plfs-*.1 $(DESTDIR)$(MANDIR)/man5/plfsrc.5 \
	      $(DESTDIR)$(MANDIR)/man8/ldplfs.8 $(DESTDIR)$(BASHCOMPDIR)/plfs \
	      $(DESTDIR)$(ZSHCOMPDIR)/_plfs $(DESTDIR)$(FISHCOMPDIR)/plfs.fish

# The benchmark suite (bench/, docs/performance.md): CSVs, figures and summary.md in
# bench/results/latest/. `bench` takes under 10 minutes on 2 cores; `bench-full` longer.
bench: build
	bench/install-deps.sh
	$(MAKE) -C bench quick

.PHONY: bench-full bench-glusterfs bench-moosefs bench-cephfs
bench-full: build
	bench/install-deps.sh
	$(MAKE) -C bench full

# An N-1 file at 1 to 64 processes (bench/scale.py): backend calls per writer and per restart
# reader, and time ratios, plfs against a plain shared file; SCALE_DIR=DIR runs it there (a
# GlusterFS or CephFS mount), SCALE_ARGS="--np 16,64,256" for other sizes.
.PHONY: bench-scale
bench-scale: build
	bench/install-deps.sh
	$(MAKE) -C bench scale

# The bandwidth and metadata sections on a live GlusterFS volume (started and stopped here).
bench-glusterfs: build
	bench/install-deps.sh
	$(MAKE) -C bench programs
	scripts/bench-glusterfs.sh --bin $(CURDIR)/target/bench --release $(CURDIR)/$(RELEASE_DIR)

# The same on a live MooseFS (master, 3 chunkservers, two client mounts; started and stopped
# here), with the master's operation counts where GlusterFS has its bricks'.
bench-moosefs: build
	bench/install-deps.sh
	$(MAKE) -C bench programs
	scripts/bench-moosefs.sh --bin $(CURDIR)/target/bench --release $(CURDIR)/$(RELEASE_DIR)

# The same on a live CephFS (mon, mgr, 2 memstore OSDs, MDS, two ceph-fuse clients; started and
# stopped here), with the MDS's request counts and the ranks of the bandwidth protocol split
# between the two clients.
bench-cephfs: build
	bench/install-deps.sh
	$(MAKE) -C bench programs
	scripts/bench-cephfs.sh --bin $(CURDIR)/target/bench --release $(CURDIR)/$(RELEASE_DIR)

clean:
	$(CARGO) clean
