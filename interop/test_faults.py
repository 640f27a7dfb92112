"""Issue 22: storage faults. Device mapper (dm-error, dm-flakey, dm-delay) is not available
on the machines smb3d is tested on, so I/O errors and stalls come from the fault-injecting VFS
layer (`testing_fault_injection`, smb3d-vfs's `faults` module, like Samba selftest's
error_inject and delay_inject modules); a full disk is a real one, a small tmpfs.

Clients are Python smbprotocol and smbclient; the descriptor case uses the raw client, as no
third-party client here sends a CREATE with a security descriptor."""

import errno
import os
import subprocess
import threading
import time
import uuid

import pytest
from smbprotocol.create_contexts import DurableHandleFlags
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.file_info import FileBasicInformation, FileFullEaInformation, FileRenameInformation
from smbprotocol.open import CreateDisposition, CreateOptions, FileAttributes, Open, ShareAccess
from smbprotocol.open import FilePipePrinterAccessMask, ImpersonationLevel, SMB2SetInfoRequest
from smbprotocol.tree import TreeConnect

import secdesc
import smb2raw
import smbprotocol_client as spc
import test_persistent as persistent
from conftest import start_smb3d, stop

UNEXPECTED_IO_ERROR = 0xC00000E9
DISK_FULL = 0xC000007F


def rules(share, *blocks):
    """TOML for `share`'s testing_fault_injection rules, each a dict of its keys."""
    text = ""
    for block in blocks:
        text += "\n[[share.%s.testing_fault_injection]]\n" % share
        for key, value in block.items():
            if isinstance(value, list):
                value = "[%s]" % ", ".join('"%s"' % v for v in value)
            elif isinstance(value, str):
                value = '"%s"' % value
            text += "%s = %s\n" % (key, value)
    return text


def status_of(call):
    try:
        call()
    except SMBResponseException as e:
        return e.status
    return 0


@pytest.fixture
def faulty(tmp_path):
    """A server whose share fails reads and writes of bad*, fails one fsync of once* and of
    wt*, and stalls reads of slow* for 4 s; a second share `other` has no faults."""
    other = tmp_path / "other"
    other.mkdir()
    extra = rules("share",
                  {"ops": ["read", "write"], "path": "bad*", "error": "EIO"},
                  {"ops": ["sync"], "path": "once*", "error": "EIO", "times": 1},
                  {"ops": ["sync"], "path": "wt*", "error": "EIO", "times": 1},
                  {"ops": ["read"], "path": "slow*", "delay_ms": 4000})
    server = start_smb3d(tmp_path, extra_config=extra,
                         shares={"share": {"path": str(tmp_path / "share")}, "other": {"path": str(other)}})
    yield server
    stop(server)


def test_io_errors_fail_only_their_calls(faulty):
    """Item 2: EIO on read and write answers STATUS_UNEXPECTED_IO_ERROR (what Windows gives for
    a device error); the connection, the other files and the server go on."""
    conn, session, tree = spc.connect(faulty)
    try:
        bad = spc.create(tree, "bad.bin")
        assert status_of(lambda: bad.write(b"x" * 4096, 0)) == UNEXPECTED_IO_ERROR
        assert status_of(lambda: bad.read(0, 1)) == UNEXPECTED_IO_ERROR
        good = spc.create(tree, "good.bin")
        good.write(b"fine", 0)
        good.flush()
        assert good.read(0, 4) == b"fine"
        bad.close()
        good.close()
        conn.echo(session.session_id)
    finally:
        conn.disconnect()
    assert faulty.alive()
    assert "testing_fault_injection is set" in faulty.log.read_text()


def test_a_failed_fsync_is_never_reported_as_success_later(faulty):
    """Item 2, the fsyncgate rule: after a FLUSH failed, Linux would report the next fsync
    as a success though the data it lost is gone; every later FLUSH of the file fails too."""
    conn, session, tree = spc.connect(faulty)
    try:
        f = spc.create(tree, "once.bin")
        f.write(b"lost?", 0)
        assert status_of(f.flush) == UNEXPECTED_IO_ERROR
        assert status_of(f.flush) == UNEXPECTED_IO_ERROR, "the second fsync (which succeeds) was reported"
        f.close()
    finally:
        conn.disconnect()


