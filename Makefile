# GitFS developer tasks. CI runs `make test` and `make lint` (see .ci/run, which installs dependencies first).

PYTHON ?= python3
# Extra pytest arguments, e.g. `make test PYTEST_ARGS="-k history -x"`.
PYTEST_ARGS ?=
# Extra pip arguments, e.g. `make install PIP_ARGS=--break-system-packages` on Debian's python3.
PIP_ARGS ?=
# No cache provider: no .pytest_cache left in the tree (CI runs from a fresh, read-mostly clone).
PYTEST = $(PYTHON) -m pytest -q -p no:cacheprovider

.PHONY: deps install test test-stress bench demo lint typecheck man deb clean

install:
	$(PYTHON) -m pip install $(PIP_ARGS) -e '.[test]'

# The README's `make test` sets up a fresh Debian machine too (fuse3, git, servers the tests
# start, Python packages): .ci/install-deps is idempotent and quick once done. .ci/run has
# already run it and says so with GITFS_DEPS_READY=1.
deps:
	@[ "$${GITFS_DEPS_READY:-0}" = 1 ] || bash .ci/install-deps

test: deps
	$(PYTEST) $(PYTEST_ARGS) tests

test-stress: deps
	$(PYTEST) -m stress $(PYTEST_ARGS) tests

# Both histories (long: 17,000 commits over 4,250 days; short: over ~730 days), the file
# workloads beside an rclone mount, tar. BENCH_ARGS="--quick" for a short run;
# BENCH_ARGS="--scale 17000,170000" for mount, listing and RSS at two sizes (slow).
BENCH_ARGS ?=
bench:
	$(PYTHON) bench/run.py $(BENCH_ARGS)

demo:
	bash demo/demo.sh

# ruff (ruff.toml) on gitfs, tests and bench, then mypy (mypy.ini) on gitfs. Both at the versions
# setup.py's `lint` extra pins, which .ci/install-deps installs (or: pip install -e '.[lint]');
# ruff.toml's required-version refuses any other ruff. No caches are left in the tree.
lint: deps
	$(PYTHON) -m ruff check --no-cache gitfs tests bench
	$(MAKE) --no-print-directory typecheck GITFS_DEPS_READY=1

typecheck: deps
	$(PYTHON) -m mypy --version
	$(PYTHON) -m mypy --cache-dir=/dev/null

# The manual page (build/gitfs.1) and the README's option table, both from gitfs/optiontable.py
# (which gitfs --help prints too). The Debian package builds its own copy of the page.
man:
	mkdir -p build
	$(PYTHON) -m gitfs.manpage --output build/gitfs.1 --readme README.md

# Binary-only build of the Debian package; the .deb lands in the parent directory.
# A clean PATH keeps pybuild on Debian's python3, not a pyenv/venv one found first.
deb:
	PATH=/usr/sbin:/usr/bin:/sbin:/bin dpkg-buildpackage -us -uc -b

# Keeps *.egg-info: the editable install (make install, .ci/run) needs it.
clean:
	rm -rf build dist .pytest_cache .ruff_cache .mypy_cache .pybuild
	find . -path ./.git -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
	rm -rf debian/gitfs debian/.debhelper debian/files debian/*.substvars \
		debian/*.debhelper.log debian/debhelper-build-stamp
