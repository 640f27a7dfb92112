"""Issue 23, item 10, the fast check: scripts/build-deb packages the release binary (with the
unit, the sample configuration, the manual pages and the completions), and scripts/check-deb
installs it with dpkg into an empty root, starts the packaged binary with the unit's command
line and the packaged configuration, reads `man smb3d`, loads the bash completion, and removes
and purges it. `scripts/check-deb --chroot` does the same in a Debian made by debootstrap; it
takes minutes, so it is run by hand, not here."""

import shutil
import subprocess

import pytest

from conftest import ROOT


@pytest.mark.skipif(shutil.which("dpkg-deb") is None or shutil.which("man") is None,
                    reason="dpkg-deb and man are needed")
def test_the_package_installs_starts_and_shows_its_manual():
    built = subprocess.run([str(ROOT / "scripts" / "build-deb"), "--no-build"], capture_output=True, text=True,
                           timeout=300)
    assert built.returncode == 0, built.stderr
    package = built.stdout.strip().splitlines()[-1]
    assert package.endswith(".deb"), built.stdout
    checked = subprocess.run([str(ROOT / "scripts" / "check-deb"), str(ROOT / package)], capture_output=True,
                             text=True, timeout=300)
    assert checked.returncode == 0 and "check-deb: ok (root)" in checked.stdout, checked.stdout + checked.stderr