def test_write_through_syncs_before_it_answers(faulty):
    """A write with SMB2_WRITEFLAG_WRITE_THROUGH is on stable storage when acknowledged
    (MS-SMB2 3.3.5.13): its sync runs, and so its failure is the write's."""
    conn, session, tree = spc.connect(faulty)
    try:
        f = spc.create(tree, "wt.bin")
        assert status_of(lambda: f.write(b"through", 0, write_through=True)) == UNEXPECTED_IO_ERROR
        assert status_of(f.flush) == UNEXPECTED_IO_ERROR
        f.close()
    finally:
        conn.disconnect()


def stalled_reads_leave_the_rest_served(server, size, close_in_window=True):
    """Starts 8 reads of `size` bytes of slow.bin (stalled 4 s each) on one connection; while
    they wait, echo on that connection, another file (closed then, or after the reads with
    `close_in_window` false), another client and another share must be served. Returns how
    many reads were still stalled when all that was done."""
    data = bytes(range(256)) * (size // 256)
    conn, session, tree = spc.connect(server)
    other_conn, other_session, other_tree = spc.connect(server)
    try:
        slow = spc.create(tree, "slow.bin")
        slow.write(data, 0)
        results = []
        readers = [threading.Thread(target=lambda: results.append(slow.read(0, len(data))))
                   for _ in range(8)]
        for r in readers:
            r.start()
        time.sleep(0.5)
        conn.echo(session.session_id)
        fast = spc.create(tree, "fast.bin")
        fast.write(b"quick", 0)
        assert fast.read(0, 5) == b"quick"
        if close_in_window:
            fast.close()
        other_conn.echo(other_session.session_id)
        assert spc.write_then_read(other_tree, "other.bin", b"other client") == b"other client"
        elsewhere = TreeConnect(other_session, r"\\127.0.0.1\other")
        elsewhere.connect()
        assert spc.write_then_read(elsewhere, "x.bin", b"other share") == b"other share"
        still_stalled = sum(r.is_alive() for r in readers)
        for r in readers:
            r.join(timeout=120)
        assert results == [data] * 8, "a stalled read did not finish with its data"
        slow.close()
        if not close_in_window:
            fast.close()
        # The credits the stalled reads held came back with their answers.
        assert conn.sequence_window["high"] - conn.sequence_window["low"] >= 8
        conn.echo(session.session_id)
        return still_stalled
    finally:
        conn.disconnect()
        other_conn.disconnect()


def test_a_stalled_share_does_not_stall_the_rest(faulty):
    """Item 4: while 64 KiB reads of one file stall for seconds, on the same connection echo
    keeps answering and other files are served, other clients and shares too, and the stalled
    reads finish with their data."""
    served = stalled_reads_leave_the_rest_served(faulty, 65536, close_in_window=False)
    assert served == 8, "the rest waited for the stall"
    assert faulty.alive()


def test_a_close_is_not_held_by_stalled_reads_of_another_file(faulty):
    """Item 4: a CLOSE is answered while other files' reads stall: it waits only for the
    earlier requests that may act on its own open."""
    assert stalled_reads_leave_the_rest_served(faulty, 65536) == 8, "the close waited for the stall"


def test_small_stalled_reads_do_not_stall_the_rest(faulty):
    """Item 4 with the small reads most clients send: one that would wait on the disk
    (RWF_NOWAIT says so) goes to the blocking threads instead of holding the connection's
    reader and a runtime worker."""
    assert stalled_reads_leave_the_rest_served(faulty, 4096) == 8, "the rest waited for the stall"


def test_a_create_whose_descriptor_cannot_be_stored_leaves_no_file(tmp_path):
    """Item 1: a CREATE with a security descriptor that the disk has no room for fails with
    STATUS_DISK_FULL and leaves no file behind with default permissions."""
    extra = rules("share", {"ops": ["set_xattr"], "xattr": "*NTACL", "error": "ENOSPC"})
    server = start_smb3d(tmp_path, extra_config=extra)
    try:
        c = secdesc.Client(server.port, server.user, server.password)
        sd = secdesc.descriptor(dacl=[secdesc.ace(secdesc.EVERYONE, 0x001200A9)])
        r, fid = c.open("guarded.txt", 0x001F01FF, smb2raw.FILE_CREATE,
                        contexts=smb2raw.create_context(b"SecD", sd))
        if fid is not None:
            c.c.close_file(fid)
        c.close()
        assert r.status == DISK_FULL, r.name
        assert not (server.share_dir / "guarded.txt").exists(), "left with default permissions"
    finally:
        stop(server)


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs, unmounted afterwards."""
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_answers_disk_full_and_recovers_without_restart(tmp_path, small_disk):
    """Item 1: writes that meet ENOSPC on a real full file system answer STATUS_DISK_FULL;
    once space is freed, the same server and connection write again."""
    server = start_smb3d(tmp_path, shares={"share": {"path": str(small_disk)}})
    conn, session, tree = spc.connect(server)
    try:
        f = spc.create(tree, "filler.bin")
        chunk = b"\xa5" * 65536
        offset, status = 0, 0
        while offset < 16 * 1024 * 1024 and status == 0:
            status = status_of(lambda: f.write(chunk, offset))
            offset += len(chunk)
        assert status == DISK_FULL, hex(status)
        assert status_of(lambda: spc.create(tree, "new.bin").write(chunk * 8, 0)) == DISK_FULL
        f.close()
        gone = Open(tree, "filler.bin")
        gone.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.DELETE,
                    FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_DELETE,
                    CreateDisposition.FILE_OPEN, CreateOptions.FILE_DELETE_ON_CLOSE)
        gone.close()
        assert spc.write_then_read(tree, "after.bin", chunk * 8) == chunk * 8
    finally:
        conn.disconnect()
        stop(server)


def fill(directory):
    """Fills the file system of `directory` with a file, which it returns, until ENOSPC: in
    64 KiB writes, then 1 KiB ones for the last blocks."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for chunk in (65536, 1024):
            try:
                while True:
                    os.write(fd, b"\xa5" * chunk)
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
    finally:
        os.close(fd)
    return filler


def test_a_persistent_open_whose_record_cannot_be_stored_answers_disk_full(tmp_path, small_disk):
    """Item 1: a durable v2 persistent open on a continuous-availability share whose state_dir
    is on a full tmpfs answers STATUS_DISK_FULL, for a new file and an existing one, and leaves
    no open, no new file and no record, whole or half; once space is freed, the same
    connection gets its persistent handle and the record is written."""
    state = small_disk / "state"
    state.mkdir()
    server = start_smb3d(tmp_path, extra_config='state_dir = "%s"' % state,
                         shares={"share": {"path": str(tmp_path / "share"), "continuous_availability": True}})
    conn, tree = persistent.connect(server, uuid.uuid4())
    try:
        existing, _ = persistent.create(tree, disposition=CreateDisposition.FILE_CREATE, name="existing.bin")
        existing.close()
        filler = fill(small_disk)
        for name, disposition in (("new.bin", CreateDisposition.FILE_CREATE),
                                  ("existing.bin", CreateDisposition.FILE_OPEN)):
            request, _ = persistent.persistent_request()
            status = status_of(lambda: persistent.create(tree, [request], disposition, name=name))
            assert status == DISK_FULL, (name, hex(status))
            assert sorted(p.name for p in state.iterdir()) == [], "a record was left"
        assert not (server.share_dir / "new.bin").exists(), "the new file was left"
        # No open is left behind on the existing file: an open that shares nothing succeeds.
        alone, _ = persistent.create(tree, disposition=CreateDisposition.FILE_OPEN, name="existing.bin",
                                     share=0)
        alone.close()
        filler.unlink()
        request, _ = persistent.persistent_request()
        kept, response = persistent.create(tree, [request], CreateDisposition.FILE_CREATE, name="new.bin")
        flags = persistent.durable_v2_flags(response)
        assert flags is not None and flags & DurableHandleFlags.SMB2_DHANDLE_FLAG_PERSISTENT, flags
        assert [p.suffix for p in state.iterdir()] == [".open"]
        kept.close()
        assert list(state.iterdir()) == []
    finally:
        conn.disconnect()
        stop(server)


def set_info(tree, handle, info):
    """SET_INFO of the file information `info` through `handle`; returns the status."""
    request = SMB2SetInfoRequest()
    request["info_type"] = info.INFO_TYPE
    request["file_info_class"] = info.INFO_CLASS
    request["file_id"] = handle.file_id
    request["buffer"] = info
    conn = tree.session.connection
    return status_of(lambda: conn.receive(conn.send(request, sid=tree.session.session_id,
                                                    tid=tree.tree_connect_id)))


@pytest.fixture
def full_metadata(tmp_path):
    """A server whose xattr writes of DOS attributes, streams and the EA Author, and renames,
    meet ENOSPC on files named full*."""
    extra = rules("share",
                  {"ops": ["set_xattr"], "path": "full*", "xattr": "user.DOSATTRIB", "error": "ENOSPC"},
                  {"ops": ["set_xattr"], "path": "full*", "xattr": "user.DosStream.*", "error": "ENOSPC"},
                  {"ops": ["set_xattr"], "path": "full*", "xattr": "user.Author", "error": "ENOSPC"},
                  {"ops": ["rename"], "path": "full*", "error": "ENOSPC"})
    server = start_smb3d(tmp_path, extra_config=extra)
    yield server
    stop(server)


def test_a_create_whose_dos_attributes_cannot_be_stored_leaves_no_file(full_metadata):
    """Item 1: nothing half-made is left as if complete."""
    conn, session, tree = spc.connect(full_metadata)
    try:
        assert status_of(lambda: spc.create(tree, "full-new.txt")) == DISK_FULL
    finally:
        conn.disconnect()
    assert not (full_metadata.share_dir / "full-new.txt").exists(), "a file without its attributes"


def xattrs(path):
    return {name: os.getxattr(path, name) for name in os.listxattr(path)}


def test_metadata_that_cannot_be_stored_answers_disk_full_and_changes_nothing(full_metadata):
    """Item 1: an existing file whose attributes, stream, EA or new name meet ENOSPC answers
    STATUS_DISK_FULL and keeps what it had."""
    path = full_metadata.share_dir / "full.txt"
    path.write_bytes(b"data")
    full_metadata.own(path)
    before = xattrs(path)
    conn, session, tree = spc.connect(full_metadata)
    try:
        f = Open(tree, "full.txt")
        f.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.GENERIC_ALL,
                 FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE,
                 CreateDisposition.FILE_OPEN, CreateOptions.FILE_NON_DIRECTORY_FILE)

        basic = FileBasicInformation()
        basic["file_attributes"] = FileAttributes.FILE_ATTRIBUTE_HIDDEN
        assert set_info(tree, f, basic) == DISK_FULL

        ea = FileFullEaInformation()
        ea["ea_name"] = b"Author"
        ea["ea_value"] = b"me"
        assert set_info(tree, f, ea) == DISK_FULL

        stream = Open(tree, "full.txt:meta")
        status = status_of(lambda: stream.create(
            ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.GENERIC_ALL,
            FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE,
            CreateDisposition.FILE_OVERWRITE_IF, CreateOptions.FILE_NON_DIRECTORY_FILE))
        assert status == DISK_FULL, hex(status)

        rename = FileRenameInformation()
        rename["replace_if_exists"] = False
        rename["file_name"] = "moved.txt"
        assert set_info(tree, f, rename) == DISK_FULL
        f.close()
    finally:
        conn.disconnect()
    assert path.exists() and not (full_metadata.share_dir / "moved.txt").exists()
    assert xattrs(path) == before, "a failed metadata write left a change behind"
    assert full_metadata.alive()


