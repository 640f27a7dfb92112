"""Issue 2, check 4: Python smbprotocol with SMB 3.1.1 and signing required."""

import os

from smbprotocol.connection import Dialects

from smbprotocol_client import connect, write_then_read


def test_signed_311_write_read(smb3d):
    conn, session, tree = connect(smb3d, dialect=Dialects.SMB_3_1_1, require_signing=True)
    try:
        assert conn.dialect == Dialects.SMB_3_1_1
        assert session.signing_required
        data = os.urandom(3 * 1024 * 1024 + 17)
        assert write_then_read(tree, "pyfile.bin", data) == data
    finally:
        conn.disconnect()
    assert (smb3d.share_dir / "pyfile.bin").read_bytes() == data


def test_every_dialect(smb3d):
    for dialect in (Dialects.SMB_2_0_2, Dialects.SMB_2_1_0, Dialects.SMB_3_0_0, Dialects.SMB_3_0_2, Dialects.SMB_3_1_1):
        conn, session, tree = connect(smb3d, dialect=dialect)
        try:
            assert conn.dialect == dialect
            data = os.urandom(70000)
            assert write_then_read(tree, "d%x.bin" % dialect, data) == data
        finally:
            conn.disconnect()
