"""``sglang-seaweedfs``'s one piece of logic: each storage location is its own key prefix.

SeaweedFS scopes every object by ``prefix``; the adapter derives it from the storage folder, so two
locations never read each other's objects and a restart on one location (in any process) finds its
own. The backend itself is certified by ``--backend=sglang-seaweedfs`` against moto on loopback.
"""

from __future__ import annotations

from pathlib import Path

from conformance.upstream.seaweedfs import location_prefix


def test_each_location_has_its_own_prefix_and_keeps_it(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    assert location_prefix(one) == location_prefix(tmp_path / "x" / ".." / "one") != location_prefix(two)
    assert "/" not in location_prefix(one)  # one path segment: SeaweedFS joins its scope with "/"
