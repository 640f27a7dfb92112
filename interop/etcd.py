"""A one- or three-member etcd cluster for the cluster tests (issue 18): Debian's etcd-server on
free loopback ports, its data in a temporary directory, stopped (by PID) when the test ends.

    with EtcdCluster(tmp_path, members=3) as etcd:
        etcd.endpoints            # ["http://127.0.0.1:PORT", ...], the client URLs
        etcd.stop_member(0)       # SIGKILL one member (quorum stays with 2 of 3)
        etcd.start_member(0)      # and bring it back on its old data
"""

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

ETCD = shutil.which("etcd") or "/usr/bin/etcd"


def _free_ports(count):
    """Ports free now on 127.0.0.1, all held until every one is chosen so that none repeats."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


class EtcdCluster:
    def __init__(self, directory: Path, members=1, startup_timeout=30.0):
        if not os.path.exists(ETCD):
            raise RuntimeError("etcd is not installed: apt-get install etcd-server")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        ports = _free_ports(2 * members)
        self.names = ["m%d" % i for i in range(members)]
        self.client_ports = ports[:members]
        self.peer_ports = ports[members:]
        self.endpoints = ["http://127.0.0.1:%d" % p for p in self.client_ports]
        self.startup_timeout = startup_timeout
        self.procs = [None] * members
        # A token of its own, so that two tests' members can never join each other.
        self.token = "smb3d-test-%d-%d" % (os.getpid(), self.client_ports[0])

    def _command(self, i):
        initial = ",".join("%s=http://127.0.0.1:%d" % (n, p) for n, p in zip(self.names, self.peer_ports))
        return [ETCD, "--name", self.names[i], "--data-dir", str(self.directory / self.names[i]),
                "--listen-client-urls", self.endpoints[i], "--advertise-client-urls", self.endpoints[i],
                "--listen-peer-urls", "http://127.0.0.1:%d" % self.peer_ports[i],
                "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % self.peer_ports[i],
                "--initial-cluster", initial, "--initial-cluster-token", self.token,
                "--initial-cluster-state", "new", "--logger", "zap", "--log-outputs", "stderr",
                # smb3d pings every second (docs/cluster.md "Configuration").
                "--grpc-keepalive-min-time", "1s"]

    def log(self, i):
        return self.directory / ("%s.log" % self.names[i])

    def start_member(self, i):
        with open(self.log(i), "ab") as log:
            self.procs[i] = subprocess.Popen(self._command(i), stdout=log, stderr=subprocess.STDOUT)

    def stop_member(self, i, sig=signal.SIGKILL):
        proc = self.procs[i]
        if proc is not None and proc.poll() is None:
            proc.send_signal(sig)
            # A member a test froze (SIGSTOP) takes the signal only once it runs again.
            proc.send_signal(signal.SIGCONT)
            proc.wait(10)
        self.procs[i] = None

    def _call(self, endpoint, path, body, timeout):
        """One request of etcd's JSON gateway (etcd 3.4: /v3/...; keys and values in base64)."""
        request = urllib.request.Request(endpoint + path, data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())

    def put(self, key, value, member=0, timeout=5):
        """Writes `key`; raises when the member cannot commit it (no quorum) within `timeout`."""
        b64 = lambda s: base64.b64encode(s.encode()).decode()
        return self._call(self.endpoints[member], "/v3/kv/put", {"key": b64(key), "value": b64(value)}, timeout)

    def get(self, key, member=0, timeout=5):
        """The value of `key` (None when absent), read with quorum."""
        found = self._call(self.endpoints[member], "/v3/kv/range",
                           {"key": base64.b64encode(key.encode()).decode()}, timeout)
        kvs = found.get("kvs") or []
        return base64.b64decode(kvs[0]["value"]).decode() if kvs else None

    def keys(self, prefix, member=0, timeout=5):
        """The keys under `prefix`, in order."""
        b64 = lambda b: base64.b64encode(b).decode()
        end = prefix.encode()[:-1] + bytes([prefix.encode()[-1] + 1])
        found = self._call(self.endpoints[member], "/v3/kv/range",
                           {"key": b64(prefix.encode()), "range_end": b64(end), "keys_only": True}, timeout)
        return [base64.b64decode(kv["key"]).decode() for kv in found.get("kvs") or []]

    def revision(self, member=0, timeout=5):
        """etcd's revision now: it grows with every write."""
        found = self._call(self.endpoints[member], "/v3/kv/range",
                           {"key": base64.b64encode(b"revision").decode()}, timeout)
        return int(found["header"]["revision"])

    def healthy(self, member):
        try:
            with urllib.request.urlopen(self.endpoints[member] + "/health", timeout=2) as response:
                return json.loads(response.read()).get("health") == "true"
        except (OSError, ValueError):
            return False

    def wait_healthy(self, members=None):
        """Waits until the members (default: all running ones) answer as healthy."""
        indexes = members if members is not None else [i for i, p in enumerate(self.procs) if p]
        deadline = time.time() + self.startup_timeout
        while True:
            for i in indexes:
                if self.procs[i] is None or self.procs[i].poll() is not None:
                    raise RuntimeError("etcd member %s exited:\n%s" % (self.names[i], self.log_tail(i)))
            if all(self.healthy(i) for i in indexes):
                return
            if time.time() > deadline:
                raise RuntimeError("etcd did not become healthy:\n%s" % self.log_tail(indexes[0]))
            time.sleep(0.1)

    def log_tail(self, i, n=30):
        try:
            return "\n".join(self.log(i).read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def start(self):
        for i in range(len(self.names)):
            self.start_member(i)
        self.wait_healthy()
        return self

    def stop(self):
        for i in range(len(self.names)):
            self.stop_member(i, signal.SIGTERM)

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()
