"""Issue 22 item 7: SIGTERM (systemctl stop, and the stop half of a restart or upgrade) while
clients write. A write the server is in the middle of (stalled 2 s by the fault-injecting
layer) is finished and answered before the server exits; a persistent handle on a
continuous-availability share is reclaimed from the new process, with its data.

How a new binary takes over (docs/reliability.md): systemd stops the old process (SIGTERM) and
starts the new one (`systemctl restart`, or `Restart=` after a crash); clients see their
connection drop and reconnect, durable v2 persistent handles come back from the state
directory. There is no socket hand-over between the processes."""

import platform
import signal
import struct
import time
import uuid
from pathlib import Path

from smbprotocol.open import CreateDisposition

import smb2raw
from conftest import start_smb3d, stop
from test_faults import rules
from test_persistent import connect, create, persistent_reconnect, persistent_request, restart


# nanosleep and clock_nanosleep, the syscalls std::thread::sleep makes, by architecture.
SLEEP_SYSCALLS = {"x86_64": {"35", "230"}, "aarch64": {"101", "115"}}[platform.machine()]


def sleeping_threads(pid):
    """The server's threads asleep in nanosleep now: the allocator's trim thread always is."""
    asleep = set()
    for task in Path("/proc/%d/task" % pid).iterdir():
        try:
            if (task / "syscall").read_text().split(" ", 1)[0] in SLEEP_SYSCALLS:
                asleep.add(task.name)
        except OSError:
            continue
    return asleep


def in_injected_delay(pid, asleep_before, timeout=20.0):
    """Whether a thread of the server that was not asleep before the request sleeps (FaultVfs'
    delay) within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sleeping_threads(pid) - asleep_before:
            return True
        time.sleep(0.02)
    return False


def test_sigterm_answers_the_write_in_flight_then_exits(tmp_path):
    server = start_smb3d(tmp_path, extra_config=rules("share", {"ops": ["write"], "path": "slow*", "delay_ms": 2000}))
    try:
        # A raw client: it reads every byte the server sent before its FIN. smbprotocol reports
        # the connection closed to a waiting caller when its receiver sees the FIN first, even
        # with the response received (a race the test lost under load).
        c = smb2raw.connect(smb2raw.Target(server.port, server.user, server.password))
        r, fid = c.create("slow.bin", access=smb2raw.READ_WRITE_FILE, disposition=smb2raw.FILE_OVERWRITE_IF)
        assert r.status == 0, r.name
        data = b"in flight" * 455
        # The trim thread sleeps all along (src/allocator.rs): taken for the delay, it let the
        # signal go before the WRITE arrived.
        asleep_before = sleeping_threads(server.proc.pid)
        c.send(c.pdu(smb2raw.WRITE, smb2raw.write_body(fid, 0, data)))
        # The write is in flight once the server sleeps in the injected delay; a fixed pause
        # sent the signal before the request arrived when the machine was busy.
        assert in_injected_delay(server.proc.pid, asleep_before), "the write never reached the delay"
        server.proc.send_signal(signal.SIGTERM)
        r = c.recv_responses(timeout=30)[0]
        assert (r.name, r.body[4:8]) == ("STATUS_SUCCESS", struct.pack("<I", len(data))), \
            "the write in flight was not answered as done: %s" % r.name
        assert server.proc.wait(timeout=30) == 0, server.log_tail()
        assert (server.share_dir / "slow.bin").read_bytes() == data
        log = server.log.read_text(errors="replace")
        assert "SIGTERM: stopping" in log and "stopped" in log
    finally:
        stop(server)


def test_a_persistent_handle_outlives_a_graceful_restart(tmp_path):
    state = tmp_path / "state"
    server = start_smb3d(tmp_path, extra_config='state_dir = "%s"' % state,
                         shares={"share": {"path": str(tmp_path / "share"), "continuous_availability": True}})
    try:
        client_guid = uuid.uuid4()
        conn, tree = connect(server, client_guid)
        request, create_guid = persistent_request()
        f, _ = create(tree, [request], CreateDisposition.FILE_OVERWRITE_IF, name="kept.bin")
        f.write(b"before the restart", 0)
        f.flush()
        file_id = f.file_id
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(timeout=30) == 0, server.log_tail()
        # What restart() does after its kill: start the server again on the same state.
        restart(server)
        conn2, tree2 = connect(server, client_guid)
        try:
            again, _ = create(tree2, [persistent_reconnect(file_id, create_guid)],
                              name="kept.bin")
            assert again.read(0, 18) == b"before the restart"
            again.close()
        finally:
            conn2.disconnect()
    finally:
        stop(server)
