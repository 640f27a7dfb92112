#!/usr/bin/python3
"""Add to a capture the answers smb3d must give where they differ from Samba's, as `E` lines
after Samba's `S` lines (tests/golden.rs expects the E lines when a call has them; `E -`
means no answer at all):

    expected.py CAPTURE.txt > WITH_EXPECTATIONS.txt

E lines already in CAPTURE are dropped and derived again.

The expected answers are derived from Samba's own, decoded and re-encoded with Samba's NDR
library (python3-samba, so run it with /usr/bin/python3), applying the differences
docs/rpc.md lists, each named at the end of its E line. Nothing here comes from smb3d.
"""
import struct
import sys

from samba.dcerpc import lsa, misc, security, srvsvc, wkssvc
from samba.ndr import ndr_pack_out, ndr_unpack_in, ndr_unpack_out

INTERFACES = {"srvsvc": srvsvc, "wkssvc": wkssvc, "lsarpc": lsa, "lsass": lsa}
REQUEST, RESPONSE, FAULT, BIND, BIND_ACK, BIND_NAK = 0, 2, 3, 11, 12, 13
NERR_NET_NAME_NOT_FOUND = 2310
WERR_INVALID_NAME = 123
WERR_INVALID_LEVEL = 124
STATUS_INVALID_PARAMETER = 0xC000000D
STATUS_ACCESS_DENIED = 0xC0000022
NCA_S_OP_RNG_ERROR = 0x1C010002
NCA_S_PROTO_ERROR = 0x1C01000B
MAX_FRAGMENT = 4280
SERVED_POLICY_CLASSES = (3, 5, 6, 12)
SERVED_SHARE_LEVELS = (0, 1, 2, 501, 502, 1005)
SHARE_INFO_POINTER_ARMS = (0, 1, 2, 501, 502, 503, 1004, 1005, 1006, 1501)


def function(module, opnum):
    for name in dir(module):
        cls = getattr(module, name)
        if isinstance(cls, type) and hasattr(cls, "opnum") and cls.opnum() == opnum:
            return cls
    raise KeyError(opnum)


def status(obj):
    """A call's result as a number (Samba gives NTSTATUS and WERROR as (code, text))."""
    r = obj.result
    return r[0] if isinstance(r, tuple) else r


def fault(call_id, context_id, status, flags):
    return struct.pack("<BBBB4sHHIIHBBII", 5, 0, FAULT, flags, b"\x10\0\0\0", 32, 0, call_id,
                       24, context_id, 0, 0, status, 0)


def fragments(call_id, context_id, stub, max_frag):
    """Response PDUs for a stub, cut as smb3d cuts them: full fragments of the negotiated
    size (Samba rounds the stub of each down to 16 bytes)."""
    room = max_frag - 24
    out = []
    offset = 0
    while True:
        chunk = stub[offset:offset + room]
        flags = (1 if offset == 0 else 0) | (2 if offset + len(chunk) == len(stub) else 0)
        out.append(struct.pack("<BBBB4sHHIIHBB", 5, 0, RESPONSE, flags, b"\x10\0\0\0",
                               24 + len(chunk), 0, call_id, len(stub) - offset, context_id, 0, 0)
                   + chunk)
        offset += len(chunk)
        if offset >= len(stub):
            return out


class Pipe:
    def __init__(self, name):
        self.module = INTERFACES.get(name.lower().lstrip("\\"))
        self.max_frag = MAX_FRAGMENT
        self.requests = {}
        # Samba's answers per QueryInformationPolicy class, reused for QueryInformationPolicy2.
        self.policy_info = {}
        self.domain_sid = None


