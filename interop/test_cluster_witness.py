"""The witness service (MS-SWN, issue 18 item 6) with Samba's rpcclient as the client: two
smb3d nodes of one etcd, each on a loopback address of its own, serve two public addresses
(one each). rpcclient finds the witness port through the endpoint mapper on port 135 of the
address it is given (it ignores a port in the binding string), then binds with NTLMSSP at
packet privacy. Through n2's witness: GetInterfaceList lists both public addresses with their
nodes; Register and RegisterEx (with IP notification) on n1's public address; an AsyncNotify
held until n1 is killed returns RESOURCE_CHANGE (unavailable), and the RegisterEx then reads
its CLIENT_MOVE to the address on n2. Refused: a bind without sealing, sealing with a wrong
password, garbage PDUs (the service goes on answering), and a connection beyond the 32 that
one address may hold without authenticating."""

import os
import random
import re
import socket
import subprocess
import time
import uuid

import pytest

from conftest import add_db_user, BINARY, end_process, free_port, interop_uid
from etcd import EtcdCluster
from test_cluster_takeover import Node, holders, wait_for

NODE_TTL = 2
USER = "tester"


@pytest.fixture
def cluster(tmp_path):
    net = "127.%d.%d." % (random.randint(100, 250), random.randint(1, 250))
    public = [net + "10", net + "11"]
    port = free_port()
    witness_port = free_port()
    shared = tmp_path / "shared"
    shared.mkdir()
    db = tmp_path / "users"
    password = add_db_user(db, USER, interop_uid())
    with EtcdCluster(tmp_path / "etcd") as etcd:
        nodes = []
        try:
            for i, name in enumerate(("n1", "n2"), 1):
                home = tmp_path / name
                home.mkdir()
                config = home / "smb3d.toml"
                config.write_text(
                    '[server]\nlisten = ["%s%d:%d"]\nuser_db = "%s"\nadmin_socket = "%s"\nstate_dir = "%s"\n\n'
                    '[cluster]\netcd = ["%s"]\nnode = "%s"\nnode_ttl = "%ds"\npublic_addresses = ["%s", "%s"]\n'
                    'witness_port = %d\n\n[share.share]\npath = "%s"\n'
                    % (net, i, port, db, home / "admin.sock", home / "state", etcd.endpoints[0], name, NODE_TTL,
                       public[0], public[1], witness_port, shared))
                node = Node(name, net + str(i), port, config, home / "smb3d.log")
                nodes.append(node)
                node.start()
                if name == "n1":
                    wait_for(public[0], port, node.proc)
            deadline = time.monotonic() + 10
            while holders({}, nodes[1]) != {public[0]: "n1", public[1]: "n2"}:
                assert time.monotonic() < deadline, holders({}, nodes[1])
                time.sleep(0.1)
            wait_for(public[1], witness_port, nodes[1].proc)
            yield {"nodes": nodes, "public": public, "password": password, "witness_port": witness_port}
        finally:
            for node in nodes:
                if node.proc is not None:
                    end_process(node.proc)


def rpcclient(address, commands, user, options="seal", timeout=20):
    binding = "ncacn_ip_tcp:%s[%s]" % (address, options) if options else "ncacn_ip_tcp:%s" % address
    return subprocess.run(["rpcclient", "-U", user, binding, "-c", commands], capture_output=True, text=True,
                          timeout=timeout)


