"""Layer 2: the sync rig (helpers.make_rig) on the `remote` fixture, for every test here."""

from __future__ import annotations

import pytest

from helpers import Rig, make_rig


@pytest.fixture
def rig(remote, tmp_path) -> Rig:
    return make_rig(remote, tmp_path / "mine")
