"""README command 1: `smb3d serve --demo` prints a working smbclient command."""

import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import BINARY, free_port, wait_for_port


def test_demo_prints_working_command(tmp_path):
    port = free_port()
    proc = subprocess.Popen([str(BINARY), "serve", "--demo", "--dir", str(tmp_path), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for_port(port, proc)
        line = ""
        deadline = time.time() + 10
        while "smbclient" not in line and time.time() < deadline:
            line = proc.stdout.readline()
        m = re.search(r"(smbclient //127\.0\.0\.1/demo -p (\d+) -U (\S+))", line)
        assert m, line
        assert int(m.group(2)) == port
        (tmp_path / "hello.txt").write_text("hello demo")
        r = subprocess.run(m.group(1).split() + ["-c", "get hello.txt -"], capture_output=True, text=True, timeout=60)
        assert "hello demo" in r.stdout, r.stdout + r.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def start_demo(*extra):
    """Starts `serve --demo`; returns the process and its printed lines up to the status one."""
    port = free_port()
    proc = subprocess.Popen([str(BINARY), "serve", "--demo", "--port", str(port), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for_port(port, proc)
    lines = []
    deadline = time.time() + 10
    while not any("status with" in line for line in lines) and time.time() < deadline:
        lines.append(proc.stdout.readline())
    return proc, "".join(lines)


def demo_state_dir(printed):
    m = re.search(r"status with: smb3d status --socket (\S+)/admin\.sock", printed)
    assert m, printed
    return Path(m.group(1))


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_the_demo_removes_its_own_directory_when_it_stops(stop):
    proc, printed = start_demo()
    state = demo_state_dir(printed)
    assert (state / "share").is_dir() and (state / "users").is_file()
    proc.send_signal(stop)
    assert proc.wait(timeout=15) == 0, proc.stdout.read()
    assert not state.exists(), sorted(p.name for p in state.iterdir())


def test_the_demo_keeps_the_administrator_s_dir(tmp_path):
    (tmp_path / "kept.txt").write_text("mine")
    proc, printed = start_demo("--dir", str(tmp_path))
    state = demo_state_dir(printed)
    proc.terminate()
    assert proc.wait(timeout=15) == 0, proc.stdout.read()
    assert not state.exists()
    assert (tmp_path / "kept.txt").read_text() == "mine"
