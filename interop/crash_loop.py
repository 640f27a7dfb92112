"""Issue 22 item 3, crash consistency: kills smb3d with SIGKILL at a random point while an
smbprotocol client writes, FLUSHing after some writes and writing through in others, to a file
it holds a persistent handle on (a continuous-availability share) and to a named stream of it,
setting the file's DOS attributes and NT ACL after each write, restarts it, and checks that every write acknowledged after a successful FLUSH, or written
through, is in the file with its data, that the stream holds one whole record (streams live
in an xattr, rewritten whole), that the DOS attributes and the ACL are each one value the client
set, whole (the last answered or the one in flight), and that the client reclaims its persistent handle and reads the
acknowledged data through it. Run as `python3 interop/crash_loop.py [ITERATIONS]` (500 for the
record in docs/reliability.md); interop/test_crash_loop.py runs 50.

A SIGKILL of the process keeps what the kernel already holds, so this shows that nothing is
acknowledged before it reaches the kernel and that the server comes back over the same files;
it cannot show that the data reached the disk (that needs power-loss emulation, which device
mapper's log-writes target would give and this machine lacks)."""

import os
import random
import struct
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import conftest  # noqa: E402
from smbprotocol.open import CreateDisposition  # noqa: E402
from smbprotocol.open import FilePipePrinterAccessMask, SMB2SetInfoRequest  # noqa: E402
from test_persistent import RW, connect, create, persistent_reconnect, persistent_request  # noqa: E402

import secdesc  # noqa: E402
import smb2raw  # noqa: E402

CHUNK = 4096


