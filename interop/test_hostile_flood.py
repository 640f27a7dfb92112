"""Issue 8, check 3: a connection flood. 2,000 connections are opened and abandoned half-way:
a third say nothing, a third stop after NEGOTIATE, a third after the first SESSION_SETUP leg.
A well-behaved client must be served throughout, and once the server's negotiate and
session-setup timeouts have passed it must have closed every abandoned connection and its
memory must be back within 50 MiB of its idle value.

The server has no such timeouts yet, so the abandoned connections stay open for ever: the test
is a strict xfail until they exist (security.md L17-L19 name the limits and their defaults)."""

import resource
import time

import pytest

import smb2raw as s
from conftest import start_smb3d, stop
from hostile_cases import SERVED

CONNECTIONS = 2000
# The longest timeout the server is expected to apply to a connection that never completes a
# logon (security.md L18: 45 s from accept to the first valid session), with a margin.
TIMEOUT_WAIT = 50.0
MIB = 1024


@pytest.fixture
def flood_server(tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = 2 * CONNECTIONS + 512
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip("needs %d file descriptors, the hard limit is %d" % (needed, hard))
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, needed), hard))
    server = start_smb3d(tmp_path)
    (server.share_dir / "served.txt").write_bytes(SERVED)
    yield server
    stop(server)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def abandon(target, stage):
    """A connection left at `stage`: 0 nothing sent, 1 after NEGOTIATE, 2 after the first
    SESSION_SETUP leg."""
    c = s.Smb2(target, timeout=10)
    if stage >= 1:
        c.negotiate((0x0202, 0x0210, 0x0300, 0x0302, 0x0311))
    if stage >= 2:
        c.session_setup(s.spnego_init(s.ntlm_negotiate()))
    return c


def closed_by_server(c):
    c.sock.settimeout(0)
    try:
        return c.sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="no negotiate, session-setup or idle timeouts: abandoned connections are never closed")
def test_abandoned_connections_are_reclaimed(flood_server):
    target = s.Target(flood_server.port, flood_server.user, flood_server.password)
    pid = flood_server.proc.pid
    assert s.served(target)
    idle = s.rss_kib(pid)
    abandoned = []
    try:
        for i in range(CONNECTIONS):
            abandoned.append(abandon(target, i % 3))
            if i % 250 == 249:
                assert s.served(target), "not served with %d abandoned connections" % (i + 1)
        peak = s.rss_kib(pid)
        deadline = time.time() + TIMEOUT_WAIT
        while time.time() < deadline:
            assert flood_server.alive(), flood_server.log_tail()
            assert s.served(target)
            still_open = sum(1 for c in abandoned if not closed_by_server(c))
            rss = s.rss_kib(pid)
            if still_open == 0 and rss - idle <= 50 * MIB:
                break
            time.sleep(2)
        still_open = sum(1 for c in abandoned if not closed_by_server(c))
        rss = s.rss_kib(pid)
        print("idle %d KiB, peak %d KiB, after %d KiB, %d connections still open" % (idle, peak, rss, still_open))
        assert still_open == 0, "%d of %d abandoned connections still open after %.0f s" % (
            still_open, CONNECTIONS, TIMEOUT_WAIT)
        assert rss - idle <= 50 * MIB, "RSS %d KiB, idle %d KiB" % (rss, idle)
    finally:
        for c in abandoned:
            c.close()
    assert flood_server.alive()
    assert s.served(target)


def test_flood_leaves_server_serving(flood_server):
    """What holds today: the flood neither stops the server nor starves a normal client, and
    memory stays bounded while the connections are held."""
    target = s.Target(flood_server.port, flood_server.user, flood_server.password)
    pid = flood_server.proc.pid
    assert s.served(target)
    idle = s.rss_kib(pid)
    abandoned = []
    try:
        for i in range(CONNECTIONS):
            abandoned.append(abandon(target, i % 3))
            if i % 250 == 249:
                assert s.served(target), "not served with %d abandoned connections" % (i + 1)
        peak = s.rss_kib(pid)
        assert peak - idle <= 200 * MIB, "2,000 half-open connections cost %d KiB" % (peak - idle)
    finally:
        for c in abandoned:
            c.close()
    time.sleep(1)
    assert flood_server.alive(), flood_server.log_tail()
    assert s.served(target)
