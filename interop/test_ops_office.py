"""Issue 23's check: a realistic office smb.conf (interop/office.py), served by Samba as written
and by smb3d as imported, gives the same answers to the same clients: who may connect from where
and as whom, the modes files get on disk, what is hidden, where deleted files go."""

import pytest

from office import start_office, stop_office
from samba import available as samba_available

pytestmark = pytest.mark.skipif(not samba_available(), reason="needs Debian's smbd")


@pytest.fixture(scope="module")
def office():
    office = start_office()
    yield office
    stop_office(office)


def test_an_office_user_works_in_the_office_share_on_both(office, tmp_path):
    (tmp_path / "memo.txt").write_text("minutes\n")
    for server in office.both:
        code, out = server.smbclient("office", "worker", "lcd %s; put memo.txt; ls" % tmp_path)
        assert code == 0 and "memo.txt" in out, (server.name, out, server.log_tail())
        assert (server.root / "office" / "memo.txt").read_text() == "minutes\n", server.name


def _status(out):
    """The NT status an smbclient failure names, for comparing two servers' answers."""
    import re
    found = re.search(r"NT_STATUS_[A-Z_]+", out)
    return found.group(0) if found else None


def _listed_disks(server, user):
    """The disk shares `smbclient -L` shows `user` on `server`."""
    import subprocess
    creds = "%s%%%s" % (user, server.passwords[user])
    r = subprocess.run(["smbclient", "-L", "//127.0.0.1", "-p", str(server.port), "-U", creds, "-g"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert r.returncode == 0, (server.name, r.stdout, server.log_tail())
    return {line.split("|")[1] for line in r.stdout.splitlines() if line.startswith("Disk|")}


def test_alice_reaches_her_home_and_her_files_land_in_homes_alice_on_both(office, tmp_path):
    import pwd
    (tmp_path / "note.txt").write_text("mine\n")
    alice = pwd.getpwnam("alice")
    for server in office.both:
        code, out = server.smbclient("alice", "alice", "lcd %s; put note.txt; ls" % tmp_path)
        assert code == 0 and "note.txt" in out, (server.name, out, server.log_tail())
        stored = server.root / "homes" / "alice" / "note.txt"
        assert stored.read_text() == "mine\n", server.name
        assert stored.stat().st_uid == alice.pw_uid, server.name


def test_worker_cannot_reach_alices_home_on_both(office):
    answers = {}
    for server in office.both:
        code, out = server.smbclient("alice", "worker", "ls")
        assert code != 0, (server.name, out)
        answers[server.name] = _status(out)
    assert answers["samba"] is not None and answers["smb3d"] == answers["samba"], answers


def test_a_home_is_listed_to_its_owner_and_not_to_others_on_both(office):
    for server in office.both:
        seen_by_alice = _listed_disks(server, "alice")
        seen_by_worker = _listed_disks(server, "worker")
        assert "alice" in seen_by_alice, (server.name, seen_by_alice)
        assert "alice" not in seen_by_worker, (server.name, seen_by_worker)
        # browseable = no hides the template itself.
        assert "homes" not in seen_by_alice | seen_by_worker, server.name
