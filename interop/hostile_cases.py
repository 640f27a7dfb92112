"""The crafted-packet cases of the hostile-input suite (issue 8), as data: each case sends
malformed or abusive traffic with the raw client of `smb2raw` and returns what the server did,
as a status name, DROP (connection closed without an answer) or SILENT (no answer, connection
open), with side effects folded in (e.g. "STATUS_INVALID_PARAMETER" only if the file is
unchanged). `test_hostile_packets.py` runs them against smb3d; run this module directly to
run them against another server (the reference Samba) and print what it answers:

    python3 interop/hostile_cases.py PORT USER PASSWORD SHARE_DIR OUTSIDE_DIR [PID]

The share must hold the layout `prepare_share` makes.
"""

import os
import struct
import sys
import time
from dataclasses import dataclass

import smb2raw as s
from smb2raw import DROP, SILENT

SERVED = b"served\n"
CANARY = b"canary\n"
FILE = b"file content\n"


@dataclass
class Env:
    """A server under test: where it listens, its share directory, a directory outside the share
    holding the canary, and its process id (for memory readings)."""

    target: s.Target
    share_dir: str
    outside_dir: str
    pid: int = 0
    max_read: int = 8 * 1024 * 1024


def prepare_share(share_dir, outside_dir):
    """The layout every case expects: served.txt and dir/file.txt in the share, a canary
    outside, and symlinks from the share to the canary, to a missing file and to the outside
    directory."""
    os.makedirs(os.path.join(share_dir, "dir"), exist_ok=True)
    os.makedirs(outside_dir, exist_ok=True)
    for path, data in [(os.path.join(share_dir, "served.txt"), SERVED),
                       (os.path.join(share_dir, "dir", "file.txt"), FILE),
                       (os.path.join(outside_dir, "canary.txt"), CANARY)]:
        with open(path, "wb") as f:
            f.write(data)
    for name, target in [("escape-file", os.path.join(outside_dir, "canary.txt")),
                         ("escape-missing", os.path.join(outside_dir, "missing.txt")),
                         ("escape-dir", outside_dir)]:
        link = os.path.join(share_dir, name)
        if not os.path.islink(link):
            os.symlink(target, link)


def canary_intact(env):
    with open(os.path.join(env.outside_dir, "canary.txt"), "rb") as f:
        return f.read() == CANARY and sorted(os.listdir(env.outside_dir)) == ["canary.txt"]


@dataclass
class Case:
    """One row: `run(env)` returns the outcome; `expected` is the right answer, `source` where
    that answer comes from; `bug` (if set) says why smb3d does not give it yet."""

    name: str
    category: str
    run: object
    expected: str
    source: str
    bug: str = ""


CASES = []


def case(category, expected, source, bug=""):
    def register(fn):
        CASES.append(Case(fn.__name__, category, fn, expected, source, bug))
        return fn
    return register


# --- helpers --------------------------------------------------------------------------------------

def fresh(env):
    return s.Smb2(env.target)


def negotiated(env, dialects=(0x0311,)):
    c = fresh(env)
    r = c.negotiate(dialects)
    assert r.status == 0, r.name
    return c


def session(env, dialects=(0x0311,)):
    return s.connect(env.target, dialects)


def opened(env, name="served.txt", **kw):
    c = session(env)
    r, fid = c.create(name, **kw)
    assert r.status == 0, "open %s: %s" % (name, r.name)
    return c, fid


# Read, write, EAs, attributes, DELETE, READ_CONTROL and WRITE_DAC: what the cases touch, and
# what a reference server grants the owner without privileges.
SCRATCH_ACCESS = 0x0017019F


def scratch(env, name, data=b"original\n"):
    """A file created and written through the server (so that it owns it), left open for
    every access; returns (client, fid, local path)."""
    c = session(env)
    r, fid = c.create(name, access=SCRATCH_ACCESS, disposition=s.FILE_OVERWRITE_IF,
                      options=s.FILE_NON_DIRECTORY_FILE)
    assert r.status == 0, "create %s: %s" % (name, r.name)
    assert c.write(fid, 0, data).status == 0
    return c, fid, os.path.join(env.share_dir, name)


def unchanged(path, data=b"original\n"):
    with open(path, "rb") as f:
        return f.read() == data


def with_side_effect(outcome, ok, what):
    return outcome if ok else "%s but %s" % (outcome, what)


def joined(responses):
    return ",".join(r.name for r in responses)


def compound(c, pdus, timeout=3.0):
    c.send(s.chain(pdus))
    try:
        out = []
        while len(out) < len(pdus):
            out += c.recv_responses(timeout)
        return joined(out)
    except s.Dropped:
        return DROP
    except TimeoutError:
        return SILENT


# --- framing --------------------------------------------------------------------------------------

@case("framing", DROP, "smb3d max frame (9 MiB) / MS-SMB2 2.1; CVE-2023-38431: dropped before any allocation")
def length_prefix_beyond_maximum(env):
    before = s.rss_kib(env.pid) if env.pid else 0
    c = fresh(env)
    c.send_raw(b"\x00\xff\xff\xff" + b"\xfeSMB")
    out = DROP if c.dropped() else SILENT
    grown = (s.rss_kib(env.pid) - before) if env.pid else 0
    return with_side_effect(out, grown < 1024, "RSS grew %d KiB" % grown)


@case("framing", DROP, "as above, on an authenticated session")
def length_prefix_beyond_maximum_after_logon(env):
    c = session(env)
    c.send_raw(b"\x00\xff\xff\xff")
    return DROP if c.dropped() else SILENT


@case("framing", DROP, "security.md L1 (64 KiB before authentication; ksmbd 16 KiB)")
def large_frame_before_logon(env):
    c = fresh(env)
    body = s.negotiate_body([0x0311]) + b"\0" * (1 << 20)
    c.send(s.header(s.NEGOTIATE, 0, credit_charge=0) + body)
    return c.outcome()


@case("framing", DROP, "MS-SMB2 3.3.5.2.6: shorter than an SMB2 header, MUST disconnect")
def frame_shorter_than_header(env):
    c = fresh(env)
    c.send(b"\xfeSMB" + b"\0" * 16)
    return c.outcome()


@case("framing", DROP, "CVE-2023-38430: ProtocolId neither 0xFE, 0xFD, 0xFC nor 0xFF 'SMB'")
def unknown_protocol_id(env):
    c = fresh(env)
    c.send(s.header(s.NEGOTIATE, 0, protocol=b"\xfeSMC") + s.negotiate_body([0x0210]))
    return c.outcome()


