"""A 20,000-entry tree listed with smbclient `recurse; ls` through smb3d gives the same listing
as through Samba serving the same directory (file-semantics issue, check 4): every name, size,
attribute and time."""

import os
import pwd
import secrets
import shutil
import tempfile
from pathlib import Path

import pytest

from conftest import interop_uid, start_smb3d, stop
import samba

pytestmark = pytest.mark.skipif(os.getuid() != 0 or not samba.available(),
                                reason="needs root (Samba serves the share as a system account) and smbd")

DIRECTORIES = 200
FILES_PER_DIRECTORY = 100


def make_tree(root: Path, uid: int, gid: int):
    for d in range(DIRECTORIES):
        directory = root / ("dir%03d" % d)
        directory.mkdir()
        os.chown(directory, uid, gid)
        for f in range(FILES_PER_DIRECTORY):
            # Names of varied length and case, a few dot files, sizes from 0 to a few KiB.
            name = ".hidden%d" % f if f % 37 == 0 else "File_%03d_%s.dat" % (f, "x" * (f % 13))
            path = directory / name
            path.write_bytes(b"z" * ((d * 31 + f * 17) % 5000))
            os.chown(path, uid, gid)


def listing(server):
    """`recurse; ls` as {directory: set of entry lines}; the free-space footer is dropped, and
    so is the share root's "..": Samba describes the directory above the share there, smb3d
    the root itself, revealing nothing outside the share."""
    out = server.smbclient("recurse; ls", timeout=900).stdout
    blocks = {}
    current = "\\"
    for line in out.splitlines():
        if not line.strip() or "blocks of size" in line:
            continue
        if line.startswith("\\"):
            current = line.strip()
            continue
        if current == "\\" and line.split()[0] == "..":
            continue
        blocks.setdefault(current, set()).add(line.rstrip())
    return blocks


def test_recursive_listing_matches_samba(tmp_path):
    uid = interop_uid()
    gid = pwd.getpwuid(uid).pw_gid
    share = Path(tempfile.mkdtemp(prefix="smb3d-enum-"))
    share.chmod(0o755)
    os.chown(share, uid, gid)
    ours = theirs = None
    try:
        make_tree(share, uid, gid)
        ours = start_smb3d(tmp_path / "smb3d", shares={"share": {"path": str(share)}})
        theirs = samba.start_samba(tmp_path / "samba", share, pwd.getpwuid(uid).pw_name,
                                   "pw-" + secrets.token_hex(8))
        mine, reference = listing(ours), listing(theirs)
        entries = sum(len(lines) for lines in reference.values())
        assert entries >= DIRECTORIES * (FILES_PER_DIRECTORY + 2), entries
        assert mine.keys() == reference.keys()
        for directory in reference:
            assert mine[directory] == reference[directory], directory
    finally:
        if theirs:
            samba.stop_samba(theirs)
        if ours:
            stop(ours)
        shutil.rmtree(share)