def chunk(iteration, index):
    return (b"%08d:%08d|" % (iteration, index)) * (CHUNK // 18) + b"\n" * (CHUNK % 18)


def record(iteration, index):
    return (b"%08d:%08d;" % (iteration, index)) * 64


# HIDDEN, SYSTEM, ARCHIVE and NOT_CONTENT_INDEXED in turn: no value is a part of the next.
ATTRIBUTES = [0x02, 0x04, 0x20 | 0x02, 0x2000 | 0x04]
FILE_INFO, FILE_BASIC_INFORMATION = 1, 4


def attributes(index):
    return ATTRIBUTES[index % len(ATTRIBUTES)]


def marker(iteration, index):
    """A SID naming the write it was set after, in the ACL's second ACE."""
    return "S-1-5-21-%d-%d-22" % (iteration + 1, index + 1)


def acl_of(iteration, index):
    return secdesc.descriptor(dacl=[secdesc.ace(secdesc.EVERYONE, 0x001F01FF),
                                    secdesc.ace(marker(iteration, index), 0x001200A9)])


def set_info(tree, handle, info_type, info_class, buffer, additional=0):
    """SET_INFO through `handle`; raises when the server refuses or is gone."""
    request = SMB2SetInfoRequest()
    request["info_type"] = info_type
    request["file_info_class"] = info_class
    request["additional_information"] = additional
    request["file_id"] = handle.file_id
    request["buffer"] = buffer
    conn = tree.session.connection
    conn.receive(conn.send(request, sid=tree.session.session_id, tid=tree.tree_connect_id))


class Setting:
    """One piece of metadata the writer sets: the index of the last value answered and of the
    one sent (None: none yet)."""

    def __init__(self):
        self.done = self.sent = None

    def candidates(self):
        return {self.done, self.sent}


class Writer:
    """Writes chunks to crash-<iteration>.bin, and a record to its stream, until the
    connection dies; `acknowledged` gets each chunk index whose durability was acknowledged
    (a FLUSH after it, or written through)."""

    def __init__(self, server, iteration, client_guid):
        self.server, self.iteration, self.client_guid = server, iteration, client_guid
        self.acknowledged, self.stream_written = [], 0
        self.attributes, self.acl = Setting(), Setting()
        self.file_id = self.create_guid = None
        self.stop = threading.Event()

    def name(self):
        return "crash-%d.bin" % self.iteration

    def run(self):
        try:
            conn, tree = connect(self.server, self.client_guid)
            request, create_guid = persistent_request()
            access = RW | FilePipePrinterAccessMask.WRITE_DAC | FilePipePrinterAccessMask.READ_CONTROL
            f, _ = create(tree, [request], CreateDisposition.FILE_OVERWRITE_IF, name=self.name(), access=access)
            self.file_id, self.create_guid = f.file_id, create_guid
            stream, _ = create(tree, None, CreateDisposition.FILE_OVERWRITE_IF, name=self.name() + ":meta")
            pending = []
            index = 0
            while not self.stop.is_set():
                through = index % 3 == 0
                f.write(chunk(self.iteration, index), index * CHUNK, write_through=through)
                if through:
                    self.acknowledged.append(index)
                else:
                    pending.append(index)
                    if len(pending) == 4:
                        f.flush()
                        self.acknowledged.extend(pending)
                        pending.clear()
                stream.write(record(self.iteration, index), 0)
                self.stream_written = index + 1
                self.attributes.sent = index
                basic = struct.pack("<QQQQII", 0, 0, 0, 0, attributes(index), 0)
                set_info(tree, f, FILE_INFO, FILE_BASIC_INFORMATION, basic)
                self.attributes.done = index
                self.acl.sent = index
                set_info(tree, f, secdesc.SECURITY_INFO, 0, acl_of(self.iteration, index), secdesc.DACL)
                self.acl.done = index
                index += 1
        except Exception:  # the server was killed under the client: expected
            pass

    def reclaim(self):
        """Reconnects the persistent handle after the restart; returns the bytes of the
        acknowledged chunks read through it."""
        conn, tree = connect(self.server, self.client_guid)
        try:
            f, _ = create(tree, [persistent_reconnect(self.file_id, self.create_guid)],
                          name=self.name())
            end = (max(self.acknowledged) + 1) * CHUNK if self.acknowledged else 0
            data = f.read(0, end) if end else b""
            f.close()
            return data
        finally:
            conn.disconnect()


def restart(server):
    log = open(server.log, "ab")
    server.proc = subprocess.Popen([str(conftest.BINARY), "serve", "-c", str(server.config)], stdout=log,
                                   stderr=subprocess.STDOUT)
    conftest.wait_for_port(server.port, server.proc)


def acknowledged_intact(data, iteration, acknowledged):
    for index in acknowledged:
        got = data[index * CHUNK:(index + 1) * CHUNK]
        assert got == chunk(iteration, index), "iteration %d: acknowledged chunk %d lost or torn" % (
            iteration, index)


def stream_intact(server, w):
    """The stream holds one whole record of those written (or the last one not yet answered)."""
    try:
        value = os.getxattr(server.share_dir / w.name(), "user.DosStream.meta:$DATA")
    except OSError as e:
        assert w.stream_written == 0, "iteration %d: the stream is gone: %s" % (w.iteration, e)
        return
    # The stream's bytes, then the one NUL byte streams_xattr's format ends with.
    assert value.endswith(b"\0"), "iteration %d: stream value without its NUL: %r" % (w.iteration, value[-8:])
    candidates = {record(w.iteration, i) for i in range(max(w.stream_written - 1, 0), w.stream_written + 1)}
    assert value[:-1] in candidates | ({b""} if w.stream_written <= 1 else set()), \
        "iteration %d: stream torn or stale after %d writes: %r" % (w.iteration, w.stream_written, value[:40])


def metadata_intact(server, w):
    """The file's DOS attributes and ACL, read through a new open, are each a whole value the
    client set last or had in flight (or the new file's own, before the first was answered)."""
    c = secdesc.Client(server.port, server.user, server.password)
    try:
        r, fid = c.open(w.name(), access=0x00020080)
        assert fid is not None, "iteration %d: cannot open the file: %s" % (w.iteration, r.name)
        q = c.c.request(smb2raw.QUERY_INFO, smb2raw.query_info_body(fid, FILE_INFO, FILE_BASIC_INFORMATION, 40))
        assert q.status == 0, "iteration %d: basic information: %s" % (w.iteration, q.name)
        off, ln = struct.unpack_from("<HI", q.body, 2)
        got = struct.unpack_from("<I", q.pdu, off + 32)[0]
        allowed = {attributes(i) if i is not None else None for i in w.attributes.candidates()}
        assert got in allowed or (None in allowed and got & 0x2006 == 0), \
            "iteration %d: DOS attributes 0x%x, expected one of %s" % (w.iteration, got, allowed)
        status, sd = c.get(fid, secdesc.DACL)
        c.c.close_file(fid)
        assert sd is not None, "iteration %d: the ACL cannot be read: %s" % (w.iteration, status)
        dacl = secdesc.decode(sd)["dacl"] or []
        markers = {sid for (_, _, _, sid) in dacl if sid.startswith("S-1-5-21-%d-" % (w.iteration + 1))}
        expected = {marker(w.iteration, i) for i in w.acl.candidates() if i is not None}
        if None in w.acl.candidates() and not markers:
            return
        assert len(markers) == 1 and markers <= expected and len(dacl) == 2, \
            "iteration %d: ACL %s, expected one of %s" % (w.iteration, dacl, expected)
    finally:
        c.close()


def run(iterations, tmp=None, seed=None):
    """Runs the loop; returns (writes acknowledged and checked, handles reclaimed, kills)."""
    rng = random.Random(seed)
    tmp = Path(tmp or tempfile.mkdtemp(prefix="smb3d-crash-"))
    state = tmp / "state"
    server = conftest.start_smb3d(tmp, extra_config='state_dir = "%s"' % state,
                                  shares={"share": {"path": str(tmp / "share"), "continuous_availability": True}})
    checked = reclaimed = metadata_checked = 0
    client_guid = uuid.uuid4()
    try:
        for iteration in range(iterations):
            w = Writer(server, iteration, client_guid)
            t = threading.Thread(target=w.run)
            t.start()
            time.sleep(rng.uniform(0.05, 0.4))
            server.proc.send_signal(signal.SIGKILL)
            server.proc.wait()
            w.stop.set()
            t.join(timeout=30)
            assert not t.is_alive(), "the client did not notice the kill"
            restart(server)
            if w.file_id is None:
                continue
            acknowledged_intact((server.share_dir / w.name()).read_bytes(), iteration, w.acknowledged)
            stream_intact(server, w)
            acknowledged_intact(w.reclaim(), iteration, w.acknowledged)
            metadata_intact(server, w)
            checked += len(w.acknowledged)
            metadata_checked += 1
            reclaimed += 1
            (server.share_dir / w.name()).unlink()
        return checked, reclaimed, iterations, metadata_checked
    finally:
        conftest.stop(server)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    started = time.time()
    writes, reclaimed, kills, metadata = run(n)
    print("%d kills, %d acknowledged writes checked, none lost or torn, %d persistent handles reclaimed, "
          "DOS attributes and ACL whole after %d restarts, %.0f s"
          % (kills, writes, reclaimed, metadata, time.time() - started))