@case("framing", DROP, "MS-SMB2 2.1 (the first byte MUST be zero); Samba 4.17 closes on a NetBIOS keep-alive "
                      "(security.md row 4 expected it to be ignored)")
def netbios_keepalive(env):
    c = fresh(env)
    c.send_raw(b"\x85\x00\x00\x00")
    try:
        return c.negotiate([0x0311]).name
    except (s.Dropped, ConnectionError):
        return DROP


# --- protocol state ----------------------------------------------------------------------------------

@case("state", DROP, "Samba 4.17 (first request must be NEGOTIATE); security.md row 11")
def request_before_negotiate(env):
    c = fresh(env)
    return c.call(s.SESSION_SETUP, s.session_setup_body(s.spnego_init(s.ntlm_negotiate())))


@case("state", DROP, "MS-SMB2 3.3.5.3.1: SMB1 NEGOTIATE without an SMB2 dialect, no SMB1 server: disconnect")
def smb1_negotiate_without_smb2_dialect(env):
    c = fresh(env)
    dialects = b"\x02NT LM 0.12\x00"
    msg = b"\xffSMB\x72" + b"\0" * 4 + b"\x18" + struct.pack("<H", 0xC853) + b"\0" * 12 + b"\xff\xfe\0\0\0\0"
    msg += b"\x00" + struct.pack("<H", len(dialects)) + dialects
    c.send(msg)
    return c.outcome()


@case("state", DROP, "MS-SMB2 3.3.5.3; CVE-2023-52441: SMB1 traffic after SMB2 negotiation")
def smb1_after_smb2_negotiate(env):
    c = negotiated(env)
    dialects = b"\x02SMB 2.002\x00\x02SMB 2.???\x00"
    msg = b"\xffSMB\x72" + b"\0" * 4 + b"\x18" + struct.pack("<H", 0xC853) + b"\0" * 12 + b"\xff\xfe\0\0\0\0"
    msg += b"\x00" + struct.pack("<H", len(dialects)) + dialects
    c.send(msg)
    return c.outcome()


@case("state", DROP, "MS-SMB2 3.3.5.2: SMB1 command other than NEGOTIATE")
def smb1_garbage(env):
    c = fresh(env)
    c.send(b"\xffSMB\x2e" + b"\0" * 27 + b"\x00\x00\x00")
    return c.outcome()


@case("state", DROP, "MS-SMB2 3.3.5.4: a second NEGOTIATE on a connection is a protocol error")
def second_negotiate(env):
    c = negotiated(env)
    return c.call(s.NEGOTIATE, s.negotiate_body([0x0311]), credit_charge=0)


# --- header ------------------------------------------------------------------------------------------

@case("header", DROP, "Samba 4.17 smbd_smb2_inbuf_parse_compound: header StructureSize must be 64")
def header_structure_size_wrong(env):
    c = fresh(env)
    c.send(s.header(s.NEGOTIATE, 0, structure_size=63, credit_charge=0) + s.negotiate_body([0x0210]))
    return c.outcome()


@case("header", DROP, "MS-SMB2 3.3.5.2.6: unknown Command code, MUST disconnect without a response")
def unknown_command(env):
    c = session(env)
    return c.call(0x13, s.RESERVED4)


@case("header", "STATUS_INVALID_PARAMETER", "MS-SMB2 3.3.5.2.4: SMB2_FLAGS_SIGNED on NEGOTIATE")
def negotiate_with_signed_flag(env):
    c = fresh(env)
    return c.call(s.NEGOTIATE, s.negotiate_body([0x0311]), credit_charge=0, flags=s.FLAGS_SIGNED)


# --- StructureSize of every request body ------------------------------------------------------------

def structure_size_case(command, build, delta):
    def run(env):
        c = session(env)
        _, fid = c.create("served.txt")
        body = bytearray(build(c, fid))
        size = struct.unpack_from("<H", body)[0]
        struct.pack_into("<H", body, 0, size + delta)
        return c.call(command, bytes(body))
    return run


STRUCTURE_SIZE_BODIES = [
    ("tree_connect", s.TREE_CONNECT, lambda c, fid: s.tree_connect_body(c.target.unc())),
    ("create", s.CREATE, lambda c, fid: s.create_body("served.txt")),
    ("close", s.CLOSE, lambda c, fid: s.close_body(fid)),
    ("flush", s.FLUSH, lambda c, fid: struct.pack("<HHI", 24, 0, 0) + fid),
    ("read", s.READ, lambda c, fid: s.read_body(fid, 0, 16)),
    ("write", s.WRITE, lambda c, fid: s.write_body(fid, 0, b"x")),
    ("lock", s.LOCK, lambda c, fid: s.lock_body(fid, [(0, 1, 2)])),
    ("ioctl", s.IOCTL, lambda c, fid: s.ioctl_body(fid, 0x00140078)),
    ("echo", s.ECHO, lambda c, fid: s.RESERVED4),
    ("query_directory", s.QUERY_DIRECTORY, lambda c, fid: s.query_directory_body(fid)),
    ("query_info", s.QUERY_INFO, lambda c, fid: s.query_info_body(fid, 1, 4)),
    ("set_info", s.SET_INFO, lambda c, fid: s.set_info_body(fid, 1, 14, struct.pack("<Q", 0))),
    ("logoff", s.LOGOFF, lambda c, fid: s.RESERVED4),
    ("tree_disconnect", s.TREE_DISCONNECT, lambda c, fid: s.RESERVED4),
]

for _name, _command, _build in STRUCTURE_SIZE_BODIES:
    for _delta in (-1, 1):
        _fn = structure_size_case(_command, _build, _delta)
        _fn.__name__ = "structure_size_%s_%s" % (_name, "minus1" if _delta < 0 else "plus1")
        case("structure-size", "STATUS_INVALID_PARAMETER",
             "MS-SMB2 3.3.5.2.6 (structure not as in section 2); Samba smbd_smb2_request_verify_sizes")(_fn)


@case("structure-size", "STATUS_INVALID_PARAMETER", "MS-SMB2 3.3.5.2.6; Samba smbd_smb2_request_verify_sizes")
def structure_size_negotiate(env):
    c = fresh(env)
    body = bytearray(s.negotiate_body([0x0210]))
    struct.pack_into("<H", body, 0, 35)
    return c.call(s.NEGOTIATE, bytes(body), credit_charge=0)


@case("structure-size", "STATUS_INVALID_PARAMETER", "MS-SMB2 3.3.5.2.6; Samba smbd_smb2_request_verify_sizes")
def structure_size_session_setup(env):
    c = negotiated(env)
    body = bytearray(s.session_setup_body(s.spnego_init(s.ntlm_negotiate())))
    struct.pack_into("<H", body, 0, 24)
    return c.call(s.SESSION_SETUP, bytes(body))


