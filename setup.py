"""For tools that still run `python3 setup.py ...`: everything is in pyproject.toml."""

from setuptools import setup

setup()
