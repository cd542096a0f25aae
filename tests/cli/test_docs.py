"""Layer 1: `gitfs --help`, the README's option table and the manual page gitfs(1) agree.

All three are made from gitfs/optiontable.py; these tests read what a user reads
(the command's output, README.md as committed, the page as `make man` and the
Debian package build it) and fail when one of them misses an option or its default,
or when an option the parser accepts is missing from the table. HACKING.md's code layout,
test layers and make targets are checked against the tree and the Makefile.
"""

import re
import subprocess
import sys

import pytest

from gitfs.options import _FIELDS, _NOT_OPTIONS, ALIASES, WORD_OPTIONS
from gitfs.optiontable import OPTIONS, plain
from gitfs.repo.workdir.ignore import DEFAULT_IGNORED
from helpers import ROOT

README = ROOT / "README.md"


@pytest.fixture(scope="module")
def help_output() -> str:
    result = subprocess.run([sys.executable, "-m", "gitfs", "--help"], capture_output=True, text=True, check=True)
    return result.stdout


def help_entry(text: str, name: str) -> str:
    """The lines of one option in --help, joined (from its name to the next option)."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if re.match(rf"  {re.escape(name)}(=|\s|$)", line):
            entry = [line]
            for following in lines[index + 1:]:
                if not following.startswith(" " * 26):
                    break
                entry.append(following)
            return " ".join(" ".join(entry).split())
    raise AssertionError(f"{name} is not in gitfs --help")


def readme_rows() -> dict[str, str]:
    rows = {}
    for line in README.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\| `([a-z_]+)`", line)
        if match:
            rows.setdefault(match.group(1), line)
    return rows


@pytest.fixture(scope="module")
def manual_page(tmp_path_factory) -> str:
    """The page rendered by man(1), as a user reads it."""
    page = tmp_path_factory.mktemp("man") / "gitfs.1"
    subprocess.run([sys.executable, "-m", "gitfs.manpage", "--output", str(page)], check=True)
    result = subprocess.run(["man", "-l", str(page)], capture_output=True, text=True,
                            env={"MANWIDTH": "200", "LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"})
    if result.returncode != 0:
        pytest.fail(f"man -l failed: {result.stderr}")
    return result.stdout


def man_entry(text: str, name: str) -> str:
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if re.match(rf"\s+{re.escape(name)}(=|\s|$)", line):
            return " ".join(" ".join(lines[index:index + 4]).split())
    raise AssertionError(f"{name} is not in the manual page")


def test_every_option_the_parser_accepts_is_in_the_table():
    accepted = set(_FIELDS) - _NOT_OPTIONS | set(WORD_OPTIONS)
    documented = {doc.name for doc in OPTIONS}
    assert accepted == documented
    assert {doc.alias: doc.name for doc in OPTIONS if doc.alias} == ALIASES


@pytest.mark.parametrize("doc", OPTIONS, ids=[doc.name for doc in OPTIONS])
def test_option_and_default_in_help_readme_and_manual_page(doc, help_output, manual_page):
    default = " ".join(plain(doc.default).split())
    entry = help_entry(help_output, doc.name)
    assert f"(default: {default})" in entry, entry
    if doc.alias:
        assert f"alias {doc.alias}" in entry

    row = readme_rows().get(doc.name)
    assert row is not None, f"{doc.name} is not in README's option table"
    assert f"| {doc.default} |" in row, row

    page = man_entry(manual_page, doc.name)
    assert f"Default: {default}." in page, page


def test_readme_table_is_the_generated_one():
    """`make man` rewrites the table from the option table: the committed README must match."""
    from gitfs.manpage import README_BEGIN, README_END
    from gitfs.optiontable import readme_table

    text = README.read_text(encoding="utf-8")
    table = text[text.index(README_BEGIN) + len(README_BEGIN):text.index(README_END)].strip()
    assert table == readme_table().strip(), "README's option table is stale: run make man"


def test_readme_prints_the_default_ignore_rules_as_the_code_has_them():
    text = README.read_text(encoding="utf-8")
    rows = [line.strip() for line in text.splitlines() if re.match(r"\s*\| `[^`]+` \| .* \| (yes)? \|$", line)]
    expected = [f"| `{pattern}` | {writer} | {'yes' if tested else ''} |"
                for pattern, writer, tested in DEFAULT_IGNORED]
    assert rows == expected
    assert "sync-exclude.lst" in text  # the anchor list


HACKING = ROOT / "HACKING.md"


def hacking_section(title: str) -> str:
    text = HACKING.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def test_hacking_layout_names_every_module_package_and_test_layer():
    """HACKING.md's code layout names every top-level module and package of gitfs/, every
    package of gitfs/repo, every layer of tests/, and no .py file that does not exist."""
    section = hacking_section("Layout of the code")
    block = section[section.index("```\n") + 4:section.rindex("```")]
    names = set(re.findall(r"[\w/]*?(\w+\.py)\b", block))
    packages = set(re.findall(r"gitfs/(\w+)/", block))
    modules = {path.name for path in (ROOT / "gitfs").glob("*.py")} - {"__init__.py", "__main__.py"}
    assert sorted(modules - names) == [], "modules missing from HACKING.md's layout"
    subpackages = {path.parent.name for path in (ROOT / "gitfs").glob("*/__init__.py")}
    assert sorted(subpackages - packages) == [], "packages missing from HACKING.md's layout"
    core_packages = {path.parent.name for path in (ROOT / "gitfs" / "repo").glob("*/__init__.py")}
    assert sorted(name for name in core_packages if f"  {name}/ " not in block) == [], \
        "packages of gitfs/repo missing from HACKING.md's layout"
    every_file = {path.name for folder in ("gitfs", "tests", "bench") for path in (ROOT / folder).rglob("*.py")}
    assert sorted(names - every_file) == [], "HACKING.md's layout names files that do not exist"
    layers = {path.name for path in (ROOT / "tests").iterdir() if path.is_dir() and path.name != "__pycache__"}
    named_layers = set(re.findall(r"`tests/(\w+)`", hacking_section("Tests")))
    assert named_layers == layers, "HACKING.md's test layers differ from the folders of tests/"


def test_hacking_lists_the_make_targets():
    """Every target of the Makefile's .PHONY line (but its helpers) is in HACKING.md's table, and
    every target there is in the Makefile."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    phony = set(re.search(r"^\.PHONY:(.*)$", makefile, re.M).group(1).split()) - {"deps", "lint-tools"}
    listed = set(re.findall(r"^\| `make ([\w-]+)`", hacking_section("Make targets"), re.M))
    assert listed == phony


def readme_section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def test_readme_sums_up_performance_and_links_the_bench_for_method_and_figures():
    """Users get a short table; the method and the figures live with the bench, whose
    README says what each of its sections (bench/run.py --sections) measures."""
    section = readme_section("Performance and kernel caching")
    assert "(bench/README.md)" in section
    table = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    assert 3 <= len(table) <= 10, "the what-to-expect table"
    assert len(section.splitlines()) < 45, "figures belong in bench/README.md"
    bench = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    assert "## Method" in bench and "## Figures" in bench
    sections = re.search(r'"--sections", default="([a-z,]+)"', (ROOT / "bench" / "run.py").read_text()).group(1)
    for name in sections.split(","):
        assert f"`{name}`" in bench or f" {name} " in bench, f"bench/README.md does not say what {name} measures"
