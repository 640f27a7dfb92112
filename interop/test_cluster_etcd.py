"""The etcd the cluster tests run on (issue 18): interop/etcd.py starts one or three members on
free loopback ports; with three, losing one keeps quorum and losing two loses it."""

import time
import urllib.error

import pytest

from etcd import EtcdCluster


def test_one_member_stores_and_stops(tmp_path):
    with EtcdCluster(tmp_path / "etcd") as etcd:
        etcd.put("/t/k", "v")
        assert etcd.get("/t/k") == "v"
        assert etcd.get("/t/none") is None
        proc = etcd.procs[0]
    assert proc.poll() is not None, "the member was stopped"


def test_three_members_keep_quorum_without_one_and_lose_it_without_two(tmp_path):
    with EtcdCluster(tmp_path / "etcd", members=3) as etcd:
        etcd.put("/t/k", "1")
        etcd.stop_member(0)
        # If member 0 led, the first writes wait for the other two to elect a leader (a
        # forwarded proposal can be lost with the old leader and time out): retry the same
        # write until the two-member majority takes it.
        put_within(etcd, "/t/k", "2", member=1, seconds=30)
        etcd.stop_member(1)
        with pytest.raises((OSError, urllib.error.URLError)):
            etcd.put("/t/k", "3", member=2, timeout=3)
        etcd.start_member(0)
        etcd.wait_healthy([0, 2])
        # The write without quorum was never acknowledged, but member 2 may have logged the
        # proposal and commits it once quorum is back (CI saw "3"): its outcome is unknown to
        # the client, as etcd documents for a timed-out request. What was acknowledged stays,
        # and the two members agree and take new writes.
        assert etcd.get("/t/k", member=0) in ("2", "3")
        assert etcd.get("/t/k", member=0) == etcd.get("/t/k", member=2)
        etcd.put("/t/k", "4", member=0)
        assert etcd.get("/t/k", member=2) == "4"


def put_within(etcd, key, value, member, seconds):
    deadline = time.time() + seconds
    while True:
        try:
            return etcd.put(key, value, member=member)
        except (OSError, urllib.error.URLError):
            if time.time() > deadline:
                raise


def test_a_missing_etcd_is_named(tmp_path, monkeypatch):
    import etcd as module
    monkeypatch.setattr(module, "ETCD", str(tmp_path / "no-etcd"))
    with pytest.raises(RuntimeError, match="etcd-server"):
        EtcdCluster(tmp_path / "etcd")
