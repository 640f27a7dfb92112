"""Issue 23, item 8: a user changes their own password from a client, over the samr pipe
(MS-SAMR 3.1.5.10.3 SamrUnicodeChangePasswordUser2), with impacket's
hSamrUnicodeChangePasswordUser2 as the client. The old password is the proof, so an anonymous
session may ask, as on Windows and Samba. Once changed, the old password stops working and the
new one works for the next logon (smbclient), without a restart; the database on disk holds
the new hash. Wrong old passwords, unknown and disabled users all answer
STATUS_WRONG_PASSWORD and change nothing, and each attempt is logged with its real reason,
never with a secret."""

import subprocess

import pytest
from impacket import ntlm
from impacket.dcerpc.v5 import samr, transport
from impacket.dcerpc.v5.rpcrt import DCERPCException
from impacket.smb3structs import SMB2_DIALECT_30
from impacket.smbconnection import SMBConnection

from conftest import BINARY

STATUS_WRONG_PASSWORD = 0xC000006A


def change(server, user, old, new, login=("", "")):
    """hSamrUnicodeChangePasswordUser2 over `\\samr` on a session of `login` (anonymous by
    default); returns 0 or the NTSTATUS of the refusal."""
    # impacket signs an anonymous session's 3.1.1 requests with a key it does not have, and
    # smb3d refuses them (Samba ignores that signature): anonymous sessions use SMB 3.0 here.
    dialect = SMB2_DIALECT_30 if login == ("", "") else None
    conn = SMBConnection("127.0.0.1", "127.0.0.1", sess_port=server.port, timeout=30, preferredDialect=dialect)
    conn.login(*login)
    rpc = transport.SMBTransport("127.0.0.1", server.port, filename=r"\samr", smb_connection=conn)
    dce = rpc.get_dce_rpc()
    dce.connect()
    dce.bind(samr.MSRPC_UUID_SAMR)
    try:
        samr.hSamrUnicodeChangePasswordUser2(dce, "\x00", user, old, new)
        return 0
    except DCERPCException as e:
        return e.get_error_code()
    finally:
        dce.disconnect()
        conn.logoff()


def logs_on(server, password):
    r = server.smbclient("ls", user="%s%%%s" % (server.user, password), check=False)
    if r.returncode == 0:
        return True
    assert "NT_STATUS_LOGON_FAILURE" in r.stdout, r.stdout
    return False


def password_lines(server):
    return [l for l in server.log.read_text(errors="replace").splitlines() if "password change" in l]


def nt_hash_hex(password):
    return ntlm.NTOWFv1(password).hex()


@pytest.mark.parametrize("session", ["anonymous", "the user's own"])
def test_impacket_changes_the_password_for_the_next_logon(smb3d, session):
    old, new = smb3d.password, "Neu-Passwort-1"
    login = ("", "") if session == "anonymous" else (smb3d.user, old)
    assert logs_on(smb3d, old)
    assert change(smb3d, smb3d.user, old, new, login) == 0
    assert not logs_on(smb3d, old)
    assert logs_on(smb3d, new)
    db = (smb3d.config.parent / "users").read_text()
    assert nt_hash_hex(new).upper() in db, db
    lines = password_lines(smb3d)
    assert len(lines) == 1 and "password changed" in lines[0], lines
    assert 'user="%s"' % smb3d.user in lines[0] and "client=127.0.0.1" in lines[0], lines[0]
    caller = "(anonymous)" if session == "anonymous" else smb3d.user
    assert 'caller="%s"' % caller in lines[0], lines[0]
    log = smb3d.log.read_text(errors="replace")
    for secret in (old, new, nt_hash_hex(old), nt_hash_hex(new)):
        assert secret.lower() not in log.lower()


def test_refusals_cannot_be_told_apart_and_change_nothing(smb3d):
    db_path = smb3d.config.parent / "users"
    other = smb3d.add_user("carol", 4242)
    subprocess.run([str(BINARY), "user", "--db", str(db_path), "disable", "carol"], check=True, capture_output=True)
    before = db_path.read_bytes()
    attempts = [
        (smb3d.user, "not-the-password", "wrong old password"),
        ("nobody-here", "whatever", "unknown user"),
        ("carol", other, "account disabled"),
    ]
    for user, old, _ in attempts:
        assert change(smb3d, user, old, "New-1") == STATUS_WRONG_PASSWORD, user
    assert db_path.read_bytes() == before
    assert logs_on(smb3d, smb3d.password)
    lines = password_lines(smb3d)
    assert len(lines) == len(attempts), lines
    for line, (user, _, reason) in zip(lines, attempts):
        assert "password change refused" in line and 'user="%s"' % user in line, line
        assert reason in line, line
