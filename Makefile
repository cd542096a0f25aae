# GitFS developer tasks (HACKING.md). CI runs `make test` and `make lint` (see .ci/run, which
# installs dependencies first).

PYTHON ?= python3
# Extra pytest arguments, e.g. `make test PYTEST_ARGS="-k history -x"`.
PYTEST_ARGS ?=
# Extra pip arguments, e.g. `make install PIP_ARGS=--break-system-packages` on Debian's python3.
PIP_ARGS ?=
# No cache provider: no .pytest_cache left in the tree (CI runs from a fresh, read-mostly clone).
PYTEST = $(PYTHON) -m pytest -q -p no:cacheprovider

.PHONY: deps install test test-stress coverage bench demo lint typecheck lint-tools man deb clean

install:
	$(PYTHON) -m pip install $(PIP_ARGS) -e '.[test]'

# Python tools only, never a system package: the extras' requirements that are missing
# (.ci/python-tools; pip gets PIP_ARGS). GITFS_DEPS_READY=1 (.ci/run) skips them too.
TOOLS = [ "$${GITFS_DEPS_READY:-0}" = 1 ] || PIP_ARGS='$(PIP_ARGS)' $(PYTHON) .ci/python-tools

# The README's `make test` sets up a fresh Debian machine too (fuse3, git, servers the tests
# start, Python packages): .ci/install-deps is idempotent and quick once done. .ci/run has
# already run it and says so with GITFS_DEPS_READY=1.
deps:
	@[ "$${GITFS_DEPS_READY:-0}" = 1 ] || bash .ci/install-deps

test: deps
	$(PYTEST) $(PYTEST_ARGS) tests

test-stress: deps
	$(PYTEST) -m stress $(PYTEST_ARGS) tests

# The suite under coverage (.coveragerc), measured in the daemons too: every Python process
# the tests start measures itself into build/coverage/ (coverage's subprocess support);
# the data of all of them is combined into one table per module and a total. The exit
# status is the tests'.
COVERAGE = GITFS_COVERAGE_DATA=$(CURDIR)/build/coverage/data $(PYTHON) -m coverage
coverage: deps
	@$(TOOLS) coverage
	rm -rf build/coverage && mkdir -p build/coverage
	@status=0; $(COVERAGE) run -m pytest -q -p no:cacheprovider $(PYTEST_ARGS) tests || status=$$?; \
	$(COVERAGE) combine -q && $(COVERAGE) report && \
	echo "coverage total: $$($(COVERAGE) report --format=total) %" && exit $$status

# Both histories (long: 17,000 commits over 4,250 days; short: over ~730 days), the file
# workloads beside an rclone mount, tar. BENCH_ARGS="--quick" for a short run;
# BENCH_ARGS="--scale 17000,170000" for mount, listing and RSS at two sizes (slow).
BENCH_ARGS ?=
bench:
	$(PYTHON) bench/run.py $(BENCH_ARGS)

demo:
	bash demo/demo.sh

# ruff (ruff.toml) on gitfs, tests and bench, then mypy (mypy.ini) on gitfs. Both at the versions
# pyproject.toml's `lint` extra pins, which lint-tools installs with pip (as .ci/install-deps
# does); ruff.toml's required-version refuses any other ruff. No caches are left in the tree.
lint: lint-tools
	$(PYTHON) -m ruff check --no-cache gitfs tests bench .ci/python-tools
	$(MAKE) --no-print-directory typecheck GITFS_DEPS_READY=1

typecheck: lint-tools
	$(PYTHON) -m mypy --version
	$(PYTHON) -m mypy --cache-dir=/dev/null

lint-tools:
	@$(TOOLS) lint

# The manual page (build/gitfs.1) and the README's option table, both from gitfs/optiontable.py
# (which gitfs --help prints too). The Debian package builds its own copy of the page.
man:
	mkdir -p build
	$(PYTHON) -m gitfs.manpage --output build/gitfs.1 --readme README.md

# Binary-only build of the Debian package; the .deb lands in the parent directory.
# A clean PATH keeps pybuild on Debian's python3, not a pyenv/venv one found first.
deb:
	PATH=/usr/sbin:/usr/bin:/sbin:/bin dpkg-buildpackage -us -uc -b

# Keeps *.egg-info: the editable install (make install, .ci/run) may need it.
clean:
	rm -rf build dist .pytest_cache .ruff_cache .mypy_cache .pybuild
	find . -path ./.git -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
	rm -rf debian/gitfs debian/.debhelper debian/files debian/*.substvars \
		debian/*.debhelper.log debian/debhelper-build-stamp
