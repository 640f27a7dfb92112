"""Issue 16, item 2: a client that asks for large responses and never reads them. It signs
its requests (so READ data is read into memory to be signed, never sent from the file), sends
64 READs of 8 MiB of a sparse file, as many as its 8,192 credits pay for, and reads nothing.

The server stops reading from such a connection once the responses its requests may produce
fill the connection's in-flight budget (`max_inflight_bytes`, 64 MiB by default): each READ's
credit charge holds room for its 8 MiB until the socket has taken the response. Its memory
grows by that budget, one more 8 MiB response and the heap glibc keeps for reuse (the server
sets the trim threshold to 64 MiB), not by the 512 MiB the READs ask for; meanwhile another
client is served."""

import struct
import threading
import time

import smb2raw as s
from conftest import start_smb3d, stop
from hostile_cases import SERVED

MIB = 1024 * 1024
READ_LEN = 8 * MIB
# One credit pays for 64 KiB (MS-SMB2 3.3.5.2.5); the server grants at most 8,192 credits.
CHARGE = READ_LEN // 65536
READS = 8192 // CHARGE
# The budget (64 MiB), one more response (8 MiB), the heap glibc keeps (64 MiB) and slack for
# the other client's work: well below the 512 MiB the READs ask for.
RSS_BOUND_KIB = 200 * 1024


def test_unread_responses_do_not_grow_memory(tmp_path):
    server = start_smb3d(tmp_path)
    (server.share_dir / "served.txt").write_bytes(SERVED)
    with open(server.share_dir / "sparse.bin", "wb") as f:
        f.truncate(1 << 30)
    server.own(server.share_dir / "served.txt", server.share_dir / "sparse.bin")
    target = s.Target(server.port, server.user, server.password)
    pid = server.proc.pid
    try:
        assert s.served(target)
        c = s.connect(target, sign_all=True)
        r, fid = c.create("sparse.bin")
        assert r.status == 0, r.name
        # Credits for all the READs at once.
        r = c.request(s.ECHO, s.RESERVED4, credits=8192)
        assert r.status == 0, r.name
        idle = s.rss_kib(pid)
        reads = b"".join(
            struct.pack(">I", len(p)) + p
            for p in (c.pdu(s.READ, s.read_body(fid, 0, READ_LEN), credit_charge=CHARGE, credits=CHARGE)
                      for _ in range(READS)))
        # The server may stop reading before it has all of them: send from another thread.
        sender = threading.Thread(target=c.send_raw, args=(reads,), daemon=True)
        sender.start()
        peak = idle
        deadline = time.time() + 6
        while time.time() < deadline:
            peak = max(peak, s.rss_kib(pid))
            time.sleep(0.2)
        assert s.served(target), "another client was not served"
        peak = max(peak, s.rss_kib(pid))
        print("idle %d KiB, peak %d KiB" % (idle, peak))
        assert server.alive(), server.log_tail()
        assert peak - idle <= RSS_BOUND_KIB, "RSS grew by %d KiB for %d unread 8 MiB READs" % (peak - idle, READS)
        c.close()
    finally:
        stop(server)