def expect(pipe, request_pdus, answer):
    """The answer smb3d gives instead of Samba's `answer` (list of PDUs), with the reason;
    None when smb3d answers the same."""
    first = answer[0]
    ptype = first[2]
    if ptype == BIND_ACK:
        reasons = []
        ack = bytearray(first)
        max_frag = struct.unpack_from("<H", ack, 16)[0]
        if max_frag > MAX_FRAGMENT:
            struct.pack_into("<HH", ack, 16, MAX_FRAGMENT, MAX_FRAGMENT)
            reasons.append("smb-fragment-limit")
        pipe.max_frag = min(max_frag, MAX_FRAGMENT)
        if b"\\pipe\\" in ack:
            ack = ack.replace(b"\\pipe\\", b"\\PIPE\\")
            reasons.append("secondary-address")
        return ([bytes(ack)], ",".join(reasons)) if reasons else None
    if ptype == BIND_NAK:
        return None
    call_id = struct.unpack_from("<I", first, 12)[0]
    if call_id not in pipe.requests:
        return None
    opnum, context_id, obj = pipe.requests[call_id]
    if ptype == FAULT:
        # A call Samba does not implement and smb3d does: only the request matters.
        status = struct.unpack_from("<I", first, 24)[0]
        if status != NCA_S_OP_RNG_ERROR or pipe.module is not lsa or opnum != 46:
            return None
        stub = None
        reason = changed_lsa(pipe, opnum, obj)
    else:
        stub = b"".join(p[24:] for p in answer)
        ndr_unpack_out(obj, stub)
        reason = changed(pipe, opnum, obj)
    if reason is None:
        stub_out = stub
    elif isinstance(reason, tuple):
        kind, value = reason
        if kind == "fault":
            return [fault(call_id, context_id, *value)], "not-served"
        stub_out, reason = value
    else:
        stub_out = ndr_pack_out(obj)
    out = fragments(call_id, context_id, stub_out, pipe.max_frag)
    if reason is None and out == answer:
        return None
    return out, reason or "fragment-size"


def changed(pipe, opnum, obj):
    """Applies smb3d's documented differences to a decoded answer in place. Returns None if
    nothing changes, a reason, or ("fault", (status, flags)) / ("stub", (bytes, reason))."""
    module = pipe.module
    if module is srvsvc:
        if opnum in (15, 36):
            reasons = [r for r in (preferred_length(obj), share_entries(
                getattr(obj.out_info_ctr.ctr, "array", None) or [])) if r]
            if opnum == 36 and status(obj) == 0 and obj.out_resume_handle:
                # Samba's sticky enumeration leaves the handle at the count; smb3d ends both
                # enumerations at 0.
                obj.out_resume_handle = 0
                reasons.append("resume-handle-at-end")
            return ",".join(reasons) or None
        if opnum == 16:
            level = obj.in_level
            if status(obj) == WERR_INVALID_NAME:
                obj.result = NERR_NET_NAME_NOT_FOUND
                return "share-not-found"
            if level not in SERVED_SHARE_LEVELS and level in SHARE_INFO_POINTER_ARMS:
                return ("stub", (struct.pack("<III", level, 0, WERR_INVALID_LEVEL),
                                 "union-arms-of-ms-srvs"))
            # Samba's bindings give a union as its arm.
            info = obj.out_info if level in (2, 502) else None
            return share_entries([info] if info is not None else [])
        if opnum == 21 and obj.in_level == 103:
            return ("stub", (struct.pack("<III", 103, 0, WERR_INVALID_LEVEL),
                             "union-arms-of-ms-srvs"))
        return None
    if module is lsa:
        return changed_lsa(pipe, opnum, obj)
    return None


# The 32-bit SHARE_INFO_n sizes PreferedMaximumLength counts with, strings aside.
SHARE_FIXED_SIZE = {0: 4, 1: 12, 2: 32, 501: 16, 502: 40}