# --- NEGOTIATE ------------------------------------------------------------------------------------------

@case("negotiate", "STATUS_INVALID_PARAMETER", "MS-SMB2 3.3.5.4: DialectCount 0 MUST fail with STATUS_INVALID_PARAMETER")
def negotiate_zero_dialects(env):
    c = fresh(env)
    return c.call(s.NEGOTIATE, s.negotiate_body([]), credit_charge=0)


@case("negotiate", "STATUS_INVALID_PARAMETER", "MS-SMB2 3.3.5.2.6: DialectCount beyond the bytes present")
def negotiate_dialect_count_beyond_message(env):
    c = fresh(env)
    return c.call(s.NEGOTIATE, s.negotiate_body([0x0202, 0x0210], count=200), credit_charge=0)


@case("negotiate", "STATUS_NOT_SUPPORTED", "MS-SMB2 3.3.5.4: no common dialect")
def negotiate_no_common_dialect(env):
    c = fresh(env)
    return c.call(s.NEGOTIATE, s.negotiate_body([0x0222, 0x0401]), credit_charge=0)


@case("negotiate", "STATUS_INVALID_PARAMETER", "MS-SMB2 3.3.5.4: 3.1.1 without SMB2_PREAUTH_INTEGRITY_CAPABILITIES")
def negotiate_311_without_preauth(env):
    c = fresh(env)
    return c.call(s.NEGOTIATE, s.negotiate_body([0x0311], contexts=[s.encryption_context()]), credit_charge=0)


@case("negotiate", "STATUS_INVALID_PARAMETER", "MS-SMB2 3.3.5.4: a context type present more than once")
def negotiate_duplicate_preauth(env):
    c = fresh(env)
    ctx = [s.preauth_context(), s.preauth_context(), s.encryption_context()]
    return c.call(s.NEGOTIATE, s.negotiate_body([0x0311], contexts=ctx), credit_charge=0)


@case("negotiate", "STATUS_INVALID_PARAMETER", "MS-SMB2 3.3.5.4: a context type present more than once")
def negotiate_duplicate_encryption(env):
    c = fresh(env)
    ctx = [s.preauth_context(), s.encryption_context(), s.encryption_context()]
    return c.call(s.NEGOTIATE, s.negotiate_body([0x0311], contexts=ctx), credit_charge=0)


@case("negotiate", "STATUS_SMB_NO_PREAUTH_INTEGRITY_HASH_OVERLAP",
      "MS-SMB2 3.3.5.4: no hash algorithm in common")
def negotiate_unknown_preauth_hash(env):
    c = fresh(env)
    ctx = [s.preauth_context(hashes=(0x0002,)), s.encryption_context()]
    return c.call(s.NEGOTIATE, s.negotiate_body([0x0311], contexts=ctx), credit_charge=0)


@case("negotiate", "STATUS_INVALID_PARAMETER", "MS-SMB2 3.3.5.2.6; CVE-2023-38427: NegotiateContextOffset past the message")
def negotiate_context_offset_past_message(env):
    c = fresh(env)
    body = bytearray(s.negotiate_body([0x0311]))
    struct.pack_into("<I", body, 28, 0x10000)
    return c.call(s.NEGOTIATE, bytes(body), credit_charge=0)


@case("negotiate", "STATUS_INVALID_PARAMETER", "MS-SMB2 3.3.5.2.6; CVE-2023-38427: context DataLength past the message")
def negotiate_context_length_past_message(env):
    c = fresh(env)
    body = bytearray(s.negotiate_body([0x0311], contexts=[s.encryption_context(), s.preauth_context()]))
    ctx_at = struct.unpack_from("<I", body, 28)[0] - 64
    struct.pack_into("<H", body, ctx_at + 2, 0x4000)
    return c.call(s.NEGOTIATE, bytes(body), credit_charge=0)


@case("negotiate", DROP, "MS-SMB2 3.3.5.2.7 / smb3d: NEGOTIATE inside a compound")
def negotiate_in_compound(env):
    c = fresh(env)
    n = s.header(s.NEGOTIATE, 0, credit_charge=0) + s.negotiate_body([0x0210])
    e = s.header(s.ECHO, 1) + s.RESERVED4
    return compound(c, [n, e])


# --- SESSION_SETUP ------------------------------------------------------------------------------------

def first_leg_status(env, token):
    c = negotiated(env)
    try:
        return c.session_setup(token).name
    except s.Dropped:
        return DROP


@case("session-setup", "STATUS_LOGON_FAILURE", "MS-NLMP 3.3.2; CVE-2018-1139: NTLMv1 is refused")
def ntlm_v1_is_refused(env):
    c = negotiated(env)
    return c.login(v1=True).name


@case("session-setup", "STATUS_LOGON_FAILURE", "MS-NLMP 3.1.5.1.2; CVE-2019-1040: a wrong MIC fails the logon")
def ntlm_mic_mismatch(env):
    c = negotiated(env)
    return c.login(tamper_mic=True).name


@case("session-setup", "STATUS_LOGON_FAILURE", "MS-NLMP 3.3.2: wrong password")
def wrong_password(env):
    c = negotiated(env)
    return c.login(password="not-the-password").name


@case("session-setup", "STATUS_LOGON_FAILURE", "MS-NLMP 3.3.2: unknown user, same answer as a wrong password")
def unknown_user(env):
    c = negotiated(env)
    return c.login(user="nobody-here").name


@case("session-setup", "STATUS_INVALID_PARAMETER", "Samba 4.17; CVE-2023-52440: EncryptedRandomSessionKey longer than 16 bytes")
def ntlm_session_key_too_long(env):
    c = negotiated(env)
    return c.login(session_key_len=40).name


@case("session-setup", "STATUS_INVALID_PARAMETER", "Samba 4.17; CVE-2023-0210/38428: NtChallengeResponse outside the message")
def ntlm_response_offset_outside(env):
    c = negotiated(env)
    return c.login(offsets={1: (0x2000, 0xFF00)}).name


@case("session-setup", "STATUS_INVALID_PARAMETER", "Samba 4.17: SPNEGO that is not DER")
def spnego_garbage(env):
    return first_leg_status(env, b"\x60\x82\xff\xff" + b"\xa0" * 32)


@case("session-setup", "STATUS_INVALID_PARAMETER", "Samba 4.17: NTLMSSP NEGOTIATE with a bad signature")
def ntlm_negotiate_bad_signature(env):
    return first_leg_status(env, b"NTLMSSX\0" + s.ntlm_negotiate()[8:])


