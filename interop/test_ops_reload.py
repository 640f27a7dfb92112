"""Issue 9, check 2: adding a share to the configuration and sending SIGHUP makes it connectable
without dropping existing connections; a broken configuration on reload is refused and the
server keeps running with the old one. A removed share keeps its existing tree connects (as
Samba 4.17 does) and refuses new ones."""

import os
import signal
import time

from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, Open, ShareAccess)

from conftest import interop_uid
from smbprotocol_client import connect


def wait_for_log(server, text, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if text in server.log.read_text(errors="replace"):
            return
        time.sleep(0.05)
    raise AssertionError("%r not logged:\n%s" % (text, server.log_tail()))


def open_rw(tree, name):
    handle = Open(tree, name)
    handle.create(ImpersonationLevel.Impersonation,
                  FilePipePrinterAccessMask.GENERIC_READ | FilePipePrinterAccessMask.GENERIC_WRITE,
                  FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                  CreateDisposition.FILE_OVERWRITE_IF, CreateOptions.FILE_NON_DIRECTORY_FILE)
    return handle


def add_share(server, name):
    path = server.share_dir.parent / name
    path.mkdir()
    os.chown(path, interop_uid(), -1)
    with open(server.config, "a") as f:
        f.write('\n[share.%s]\npath = "%s"\n' % (name, path))
    return path


def test_sighup_adds_a_share_without_dropping_connections(smb3d):
    conn, session, tree = connect(smb3d)
    try:
        handle = open_rw(tree, "kept.txt")
        handle.write(b"before ", 0)
        added = add_share(smb3d, "added")
        os.kill(smb3d.proc.pid, signal.SIGHUP)
        wait_for_log(smb3d, 'added=["added"]')
        r = smb3d.smbclient("put %s new.txt" % smb3d.config, share="added")
        assert (added / "new.txt").read_bytes() == smb3d.config.read_bytes(), r.stdout
        # The connection made before the reload still works, with its open.
        handle.write(b"and after", 7)
        assert handle.read(0, 16) == b"before and after"
        handle.close()
    finally:
        conn.disconnect()


def test_broken_configuration_is_refused_and_the_server_keeps_running(smb3d):
    conn, session, tree = connect(smb3d)
    try:
        good = smb3d.config.read_text()
        smb3d.config.write_text(good + "\n[share.bad]\npath = \"relative\"\n[share.worse]\npath = \"/srv\"\nwritable = true\n")
        os.kill(smb3d.proc.pid, signal.SIGHUP)
        wait_for_log(smb3d, "the running configuration is kept")
        assert smb3d.alive()
        log = smb3d.log.read_text()
        assert "path must be absolute" in log and "unknown field `writable`" in log, log
        smb3d.smbclient("ls")
        open_rw(tree, "still.txt").close()

        r = smb3d.ctl("reload", check=False)
        assert r.returncode != 0
        assert "not reloaded; the running one is kept" in r.stderr and "path must be absolute" in r.stderr

        smb3d.config.write_text(good)
        assert smb3d.ctl("reload").stdout.strip() == "configuration reloaded; no share changed"
    finally:
        conn.disconnect()


def test_removed_share_keeps_existing_tree_connects(smb3d):
    add_share(smb3d, "extra")
    assert smb3d.ctl("reload").stdout.strip() == "configuration reloaded; shares added extra"
    smb3d.share = "extra"
    conn, session, tree = connect(smb3d)
    smb3d.share = "share"
    try:
        handle = open_rw(tree, "f.txt")
        text = smb3d.config.read_text()
        smb3d.config.write_text(text[:text.index("\n[share.extra]")] + "\n")
        assert smb3d.ctl("reload").stdout.strip() == "configuration reloaded; shares removed extra"
        handle.write(b"still here", 0)
        assert handle.read(0, 10) == b"still here"
        handle.close()
        r = smb3d.smbclient("ls", share="extra", check=False)
        assert "NT_STATUS_BAD_NETWORK_NAME" in r.stdout, r.stdout
    finally:
        conn.disconnect()
