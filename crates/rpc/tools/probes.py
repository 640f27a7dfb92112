#!/usr/bin/env python3
"""Send hand-made DCE/RPC PDUs over named pipes of a server on 127.0.0.1:PORT (user
bench%pass) and print both sides in the capture format of pipe_exchanges.py:

    probes.py PORT [CASE ...]

Each case opens its own pipe. After every PDU the answer is read fragment by fragment until
the last one; when the server ends the association the next operation fails and the case
stops there (a "# closed" line records it). Needs Python smbprotocol.
"""
import struct
import sys
import uuid

from smbprotocol.connection import Connection
from smbprotocol.open import (CreateDisposition, CreateOptions, FilePipePrinterAccessMask,
                              ImpersonationLevel, Open, ShareAccess)
from smbprotocol.session import Session
from smbprotocol.tree import TreeConnect

REQUEST, RESPONSE, BIND, ALTER, CO_CANCEL, ORPHANED, AUTH3 = 0, 2, 11, 14, 18, 19, 16
FIRST, LAST = 1, 2


def header(ptype, flags, body, call_id, auth=b"", vers=5, minor=0, drep=b"\x10\0\0\0"):
    auth_len = max(0, len(auth) - 8)
    return struct.pack("<BBBB4sHHI", vers, minor, ptype, flags, drep,
                       16 + len(body) + len(auth), auth_len, call_id) + body + auth


def syntax(text, major, minor=0):
    return uuid.UUID(text).bytes_le + struct.pack("<HH", major, minor)


SRVSVC = syntax("4b324fc8-1670-01d3-1278-5a47bf6ee188", 3)
WKSSVC = syntax("6bffd098-a112-3610-9833-46c3f87e345a", 1)
LSARPC = syntax("12345778-1234-abcd-ef00-0123456789ab", 0)
SAMR = syntax("12345778-1234-abcd-ef00-0123456789ac", 1)
NDR = syntax("8a885d04-1ceb-11c9-9fe8-08002b104860", 2)
NDR64 = syntax("71710533-beba-4937-8319-b5dbef9ccc36", 1)


def features(bits):
    return bytes.fromhex("2c1cb76c12984045") + struct.pack("<Q", bits) + struct.pack("<HH", 1, 0)


def bind(call_id, contexts, assoc=0, ptype=BIND, xmit=4280, recv=4280, auth=b"", flags=3,
         minor=0, vers=5):
    body = struct.pack("<HHIBBH", xmit, recv, assoc, len(contexts), 0, 0)
    for context_id, abstract, transfers in contexts:
        body += struct.pack("<HBB", context_id, len(transfers), 0) + abstract + b"".join(transfers)
    return header(ptype, flags, body, call_id, auth=auth, minor=minor, vers=vers)


def request(call_id, context_id, opnum, stub, flags=3, alloc=None):
    alloc = len(stub) if alloc is None else alloc
    return header(REQUEST, flags, struct.pack("<IHH", alloc, context_id, opnum) + stub, call_id)


def string(s):
    """A conformant varying string with its terminator, padded to 4."""
    units = (s + "\0").encode("utf-16-le")
    n = len(units) // 2
    b = struct.pack("<III", n, 0, n) + units
    return b + b"\0" * (-len(b) % 4)


def server_get_info(level):
    return struct.pack("<I", 0x20000) + string("\\\\x") + struct.pack("<I", level)


def sid(text):
    parts = [int(p) for p in text.split("-")[2:]]
    authority, subs = parts[0], parts[1:]
    return (struct.pack("<I", len(subs)) + bytes([1, len(subs)])
            + authority.to_bytes(6, "big") + b"".join(struct.pack("<I", s) for s in subs))


def open_policy2(access):
    attributes = struct.pack("<IIIIII", 24, 0, 0, 0, 0, 0x20004) + struct.pack("<IHBB", 12, 2, 1, 0)
    return struct.pack("<I", 0x20000) + string("\\\\x") + attributes + struct.pack("<I", access)


