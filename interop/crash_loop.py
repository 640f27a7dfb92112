"""Issue 22 item 3, crash consistency: kills smb3d with SIGKILL at a random point while an
smbprotocol client writes, FLUSHing after some writes and writing through in others, to a file
it holds a persistent handle on (a continuous-availability share) and to a named stream of it,
restarts it, and checks that every write acknowledged after a successful FLUSH, or written
through, is in the file with its data, that the stream holds one whole record (streams live
in an xattr, rewritten whole), and that the client reclaims its persistent handle and reads the
acknowledged data through it. Run as `python3 interop/crash_loop.py [ITERATIONS]` (500 for the
record in docs/reliability.md); interop/test_crash_loop.py runs 50.

A SIGKILL of the process keeps what the kernel already holds, so this shows that nothing is
acknowledged before it reaches the kernel and that the server comes back over the same files;
it cannot show that the data reached the disk (that needs power-loss emulation, which device
mapper's log-writes target would give and this machine lacks)."""

import os
import random
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
from smbprotocol.create_contexts import (CreateContextName, DurableHandleFlags,  # noqa: E402
                                         SMB2CreateDurableHandleReconnectV2)
from smbprotocol.open import CreateDisposition  # noqa: E402
from test_persistent import connect, context, create, persistent_request  # noqa: E402

CHUNK = 4096


def chunk(iteration, index):
    return (b"%08d:%08d|" % (iteration, index)) * (CHUNK // 18) + b"\n" * (CHUNK % 18)


def record(iteration, index):
    return (b"%08d:%08d;" % (iteration, index)) * 64


class Writer:
    """Writes chunks to crash-<iteration>.bin, and a record to its stream, until the
    connection dies; `acknowledged` gets each chunk index whose durability was acknowledged
    (a FLUSH after it, or written through)."""

    def __init__(self, server, iteration, client_guid):
        self.server, self.iteration, self.client_guid = server, iteration, client_guid
        self.acknowledged, self.stream_written = [], 0
        self.file_id = self.create_guid = None
        self.stop = threading.Event()

    def name(self):
        return "crash-%d.bin" % self.iteration

    def run(self):
        try:
            conn, tree = connect(self.server, self.client_guid)
            request, create_guid = persistent_request()
            f, _ = create(tree, [request], CreateDisposition.FILE_OVERWRITE_IF, name=self.name())
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
                index += 1
        except Exception:  # the server was killed under the client: expected
            pass

    def reclaim(self):
        """Reconnects the persistent handle after the restart; returns the bytes of the
        acknowledged chunks read through it."""
        conn, tree = connect(self.server, self.client_guid)
        try:
            reconnect = SMB2CreateDurableHandleReconnectV2()
            reconnect["file_id"] = self.file_id
            reconnect["create_guid"] = self.create_guid
            reconnect["flags"] = DurableHandleFlags.SMB2_DHANDLE_FLAG_PERSISTENT
            f, _ = create(tree, [context(CreateContextName.SMB2_CREATE_DURABLE_HANDLE_RECONNECT_V2, reconnect)],
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


def run(iterations, tmp=None, seed=None):
    """Runs the loop; returns (writes acknowledged and checked, handles reclaimed, kills)."""
    rng = random.Random(seed)
    tmp = Path(tmp or tempfile.mkdtemp(prefix="smb3d-crash-"))
    state = tmp / "state"
    server = conftest.start_smb3d(tmp, extra_config='state_dir = "%s"' % state,
                                  shares={"share": {"path": str(tmp / "share"), "continuous_availability": True}})
    checked = reclaimed = 0
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
            checked += len(w.acknowledged)
            reclaimed += 1
            (server.share_dir / w.name()).unlink()
        return checked, reclaimed, iterations
    finally:
        conftest.stop(server)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    started = time.time()
    writes, reclaimed, kills = run(n)
    print("%d kills, %d acknowledged writes checked, none lost or torn, %d persistent handles reclaimed, %.0f s"
          % (kills, writes, reclaimed, time.time() - started))
