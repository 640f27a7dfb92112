"""smb3d as a member of an Active Directory domain (docs/auth.md): Samba's AD DC on 127.0.0.50
(interop/addc.py) issues a domain user's tickets with a PAC; smb3d, with the member's keytab
and an [idmap] range for the domain, verifies the PAC and lets the user, who is in no local
user database, list and write files as the uid its SID maps to. A second smb3d with the same
[idmap] maps the user to the same uid; `smb3d idmap` answers alike; a server without a range
for the domain refuses the user."""

import contextlib
import json
import os
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from addc import DOMAIN, HOST, REALM, DomainController, available
from conftest import BINARY, start_smb3d, stop

pytestmark = pytest.mark.skipif(not available(), reason="Samba's AD DC (samba-ad-dc) is not installed "
                                "or 127.0.0.50 cannot be added to lo (scripts/test-all installs it)")

PASSWORD = "Dana-Pw-1234"
LOW = 100000


@pytest.fixture(scope="module")
def dc(tmp_path_factory):
    root = tmp_path_factory.mktemp("addc")
    dc = DomainController(root)
    dc.sid = dc.add_user("dana", PASSWORD, groups=["Designers"])
    dc.keytab = dc.join(root / "member.keytab")
    yield dc
    dc.stop()


def member(dc, tmp, idmap=True, **share):
    """An smb3d with the member's keytab and, when `idmap`, a range for the domain; its share
    (with the options `share`) open to every uid (the domain user's uid has no other right to
    it)."""
    extra = '\n[auth]\nkeytab = "%s"\nrealm = "%s"\n' % (dc.keytab, REALM)
    if idmap:
        extra += '\n[idmap.%s]\nsid = "%s"\nrange = [%d, %d]\n' % (DOMAIN, dc.domain_sid, LOW, LOW + 199999)
    server = start_smb3d(tmp, extra_config=extra, shares={"share": dict(path=str(tmp / "share"), **share)})
    os.chmod(server.share_dir, 0o777)
    return server


def smbclient(dc, server, commands, ccache):
    env = dict(dc.env, KRB5CCNAME="FILE:%s" % ccache)
    cmd = ["smbclient", "//%s/%s" % (HOST, server.share), "-I", "127.0.0.1", "-p", str(server.port),
           "--use-kerberos=required", "--use-krb5-ccache=" + env["KRB5CCNAME"], "-c", commands]
    return subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)


