"""Issue 23 item 11: a local process holding a Linux file lease on a shared file (as Samba's
smbd with `kernel oplocks` and the kernel's NFS server for its delegations take them). An SMB
open of the file tells the kernel to break the lease, waits, without holding up the
connection's other requests, until the holder lets go, and then succeeds; before, smb3d
answered STATUS_SHARING_VIOLATION at once (the open is non-blocking, so it met EWOULDBLOCK)."""

import subprocess
import sys
import threading
import time

from smbprotocol.exceptions import SMBResponseException

from smbprotocol_client import connect, create

HOLDER = r"""
import fcntl, os, signal, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGIO])
fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
print("ready", flush=True)
# The kernel's break notice (SIGIO by default); without one within 10 s, nothing broke it.
if signal.sigtimedwait([signal.SIGIO], 10) is None:
    sys.exit(3)
print("broken", flush=True)
time.sleep(2)
fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
os.close(fd)
"""


def test_an_smb_open_waits_for_a_local_lease_holder_to_let_go(smb3d):
    conn, _, tree = connect(smb3d)
    try:
        create(tree, "leased.dat").close()
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(smb3d.share_dir / "leased.dat")],
                                  stdout=subprocess.PIPE, text=True)
        assert holder.stdout.readline() == "ready\n"
        outcome = []

        def open_leased():
            started = time.monotonic()
            try:
                create(tree, "leased.dat").close()
                outcome.append(("opened", time.monotonic() - started))
            except SMBResponseException as e:
                outcome.append((hex(e.status), time.monotonic() - started))

        opener = threading.Thread(target=open_leased)
        opener.start()
        assert holder.stdout.readline() == "broken\n"
        # The waiting open holds up nothing else on the connection.
        started = time.monotonic()
        create(tree, "other.dat").close()
        assert time.monotonic() - started < 1.5
        assert opener.is_alive()
        opener.join(30)
        assert holder.wait(10) == 0
        assert len(outcome) == 1 and outcome[0][0] == "opened", outcome
        assert outcome[0][1] >= 1.5, "the open did not wait for the holder: %r" % outcome
    finally:
        conn.disconnect()