@case("session-setup", "STATUS_INVALID_PARAMETER", "MS-SMB2 3.3.5.2.6; SecurityBufferOffset/Length outside the message")
def session_setup_buffer_outside(env):
    c = negotiated(env)
    return c.call(s.SESSION_SETUP, s.session_setup_body(b"\x60\x00", length=0x2000))


@case("session-setup", "STATUS_USER_SESSION_DELETED", "MS-SMB2 3.3.5.5: SessionId not in the session table")
def session_setup_unknown_session(env):
    c = negotiated(env)
    return c.call(s.SESSION_SETUP, s.session_setup_body(s.spnego_init(s.ntlm_negotiate())), session_id=0x1234_5678_9abc)


# --- sessions and trees --------------------------------------------------------------------------------

@case("session", "STATUS_USER_SESSION_DELETED", "MS-SMB2 3.3.5.2.9: unknown SessionId")
def unknown_session_id(env):
    c = session(env)
    return c.call(s.CREATE, s.create_body("served.txt"), session_id=c.session_id ^ 0x5a5a_0000)


@case("session", "STATUS_USER_SESSION_DELETED", "MS-SMB2 3.3.5.2.9: CREATE before any SESSION_SETUP")
def request_without_session(env):
    c = negotiated(env)
    return c.call(s.CREATE, s.create_body("served.txt"), session_id=0)


@case("session", "STATUS_USER_SESSION_DELETED", "MS-SMB2 3.3.5.6; smbtorture smb2.session.two_logoff: second LOGOFF")
def second_logoff(env):
    c = session(env)
    assert c.request(s.LOGOFF, s.RESERVED4).status == 0
    return c.call(s.LOGOFF, s.RESERVED4)


@case("tree", "STATUS_NETWORK_NAME_DELETED", "MS-SMB2 3.3.5.2.11: unknown TreeId")
def unknown_tree_id(env):
    c = session(env)
    return c.call(s.CREATE, s.create_body("served.txt"), tree_id=c.tree_id + 77)


@case("tree", "STATUS_BAD_NETWORK_NAME", "MS-SMB2 3.3.5.7: no such share")
def tree_connect_unknown_share(env):
    c = session(env)
    return c.tree_connect("no-such-share").name


@case("tree", "STATUS_BAD_NETWORK_NAME", "MS-SMB2 3.3.5.7; Samba 4.17: a share name of `..`")
def tree_connect_dot_dot(env):
    c = session(env)
    return c.call(s.TREE_CONNECT, s.tree_connect_body("\\\\%s\\..\\%s" % (env.target.host, env.target.share)),
                  tree_id=0, sign=c.signing_key is not None)


@case("tree", "STATUS_INVALID_PARAMETER", "MS-SMB2 3.3.5.2.6; CVE-2022-47938: PathOffset/PathLength outside the message")
def tree_connect_path_outside(env):
    c = session(env)
    return c.call(s.TREE_CONNECT, s.tree_connect_body(env.target.unc(), length=0x1000), tree_id=0,
                  sign=c.signing_key is not None)


@case("tree", "STATUS_INVALID_PARAMETER", "MS-SMB2 3.3.5.2.6; CVE-2024-26952: PathOffset inside the header")
def tree_connect_path_in_header(env):
    c = session(env)
    return c.call(s.TREE_CONNECT, s.tree_connect_body(env.target.unc(), offset=16), tree_id=0,
                  sign=c.signing_key is not None)


@case("tree", DROP, "MS-SMB2 3.3.5.7: 3.1.1 TREE_CONNECT neither signed nor encrypted MUST disconnect "
                    "(Samba 4.17 answers STATUS_ACCESS_DENIED)")
def tree_connect_311_unsigned(env):
    c = negotiated(env)
    assert c.login().status == 0
    return c.tree_connect(sign=False).name


# --- credits and message ids -------------------------------------------------------------------------

@case("credits", DROP, "MS-SMB2 3.3.5.2.3: a MessageId already used; Samba terminates")
def message_id_reused(env):
    c = session(env)
    mid = c.next_mid
    assert c.request(s.ECHO, s.RESERVED4, message_id=mid).status == 0
    return c.call(s.ECHO, s.RESERVED4, message_id=mid)


@case("credits", DROP, "MS-SMB2 3.3.5.2.3: a MessageId beyond the credits granted")
def message_id_beyond_window(env):
    c = session(env)
    return c.call(s.ECHO, s.RESERVED4, message_id=c.next_mid + 100000)


@case("credits", DROP, "MS-SMB2 3.3.5.2.5; Samba: CreditCharge beyond the credits granted terminates")
def credit_charge_beyond_window(env):
    c = session(env)
    return c.call(s.ECHO, s.RESERVED4, credit_charge=4000)


@case("credits", "STATUS_INVALID_PARAMETER", "MS-SMB2 3.3.5.2.5: CreditCharge too small for a 256 KiB READ")
def credit_charge_too_small_for_payload(env):
    c, fid = opened(env)
    return c.call(s.READ, s.read_body(fid, 0, 256 * 1024), credit_charge=1)


@case("credits", "WITHIN", "security.md L4 (8192); Samba smb2 max credits: granted credits never exceed the window")
def credit_requests_stay_bounded(env):
    c = session(env)
    for _ in range(40):
        c.request(s.ECHO, s.RESERVED4, credits=65535)
    outstanding = c.granted - c.next_mid
    return "WITHIN" if outstanding <= 8192 else "EXCEEDED (%d)" % outstanding


# --- compound chains ---------------------------------------------------------------------------------

def compound_with(env, mutate):
    c = session(env)
    a = c.pdu(s.ECHO, s.RESERVED4)
    b = c.pdu(s.ECHO, s.RESERVED4)
    frame = bytearray(s.chain([a, b]))
    mutate(frame)
    c.send(bytes(frame))
    return c.outcome()


@case("compound", DROP, "MS-SMB2 3.3.5.2.7: NextCommand not 8-byte aligned")
def next_command_misaligned(env):
    return compound_with(env, lambda f: struct.pack_into("<I", f, 20, 68))


@case("compound", DROP, "MS-SMB2 3.3.5.2.7; CVE-2023-3865: NextCommand past the end of the message")
def next_command_past_end(env):
    return compound_with(env, lambda f: struct.pack_into("<I", f, 20, 0x10000))


@case("compound", DROP, "Samba parse loop; CVE-2026-64578: NextCommand shorter than a header")
def next_command_inside_header(env):
    return compound_with(env, lambda f: struct.pack_into("<I", f, 20, 8))