def idmap(server, *args):
    r = subprocess.run([str(BINARY), "idmap", "-c", str(server.config), *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_a_domain_user_writes_as_its_mapped_uid_on_both_nodes(dc, tmp_path):
    rid = int(dc.sid.rsplit("-", 1)[1])
    ccache = tmp_path / "dana.cc"
    dc.kinit("dana", PASSWORD, ccache)
    src = tmp_path / "hello.txt"
    src.write_text("written by a domain user\n")
    owners = []
    for node in ("one", "two"):
        server = member(dc, tmp_path / node)
        try:
            r = smbclient(dc, server, "put %s from-%s.txt; ls" % (src, node), ccache)
            assert r.returncode == 0, r.stdout + "\n--- server log ---\n" + server.log_tail()
            assert "from-%s.txt" % node in r.stdout
            written = server.share_dir / ("from-%s.txt" % node)
            assert written.read_text() == src.read_text()
            owners.append((written.stat().st_uid, written.stat().st_gid))
            # What the admin command computes from the configuration is what the server did.
            assert idmap(server, "sid-to-uid", dc.sid) == str(LOW + rid)
            assert idmap(server, "uid-to-sid", str(LOW + rid)) == dc.sid
            logons = [l for l in server.log.read_text(errors="replace").splitlines() if "auth_method" in l]
            assert any('auth_method="Kerberos"' in l and "dana" in l and "success" in l for l in logons), logons
        finally:
            stop(server)
    # Owned by the uid of dana's SID and the gid of Domain Users (RID 513), the same on both.
    assert owners == [(LOW + rid, LOW + 513)] * 2, owners


def test_a_domain_without_a_range_is_refused(dc, tmp_path):
    ccache = tmp_path / "dana.cc"
    dc.kinit("dana", PASSWORD, ccache)
    server = member(dc, tmp_path / "srv", idmap=False)
    try:
        r = smbclient(dc, server, "ls", ccache)
        assert r.returncode != 0
        assert "NT_STATUS_LOGON_FAILURE" in r.stdout, r.stdout
    finally:
        stop(server)


# smbcacls takes neither an address nor a port (4.17 ignores `smb ports` and dials 445): it
# reaches the server through a forwarder on this loopback address's port 445.
FORWARD_ADDRESS = "127.0.0.73"


@contextlib.contextmanager
def forward(port):
    """Forwards FORWARD_ADDRESS:445 to 127.0.0.1:`port` while the context lasts."""
    listener = socket.create_server((FORWARD_ADDRESS, 445))

    def pipe(a, b):
        with contextlib.suppress(OSError):
            while data := a.recv(65536):
                b.sendall(data)
        for s in (a, b):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def accept():
        with contextlib.suppress(OSError):
            while True:
                client, _ = listener.accept()
                upstream = socket.create_connection(("127.0.0.1", port))
                for a, b in ((client, upstream), (upstream, client)):
                    threading.Thread(target=pipe, args=(a, b), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield
    finally:
        # shutdown() wakes the blocked accept(); close() alone would leave it listening.
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()


def smbcacls(dc, server, tmp, ccache, path, *args):
    """smbcacls with the ticket in `ccache`, in a mount namespace whose /etc/hosts names the
    server at the forwarder's address (the machine's stays unchanged)."""
    if os.getuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare for a private /etc/hosts")
    hosts = tmp / "hosts"
    hosts.write_text(Path("/etc/hosts").read_text() + "\n%s %s\n" % (FORWARD_ADDRESS, HOST))
    # A name cache of its own: the machine's may hold the name at another address.
    (tmp / "cache").mkdir(exist_ok=True)
    conf = tmp / "client.conf"
    conf.write_text("[global]\n\tcache directory = %s\n\tlock directory = %s\n" % (tmp / "cache", tmp / "cache"))
    env = dict(dc.env, KRB5CCNAME="FILE:%s" % ccache)
    cmd = ["unshare", "-m", "sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"', str(hosts),
           "smbcacls", "//%s/%s" % (HOST, server.share), path, "-s", str(conf), "--use-kerberos=required",
           "--use-krb5-ccache=" + env["KRB5CCNAME"], *args]
    with forward(server.port):
        return subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=120)


def test_domain_sids_set_as_group_and_owner_map_to_their_ids(dc, tmp_path):
    """dana makes her file's group the domain group Designers she is in: the file's gid on
    disk becomes the group's mapped gid. Making another domain user its owner is refused
    (STATUS_INVALID_OWNER) and changes nothing."""
    designers = dc.sid_of("Designers")
    if "erin" not in dc.run_tool("user", "list").stdout.split():
        dc.add_user("erin", PASSWORD)
    erin = dc.sid_of("erin")
    ccache = tmp_path / "dana.cc"
    dc.kinit("dana", PASSWORD, ccache)
    src = tmp_path / "plan.txt"
    src.write_text("owned by a domain group\n")
    server = member(dc, tmp_path / "srv")
    try:
        r = smbclient(dc, server, "put %s plan.txt" % src, ccache)
        assert r.returncode == 0, r.stdout + server.log_tail()
        written = server.share_dir / "plan.txt"
        rid = int(dc.sid.rsplit("-", 1)[1])
        assert (written.stat().st_uid, written.stat().st_gid) == (LOW + rid, LOW + 513)
        r = smbcacls(dc, server, tmp_path, ccache, "plan.txt", "--chgrp", designers)
        assert r.returncode == 0, r.stdout + server.log_tail()
        assert written.stat().st_gid == LOW + int(designers.rsplit("-", 1)[1])
        r = smbcacls(dc, server, tmp_path, ccache, "plan.txt", "--chown", erin)
        assert r.returncode != 0 and "INVALID_OWNER" in r.stdout, r.stdout
        assert written.stat().st_uid == LOW + rid
        r = smbcacls(dc, server, tmp_path, ccache, "plan.txt")
        assert "OWNER:" in r.stdout and "GROUP:" in r.stdout, r.stdout
    finally:
        stop(server)


class TomlValue:
    """A value start_smb3d writes as it is (it writes a list with Python's repr, whose `\\\\`
    a TOML literal string would keep doubled)."""

    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


def test_user_lists_name_domain_groups_and_users(dc, tmp_path):
    """A share whose valid_users names the domain group Designers by its SID admits its member
    dana and refuses erin, another domain user; `DOMAIN\\user` names erin alone, and a
    write_list naming the group lets dana (not erin) write on a read-only share."""
    designers = dc.sid_of("Designers")
    if "erin" not in dc.run_tool("user", "list").stdout.split():
        dc.add_user("erin", PASSWORD)
    dana, erin = tmp_path / "dana.cc", tmp_path / "erin.cc"
    dc.kinit("dana", PASSWORD, dana)
    dc.kinit("erin", PASSWORD, erin)
    src = tmp_path / "note.txt"
    src.write_text("x\n")
    for name, share, admitted in (
            ("group", {"valid_users": ["@" + designers]}, "dana"),
            ("user", {"valid_users": TomlValue(json.dumps(["%s\\ERIN" % DOMAIN.lower()]))}, "erin"),
            ("writers", {"read_only": True, "write_list": ["+" + designers]}, None)):
        server = member(dc, tmp_path / name, **share)
        try:
            for user, ccache in (("dana", dana), ("erin", erin)):
                r = smbclient(dc, server, "put %s %s.txt" % (src, user), ccache)
                if admitted is None:
                    ok = user == "dana"
                    assert (r.returncode == 0) == ok, (user, r.stdout)
                    assert ok or "NT_STATUS_ACCESS_DENIED" in r.stdout or "NT_STATUS_MEDIA_WRITE_PROTECTED" in r.stdout, r.stdout
                elif user == admitted:
                    assert r.returncode == 0, r.stdout + server.log_tail()
                else:
                    assert r.returncode != 0 and "NT_STATUS_ACCESS_DENIED" in r.stdout, r.stdout
        finally:
            stop(server)