def preferred_length(obj):
    """NetrShareEnum returns as many whole entries as fit PreferedMaximumLength (at least one),
    counting each entry's structure and its strings with terminators; Samba returns all."""
    ctr = obj.out_info_ctr.ctr
    level = obj.out_info_ctr.level
    entries = list(getattr(ctr, "array", None) or [])
    if obj.in_max_buffer == 0xFFFFFFFF or not entries:
        return None

    def size(e):
        texts = [e.name]
        if level != 0:
            texts.append(e.comment)
        if level in (2, 502):
            texts.append(e.path)
        return SHARE_FIXED_SIZE[level] + sum((len(t.encode("utf-16-le")) // 2 + 1) * 2
                                             for t in texts)

    used = count = 0
    for e in entries:
        used += size(e)
        if used > obj.in_max_buffer and count > 0:
            break
        count += 1
    if count == len(entries):
        return None
    ctr.array = entries[:count]
    ctr.count = count
    obj.out_resume_handle = (obj.in_resume_handle or 0) + count
    obj.result = 234
    return "preferred-maximum-length"


def share_entries(entries):
    """Passwords are NULL and use counts are not tracked."""
    reason = None
    for e in entries:
        if hasattr(e, "password") and (e.password is not None or e.current_users != 0):
            e.password = None
            e.current_users = 0
            reason = "share-password-and-uses"
    return reason


def changed_lsa(pipe, opnum, obj):
    if opnum in (6, 44):
        if obj.in_access_mask & 0x80000000 and status(obj) == 0:
            obj.out_handle.handle_type = 0
            obj.out_handle.uuid = misc.GUID()
            obj.result = STATUS_ACCESS_DENIED
            return "policy-rights"
        return None
    if opnum in (7, 46):
        level = obj.in_level
        if opnum == 7 and status(obj) == 0 and level in SERVED_POLICY_CLASSES:
            pipe.policy_info[level] = ndr_pack_out(obj)
            if level == 5:
                pipe.domain_sid = obj.out_info.sid
            return None
        if level == 12:
            return ("stub", (dns_domain_info(), "dns-domain-information"))
        if level in pipe.policy_info:
            return ("stub", (pipe.policy_info[level], "policy-information-2"))
        return ("stub", (struct.pack("<II", 0, STATUS_INVALID_PARAMETER), "policy-class-not-served"))
    if opnum in (14, 58, 68):
        return unmapped_names(pipe, opnum, obj)
    if opnum in (15, 57):
        return unreferenced_domains(obj)
    return None


def dns_domain_info():
    """PolicyDnsDomainInformation of a workgroup server: the workgroup name, no DNS names, no
    GUID, no SID (the workgroup is WORKGROUP in these captures)."""
    name = "WORKGROUP".encode("utf-16-le")
    units = len(name) // 2
    stub = struct.pack("<IHH", 0x20000, 12, 0)
    stub += struct.pack("<HHI", len(name), len(name) + 2, 0x20004)
    stub += struct.pack("<HHI", 0, 0, 0) * 2 + b"\0" * 16 + struct.pack("<I", 0)
    stub += struct.pack("<III", units + 1, 0, units) + name
    stub += b"\0" * (-len(stub) % 4)
    return stub + struct.pack("<I", 0)


def unmapped_names(pipe, opnum, obj):
    """Names that do not translate carry a NULL SID; a domain's own entry has the domain's
    SID (Samba cuts its last sub-authority)."""
    if obj.out_sids is None or obj.out_sids.sids is None:
        return None
    reason = None
    if opnum == 68:
        for entry in obj.out_sids.sids:
            if entry.sid_type == 8 and entry.sid is not None:
                entry.sid = None
                reason = "unmapped-name-sid"
    domains = obj.out_domains.domains or []
    for entry in obj.out_sids.sids:
        if entry.sid_type == 3 and pipe.domain_sid is not None:
            d = domains[entry.sid_index]
            if str(d.sid) != str(pipe.domain_sid):
                d.sid = security.dom_sid(str(pipe.domain_sid))
                reason = "domain-entry-sid"
    return reason


def unreferenced_domains(obj):
    """Domains that only unmapped SIDs would refer to are not listed."""
    domains = obj.out_domains
    names = obj.out_names.names or []
    used = sorted({n.sid_index for n in names if n.sid_type != 8})
    if domains is None or len(used) == domains.count:
        return None
    kept = [domains.domains[i] for i in used]
    remap = {old: new for new, old in enumerate(used)}
    for n in names:
        if n.sid_type != 8:
            n.sid_index = remap[n.sid_index]
    domains.domains = kept or None
    domains.count = len(kept)
    domains.max_size = 32 if kept else 0
    return "unmapped-sid-domain"


def nak(reason, call_id):
    return struct.pack("<BBBB4sHHIHBBB3s", 5, 0, BIND_NAK, 3, b"\x10\0\0\0", 24, 0, call_id,
                       reason, 1, 5, 0, b"\0\0\0")


def ack_with_minor(answer):
    """What a bind with rpc_vers_minor 1 gets: the usual bind_ack, with minor version 1."""
    ack = bytearray(bytes.fromhex(
        "05000c03100000004400000001000000b810b810000000000d005c504950455c7372767376630000"
        "0100000000000000045d888aeb1cc9119fe808002b10486002000000"))
    ack[1] = 1
    return [bytes(ack)], "minor-version-1"


# Protocol differences in tools/probes.py cases, by case and number of the client PDU in it:
# smb3d follows Windows (Samba's raw_protocol tests, which record Windows' answers) where
# Samba does not.
CASE_EXPECTATIONS = {
    ("bind_no_contexts", 0): lambda a: ([nak(4, 1)], "nak-reason-no-contexts"),
    ("bind_minor_1", 0): ack_with_minor,
    ("bind_auth_ntlmssp", 0): lambda a: ([nak(8, 1)], "no-pipe-authentication"),
    ("alter_same_id_ndr64", 1): lambda a: ([fault(2, 0, NCA_S_PROTO_ERROR, 0x23)],
                                          "context-changes-transfer-syntax"),
    ("fragment_too_long", 1): lambda a: ([fault(2, 0, NCA_S_PROTO_ERROR, 0x23)],
                                         "smb-fragment-limit"),
    # Samba sends this fault too, then closes the pipe, and the client may or may not get to
    # read it after its next PDU; smb3d's comes at once, and nothing after.
    ("auth3_without_security", 1): lambda a: ([fault(2, 0, NCA_S_PROTO_ERROR, 0x23)],
                                              "fault-before-close"),
    ("auth3_without_security", 2): lambda a: ([], "closed"),
}


def main():
    lines = open(sys.argv[1]).read().splitlines()
    pipe = None
    pending = []  # S lines of the current answer
    request_pdus = []
    case = None
    pdu_number = -1
    open_answer = False  # a C line whose answer has not been written out yet

    def flush():
        nonlocal open_answer
        if not open_answer:
            out.extend(pending)
            return
        open_answer = False
        answer = [bytes.fromhex(line.split()[1]) for line in pending]
        special = CASE_EXPECTATIONS.get((case, pdu_number))
        if special is None and (not pending or pipe is None or pipe.module is None):
            out.extend(pending)
            return
        result = special(answer) if special else expect(pipe, request_pdus, answer)
        out.extend(pending)
        if result is not None:
            pdus, reason = result
            out.extend("E %s %s" % (p.hex(), reason) for p in pdus)
            if not pdus:
                out.append("E - %s" % reason)

    out = []
    for line in lines:
        kind = line.split(" ", 1)[0]
        if kind == "E":
            continue  # expectations from an earlier run are derived again
        if kind == "S":
            pending.append(line)
            continue
        flush()
        pending = []
        out.append(line)
        if line.startswith("# case "):
            case = line.split()[2]
            pdu_number = -1
        if kind == "C":
            pdu_number += 1
            open_answer = True
        if kind == "pipe":
            pipe = Pipe(line.split()[1])
        elif kind == "C" and pipe is not None and pipe.module is not None:
            pdu = bytes.fromhex(line.split()[1])
            if pdu[2] == REQUEST:
                call_id = struct.unpack_from("<I", pdu, 12)[0]
                context_id, opnum = struct.unpack_from("<HH", pdu, 20)
                first = pdu[3] & 1
                last = pdu[3] & 2
                if first:
                    request_pdus = [pdu]
                else:
                    request_pdus.append(pdu)
                if last:
                    stub = b"".join(p[24:] for p in request_pdus)
                    try:
                        obj = function(pipe.module, opnum)()
                        ndr_unpack_in(obj, stub)
                        pipe.requests[call_id] = (opnum, context_id, obj)
                    except Exception:
                        pass
    flush()
    print("\n".join(out))


if __name__ == "__main__":
    main()
