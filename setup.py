"""Packaging for GitFS.

Requirements are loose lower bounds, never `==` pins: the original gitfs pinned exact
versions, which conflicted with the versions distributions package, so it would not
install beside them. The `lint` extra is the exception: it pins the linters' minor
versions, so that `make lint` gives the same verdict on every machine.
"""

import os
import re

from setuptools import find_packages, setup

HERE = os.path.abspath(os.path.dirname(__file__))


def read(*parts):
    with open(os.path.join(HERE, *parts), encoding="utf-8") as handle:
        return handle.read()


def version():
    # Read, don't import: importing gitfs would need its dependencies at build time.
    match = re.search(r'^__version__\s*=\s*["\']([^"\']+)["\']', read("gitfs", "__init__.py"), re.M)
    if not match:
        raise RuntimeError("cannot find __version__ in gitfs/__init__.py")
    return match.group(1)


def long_description():
    path = os.path.join(HERE, "README.md")
    return read("README.md") if os.path.exists(path) else ""


setup(
    name="gitfs",
    version=version(),
    description="FUSE filesystem that mounts a Git remote: edit the branch, browse every commit",
    long_description=long_description(),
    long_description_content_type="text/markdown",
    author="GitFS developers",
    author_email="gitfs@example.org",
    license="Apache-2.0",
    packages=find_packages(exclude=["tests", "tests.*"]),
    include_package_data=True,
    python_requires=">=3.9",
    install_requires=[
        "mfusepy>=3.0",  # maintained ctypes binding with libfuse 3 support (fusepy is FUSE-2 only)
        "pygit2>=1.11",  # Debian 12 has 1.11 (gitfs/repo/compat.py); every git step goes through it
    ],
    extras_require={
        # prometheus_client: its parser reads MOUNTPOINT/.gitfs/metrics in the tests, as Prometheus would.
        "test": ["pytest>=7", "prometheus_client>=0.8"],
        # Minor versions pinned: new ruff and mypy releases add and change checks.
        "lint": ["ruff>=0.17,<0.18", "mypy>=2.4,<2.5"],
    },
    entry_points={
        "console_scripts": ["gitfs = gitfs.cli:main"],
    },
    classifiers=[
        "Development Status :: 5 - Production/Stable",
        "Environment :: Console",
        "Intended Audience :: Developers",
        "Intended Audience :: System Administrators",
        "License :: OSI Approved :: Apache Software License",
        "Operating System :: POSIX :: Linux",
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3 :: Only",
        "Programming Language :: Python :: 3.9",
        "Programming Language :: Python :: 3.10",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.12",
        "Programming Language :: Python :: 3.13",
        "Topic :: Software Development :: Version Control :: Git",
        "Topic :: System :: Filesystems",
    ],
)
