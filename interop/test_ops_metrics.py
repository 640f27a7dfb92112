"""Issue 9, check 4: `curl` of /metrics during a transfer shows the byte and request counters
increasing."""

import re
import socket
import subprocess
import threading
import time

import pytest
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, Open, ShareAccess)

from conftest import start_smb3d, stop
from smbprotocol_client import connect


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def metered(tmp_path):
    port = free_port()
    server = start_smb3d(tmp_path, extra_config='metrics = true\nmetrics_listen = "127.0.0.1:%d"\n' % port)
    yield server, port
    stop(server)


def scrape(port):
    r = subprocess.run(["curl", "-sS", "--fail", "http://127.0.0.1:%d/metrics" % port],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    values = {}
    for line in r.stdout.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


def test_counters_increase_during_a_transfer(metered):
    server, port = metered
    conn, session, tree = connect(server)
    handle = Open(tree, "transfer.bin")
    handle.create(ImpersonationLevel.Impersonation,
                  FilePipePrinterAccessMask.GENERIC_READ | FilePipePrinterAccessMask.GENERIC_WRITE,
                  FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                  CreateDisposition.FILE_OVERWRITE_IF, CreateOptions.FILE_NON_DIRECTORY_FILE)
    done = threading.Event()
    started = threading.Event()
    chunk = b"x" * (256 * 1024)
    errors = []

    def transfer():
        try:
            offset = 0
            while not done.is_set():
                handle.write(chunk, offset)
                assert handle.read(offset, len(chunk)) == chunk
                offset = (offset + len(chunk)) % (64 * 1024 * 1024)
                started.set()
        except Exception as e:  # reported by the main thread
            errors.append(e)
            started.set()

    worker = threading.Thread(target=transfer)
    worker.start()
    try:
        assert started.wait(30)
        before = scrape(port)
        time.sleep(0.5)
        after = scrape(port)
    finally:
        done.set()
        worker.join(60)
        handle.close()
        conn.disconnect()
    assert not errors, errors
    for name in ("smb3d_written_bytes_total", "smb3d_read_bytes_total", "smb3d_network_received_bytes_total",
                 "smb3d_network_sent_bytes_total", 'smb3d_requests_total{command="WRITE"}',
                 'smb3d_requests_total{command="READ"}', 'smb3d_request_duration_seconds_count{command="WRITE"}'):
        assert after[name] > before[name] > 0, (name, before.get(name), after.get(name))
    assert after["smb3d_connections"] == 1
    assert after["smb3d_opens"] == 1
    sessions = [k for k in after if k.startswith("smb3d_sessions{")]
    assert len(sessions) == 1 and re.search(r'dialect="SMB3_11"', sessions[0]), sessions
