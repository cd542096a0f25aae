# GitFS developer tasks (HACKING.md). CI runs `make test` and `make lint` (see .ci/run, which
# installs dependencies first).

PYTHON ?= python3
# Extra pytest arguments, e.g. `make test PYTEST_ARGS="-k history -x"` (both runs below get them).
PYTEST_ARGS ?=
# Extra pip arguments, e.g. `make install PIP_ARGS=--break-system-packages` on Debian's python3.
PIP_ARGS ?=
# No cache provider: no .pytest_cache left in the tree (CI runs from a fresh, read-mostly clone).
# A passed test's tmp_path is removed as it ends (tmp_path_retention_policy=failed, pytest 7.3):
# a run leaves gigabytes (clones, mounts' files), which the next run would otherwise remove
# at its start, before its first test.
PYTEST_OPTIONS = -q -p no:cacheprovider -o tmp_path_retention_policy=failed
PYTEST = $(PYTHON) -m pytest $(PYTEST_OPTIONS)

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

# make test runs the suite in two parts, their exit statuses together making its own:
# - in parallel on TEST_WORKERS pytest-xdist workers, every test not marked `serial` (nor
#   `stress`): most tests wait on a mount, a remote or a timer, so more workers than cores
#   pays. --dist load hands each worker the next test as it frees up, so one long file
#   does not hold the end of the run;
# - then, one at a time, the tests marked `serial` (pytest.ini): they change what the whole
#   machine shares (its users, ...), so nothing runs beside them.
# A part that selects no test (PYTEST_ARGS="-k ...") counts as passed, unless neither does.
TEST_WORKERS ?= 6
TEST_DIST ?= load
PARALLEL_TESTS = -n $(TEST_WORKERS) --dist $(TEST_DIST) -m "not stress and not serial" $(PYTEST_ARGS) tests
SERIAL_TESTS = -m "serial and not stress" $(PYTEST_ARGS) tests
# $(call in_two_parts,PYTEST COMMAND): the shell lines that run both parts and exit with their status.
in_two_parts = $(PYTHON) -c 'import xdist' 2>/dev/null || { echo "pytest-xdist is missing: run \
	.ci/install-deps (make test without GITFS_DEPS_READY=1) or pip install -e '.[test]'" >&2; exit 2; }; \
	echo "== the tests not marked serial, on $(TEST_WORKERS) workers (--dist $(TEST_DIST))"; \
	parallel=0; $(1) $(PARALLEL_TESTS) || parallel=$$?; \
	echo "== the tests marked serial, one at a time"; \
	serial=0; $(1) $(SERIAL_TESTS) || serial=$$?; \
	[ $$parallel -ne 5 ] || [ $$serial -eq 5 ] || parallel=0; \
	[ $$serial -ne 5 ] || [ $$parallel -eq 5 ] || serial=0; \
	[ $$parallel -ne 0 ] && exit $$parallel; exit $$serial

test: deps
	@$(call in_two_parts,$(PYTEST))

test-stress: deps
	$(PYTEST) -m stress $(PYTEST_ARGS) tests

# The suite under coverage (.coveragerc), in the same two parts as make test, measured in
# the daemons too: every Python process the tests start, pytest-xdist's workers among them,
# measures itself into build/coverage/ (coverage's subprocess support); the data of all of
# them is combined into one table per module and a total. The exit status is the tests'.
COVERAGE = GITFS_COVERAGE_DATA=$(CURDIR)/build/coverage/data $(PYTHON) -m coverage
coverage: deps
	@$(TOOLS) coverage
	rm -rf build/coverage && mkdir -p build/coverage
	@status=0; ($(call in_two_parts,$(COVERAGE) run -m pytest $(PYTEST_OPTIONS))) || status=$$?; \
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
