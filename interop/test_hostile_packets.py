"""Issue 8, check 2: the crafted-packet suite. Every case of `hostile_cases` runs against a live
smb3d over TCP and must give the exact answer in its row (status, or DROP when the connection
is closed without one); after each case the server is still running, a second well-behaved
client is served, and the canary outside the share is untouched.

Cases where smb3d does not give the right answer yet are strict xfails naming the bug: they
start failing (XPASS) as soon as the server is fixed, so the mark must then go."""

import pytest

import smb2raw
from hostile_cases import CASES, canary_intact


class ServerHarmed(Exception):
    """The server stopped serving: never an expected failure."""


def params():
    for case in CASES:
        marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=case.bug)] if case.bug else []
        yield pytest.param(case, id=case.name, marks=marks)


@pytest.mark.parametrize("case", list(params()))
def test_crafted_packet(hostile_env, case):
    server, env = hostile_env
    try:
        outcome = case.run(env)
    except smb2raw.Dropped:
        outcome = smb2raw.DROP
    if not server.alive():
        raise ServerHarmed("smb3d exited:\n" + server.log_tail())
    try:
        smb2raw.served(env.target)
    except Exception as e:
        raise ServerHarmed("a well-behaved client is not served after %s: %r" % (case.name, e))
    if not canary_intact(env):
        raise ServerHarmed("the canary outside the share was changed")
    assert outcome == case.expected, "%s (%s)" % (case.name, case.source)


def test_suite_has_at_least_60_cases():
    assert len(CASES) >= 60
