#!/usr/bin/env python3
"""The client side of bench/cluster's failover rows, run inside the client namespace.

Before the fault it proves that ADDRESS serves SMB and, with --reclaim, opens a persistent
handle (durable v2, MS-SMB2 2.2.13.2.11, on a continuously available share) through ADDRESS
and writes random data to it. Then it prints "ready" and waits for one line on stdin: the
CLOCK_MONOTONIC time of the fault (one clock for every namespace). From then on two threads
measure, each until its own success or the deadline:

- the anchor's probe: a TCP connect to port 445 and `smbclient -L`, every --interval seconds;
- with --reclaim, a client reconnecting to ADDRESS with the same client GUID and the
  DURABLE_HANDLE_RECONNECT_V2 context (MS-SMB2 3.2.4.3.5), which must read back its data.

It prints one JSON line: seconds from the fault to each success (null when none came within
--timeout), the probes and reconnects tried, and the last error of each.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid

SMB_PORT = 445


def probe(address, user, password, share):
    """The anchor's probe: a TCP connect, then a share listing that must name the share."""
    try:
        with socket.create_connection((address, SMB_PORT), timeout=1):
            pass
    except OSError as e:
        return "connect: %s" % e
    try:
        r = subprocess.run(["smbclient", "-L", "//%s" % address, "-U", "%s%%%s" % (user, password), "-m", "SMB3"],
                           capture_output=True, text=True, timeout=3)
    except subprocess.TimeoutExpired:
        return "smbclient -L timed out"
    for line in r.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] == share and fields[1] == "Disk":
            return None
    return "smbclient -L: %s" % (r.stdout + r.stderr).strip().splitlines()[-1:]


class Persistent:
    """A persistent handle held through one address, and its reclaim after a fault."""

    def __init__(self, address, user, password, share):
        # Imported here: the Samba rows run without smbprotocol.
        from smbprotocol.connection import Capabilities, Connection
        from smbprotocol.create_contexts import (CreateContextName, DurableHandleFlags,
                                                 SMB2CreateContextRequest, SMB2CreateDurableHandleReconnectV2,
                                                 SMB2CreateDurableHandleRequestV2, SMB2CreateDurableHandleResponseV2)
        from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, ImpersonationLevel, Open,
                                      ShareAccess)
        from smbprotocol.session import Session
        from smbprotocol.tree import TreeConnect
        self.m = dict(locals())
        self.address, self.user, self.password, self.share = address, user, password, share
        self.client_guid = uuid.uuid4()
        self.create_guid = uuid.uuid4()
        self.name = "failover-%s.bin" % uuid.uuid4().hex[:8]
        self.data = os.urandom(64 * 1024)
        self.file_id = None
        self.conn = None

    def _tree(self, timeout):
        m = self.m
        conn = m["Connection"](self.client_guid, self.address, SMB_PORT, require_signing=True)
        # Windows asks for persistent handles in its NEGOTIATE; smbprotocol only when told.
        conn.client_capabilities |= m["Capabilities"].SMB2_GLOBAL_CAP_PERSISTENT_HANDLES
        conn.connect(timeout=timeout)
        try:
            session = m["Session"](conn, self.user, self.password)
            session.connect()
            tree = m["TreeConnect"](session, r"\\%s\%s" % (self.address, self.share))
            tree.connect()
        except BaseException:
            conn.disconnect()
            raise
        return conn, tree

    def _create(self, tree, context, disposition):
        m = self.m
        wrapped = m["SMB2CreateContextRequest"]()
        wrapped["buffer_name"] = context[0]
        wrapped["buffer_data"] = context[1]
        handle = m["Open"](tree, self.name)
        contexts = handle.create(m["ImpersonationLevel"].Impersonation, 0x12019F,
                                 m["FileAttributes"].FILE_ATTRIBUTE_NORMAL,
                                 m["ShareAccess"].FILE_SHARE_READ | m["ShareAccess"].FILE_SHARE_WRITE,
                                 disposition, m["CreateOptions"].FILE_NON_DIRECTORY_FILE,
                                 create_contexts=[wrapped])
        return handle, contexts

    def hold(self):
        m = self.m
        self.conn, tree = self._tree(10)
        request = m["SMB2CreateDurableHandleRequestV2"]()
        request["timeout"] = 60000
        request["flags"] = m["DurableHandleFlags"].SMB2_DHANDLE_FLAG_PERSISTENT
        request["create_guid"] = self.create_guid
        handle, contexts = self._create(tree, (m["CreateContextName"].SMB2_CREATE_DURABLE_HANDLE_REQUEST_V2, request),
                                        m["CreateDisposition"].FILE_OVERWRITE_IF)
        granted = [c for c in contexts or [] if isinstance(c, m["SMB2CreateDurableHandleResponseV2"])]
        if not granted or granted[0]["flags"].get_value() != m["DurableHandleFlags"].SMB2_DHANDLE_FLAG_PERSISTENT:
            raise RuntimeError("the server granted no persistent handle on share %s" % self.share)
        handle.write(self.data, 0)
        self.file_id = handle.file_id

    def reclaim(self):
        """One reconnect and reclaim; raises on any failure."""
        m = self.m
        conn, tree = self._tree(1)
        try:
            reconnect = m["SMB2CreateDurableHandleReconnectV2"]()
            reconnect["file_id"] = self.file_id
            reconnect["create_guid"] = self.create_guid
            reconnect["flags"] = m["DurableHandleFlags"].SMB2_DHANDLE_FLAG_PERSISTENT
            handle, _ = self._create(tree, (m["CreateContextName"].SMB2_CREATE_DURABLE_HANDLE_RECONNECT_V2, reconnect),
                                     m["CreateDisposition"].FILE_OPEN)
            if handle.read(0, len(self.data)) != self.data:
                raise RuntimeError("the reclaimed handle read other data")
            handle.close()
        finally:
            conn.disconnect()