def lookup_sids2(handle, values):
    stub = handle + struct.pack("<II", len(values), 0x20000) + struct.pack("<I", len(values))
    stub += b"".join(struct.pack("<I", 0x20004 + 4 * i) for i in range(len(values)))
    stub += b"".join(sid(v) for v in values)
    return stub + struct.pack("<IIHHIII", 0, 0, 1, 0, 0, 0, 2)


INFO101 = server_get_info(101)

CASES = {
    # Association setup.
    "assoc_group_unknown": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])], assoc=0x1234)]),
    "request_before_bind": ("srvsvc", [request(1, 0, 21, INFO101)]),
    "alter_before_bind": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])], ptype=ALTER)]),
    "bind_twice": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])]), bind(2, [(1, SRVSVC, [NDR])])]),
    "bind_no_contexts": ("srvsvc", [bind(1, [])]),
    "bind_no_transfer_syntax": ("srvsvc", [bind(1, [(0, SRVSVC, [])])]),
    "bind_version_4": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])], vers=4)]),
    "bind_minor_1": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])], minor=1)]),
    "bind_unknown_interface": ("srvsvc", [bind(1, [(0, SAMR, [NDR]), (1, SRVSVC, [NDR])])]),
    "bind_only_unknown_interface": ("srvsvc", [bind(1, [(0, SAMR, [NDR])])]),
    "bind_old_interface_version": ("srvsvc", [bind(1, [(0, syntax(
        "4b324fc8-1670-01d3-1278-5a47bf6ee188", 2), [NDR])])]),
    "bind_ndr64_only": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR64])])]),
    "bind_ndr64_then_ndr": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR64, NDR])])]),
    "bind_windows_style": ("srvsvc", [bind(2, [(0, SRVSVC, [NDR]), (1, SRVSVC, [NDR64]),
                                               (2, SRVSVC, [features(3)])])]),
    "bind_features_ff": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR]), (1, SRVSVC, [features(0xff)])])]),
    "bind_features_twice": ("srvsvc", [bind(1, [(0, SRVSVC, [features(1)]),
                                                (1, SRVSVC, [features(2)])])]),
    "bind_auth_ntlmssp": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])], auth=struct.pack(
        "<BBBBI", 10, 2, 0, 0, 0) + b"NTLMSSP\0" + struct.pack("<I", 1) + b"\x07\x82\x08\xa2"
        + b"\0" * 16)]),
    "bind_auth_unknown_type": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])], auth=struct.pack(
        "<BBBBI", 0x99, 2, 0, 0, 0) + b"\0" * 16)]),
    "bind_small_fragments": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])], xmit=1000, recv=1000)]),
    "bind_large_fragments": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])], xmit=9000, recv=7000)]),
    "bind_odd_fragments": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])], xmit=4283, recv=3199)]),
    "alter_context": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])]),
                                 bind(2, [(1, SRVSVC, [NDR]), (2, SRVSVC, [NDR64]),
                                          (3, SRVSVC, [features(3)])], ptype=ALTER),
                                 request(3, 1, 21, INFO101)]),
    "alter_other_interface": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])]),
                                         bind(2, [(1, WKSSVC, [NDR])], ptype=ALTER)]),
    "alter_no_contexts": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])]), bind(2, [], ptype=ALTER)]),
    "alter_same_id_ndr64": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])]),
                                       bind(2, [(0, SRVSVC, [NDR64])], ptype=ALTER)]),
    # Calls.
    "unknown_context": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])]), request(2, 5, 21, INFO101),
                                   request(3, 0, 21, INFO101)]),
    "opnum_out_of_range": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])]), request(2, 0, 200, b""),
                                      request(3, 0, 21, INFO101)]),
    "bad_stub": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])]), request(2, 0, 21, b"\x01\x02"),
                            request(3, 0, 21, INFO101)]),
    "two_fragments": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])]),
                                 request(2, 0, 21, INFO101[:8], flags=FIRST, alloc=len(INFO101)),
                                 request(2, 0, 21, INFO101[8:], flags=LAST, alloc=len(INFO101) - 8)]),
    "interleaved_calls": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])]),
                                     request(2, 0, 21, INFO101[:8], flags=FIRST),
                                     request(3, 0, 21, INFO101)]),
    "first_twice": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])]),
                               request(2, 0, 21, INFO101[:8], flags=FIRST),
                               request(2, 0, 21, INFO101[:8], flags=FIRST)]),
    "last_without_first": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])]),
                                      request(2, 0, 21, INFO101, flags=LAST)]),
    "first_with_pending_cancel": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])]),
                                             request(2, 0, 21, INFO101, flags=7)]),
    "alloc_hint_too_big": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])]),
                                      request(2, 0, 21, INFO101[:8], flags=FIRST,
                                              alloc=0x400001)]),
    "orphaned_and_cancel": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])]),
                                       request(2, 0, 21, INFO101[:8], flags=FIRST),
                                       header(ORPHANED, 3, b"", 2), header(CO_CANCEL, 3, b"", 2),
                                       request(2, 0, 21, INFO101[8:], flags=LAST)]),
    "auth3_without_security": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])]),
                                          header(AUTH3, 3, b"\0\0\0\0", 2),
                                          request(3, 0, 21, INFO101)]),
    "fragment_too_long": ("srvsvc", [bind(1, [(0, SRVSVC, [NDR])]),
                                     request(2, 0, 21, INFO101 + b"\0" * (4281 - 24 - len(INFO101)))]),
    "response_fragments": ("lsarpc", [bind(1, [(0, LSARPC, [NDR])], xmit=2048, recv=2048),
                                      request(2, 0, 44, open_policy2(0x02000000))]),
}

