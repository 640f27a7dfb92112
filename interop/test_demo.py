"""README command 1: `smb3d serve --demo` prints a working smbclient command."""

import re
import subprocess
import time

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
