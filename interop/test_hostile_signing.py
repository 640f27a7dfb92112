"""Issue 8: signing enforcement (MS-SMB2 3.3.5.2.4; CVE-2023-3347, CVE-2016-2114). On a server
that requires signing, unsigned and tampered requests are refused with STATUS_ACCESS_DENIED and
have no effect; a bad signature is refused on any session. Each case then checks that a
well-behaved (signing) client is still served."""

import os

import pytest

import smb2raw as s
from conftest import start_smb3d, stop
from hostile_cases import SERVED


@pytest.fixture(scope="module")
def signing_server(tmp_path_factory):
    server = start_smb3d(tmp_path_factory.mktemp("signing"), signing="required")
    (server.share_dir / "served.txt").write_bytes(SERVED)
    yield server
    stop(server)


def target(server):
    return s.Target(server.port, server.user, server.password)


def create_new(c, name, **kw):
    return c.call(s.CREATE, s.create_body(name, access=s.READ_WRITE_FILE, disposition=s.FILE_CREATE), **kw)


def tampered(pdu):
    p = bytearray(pdu)
    p[-1] ^= 0x01
    return bytes(p)


def after(server, signed=True):
    assert server.alive(), server.log_tail()
    assert s.served(target(server), sign_all=signed)


@pytest.mark.parametrize("dialect", [0x0210, 0x0302, 0x0311])
def test_unsigned_create_is_refused(signing_server, dialect):
    c = s.connect(target(signing_server), dialects=(dialect,), sign_all=True)
    name = "unsigned-%x.txt" % dialect
    assert create_new(c, name, sign=False) == "STATUS_ACCESS_DENIED"
    assert not os.path.exists(signing_server.share_dir / name)
    after(signing_server)


@pytest.mark.parametrize("dialect", [0x0210, 0x0302, 0x0311])
def test_tampered_request_is_refused(signing_server, dialect):
    c = s.connect(target(signing_server), dialects=(dialect,), sign_all=True)
    name = "tampered-%x.txt" % dialect
    pdu = c.pdu(s.CREATE, s.create_body(name, access=s.READ_WRITE_FILE, disposition=s.FILE_CREATE), sign=True)
    c.send(tampered(pdu))
    assert c.outcome() == "STATUS_ACCESS_DENIED"
    assert not os.path.exists(signing_server.share_dir / name)
    after(signing_server)


def test_signed_flag_with_wrong_signature_is_refused(hostile_env):
    """On a server that does not require signing, a request claiming a signature must carry a
    valid one."""
    server, env = hostile_env
    c = s.connect(env.target)
    pdu = bytearray(c.pdu(s.CREATE, s.create_body("forged.txt", access=s.READ_WRITE_FILE,
                                                  disposition=s.FILE_CREATE), sign=True))
    pdu[48] ^= 0xFF
    c.send(bytes(pdu))
    assert c.outcome() == "STATUS_ACCESS_DENIED"
    assert not os.path.exists(os.path.join(env.share_dir, "forged.txt"))
    after(server, signed=False)