@case("compound", "STATUS_INVALID_PARAMETER", "MS-SMB2 3.3.5.2.7.2: first request marked related")
def first_request_related(env):
    c = session(env)
    return c.call(s.ECHO, s.RESERVED4, flags=s.FLAGS_RELATED)


@case("compound", "STATUS_SUCCESS,STATUS_NETWORK_NAME_DELETED",
      "MS-SMB2 3.3.5.2.7.2; CVE-2022-47939, CVE-2026-23428: WRITE after TREE_DISCONNECT in the chain")
def tree_disconnect_then_related_write(env):
    c, fid, path = scratch(env, "td-write.txt")
    out = compound(c, [c.pdu(s.TREE_DISCONNECT, s.RESERVED4),
                       c.pdu(s.WRITE, s.write_body(fid, 0, b"HIJACKED"), flags=s.FLAGS_RELATED)])
    return with_side_effect(out, unchanged(path), "the file was written")


@case("compound", "STATUS_SUCCESS,STATUS_USER_SESSION_DELETED", "MS-SMB2 3.3.5.2.7.2: CREATE after LOGOFF in the chain")
def logoff_then_related_create(env):
    c = session(env)
    out = compound(c, [c.pdu(s.LOGOFF, s.RESERVED4),
                       c.pdu(s.CREATE, s.create_body("after-logoff.txt", access=s.ALL_ACCESS,
                                                     disposition=s.FILE_CREATE), flags=s.FLAGS_RELATED)])
    return with_side_effect(out, not os.path.exists(os.path.join(env.share_dir, "after-logoff.txt")),
                            "the file was created")


@case("compound", "STATUS_SUCCESS,STATUS_FILE_CLOSED", "MS-SMB2 3.3.5.2.7.2: READ after CLOSE in the chain")
def close_then_related_read(env):
    c, fid = opened(env)
    return compound(c, [c.pdu(s.CLOSE, s.close_body(fid)),
                        c.pdu(s.READ, s.read_body(s.ANY_FILE, 0, 16), flags=s.FLAGS_RELATED)])


@case("compound", "STATUS_SUCCESS,STATUS_USER_SESSION_DELETED", "CVE-2023-3866: [ECHO, CREATE with SessionId 0]")
def echo_then_unrelated_create_without_session(env):
    c = session(env)
    return compound(c, [c.pdu(s.ECHO, s.RESERVED4), c.pdu(s.CREATE, s.create_body("served.txt"), session_id=0)])


@case("compound", "STATUS_SUCCESS,STATUS_USER_SESSION_DELETED",
      "CVE-2023-52442: each unrelated element checked with its own SessionId")
def unrelated_element_with_foreign_session(env):
    c = session(env)
    return compound(c, [c.pdu(s.ECHO, s.RESERVED4),
                        c.pdu(s.CREATE, s.create_body("served.txt"), session_id=0xdead_beef)])


@case("compound", "STATUS_OBJECT_NAME_NOT_FOUND,STATUS_OBJECT_NAME_NOT_FOUND",
      "MS-SMB2 3.3.5.2.7.2: a related request after a failed one fails the same way")
def failed_create_then_related_read(env):
    c = session(env)
    return compound(c, [c.pdu(s.CREATE, s.create_body("no-such-file.txt")),
                        c.pdu(s.READ, s.read_body(s.ANY_FILE, 0, 16), flags=s.FLAGS_RELATED)])


@case("compound", DROP, "security.md L8: more than 32 elements in a chain")
def compound_too_long(env):
    c = session(env)
    return compound(c, [c.pdu(s.ECHO, s.RESERVED4) for _ in range(40)])


# --- (offset, length) pairs -----------------------------------------------------------------------------

def invalid_buffer_case(source, bug=""):
    return case("offsets", "STATUS_INVALID_PARAMETER", source, bug)


@invalid_buffer_case("MS-SMB2 3.3.5.9; CVE-2024-26954: NameOffset inside the header")
def create_name_offset_in_header(env):
    c = session(env)
    return c.call(s.CREATE, s.create_body("served.txt", name_offset=16))


@invalid_buffer_case("MS-SMB2 3.3.5.9: NameLength past the message")
def create_name_past_message(env):
    c = session(env)
    return c.call(s.CREATE, s.create_body("served.txt", name_length=0x4000))


@invalid_buffer_case("MS-SMB2 3.3.5.9: CreateContextsOffset/Length past the message")
def create_contexts_past_message(env):
    c = session(env)
    return c.call(s.CREATE, s.create_body("served.txt", contexts=s.create_context(b"MxAc", b""),
                                          ctx_length=0x4000))


@invalid_buffer_case("MS-SMB2 2.2.13.2; CVE-2023-38426: context NameLength past its entry")
def create_context_name_past_entry(env):
    c = session(env)
    ctx = bytearray(s.create_context(b"MxAc", b""))
    struct.pack_into("<H", ctx, 6, 200)
    return c.call(s.CREATE, s.create_body("served.txt", contexts=bytes(ctx)))


@invalid_buffer_case("MS-SMB2 2.2.13.2; ZDI-CAN-21824: context Next pointing into itself")
def create_context_next_loops(env):
    c = session(env)
    ctx = bytearray(s.create_context(b"MxAc", b"") + b"\0" * 8)
    struct.pack_into("<I", ctx, 0, 4)
    return c.call(s.CREATE, s.create_body("served.txt", contexts=bytes(ctx)))


@invalid_buffer_case("MS-SMB2 3.3.5.13; CVE-2023-3865: DataOffset+Length past the message (short write)")
def write_data_past_message(env):
    c, fid, path = scratch(env, "short-write.txt")
    out = c.call(s.WRITE, s.write_body(fid, 0, b"XY", length=4096))
    return with_side_effect(out, unchanged(path), "the file changed")


@invalid_buffer_case("MS-SMB2 3.3.5.13; CVE-2022-47943: DataOffset 0 with a Length")
def write_data_offset_zero(env):
    c, fid, path = scratch(env, "zero-offset.txt")
    out = c.call(s.WRITE, s.write_body(fid, 0, b"XY" * 40, data_offset=0))
    return with_side_effect(out, unchanged(path), "the file changed")


@invalid_buffer_case("MS-SMB2 3.3.5.13: DataOffset inside the header")
def write_data_in_header(env):
    c, fid, path = scratch(env, "header-offset.txt")
    out = c.call(s.WRITE, s.write_body(fid, 0, b"XY" * 40, data_offset=8))
    return with_side_effect(out, unchanged(path), "the file changed")


