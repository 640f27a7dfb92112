"""The test domain controller itself (interop/addc.py): Samba's AD DC provisions and runs on
127.0.0.50, a domain user gets a ticket, and the member server's join gives a keytab whose AES
keys the DC's service tickets for cifs/<host> are encrypted in, carrying a PAC."""

import re

import pytest

from addc import ADDRESS, HOST, REALM, DomainController, available

pytestmark = pytest.mark.skipif(not available(), reason="Samba's AD DC (samba-ad-dc) is not installed "
                                "or 127.0.0.50 cannot be added to lo (scripts/test-all installs it)")


@pytest.fixture(scope="module")
def dc(tmp_path_factory):
    dc = DomainController(tmp_path_factory.mktemp("addc"))
    yield dc
    dc.stop()


def test_the_dc_issues_aes_service_tickets_for_the_joined_member(dc, tmp_path):
    print("provision %.1f s, start %.1f s" % (dc.provision_seconds, dc.start_seconds))
    sid = dc.add_user("erin", "Erin-Pw-1234", groups=["Staff"])
    assert sid.startswith(dc.domain_sid + "-"), (sid, dc.domain_sid)
    keytab = dc.join(tmp_path / "member.keytab")
    keys = dc.run("klist", "-kte", str(keytab)).stdout
    assert "cifs/%s@%s" % (HOST, REALM) in keys and "aes256-cts-hmac-sha1-96" in keys, keys
    assert "arcfour" not in keys, keys
    env = dc.kinit("erin", "Erin-Pw-1234", tmp_path / "erin.cc")
    dc.run("kvno", "cifs/" + HOST, env=env)
    tickets = dc.run("klist", "-e", env=env).stdout
    service = [l for l in tickets.splitlines() if "cifs/" in l or "Etype" in l]
    assert re.search(r"cifs/%s@%s" % (re.escape(HOST), REALM), tickets), tickets
    assert "aes256-cts-hmac-sha1-96, aes256-cts-hmac-sha1-96" in tickets.split("cifs/")[1], service
    # Nothing but 127.0.0.50 serves the DC's KDC.
    listening = dc.run("ss", "-Hltn", "sport = :88").stdout
    assert listening.strip() and all(ADDRESS + ":88" in l for l in listening.splitlines()), listening
