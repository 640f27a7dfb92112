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


def _mode(path):
    return oct(path.stat().st_mode & 0o7777)


def test_new_files_and_directories_get_the_same_modes_on_both(office, tmp_path):
    """create mask = 0660, directory mask = 0770, force directory mode = 2000 under a process
    umask of 022 (the unit's): the modes on disk are Samba's formula, not cut by the umask."""
    assert office.umask == 0o022
    (tmp_path / "modes.txt").write_text("m\n")
    modes = {}
    for server in office.both:
        code, out = server.smbclient("office", "worker", "lcd %s; put modes.txt; mkdir modes-dir" % tmp_path)
        assert code == 0, (server.name, out, server.log_tail())
        share = server.root / "office"
        modes[server.name] = (_mode(share / "modes.txt"), _mode(share / "modes-dir"))
    assert modes["samba"] == ("0o660", "0o2770"), modes
    assert modes["smb3d"] == modes["samba"], modes