@invalid_buffer_case("MS-FSA 2.1.5.3; CVE-2024-56626: WRITE at an offset of 2^63 or more")
def write_offset_beyond_2_63(env):
    c, fid, path = scratch(env, "far-write.txt")
    out = c.call(s.WRITE, s.write_body(fid, 1 << 63, b"X"))
    return with_side_effect(out, unchanged(path) and os.path.getsize(path) == 9, "the file changed")


@invalid_buffer_case("MS-FSA 2.1.5.2; CVE-2024-56627: READ whose end passes 2^63-1")
def read_end_beyond_2_63(env):
    c, fid = opened(env)
    return c.call(s.READ, s.read_body(fid, (1 << 63) - 8, 64))


@invalid_buffer_case("MS-SMB2 3.3.5.12: READ Length above MaxReadSize")
def read_length_above_max_read(env):
    c, fid = opened(env)
    charge = (env.max_read * 2) // 65536
    return c.call(s.READ, s.read_body(fid, 0, env.max_read * 2), credit_charge=min(charge, 60))


@invalid_buffer_case("MS-SMB2 3.3.5.20: InputBufferOffset/Length past the message")
def query_info_input_past_message(env):
    c, fid = opened(env)
    return c.call(s.QUERY_INFO, s.query_info_body(fid, 1, 15, input_buf=b"\0" * 12, input_length=0x3000))


@invalid_buffer_case("MS-SMB2 3.3.5.20: InputBufferOffset inside the header")
def query_info_input_in_header(env):
    c, fid = opened(env)
    return c.call(s.QUERY_INFO, s.query_info_body(fid, 1, 15, input_buf=b"\0" * 12, input_offset=20))


@invalid_buffer_case("MS-SMB2 3.3.5.21: BufferOffset/Length past the message")
def set_info_buffer_past_message(env):
    c, fid, path = scratch(env, "setinfo-past.txt")
    out = c.call(s.SET_INFO, s.set_info_body(fid, 1, 20, struct.pack("<Q", 1), length=0x4000))
    return with_side_effect(out, unchanged(path), "the file changed")


@invalid_buffer_case("MS-SMB2 3.3.5.21: BufferOffset inside the header")
def set_info_buffer_in_header(env):
    c, fid, path = scratch(env, "setinfo-header.txt")
    out = c.call(s.SET_INFO, s.set_info_body(fid, 1, 20, struct.pack("<Q", 1), offset=24))
    return with_side_effect(out, unchanged(path), "the file changed")


@invalid_buffer_case("MS-SMB2 3.3.5.18: FileNameOffset/Length past the message")
def query_directory_pattern_past_message(env):
    c, fid = opened(env, "dir", options=s.FILE_DIRECTORY_FILE)
    return c.call(s.QUERY_DIRECTORY, s.query_directory_body(fid, "*", length=0x2000))


@invalid_buffer_case("MS-SMB2 3.3.5.15; CVE-2024-26952: InputOffset/InputCount past the message")
def ioctl_input_past_message(env):
    c = session(env)
    return c.call(s.IOCTL, s.ioctl_body(s.ANY_FILE, 0x00140204, b"\0" * 24, input_count=0x8000))


@invalid_buffer_case("MS-SMB2 3.3.5.15: InputOffset+InputCount wrapping 32 bits")
def ioctl_input_offset_wraps(env):
    c = session(env)
    return c.call(s.IOCTL, s.ioctl_body(s.ANY_FILE, 0x00140204, b"\0" * 24, input_offset=0xFFFFFFF0,
                                        input_count=0x20))


@invalid_buffer_case("MS-SMB2 3.3.5.18: FileNameOffset inside the header")
def query_directory_pattern_in_header(env):
    c, fid = opened(env, "dir", options=s.FILE_DIRECTORY_FILE)
    return c.call(s.QUERY_DIRECTORY, s.query_directory_body(fid, "*", offset=32))


@invalid_buffer_case("MS-SMB2 3.3.5.15: InputOffset inside the header")
def ioctl_input_in_header(env):
    c = session(env)
    return c.call(s.IOCTL, s.ioctl_body(s.ANY_FILE, 0x00140204, b"\0" * 24, input_offset=40))


@invalid_buffer_case("MS-SMB2 3.3.5.5: SecurityBufferOffset inside the header")
def session_setup_buffer_in_header(env):
    c = negotiated(env)
    return c.call(s.SESSION_SETUP, s.session_setup_body(s.spnego_init(s.ntlm_negotiate()), offset=8))


@invalid_buffer_case("MS-SMB2 3.3.5.21: BufferLength 0xFFFFFFFF (offset plus length wraps 32 bits)")
def set_info_length_wraps(env):
    c, fid, path = scratch(env, "setinfo-wrap.txt")
    out = c.call(s.SET_INFO, s.set_info_body(fid, 1, 20, struct.pack("<Q", 1), length=0xFFFFFFFF))
    return with_side_effect(out, unchanged(path), "the file changed")


@invalid_buffer_case("MS-SMB2 3.3.5.20: InputBufferLength 0xFFFFFFFF")
def query_info_input_length_wraps(env):
    c, fid = opened(env)
    return c.call(s.QUERY_INFO, s.query_info_body(fid, 1, 15, input_buf=b"\0" * 12, input_length=0xFFFFFFFF))


@invalid_buffer_case("MS-SMB2 3.3.5.9: CreateContextsOffset+Length wrapping 32 bits")
def create_contexts_offset_wraps(env):
    c = session(env)
    return c.call(s.CREATE, s.create_body("served.txt", contexts=s.create_context(b"MxAc", b""),
                                          ctx_offset=0xFFFFFFF8, ctx_length=0x10))


@invalid_buffer_case("MS-SMB2 3.3.5.14: LockCount 0")
def lock_count_zero(env):
    c, fid = opened(env)
    return c.call(s.LOCK, s.lock_body(fid, [(0, 1, 2)], count=0))


@invalid_buffer_case("MS-SMB2 2.2.26: LockCount elements past the message")
def lock_count_past_message(env):
    c, fid = opened(env)
    return c.call(s.LOCK, s.lock_body(fid, [(0, 1, 2)], count=500))


# --- EA, security descriptor, rename target, path lengths ----------------------------------------------

@case("sizes", "STATUS_EA_LIST_INCONSISTENT", "MS-FSCC 2.4.15 / MS-FSA 2.1.5.14.2; CVE-2023-4130: NextEntryOffset past the buffer")
def ea_next_entry_past_buffer(env):
    c, fid, path = scratch(env, "ea-next.txt")
    eas = bytearray(s.full_ea([(b"A", b"1"), (b"B", b"2")]))
    struct.pack_into("<I", eas, 0, 0x400)
    return c.call(s.SET_INFO, s.set_info_body(fid, 1, 15, bytes(eas)))