# Calls that need a policy handle from the answer before them.
HANDLE_CALLS = {
    "response_fragments": lambda handle: request(
        3, 0, 57, lookup_sids2(handle, ["S-1-1-0"] * 100)),
}


def read_answer(pipe):
    """Reads fragments until one has PFC_LAST_FRAG (bind answers always do)."""
    out = []
    while True:
        data = pipe.read(0, 4280)
        out.append(data)
        if len(data) < 4 or data[3] & LAST:
            return out


def main():
    port = int(sys.argv[1])
    conn = Connection(uuid.uuid4(), "127.0.0.1", port)
    conn.connect()
    session = Session(conn, "bench", "pass", require_encryption=False)
    session.connect()
    tree = TreeConnect(session, r"\\127.0.0.1\IPC$")
    tree.connect()
    for name in sys.argv[2:] or list(CASES):
        pipe_name, pdus = CASES[name]
        pipe = Open(tree, pipe_name)
        pipe.create(ImpersonationLevel.Impersonation,
                    FilePipePrinterAccessMask.GENERIC_READ | FilePipePrinterAccessMask.GENERIC_WRITE,
                    0, ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE,
                    CreateDisposition.FILE_OPEN, CreateOptions.FILE_NON_DIRECTORY_FILE)
        print("# case", name)
        print("pipe", pipe_name)
        pdus = list(pdus)
        try:
            while pdus:
                pdu = pdus.pop(0)
                print("C", pdu.hex())
                pipe.write(pdu, 0)
                # PDUs that normally get no answer (a request's first fragments, orphaned,
                # co_cancel, auth3) are only read after when nothing follows them.
                if pdus and (pdu[2] in (ORPHANED, CO_CANCEL, AUTH3)
                             or (pdu[2] == REQUEST and not pdu[3] & LAST)):
                    continue
                answers = read_answer(pipe)
                for a in answers:
                    print("S", a.hex())
                if not pdus and name in HANDLE_CALLS and answers[0][2] == RESPONSE:
                    handle = answers[0][24:44]
                    pdus.append(HANDLE_CALLS.pop(name)(handle))
            pipe.close()
        except Exception as e:  # the server ended the association
            print("# closed:", type(e).__name__)


if __name__ == "__main__":
    main()
