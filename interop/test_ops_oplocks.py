"""Issue 23 item 6: per-share `oplocks = false` and `veto_oplock_files` (Samba's `oplocks` and
`veto oplock files`), asked for by a raw SMB2 client: a batch oplock request is answered with
none where the share or the name says so, and granted elsewhere."""

import smb2raw
from conftest import start_smb3d, stop

BATCH_OPLOCK = 0x09
ALL = 0x001F01FF


class Toml:
    """A value conftest writes into the configuration as it is (a TOML list here)."""

    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


def test_oplocks_follow_the_share_and_the_name(tmp_path):
    dirs = {name: tmp_path / name for name in ("plain", "db", "docs")}
    for path in dirs.values():
        path.mkdir()
    server = start_smb3d(tmp_path, shares={
        "plain": {"path": str(dirs["plain"])},
        "db": {"path": str(dirs["db"]), "oplocks": False},
        "docs": {"path": str(dirs["docs"]), "veto_oplock_files": Toml('["*.mdb"]')},
    })
    try:
        granted = {}
        for share, name in (("plain", "a.mdb"), ("db", "a.txt"), ("docs", "a.MDB"), ("docs", "a.txt")):
            c = smb2raw.connect(smb2raw.Target(server.port, server.user, server.password, share))
            r, fid = c.create(name, access=ALL, disposition=smb2raw.FILE_OVERWRITE_IF, oplock=BATCH_OPLOCK)
            assert fid is not None, (share, name, r.name)
            granted[(share, name)] = r.body[2]
            c.close_file(fid)
            c.close()
        assert granted == {("plain", "a.mdb"): BATCH_OPLOCK, ("db", "a.txt"): 0, ("docs", "a.MDB"): 0,
                           ("docs", "a.txt"): BATCH_OPLOCK}, (granted, server.log_tail())
    finally:
        stop(server)
