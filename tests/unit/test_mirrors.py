"""ENVCHECK_CHANNEL_MIRRORS parsed, and a package URL moved onto its channel's mirror."""

from __future__ import annotations

import pytest

from envcheck.errors import BadInput
from envcheck.mirrors import VARIABLE, mirrored, mirrors

CF = "https://conda.anaconda.org/conda-forge"


def test_pairs_map_channels_to_mirrors():
    table = mirrors({VARIABLE: f"{CF}/=https://m.example/cf/ https://a.example/x=file:///srv/x"})
    assert table == {CF: "https://m.example/cf", "https://a.example/x": "file:///srv/x"}
    assert mirrors({}) == {}


def test_a_url_under_a_mapped_channel_moves_and_others_stay():
    table = {CF: "https://m.example/cf", f"{CF}/label/dev": "https://m.example/dev"}
    assert mirrored(f"{CF}/noarch/dask-1.conda", table) == "https://m.example/cf/noarch/dask-1.conda"
    assert mirrored(f"{CF}/label/dev/noarch/a.conda", table) == "https://m.example/dev/noarch/a.conda"
    assert mirrored(f"{CF}-other/noarch/a.conda", table) == f"{CF}-other/noarch/a.conda"


@pytest.mark.parametrize("value", ["conda-forge", f"{CF}=", f"{CF}=mirror.example/cf"])
def test_a_bad_pair_is_refused(value):
    with pytest.raises(BadInput, match="CHANNEL_URL=MIRROR_URL"):
        mirrors({VARIABLE: value})
