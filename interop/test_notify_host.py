"""Issue 5: CHANGE_NOTIFY completes, and directory leases break, on changes made directly on the
Linux file system, not only on those made through smb3d (smb3d sees them with fanotify, which
needs root)."""

import os
import struct
import subprocess
import time
import uuid

import pytest
from smbprotocol.change_notify import ChangeNotifyFlags, CompletionFilter, FileAction, FileSystemWatcher
from smbprotocol.open import (CreateDisposition, CreateOptions, DirectoryAccessMask, FileAttributes,
                              ImpersonationLevel, Open, ShareAccess)

from smbprotocol_client import connect
from test_two_clients import ASKS_FOR_DIRECTORY_LEASES, H, R, create_leased_directory, listen_for_break

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="fanotify's file-system marks need root")

NAMES = CompletionFilter.FILE_NOTIFY_CHANGE_FILE_NAME | CompletionFilter.FILE_NOTIFY_CHANGE_DIR_NAME
ADDED, REMOVED, MODIFIED = (FileAction.FILE_ACTION_ADDED, FileAction.FILE_ACTION_REMOVED,
                             FileAction.FILE_ACTION_MODIFIED)
RENAMED_OLD, RENAMED_NEW = FileAction.FILE_ACTION_RENAMED_OLD_NAME, FileAction.FILE_ACTION_RENAMED_NEW_NAME
SHARE_ALL = ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE | ShareAccess.FILE_SHARE_DELETE


def open_dir(tree, name):
    directory = Open(tree, name)
    directory.create(ImpersonationLevel.Impersonation, DirectoryAccessMask.FILE_LIST_DIRECTORY,
                     FileAttributes.FILE_ATTRIBUTE_DIRECTORY, SHARE_ALL, CreateDisposition.FILE_OPEN,
                     CreateOptions.FILE_DIRECTORY_FILE)
    return directory


class Watch:
    """CHANGE_NOTIFY requests on one directory open, one after another."""

    def __init__(self, directory, completion_filter, flags=0):
        self.directory, self.filter, self.flags = directory, completion_filter, flags
        self.pending = self.start()

    def start(self):
        """Sends a request and waits for its interim response: the watch is then in place."""
        watcher = FileSystemWatcher(self.directory)
        watcher.start(self.filter, flags=self.flags)
        deadline = time.monotonic() + 30
        while watcher._request.async_id is None and not watcher._request.response_event.is_set():
            assert time.monotonic() < deadline, "no interim response to CHANGE_NOTIFY"
            time.sleep(0.01)
        return watcher

    def until(self, last):
        """The changes reported, request after request, up to and including `last`."""
        seen = []
        while last not in seen:
            self.pending._t_on_response.join(60)
            assert not self.pending._t_on_response.is_alive(), "no change after %r" % seen
            seen += [(a["action"].get_value(), a["file_name"].get_value()) for a in self.pending.result]
            self.pending = self.start()
        return seen


def on_host(share_dir, script):
    """Changes the share as another local process would (a shell, not smb3d)."""
    subprocess.run(["sh", "-c", script], cwd=share_dir, check=True)


def test_changes_made_on_the_host_complete_watches(smb3d):
    os.makedirs(smb3d.share_dir / "dir" / "sub")
    conn, _, tree = connect(smb3d)
    try:
        directory = open_dir(tree, "dir")
        names = Watch(directory, NAMES)
        on_host(smb3d.share_dir, "touch dir/new.txt")
        assert names.until((ADDED, "new.txt")) == [(ADDED, "new.txt")]

        on_host(smb3d.share_dir, "mv dir/new.txt dir/renamed.txt && mkdir dir/made")
        assert names.until((ADDED, "made")) == [(RENAMED_OLD, "new.txt"), (RENAMED_NEW, "renamed.txt"),
                                                (ADDED, "made")]

        # A write shows as a modification to a watch of sizes, not to one of names.
        sizes = Watch(open_dir(tree, "dir"), CompletionFilter.FILE_NOTIFY_CHANGE_SIZE)
        on_host(smb3d.share_dir, "echo data >> dir/renamed.txt && touch dir/marker")
        assert sizes.until((MODIFIED, "renamed.txt")) == [(MODIFIED, "renamed.txt")]
        assert names.until((ADDED, "marker")) == [(ADDED, "marker")]

        # A recursive watch sees below its directory; a watch of the directory alone does not.
        recursive = Watch(open_dir(tree, ""), NAMES, ChangeNotifyFlags.SMB2_WATCH_TREE)
        on_host(smb3d.share_dir, "rm dir/renamed.txt && touch dir/sub/deep.txt && rmdir dir/made")
        assert recursive.until((REMOVED, "dir\\made")) == [
            (REMOVED, "dir\\renamed.txt"), (ADDED, "dir\\sub\\deep.txt"), (REMOVED, "dir\\made")]
        assert names.until((REMOVED, "made")) == [(REMOVED, "renamed.txt"), (REMOVED, "made")]
    finally:
        conn.disconnect()


def test_the_servers_own_changes_are_reported_once(smb3d):
    """smb3d reports its own changes itself; fanotify's copy of them must not double them."""
    os.makedirs(smb3d.share_dir / "dir")
    owner = os.stat(smb3d.share_dir)
    os.chown(smb3d.share_dir / "dir", owner.st_uid, owner.st_gid)
    conn, _, tree = connect(smb3d)
    try:
        names = Watch(open_dir(tree, "dir"), NAMES)
        made = Open(tree, "dir\\made.txt")
        made.create(ImpersonationLevel.Impersonation, DirectoryAccessMask.FILE_LIST_DIRECTORY,
                    FileAttributes.FILE_ATTRIBUTE_NORMAL, SHARE_ALL, CreateDisposition.FILE_CREATE,
                    CreateOptions.FILE_NON_DIRECTORY_FILE)
        made.close()
        # Had fanotify's event for made.txt been taken too, it would come again before the marker.
        on_host(smb3d.share_dir, "touch dir/marker")
        assert names.until((ADDED, "marker")) == [(ADDED, "made.txt"), (ADDED, "marker")]
    finally:
        conn.disconnect()


def test_a_change_made_on_the_host_breaks_a_directory_lease(smb3d):
    """A client caching a directory's listing under a lease must hear of files added on the host."""
    conn, _, tree = connect(smb3d, capabilities=ASKS_FOR_DIRECTORY_LEASES)
    try:
        key = uuid.uuid4().bytes
        _, granted = create_leased_directory(tree, "leased", key)
        assert granted == R | H
        listener = listen_for_break(conn)
        on_host(smb3d.share_dir, "touch leased/from-the-host.txt")
        assert listener.response_event.wait(30), "a file added on the host did not break the directory lease"
        notification = listener.response["data"].get_value()
        assert notification[8:24] == key
        assert struct.unpack_from("<II", notification, 24) == (R | H, 0)
    finally:
        conn.disconnect()