@case("sizes", "STATUS_EA_LIST_INCONSISTENT", "MS-FSCC 2.4.15 / MS-FSA 2.1.5.14.2: EaValueLength past the entry")
def ea_value_past_entry(env):
    c, fid, path = scratch(env, "ea-value.txt")
    eas = bytearray(s.full_ea([(b"A", b"1")]))
    struct.pack_into("<H", eas, 6, 300)
    return c.call(s.SET_INFO, s.set_info_body(fid, 1, 15, bytes(eas)))


@case("sizes", "STATUS_INVALID_PARAMETER", "MS-SMB2 3.3.5.21: SET_INFO BufferLength above MaxTransactSize; Samba 4.17")
def ea_list_beyond_max_transact(env):
    c, fid, path = scratch(env, "ea-huge.txt")
    c.request(s.ECHO, s.RESERVED4, credits=512)
    # Just over MaxTransactSize (8 MiB), and within the 8 MiB + 64 KiB frame limit after logon.
    eas = s.full_ea([(b"E%05d" % i, b"v" * 60000) for i in range(140)])
    charge = (len(eas) + 65535) // 65536
    return c.call(s.SET_INFO, s.set_info_body(fid, 1, 15, eas), credit_charge=charge)


@case("sizes", "STATUS_INVALID_SECURITY_DESCR", "MS-DTYP 2.4.6; CVE-2022-47942: DACL offset past the descriptor")
def security_descriptor_dacl_outside(env):
    c, fid, path = scratch(env, "sd.txt")
    # Self-relative, DACL present, the DACL 4 KiB past a 20-byte descriptor; DACL_SECURITY_INFORMATION.
    sd = struct.pack("<BBHIIII", 1, 0, 0x8004, 0, 0, 0, 0x1000)
    return c.call(s.SET_INFO, s.set_info_body(fid, 3, 0, sd, additional=4))


@case("sizes", "STATUS_INVALID_SECURITY_DESCR", "MS-DTYP 2.4.5; CVE-2023-52755: an ACL whose AclSize runs past the descriptor")
def security_descriptor_acl_size_past_buffer(env):
    c, fid, path = scratch(env, "sd-acl.txt")
    acl = struct.pack("<BBHHH", 2, 0, 0xF000, 1, 0)
    sd = struct.pack("<BBHIIII", 1, 0, 0x8004, 0, 0, 0, 20) + acl
    return c.call(s.SET_INFO, s.set_info_body(fid, 3, 0, sd, additional=4))


@case("sizes", "STATUS_INVALID_PARAMETER", "MS-FSA 2.1.5.15.11, MS-FSCC 2.4.42: FileNameLength past the buffer; Samba 4.17")
def rename_name_past_buffer(env):
    c, fid, path = scratch(env, "rename-past.txt")
    return c.call(s.SET_INFO, s.set_info_body(fid, 1, 10, s.rename_info("x.txt", length=0x2000)))


@case("sizes", "STATUS_OBJECT_NAME_INVALID", "MS-FSCC 2.1.5.2 (a component of at most 255 characters)")
def rename_target_component_too_long(env):
    c, fid, path = scratch(env, "rename-long.txt")
    return c.call(s.SET_INFO, s.set_info_body(fid, 1, 10, s.rename_info("n" * 300)))


@case("sizes", "STATUS_OBJECT_NAME_INVALID", "MS-FSCC 2.1.5.2 (a component of at most 255 characters)")
def create_component_too_long(env):
    c = session(env)
    return c.call(s.CREATE, s.create_body("n" * 256))


@case("sizes", "STATUS_OBJECT_PATH_NOT_FOUND",
      "Samba 4.17; within the 32767-character limit (MS-FSCC 2.1.5): a 32000-character path under missing directories")
def create_path_too_long(env):
    c = session(env)
    name = "\\".join(["d" * 250] * 127)
    return c.call(s.CREATE, s.create_body(name, disposition=s.FILE_CREATE, access=s.ALL_ACCESS))


# --- names -----------------------------------------------------------------------------------------------

def open_status(env, name, **kw):
    c = session(env)
    return c.call(s.CREATE, s.create_body(name, **kw))


@case("names", "STATUS_OBJECT_NAME_INVALID", "MS-FSCC 2.1.5.2: NUL inside a name")
def name_with_nul(env):
    return open_status(env, "served\0.txt")


@case("names", "STATUS_OBJECT_PATH_SYNTAX_BAD", "Samba check_path_syntax; MS-FSA: `..` above the share root")
def name_dot_dot_above_root(env):
    out = open_status(env, "..\\outside\\canary.txt")
    return with_side_effect(out, canary_intact(env), "the canary changed")


@case("names", "STATUS_OBJECT_PATH_SYNTAX_BAD", "Samba check_path_syntax: `dir\\..\\..\\x`")
def name_dot_dot_inside_then_above(env):
    return open_status(env, "dir\\..\\..\\canary.txt")


@case("names", "STATUS_INVALID_PARAMETER", "MS-SMB2 3.3.5.9; smbtorture smb2.create.leading-slash")
def name_leading_backslash(env):
    return open_status(env, "\\served.txt")


@case("names", "STATUS_OBJECT_PATH_SYNTAX_BAD",
      "Samba 4.17 and docs/names.md (`/` separates like `\\`): `dir/../../canary.txt` climbs above the root "
      "(Windows, where `/` is invalid, answers STATUS_OBJECT_NAME_INVALID)")
def name_slash_dot_dot(env):
    return open_status(env, "dir/../../canary.txt")


@case("names", "STATUS_OBJECT_NAME_INVALID", "MS-FSCC 2.1.5.2: wildcards in a CREATE name")
def name_with_wildcard(env):
    return open_status(env, "serv*.txt")


@case("names", "STATUS_SUCCESS", "Samba 4.17 (POSIX has no devices in a share): `con` is an ordinary file")
def name_device_con(env):
    out = open_status(env, "con", access=s.ALL_ACCESS, disposition=s.FILE_OPEN_IF)
    return with_side_effect(out, os.path.isfile(os.path.join(env.share_dir, "con")), "no file `con` in the share")


@case("names", "STATUS_OBJECT_NAME_NOT_FOUND", "MS-FSA (NT names keep trailing dots); Samba 4.17: `served.txt.` is another name")
def name_trailing_dot(env):
    return open_status(env, "served.txt.")