def test_witness_through_another_node_with_rpcclient(cluster):
    n1, n2 = cluster["nodes"]
    pub1, pub2 = cluster["public"]
    user = "%s%%%s" % (USER, cluster["password"])
    started = time.monotonic()

    listed = rpcclient(n2.address, "GetInterfaceList", user)
    assert listed.returncode == 0, listed.stdout + listed.stderr + n2.log_tail()
    assert "*+ n1 %s V2" % pub1 in listed.stdout, listed.stdout
    assert "*+ n2 %s V2" % pub2 in listed.stdout, listed.stdout

    handles = []
    for command in ("Register --net=SMB3D --ip=%s --client=witness-test" % pub1,
                    "RegisterEx --net=SMB3D --ip=%s --share=share --client=witness-test --flags=1 --timeout=30"
                    % pub1):
        r = rpcclient(n2.address, command, user)
        found = re.search(r"^([0-9a-f]+:[0-9a-f-]{36})$", r.stdout, re.M)
        assert r.returncode == 0 and found, r.stdout + r.stderr + n2.log_tail()
        handles.append(found.group(1))
    # Not a name of this server, not a public address: refused.
    r = rpcclient(n2.address, "Register --net=OTHER --ip=%s --client=c" % pub1, user)
    assert "WERR_INVALID_PARAMETER" in r.stdout + r.stderr, r.stdout + r.stderr

    # Held until n1 dies.
    waiting = subprocess.Popen(["rpcclient", "-U", user, "ncacn_ip_tcp:%s[seal]" % n2.address, "-c",
                                "AsyncNotify %s" % handles[0]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    time.sleep(0.5)
    assert waiting.poll() is None, waiting.communicate()[0]
    n1.proc.kill()
    n1.proc.wait(10)
    killed = time.monotonic()
    out, _ = waiting.communicate(timeout=NODE_TTL + 10)
    print("AsyncNotify answered %.2f s after n1 was killed (node_ttl %d s)" % (time.monotonic() - killed, NODE_TTL))
    assert "Resource change with 1 messages" in out and "SMB3D -> Unavailable" in out, out + n2.log_tail()

    # RegisterEx with IP notification: unavailable first, then the move to n2's holding.
    deadline = time.monotonic() + NODE_TTL + 5
    while holders({}, n2).get(pub1) != "n2":
        assert time.monotonic() < deadline, n2.log_tail()
        time.sleep(0.1)
    first = rpcclient(n2.address, "AsyncNotify %s" % handles[1], user)
    assert "SMB3D -> Unavailable" in first.stdout, first.stdout + first.stderr
    moved = rpcclient(n2.address, "AsyncNotify %s" % handles[1], user)
    assert "Client move with 1 messages" in moved.stdout, moved.stdout + moved.stderr
    assert "%s Online" % pub1 in moved.stdout, moved.stdout
    # A held AsyncNotify ends when its registration goes.
    r = rpcclient(n2.address, "Register --net=SMB3D --ip=%s --client=witness-test" % pub1, user)
    found = re.search(r"^([0-9a-f]+:[0-9a-f-]{36})$", r.stdout, re.M)
    assert r.returncode == 0 and found, r.stdout + r.stderr
    waiting = subprocess.Popen(["rpcclient", "-U", user, "ncacn_ip_tcp:%s[seal]" % n2.address, "-c",
                                "AsyncNotify %s" % found.group(1)], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    time.sleep(0.5)
    assert waiting.poll() is None, waiting.communicate()[0]
    for handle in [found.group(1)] + handles:
        r = rpcclient(n2.address, "UnRegister %s" % handle, user)
        assert r.returncode == 0, r.stdout + r.stderr
    out, _ = waiting.communicate(timeout=10)
    assert "WERR_NOT_FOUND" in out, out
    r = rpcclient(n2.address, "UnRegister %s" % handles[0], user)
    assert "WERR_NOT_FOUND" in r.stdout + r.stderr, r.stdout + r.stderr
    print("witness test body took %.1f s" % (time.monotonic() - started))


def test_unsealed_wrong_password_and_garbage_are_refused(cluster):
    n2 = cluster["nodes"][1]
    user = "%s%%%s" % (USER, cluster["password"])
    for options, who in (("", user), ("sign", user), ("seal", "%s%%wrong" % USER)):
        r = rpcclient(n2.address, "GetInterfaceList", who, options)
        assert r.returncode != 0 and "*+ n" not in r.stdout, (options, r.stdout, r.stderr)
    for garbage in (os.urandom(64), b"\x05\x00\x0b\x03\x10\x00\x00\x00\xff\xff\x00\x00" + b"\x00" * 60,
                    b"\x05\x00\x00\x03\x10\x00\x00\x00\x18\x00\x00\x00\x01\x00\x00\x00" + b"\x00" * 8):
        for port in (135, cluster["witness_port"]):
            with socket.create_connection((n2.address, port), timeout=5) as s:
                s.sendall(garbage)
                s.settimeout(5)
                try:
                    answer = s.recv(4096)
                    rest = s.recv(4096) if answer else b""
                except (ConnectionResetError, socket.timeout):
                    answer, rest = b"", b""
                # Nothing but a bind_nak (before a bind), then the end of the connection.
                assert answer == b"" or answer[2] == 13, answer
                assert rest == b""
    r = rpcclient(n2.address, "GetInterfaceList", user)
    assert r.returncode == 0 and "*+ n2" in r.stdout, r.stdout + r.stderr + n2.log_tail()
    assert n2.proc.poll() is None
    # One address holds at most `max_connections_per_address` (32) connections nobody has
    # authenticated on: the next is closed at once, and the node serves again once they go.
    held = [socket.create_connection((n2.address, cluster["witness_port"]), timeout=5) for _ in range(32)]
    try:
        with socket.create_connection((n2.address, cluster["witness_port"]), timeout=5) as s:
            s.settimeout(5)
            try:
                assert s.recv(16) == b""
            except ConnectionResetError:
                pass
        r = rpcclient(n2.address, "GetInterfaceList", user)
        assert r.returncode != 0, r.stdout
    finally:
        for s in held:
            s.close()
    deadline = time.monotonic() + 5
    while True:
        r = rpcclient(n2.address, "GetInterfaceList", user)
        if r.returncode == 0:
            break
        assert time.monotonic() < deadline, r.stdout + r.stderr
        time.sleep(0.1)
    assert "*+ n2" in r.stdout