@pytest.fixture
def full_ext4(tmp_path):
    """A 2 MiB ext4 image, loop-mounted, on which every xattr needs a block of its own: 128-byte
    inodes leave no room for xattrs in the inode, and `nodelalloc` makes ENOSPC come at the
    write rather than at write-back. Unmounted afterwards; skipped where loop mounts cannot be
    made (not root, no loop device, no mkfs.ext4)."""
    image, mount = tmp_path / "ext4.img", tmp_path / "ext4"
    mount.mkdir()
    with open(image, "wb") as f:
        f.truncate(2 << 20)
    made = subprocess.run(["mkfs.ext4", "-q", "-F", "-b", "1024", "-I", "128", "-m", "0", "-N", "64",
                           "-O", "^has_journal,^resize_inode", str(image)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip("cannot make an ext4 image here: " + made.stderr.strip())
    r = subprocess.run(["mount", "-o", "loop,nodelalloc", str(image), str(mount)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("cannot loop-mount an image here: " + r.stderr.strip())
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def sd_with_everyone(mask):
    return secdesc.descriptor(dacl=[secdesc.ace(secdesc.EVERYONE, mask)])


def test_xattr_writers_on_a_full_ext4_answer_disk_full_and_recover(tmp_path, full_ext4):
    """Item 1 on a real full file system: a CREATE that stores DOS attributes or a security
    descriptor, SET_INFO of DOS attributes, of a descriptor and of an EA, and a named stream's
    creation and write each need a new xattr block, meet ENOSPC, answer STATUS_DISK_FULL and
    leave nothing made or changed; once space is freed each works, without a restart."""
    share = full_ext4 / "share"
    share.mkdir()
    names = ["basic.txt", "acl.txt", "ea.txt", "stream.txt", "twin.txt"]
    for name in names:
        (share / name).write_bytes(b"data")
    # ext4 shares identical xattr blocks between files: the stream of stream.txt is in a block
    # twin.txt uses too, so that writing it needs a copy of its own.
    for name in ("stream.txt", "twin.txt"):
        os.setxattr(share / name, "user.DosStream.meta:$DATA", b"old\0")
    server = start_smb3d(tmp_path, shares={"share": {"path": str(share)}})
    server.own(share, *(share / name for name in names))
    before = {name: (xattrs(share / name), os.stat(share / name).st_mode) for name in names}
    conn, session, tree = spc.connect(server)
    raw = secdesc.Client(server.port, server.user, server.password)
    handles = {}
    try:
        for name in names:
            handles[name] = Open(tree, name)
            handles[name].create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.MAXIMUM_ALLOWED,
                                 FileAttributes.FILE_ATTRIBUTE_NORMAL,
                                 ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE,
                                 CreateDisposition.FILE_OPEN, CreateOptions.FILE_NON_DIRECTORY_FILE)
        r, acl_fid = raw.open("acl.txt", 0x00060000 | 0x00020000)
        assert acl_fid is not None, r.name
        stream = Open(tree, "stream.txt:meta")
        stream.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.GENERIC_ALL,
                      FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE,
                      CreateDisposition.FILE_OPEN, CreateOptions.FILE_NON_DIRECTORY_FILE)
        filler = fill(full_ext4)

        def attempts():
            """Each xattr writer once; their statuses by name."""
            basic = FileBasicInformation()
            basic["file_attributes"] = FileAttributes.FILE_ATTRIBUTE_HIDDEN
            ea = FileFullEaInformation()
            ea["ea_name"] = b"Author"
            ea["ea_value"] = b"me"
            new_stream = Open(tree, "basic.txt:new")
            sd_r, sd_fid = raw.open("made-with-sd.txt", 0x001F01FF, smb2raw.FILE_CREATE,
                                    contexts=smb2raw.create_context(b"SecD", sd_with_everyone(0x001F01FF)))
            if sd_fid is not None:
                raw.c.close_file(sd_fid)
            return {
                "create": status_of(lambda: spc.create(tree, "made.txt").close()),
                "create with descriptor": sd_r.status,
                "DOS attributes": set_info(tree, handles["basic.txt"], basic),
                "descriptor": raw.c.request(smb2raw.SET_INFO, smb2raw.set_info_body(
                    acl_fid, secdesc.SECURITY_INFO, 0, sd_with_everyone(0x001200A9), additional=secdesc.DACL)).status,
                "EA": set_info(tree, handles["ea.txt"], ea),
                "stream write": status_of(lambda: stream.write(b"new", 0)),
                "stream create": status_of(lambda: new_stream.create(
                    ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.GENERIC_ALL,
                    FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                    CreateDisposition.FILE_CREATE, CreateOptions.FILE_NON_DIRECTORY_FILE)),
            }

        full = attempts()
        assert full == {what: DISK_FULL for what in full}, full
        assert sorted(p.name for p in share.iterdir()) == sorted(names), "a CREATE left a file"
        after = {name: (xattrs(share / name), os.stat(share / name).st_mode) for name in names}
        assert after == before, "a failed write changed a file"

        filler.unlink()
        freed = attempts()
        assert freed == {what: 0 for what in freed}, freed
        assert stream.read(0, 3) == b"new"
        assert os.getxattr(share / "twin.txt", "user.DosStream.meta:$DATA") == b"old\0"
        assert "user.Author" in xattrs(share / "ea.txt")
        assert {"made.txt", "made-with-sd.txt"} <= {p.name for p in share.iterdir()}
    finally:
        raw.close()
        conn.disconnect()
        stop(server)
