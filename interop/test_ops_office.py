"""Issue 23's check: a realistic office smb.conf (interop/office.py), served by Samba as written
and by smb3d as imported, gives the same answers to the same clients: who may connect from where
and as whom, the modes files get on disk, what is hidden, where deleted files go."""

import os
import pwd
import socket
import uuid
from contextlib import contextmanager

import pytest
from smbprotocol import transport
from smbprotocol.connection import Connection
from smbprotocol.exceptions import AccessDenied, LogonFailure
from smbprotocol.session import Session
from smbprotocol.tree import TreeConnect

from office import GUEST, start_office, stop_office
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


# Who may connect (issue 23 item 2): the same questions to both servers, from chosen loopback
# source addresses (smbclient cannot choose one; smbprotocol's socket is bound to it).

@contextmanager
def _from_address(source):
    plain = socket.create_connection

    def bound(address, timeout=None, source_address=None):
        return plain(address, timeout=timeout, source_address=(source, 0))

    transport.socket.create_connection = bound
    try:
        yield
    finally:
        transport.socket.create_connection = plain


def _ask(server, user, share, source="127.0.0.1", password=None):
    """What `server` answers `user` from `source` asking for `share`: "connected", or the
    step that failed and how."""
    password = server.passwords.get(user, "") if password is None else password
    with _from_address(source):
        conn = Connection(uuid.uuid4(), "127.0.0.1", server.port)
        try:
            conn.connect(timeout=10)
        except Exception as e:  # noqa: BLE001 - any failure to connect is the answer
            return "refused at connect (%s)" % type(e).__name__
    try:
        session = Session(conn, user, password, require_encryption=False)
        try:
            session.connect()
        except LogonFailure:
            return "logon failure"
        try:
            TreeConnect(session, r"\\127.0.0.1\%s" % share).connect()
        except AccessDenied:
            return "access denied"
        return "connected"
    finally:
        conn.disconnect()


def test_global_host_rules_decide_who_may_connect_on_both(office):
    """hosts allow = 127.0.0.1 127.0.0.77 ::1, hosts deny = ALL: 127.0.0.66 is in the deny
    list only. Samba answers it with a NetBIOS negative session response and closes; smb3d
    closes at accept. Either way the client gets no SMB answer at all."""
    for server in office.both:
        assert _ask(server, "worker", "public") == "connected", (server.name, server.log_tail())
        refused = _ask(server, "worker", "public", source="127.0.0.66")
        assert refused.startswith("refused at connect"), (server.name, refused)


def test_share_host_rules_refuse_a_host_on_office_only_on_both(office):
    """[office] has hosts allow = 127.0.0.1 ::1 and hosts deny = 127.0.0.77; [public] inherits
    the global lists, which admit 127.0.0.77. Both servers answer ACCESS_DENIED at tree
    connect."""
    for server in office.both:
        assert _ask(server, "worker", "office", source="127.0.0.77") == "access denied", server.name
        assert _ask(server, "worker", "public", source="127.0.0.77") == "connected", server.name
        assert _ask(server, "worker", "office") == "connected", (server.name, server.log_tail())


def test_invalid_users_are_refused_on_office_only_on_both(office):
    for server in office.both:
        code, out = server.smbclient("office", "intruder", "ls")
        assert code != 0 and "NT_STATUS_ACCESS_DENIED" in out, (server.name, out)
        code, out = server.smbclient("public", "intruder", "ls")
        assert code == 0, (server.name, out, server.log_tail())


def test_a_wrong_password_fails_on_both(office):
    for server in office.both:
        assert _ask(server, "worker", "public", password="not-the-password") == "logon failure", server.name


def test_an_unknown_name_is_a_guest_on_public_only_on_both(office, tmp_path):
    """map to guest = bad user: a name neither server knows logs on as a guest, which reaches
    [public] (guest ok) as the guest account, so its files are that account's, and is refused on
    [office]."""
    (tmp_path / "visit.txt").write_text("hello\n")
    guest_uid = pwd.getpwnam(GUEST).pw_uid
    for server in office.both:
        code, out = server.smbclient("public", "visitor-unknown", "lcd %s; put visit.txt" % tmp_path,
                                     password="any-guess")
        assert code == 0, (server.name, out, server.log_tail())
        assert os.stat(server.root / "public" / "visit.txt").st_uid == guest_uid, server.name
        code, out = server.smbclient("office", "visitor-unknown", "ls", password="any-guess")
        assert code != 0 and "NT_STATUS_ACCESS_DENIED" in out, (server.name, out)


def test_a_guest_logon_has_no_signing_key_on_both(office):
    """Nothing was proven, so neither server gives the guest session keys: smbprotocol has no
    signing key (it refuses to go on when the server signed anyway) and must be told not to
    verify the negotiation, which needs one."""
    for server in office.both:
        conn = Connection(uuid.uuid4(), "127.0.0.1", server.port, require_signing=False)
        conn.connect(timeout=10)
        try:
            session = Session(conn, "visitor-unknown", "any-guess", require_encryption=False)
            session.connect()
            assert session.signing_key is None, server.name
            TreeConnect(session, r"\\127.0.0.1\public").connect(require_secure_negotiate=False)
        finally:
            conn.disconnect()



def test_admin_users_act_as_root_on_office_on_both(office, tmp_path):
    """admin users = boss: boss works on [office] as root, so a file only root may read is
    boss's to read and worker's not, on both servers. Who owns boss's new file differs:
    smb3d gives it to root, as smb.conf(5) describes admin users ("all file operations as the
    super-user"); Samba 4 with this share's acl_xattr gives it to boss, whose SID its NT token
    keeps as owner and which the inherited ACL hands the file to. Asserted each way so that a
    change on either side shows."""
    for server in office.both:
        secret = server.root / "office" / "root-only.txt"
        secret.write_text("salaries\n")
        os.chown(secret, 0, 0)
        os.chmod(secret, 0o600)
        code, out = server.smbclient("office", "boss", "lcd %s; get root-only.txt" % tmp_path)
        assert code == 0, (server.name, out, server.log_tail())
        assert (tmp_path / "root-only.txt").read_text() == "salaries\n", server.name
        (tmp_path / "root-only.txt").unlink()
        code, out = server.smbclient("office", "worker", "lcd %s; get root-only.txt" % tmp_path)
        assert code != 0 and "NT_STATUS_ACCESS_DENIED" in out, (server.name, out)

    (tmp_path / "budget.txt").write_text("numbers\n")
    owners = {}
    for server in office.both:
        code, out = server.smbclient("office", "boss", "lcd %s; put budget.txt" % tmp_path)
        assert code == 0, (server.name, out, server.log_tail())
        owners[server.name] = os.stat(server.root / "office" / "budget.txt").st_uid
    assert owners == {"samba": pwd.getpwnam("boss").pw_uid, "smb3d": 0}, owners