@case("names", "STATUS_OBJECT_NAME_NOT_FOUND", "MS-FSA (NT names keep trailing spaces); Samba 4.17")
def name_trailing_space(env):
    return open_status(env, "served.txt ")


@case("names", "STATUS_SUCCESS", "MS-FSCC 2.1.5.3: `::$DATA` names the default stream")
def name_default_stream(env):
    return open_status(env, "served.txt::$DATA")


@case("names", "STATUS_OBJECT_NAME_INVALID", "MS-FSCC 2.1.5.3: more than two colons")
def name_stream_extra_colons(env):
    return open_status(env, "served.txt:a:b:$DATA")


@case("names", "STATUS_OBJECT_NAME_INVALID", "MS-FSCC 2.1.5.3: a stream on an intermediate component")
def name_stream_on_directory_component(env):
    return open_status(env, "dir:s\\file.txt")


# --- symlinks out of the share ------------------------------------------------------------------------------

@case("symlink", "STATUS_OBJECT_NAME_NOT_FOUND", "CVE-2021-44141; Samba test_symlink_traversal_smb2.sh: link to an outside file")
def symlink_to_outside_file(env):
    out = open_status(env, "escape-file")
    return with_side_effect(out, canary_intact(env), "the canary changed")


@case("symlink", "STATUS_OBJECT_NAME_NOT_FOUND", "CVE-2021-44141: link to a missing outside file, same answer")
def symlink_to_missing_outside_file(env):
    return open_status(env, "escape-missing")


@case("symlink", "STATUS_OBJECT_PATH_NOT_FOUND", "CVE-2021-44141; Samba test_symlink_traversal_smb2.sh: link as an intermediate component")
def symlink_dir_as_intermediate(env):
    out = open_status(env, "escape-dir\\canary.txt")
    return with_side_effect(out, canary_intact(env), "the canary changed")


@case("symlink", "STATUS_OBJECT_PATH_NOT_FOUND", "CVE-2021-43566, CVE-2026-68083: create through a link to outside; Samba 4.17")
def symlink_create_through_link(env):
    out = open_status(env, "escape-dir\\planted.txt", access=s.ALL_ACCESS, disposition=s.FILE_CREATE)
    return with_side_effect(out, canary_intact(env), "a file was planted outside")


@case("symlink", "STATUS_OBJECT_PATH_NOT_FOUND", "CVE-2017-2619, CVE-2026-68083: rename target through a link to outside; "
                                                  "Samba 4.17")
def symlink_rename_target_outside(env):
    c, fid, path = scratch(env, "rename-out.txt")
    out = c.call(s.SET_INFO, s.set_info_body(fid, 1, 10, s.rename_info("escape-dir\\stolen.txt")))
    return with_side_effect(out, canary_intact(env) and os.path.exists(path), "the file left the share")


@case("symlink", "STATUS_OBJECT_PATH_SYNTAX_BAD", "Samba check_path_syntax: rename target with `..` above the root")
def rename_target_dot_dot(env):
    c, fid, path = scratch(env, "rename-dotdot.txt")
    out = c.call(s.SET_INFO, s.set_info_body(fid, 1, 10, s.rename_info("..\\stolen.txt")))
    return with_side_effect(out, os.path.exists(path), "the file moved")


@case("symlink", "NO-LEAK", "CVE-2021-20316: a listing never shows the size of a file outside the share")
def listing_does_not_stat_outside(env):
    c, fid = opened(env, "", options=s.FILE_DIRECTORY_FILE)
    r = c.request(s.QUERY_DIRECTORY, s.query_directory_body(fid, "escape-file", klass=37))
    if r.status != 0:
        return "NO-LEAK"
    off, ln = struct.unpack_from("<HI", r.body, 2)
    entry = r.pdu[off:off + ln]
    size = struct.unpack_from("<Q", entry, 40)[0]
    return "LEAK (EndOfFile %d)" % size if size == len(CANARY) else "NO-LEAK"


@case("symlink", "STATUS_OBJECT_NAME_NOT_FOUND", "CVE-2023-3961, CVE-2017-7494: pipe name with `..`")
def pipe_name_traversal(env):
    c = session(env)
    r = c.tree_connect("IPC$")
    if r.status != 0:
        return "tree connect IPC$: " + r.name
    return c.call(s.CREATE, s.create_body("..\\..\\..\\run\\evil.sock"))


# --- information classes ----------------------------------------------------------------------------------

@case("info", "STATUS_INVALID_INFO_CLASS", "MS-SMB2 3.3.5.20.1: unknown FileInfoClass")
def query_info_unknown_class(env):
    c, fid = opened(env)
    return c.call(s.QUERY_INFO, s.query_info_body(fid, 1, 200))


@case("info", "STATUS_INFO_LENGTH_MISMATCH", "MS-FSA 2.1.5.12: OutputBufferLength below the fixed size")
def query_info_output_too_small(env):
    c, fid = opened(env)
    return c.call(s.QUERY_INFO, s.query_info_body(fid, 1, 4, output_len=8))


@case("info", "STATUS_OBJECT_NAME_INVALID", "security.md L34 (patterns of at most 255 characters); ksmbd d636ecf: "
                                           "answered fast (Samba 4.17: STATUS_NO_SUCH_FILE)")
def query_directory_huge_pattern(env):
    c, fid = opened(env, "dir", options=s.FILE_DIRECTORY_FILE)
    start = time.time()
    out = c.call(s.QUERY_DIRECTORY, s.query_directory_body(fid, "*?<>" * 2500, klass=37))
    took = time.time() - start
    return with_side_effect(out, took < 1.0, "took %.1f s" % took)


def run_all(env, names=None):
    """Every case's outcome, by name."""
    results = {}
    for c in CASES:
        if names and c.name not in names:
            continue
        try:
            results[c.name] = c.run(env)
        except s.Dropped:
            results[c.name] = DROP
        except Exception as e:  # the comparison run reports, it does not stop
            results[c.name] = "ERROR %s: %s" % (type(e).__name__, e)
    return results


def main(argv):
    port, user, password, share_dir, outside_dir = argv[1:6]
    pid = int(argv[6]) if len(argv) > 6 else 0
    prepare_share(share_dir, outside_dir)
    env = Env(s.Target(int(port), user, password), share_dir, outside_dir, pid)
    for name, outcome in run_all(env).items():
        c = next(c for c in CASES if c.name == name)
        mark = "ok " if outcome == c.expected else "DIFF"
        print("%s %-45s %-45s expected %s" % (mark, name, outcome, c.expected))


if __name__ == "__main__":
    main(sys.argv)