def until(deadline, interval, attempt, result, key):
    """Calls attempt() every `interval` s until it returns None (success) or the deadline."""
    tries, last = 0, None
    while time.monotonic() < deadline:
        started = time.monotonic()
        tries += 1
        try:
            last = attempt()
        except Exception as e:  # noqa: BLE001 - every failure is a try that did not succeed yet
            last = "%s: %s" % (type(e).__name__, e)
        if last is None:
            result[key] = time.monotonic()
            break
        time.sleep(max(0.0, interval - (time.monotonic() - started)))
    result[key + "_tries"] = tries
    result[key + "_error"] = last


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--address", required=True)
    p.add_argument("--user", required=True)
    p.add_argument("--password", required=True)
    p.add_argument("--share", default="share", help="the share the probe expects in the listing")
    p.add_argument("--reclaim", metavar="SHARE", help="hold a persistent handle on SHARE and time its reclaim")
    p.add_argument("--interval", type=float, default=0.2, help="seconds between probes (and reconnects)")
    p.add_argument("--timeout", type=float, default=60, help="seconds after the fault to give up")
    args = p.parse_args()

    # A loaded machine can make one listing miss its 3 s: a few tries before the fault.
    before = {}
    until(time.monotonic() + 20, 1, lambda: probe(args.address, args.user, args.password, args.share), before, "smb")
    if "smb" not in before:
        sys.exit("cluster_client: %s does not serve SMB before the fault: %s" % (args.address, before["smb_error"]))
    held = None
    if args.reclaim:
        held = Persistent(args.address, args.user, args.password, args.reclaim)
        held.hold()
    print("ready", flush=True)
    line = sys.stdin.readline()
    if not line.strip():
        sys.exit("cluster_client: no fault time on stdin")
    fault = float(line)
    deadline = fault + args.timeout
    result = {}
    threads = [threading.Thread(target=until, args=(deadline, args.interval,
                                                    lambda: probe(args.address, args.user, args.password, args.share),
                                                    result, "smb"))]
    if held:
        # The connection that held the handle is left as it is (its peer was killed or cut
        # off), as a client that lost its server would.
        threads.append(threading.Thread(target=until, args=(deadline, args.interval, held.reclaim, result, "reclaim")))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out = {"smb": None, "reclaim": None}
    for key in ("smb", "reclaim"):
        if key in result:
            out[key] = round(result[key] - fault, 3)
        if key + "_tries" in result:
            out[key + "_tries"] = result[key + "_tries"]
            out[key + "_error"] = result[key + "_error"]
    print(json.dumps(out), flush=True)
    # The held connection's receiving thread may still wait on a silent peer.
    os._exit(0)


if __name__ == "__main__":
    main()
