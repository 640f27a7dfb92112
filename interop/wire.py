"""Reading the SMB frames of a TCP capture, to check what actually crossed the wire."""

import subprocess
import time


def capture(port, path):
    """Starts tshark on the loopback port; returns the process (stop it with stop_capture)."""
    proc = subprocess.Popen(["tshark", "-q", "-B", "64", "-i", "lo", "-f", "tcp port %d" % port, "-w", str(path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # tshark prints "Capturing on" as it starts; the capture is live a moment later.
    while True:
        line = proc.stderr.readline()
        if not line or b"Capturing on" in line:
            break
    time.sleep(1.0)
    return proc


def stop_capture(proc):
    proc.terminate()
    proc.wait(timeout=30)


def streams(path):
    """The two byte streams (client→server, server→client) of the first TCP connection."""
    out = subprocess.run(["tshark", "-r", str(path), "-q", "-z", "follow,tcp,raw,0"],
                         capture_output=True, text=True, check=True).stdout
    to_server, to_client = bytearray(), bytearray()
    for line in out.splitlines():
        if not line or line.startswith(("=", "Follow", "Filter", "Node")):
            continue
        if line.startswith("\t"):
            to_client += bytes.fromhex(line.strip())
        else:
            to_server += bytes.fromhex(line.strip())
    return bytes(to_server), bytes(to_client)


def frames(stream):
    """Splits a Direct-TCP byte stream into SMB messages."""
    out, pos = [], 0
    while pos + 4 <= len(stream):
        length = int.from_bytes(stream[pos + 1:pos + 4], "big")
        out.append(stream[pos + 4:pos + 4 + length])
        pos += 4 + length
    return out


def is_session_setup_success(frame):
    """A plain SMB2 SESSION_SETUP response with STATUS_SUCCESS."""
    return (frame[:4] == b"\xfeSMB" and int.from_bytes(frame[12:14], "little") == 1
            and int.from_bytes(frame[8:12], "little") == 0)
