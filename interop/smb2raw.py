"""A minimal SMB2/SMB3 client over a raw socket, written from MS-SMB2, MS-NLMP and RFC 4178 for
the crafted-packet suite: every header field, length and offset can be set by hand, and the
client reports a dropped connection instead of hiding it.

Only what the hostile tests need is here: NEGOTIATE (with 3.1.1 contexts and the preauth
hash), NTLMv2 logon in SPNEGO (plus the malformed variants), signing (HMAC-SHA256 for 2.x,
AES-CMAC for 3.x), and bodies for the commands that carry buffers.
"""

import hashlib
import hmac
import os
import socket
import struct
from dataclasses import dataclass, field

from cryptography.hazmat.primitives.ciphers import algorithms
from cryptography.hazmat.primitives.cmac import CMAC
from spnego._ntlm_raw import crypto as ntlm_crypto
from spnego._ntlm_raw.md4 import md4

# Commands (MS-SMB2 2.2.1.2).
NEGOTIATE, SESSION_SETUP, LOGOFF, TREE_CONNECT, TREE_DISCONNECT = 0, 1, 2, 3, 4
CREATE, CLOSE, FLUSH, READ, WRITE, LOCK, IOCTL, CANCEL, ECHO = 5, 6, 7, 8, 9, 10, 11, 12, 13
QUERY_DIRECTORY, CHANGE_NOTIFY, QUERY_INFO, SET_INFO, OPLOCK_BREAK = 14, 15, 16, 17, 18

FLAGS_ASYNC = 0x2
FLAGS_RELATED = 0x4
FLAGS_SIGNED = 0x8

STATUS = {
    0x00000000: "STATUS_SUCCESS",
    0x00000103: "STATUS_PENDING",
    0x80000005: "STATUS_BUFFER_OVERFLOW",
    0x80000006: "STATUS_NO_MORE_FILES",
    0x80000014: "STATUS_EA_LIST_INCONSISTENT",
    0xC0000001: "STATUS_UNSUCCESSFUL",
    0xC0000003: "STATUS_INVALID_INFO_CLASS",
    0xC0000004: "STATUS_INFO_LENGTH_MISMATCH",
    0xC0000008: "STATUS_INVALID_HANDLE",
    0xC000000D: "STATUS_INVALID_PARAMETER",
    0xC000000F: "STATUS_NO_SUCH_FILE",
    0xC0000010: "STATUS_INVALID_DEVICE_REQUEST",
    0xC0000011: "STATUS_END_OF_FILE",
    0xC0000016: "STATUS_MORE_PROCESSING_REQUIRED",
    0xC0000022: "STATUS_ACCESS_DENIED",
    0xC0000023: "STATUS_BUFFER_TOO_SMALL",
    0xC0000033: "STATUS_OBJECT_NAME_INVALID",
    0xC0000034: "STATUS_OBJECT_NAME_NOT_FOUND",
    0xC0000035: "STATUS_OBJECT_NAME_COLLISION",
    0xC0000039: "STATUS_OBJECT_PATH_INVALID",
    0xC000003A: "STATUS_OBJECT_PATH_NOT_FOUND",
    0xC000003B: "STATUS_OBJECT_PATH_SYNTAX_BAD",
    0xC0000043: "STATUS_SHARING_VIOLATION",
    0xC0000050: "STATUS_EA_TOO_LARGE",
    0xC0000051: "STATUS_NONEXISTENT_EA_ENTRY",
    0xC0000052: "STATUS_NO_EAS_ON_FILE",
    0xC000005F: "STATUS_NO_SUCH_LOGON_SESSION",
    0xC000006D: "STATUS_LOGON_FAILURE",
    0xC000005A: "STATUS_INVALID_OWNER",
    0xC0000078: "STATUS_INVALID_SID",
    0xC0000079: "STATUS_INVALID_SECURITY_DESCR",
    0xC000007E: "STATUS_RANGE_NOT_LOCKED",
    0xC0000097: "STATUS_TOO_MANY_PAGING_FILES",
    0xC00000BA: "STATUS_FILE_IS_A_DIRECTORY",
    0xC00000BB: "STATUS_NOT_SUPPORTED",
    0xC00000C9: "STATUS_NETWORK_NAME_DELETED",
    0xC00000CC: "STATUS_BAD_NETWORK_NAME",
    0xC00000D0: "STATUS_REQUEST_NOT_ACCEPTED",
    0xC0000101: "STATUS_DIRECTORY_NOT_EMPTY",
    0xC0000103: "STATUS_NOT_A_DIRECTORY",
    0xC0000128: "STATUS_FILE_CLOSED",
    0xC000015B: "STATUS_LOGON_TYPE_NOT_GRANTED",
    0xC000019C: "STATUS_FS_DRIVER_REQUIRED",
    0xC0000203: "STATUS_USER_SESSION_DELETED",
    0xC000020C: "STATUS_CONNECTION_DISCONNECTED",
    0xC0000225: "STATUS_NOT_FOUND",
    0xC0000184: "STATUS_INVALID_DEVICE_STATE",
    0xC00000B5: "STATUS_IO_TIMEOUT",
    0xC000000E: "STATUS_NO_SUCH_DEVICE",
    0xC0000120: "STATUS_CANCELLED",
    0xC000009A: "STATUS_INSUFFICIENT_RESOURCES",
    0xC0000192: "STATUS_NETLOGON_NOT_STARTED",
    0xC05D0000: "STATUS_SMB_NO_PREAUTH_INTEGRITY_HASH_OVERLAP",
    0xC0000272: "STATUS_INVALID_LOCK_RANGE",
    0xC000035C: "STATUS_NETWORK_SESSION_EXPIRED",
    0xC00000E5: "STATUS_INTERNAL_ERROR",
    0xC0000061: "STATUS_PRIVILEGE_NOT_HELD",
}

DROP = "DROP"
SILENT = "SILENT"

HEADER = struct.Struct("<4sHHIHHIIQIIQ16s")
HEADER_LEN = 64

# Access masks and create parameters (MS-SMB2 2.2.13).
GENERIC_READ_FILE = 0x00120089
READ_WRITE_FILE = 0x0012019F
ALL_ACCESS = 0x001F01FF
SHARE_ALL = 0x7
FILE_OPEN, FILE_CREATE, FILE_OPEN_IF, FILE_OVERWRITE_IF = 1, 2, 3, 5
FILE_DIRECTORY_FILE, FILE_NON_DIRECTORY_FILE = 0x1, 0x40


def status_name(code):
    return STATUS.get(code, "0x%08X" % code)


def utf16(s):
    return s.encode("utf-16-le", errors="surrogatepass")


@dataclass
class Response:
    """One SMB2 response read back from a frame."""

    command: int
    status: int
    flags: int
    message_id: int
    session_id: int
    tree_id: int
    credits: int
    next_command: int
    pdu: bytes
    signature: bytes

    @property
    def name(self):
        return status_name(self.status)

    @property
    def body(self):
        return self.pdu[HEADER_LEN:]


def parse_header(pdu):
    (_proto, _size, _charge, status, command, credits, flags, next_command, mid, pid_or_async_lo,
     tree_or_async_hi, session, sig) = HEADER.unpack_from(pdu)
    tree_id = 0 if flags & FLAGS_ASYNC else tree_or_async_hi
    return Response(command, status, flags, mid, session, tree_id, credits, next_command, bytes(pdu), sig)


def split_responses(message):
    """The responses of a (possibly compound) message."""
    out, pos = [], 0
    while True:
        if len(message) - pos < HEADER_LEN or message[pos:pos + 4] != b"\xfeSMB":
            raise ValueError("not an SMB2 response: %r" % message[pos:pos + 8])
        r = parse_header(message[pos:])
        end = pos + r.next_command if r.next_command else len(message)
        r.pdu = bytes(message[pos:end])
        out.append(r)
        if not r.next_command:
            return out
        pos = end


def header(command, message_id, session_id=0, tree_id=0, flags=0, credit_charge=1, credits=64,
           next_command=0, status=0, structure_size=64, protocol=b"\xfeSMB", async_id=None):
    if async_id is not None:
        flags |= FLAGS_ASYNC
        lo, hi = async_id & 0xFFFFFFFF, async_id >> 32
    else:
        lo, hi = 0xFEFF, tree_id
    return HEADER.pack(protocol, structure_size, credit_charge, status, command, credits, flags, next_command,
                       message_id, lo, hi, session_id, b"\0" * 16)


def chain(pdus):
    """PDUs chained into one compound: each but the last padded to 8 bytes, NextCommand set."""
    out = b""
    for i, p in enumerate(pdus):
        p = bytearray(p)
        if i < len(pdus) - 1:
            p += b"\0" * (-len(p) % 8)
            struct.pack_into("<I", p, 20, len(p))
        out += bytes(p)
    return out


# --- bodies (offsets count from the header start, as on the wire) -----------------------------

def negotiate_body(dialects, security_mode=1, capabilities=0x7F, guid=None, contexts=None, count=None):
    """NEGOTIATE request body; `contexts` is a list of (type, data) added when 3.1.1 is offered."""
    guid = guid or os.urandom(16)
    dialect_bytes = b"".join(struct.pack("<H", d) for d in dialects)
    contexts = contexts if contexts is not None else (default_contexts() if 0x0311 in dialects else [])
    fixed_end = HEADER_LEN + 36 + len(dialect_bytes)
    ctx_offset = (fixed_end + 7) // 8 * 8 if contexts else 0
    body = struct.pack("<HHHHI16sIHH", 36, len(dialects) if count is None else count, security_mode, 0, capabilities,
                       guid, ctx_offset, len(contexts), 0) + dialect_bytes
    if contexts:
        body += b"\0" * (ctx_offset - fixed_end)
        body += encode_contexts(contexts)
    return body


def encode_contexts(contexts):
    out = b""
    for i, (ctype, data) in enumerate(contexts):
        one = struct.pack("<HHI", ctype, len(data), 0) + data
        if i < len(contexts) - 1:
            one += b"\0" * (-len(one) % 8)
        out += one
    return out


def preauth_context(hashes=(1,), salt=None):
    salt = os.urandom(32) if salt is None else salt
    return (1, struct.pack("<HH", len(hashes), len(salt)) + b"".join(struct.pack("<H", h) for h in hashes) + salt)


def encryption_context(ciphers=(2, 1)):
    return (2, struct.pack("<H", len(ciphers)) + b"".join(struct.pack("<H", c) for c in ciphers))


def default_contexts():
    return [preauth_context(), encryption_context()]


def session_setup_body(token, flags=0, security_mode=1, previous=0, offset=None, length=None):
    off = HEADER_LEN + 24 if offset is None else offset
    ln = len(token) if length is None else length
    return struct.pack("<HBBIIHHQ", 25, flags, security_mode, 0, 0, off, ln, previous) + token


def tree_connect_body(path, offset=None, length=None):
    p = utf16(path)
    return struct.pack("<HHHH", 9, 0, HEADER_LEN + 8 if offset is None else offset,
                       len(p) if length is None else length) + p


def create_body(name, access=GENERIC_READ_FILE, disposition=FILE_OPEN, options=0, share=SHARE_ALL, attrs=0x80,
                contexts=b"", name_offset=None, name_length=None, ctx_offset=None, ctx_length=None, oplock=0):
    n = name if isinstance(name, bytes) else utf16(name)
    fixed = HEADER_LEN + 56
    buf = n if n or contexts else b"\0"
    c_off = 0
    if contexts:
        pad = b"\0" * (-(fixed + len(n)) % 8)
        c_off = fixed + len(n) + len(pad)
        buf = n + pad + contexts
    return struct.pack("<HBBIQQIIIIIHHII", 57, 0, oplock, 2, 0, 0, access, attrs, share, disposition, options,
                       fixed if name_offset is None else name_offset,
                       len(n) if name_length is None else name_length,
                       c_off if ctx_offset is None else ctx_offset,
                       len(contexts) if ctx_length is None else ctx_length) + buf


def create_context(name, data):
    """One create context (MS-SMB2 2.2.13.2), Next 0."""
    name_off = 16
    data_off = (name_off + len(name) + 7) // 8 * 8 if data else 0
    out = struct.pack("<IHHHHI", 0, name_off, len(name), 0, data_off, len(data)) + name
    if data:
        out += b"\0" * (data_off - len(out)) + data
    return out


def file_id_bytes(fid):
    return fid if isinstance(fid, bytes) else struct.pack("<QQ", *fid)


ANY_FILE = b"\xff" * 16


def close_body(fid):
    return struct.pack("<HHI", 24, 0, 0) + file_id_bytes(fid)


def read_body(fid, offset, length, struct_size=49):
    return struct.pack("<HBBIQ", struct_size, 0x50, 0, length, offset) + file_id_bytes(fid) + struct.pack(
        "<IIIHH", 0, 0, 0, 0, 0) + b"\0"


def write_body(fid, offset, data, data_offset=None, length=None):
    return struct.pack("<HHIQ", 49, HEADER_LEN + 48 if data_offset is None else data_offset,
                       len(data) if length is None else length, offset) + file_id_bytes(fid) + struct.pack(
        "<IIHHI", 0, 0, 0, 0, 0) + data


def query_info_body(fid, info_type, klass, output_len=4096, input_buf=b"", input_offset=None, input_length=None,
                    additional=0):
    in_off = (HEADER_LEN + 40 if input_buf else 0) if input_offset is None else input_offset
    return struct.pack("<HBBIHHIII", 41, info_type, klass, output_len, in_off, 0,
                       len(input_buf) if input_length is None else input_length, additional, 0) + file_id_bytes(
        fid) + input_buf


def set_info_body(fid, info_type, klass, buf, offset=None, length=None, additional=0):
    return struct.pack("<HBBIHHI", 33, info_type, klass, len(buf) if length is None else length,
                       HEADER_LEN + 32 if offset is None else offset, 0, additional) + file_id_bytes(fid) + buf


def query_directory_body(fid, pattern="*", klass=37, output_len=65536, flags=1, offset=None, length=None):
    p = utf16(pattern) if isinstance(pattern, str) else pattern
    return struct.pack("<HBBI", 33, klass, flags, 0) + file_id_bytes(fid) + struct.pack(
        "<HHI", HEADER_LEN + 32 if offset is None else offset, len(p) if length is None else length,
        output_len) + p


def ioctl_body(fid, ctl_code, input_buf=b"", max_output=4096, input_offset=None, input_count=None, flags=1):
    return struct.pack("<HHI", 57, 0, ctl_code) + file_id_bytes(fid) + struct.pack(
        "<IIIIIIII", HEADER_LEN + 56 if input_offset is None else input_offset,
        len(input_buf) if input_count is None else input_count, 0, 0, 0, max_output, flags, 0) + input_buf


def lock_body(fid, locks, count=None):
    elems = b"".join(struct.pack("<QQII", off, ln, fl, 0) for off, ln, fl in locks)
    return struct.pack("<HHI", 48, len(locks) if count is None else count, 0) + file_id_bytes(fid) + elems


RESERVED4 = struct.pack("<HH", 4, 0)


def rename_info(target, replace=False, length=None):
    t = utf16(target) if isinstance(target, str) else target
    return struct.pack("<B7sQI", 1 if replace else 0, b"\0" * 7, 0, len(t) if length is None else length) + t


def full_ea(entries):
    """FILE_FULL_EA_INFORMATION list from (name, value) pairs, 4-byte aligned."""
    out = b""
    for i, (name, value) in enumerate(entries):
        one = struct.pack("<IBBH", 0, 0, len(name), len(value)) + name + b"\0" + value
        if i < len(entries) - 1:
            one += b"\0" * (-len(one) % 4)
            one = struct.pack("<I", len(one)) + one[4:]
        out += one
    return out


# --- NTLM and SPNEGO ---------------------------------------------------------------------------

NTLM_FLAGS = 0x62088215
NTLMSSP = b"NTLMSSP\0"
OID_SPNEGO = bytes.fromhex("2b0601050502")
OID_NTLM = bytes.fromhex("2b06010401823702020a")
VERSION = bytes.fromhex("0a0063450000000f")


def der(tag, content):
    n = len(content)
    if n < 0x80:
        length = bytes([n])
    elif n < 0x100:
        length = bytes([0x81, n])
    else:
        length = bytes([0x82]) + struct.pack(">H", n)
    return bytes([tag]) + length + content


def der_read(buf, pos=0):
    """(tag, contents, end) of the TLV at `pos`."""
    tag, first = buf[pos], buf[pos + 1]
    pos += 2
    if first < 0x80:
        n = first
    else:
        k = first & 0x7F
        n = int.from_bytes(buf[pos:pos + k], "big")
        pos += k
    return tag, buf[pos:pos + n], pos + n


def mech_types_der(mechs=(OID_NTLM,)):
    return der(0x30, b"".join(der(0x06, m) for m in mechs))


def spnego_init(token, mechs=(OID_NTLM,)):
    fields = der(0xA0, mech_types_der(mechs))
    if token is not None:
        fields += der(0xA2, der(0x04, token))
    return der(0x60, der(0x06, OID_SPNEGO) + der(0xA0, der(0x30, fields)))


def spnego_resp(token, mic=None):
    fields = der(0xA2, der(0x04, token))
    if mic is not None:
        fields += der(0xA3, der(0x04, mic))
    return der(0xA1, der(0x30, fields))


def spnego_response_token(blob):
    """The responseToken of a NegTokenResp, or None."""
    try:
        tag, seq, _ = der_read(blob)
        if tag != 0xA1:
            return None
        _, fields, _ = der_read(seq)
        pos = 0
        while pos < len(fields):
            ftag, inner, pos = der_read(fields, pos)
            if ftag == 0xA2:
                return der_read(inner)[1]
    except (IndexError, ValueError):
        return None
    return None


def ntlm_negotiate(flags=NTLM_FLAGS):
    return NTLMSSP + struct.pack("<II", 1, flags) + struct.pack("<HHI", 0, 0, 40) * 2 + VERSION


@dataclass
class Challenge:
    message: bytes
    flags: int
    server_challenge: bytes
    target_info: bytes


def parse_challenge(msg):
    if msg[:8] != NTLMSSP or struct.unpack_from("<I", msg, 8)[0] != 2:
        raise ValueError("not a CHALLENGE")
    flags = struct.unpack_from("<I", msg, 20)[0]
    info_len, _, info_off = struct.unpack_from("<HHI", msg, 40)
    return Challenge(msg, flags, msg[24:32], msg[info_off:info_off + info_len])


def av_pairs(info):
    pairs, pos = [], 0
    while pos + 4 <= len(info):
        av_id, av_len = struct.unpack_from("<HH", info, pos)
        if av_id == 0:
            break
        pairs.append((av_id, info[pos + 4:pos + 4 + av_len]))
        pos += 4 + av_len
    return pairs


def encode_av_pairs(pairs):
    return b"".join(struct.pack("<HH", i, len(v)) + v for i, v in pairs) + b"\0\0\0\0"


@dataclass
class Authenticate:
    message: bytes
    session_key: bytes
    flags: int


def ntlm_authenticate(negotiate, challenge, user, password, domain="WORKGROUP", mic=True, v1=False,
                      anonymous=False, session_key_len=16, tamper_mic=False, offsets=None):
    """An AUTHENTICATE answering `challenge` (MS-NLMP 3.1.5.1.2). `v1` sends an NTLMv1 response
    without extended session security, `offsets` overrides the payload fields' (len, offset)."""
    chal = parse_challenge(challenge)
    flags = chal.flags & NTLM_FLAGS
    exported = os.urandom(16)
    if anonymous:
        lm, nt, user, domain = b"\0", b"", "", ""
        base = b"\0" * 16
    elif v1:
        flags &= ~0x00080000
        nt_hash = ntlm_crypto.ntowfv1(password)
        nt = ntlm_crypto.desl(nt_hash, chal.server_challenge)
        lm = nt
        base = md4(nt_hash)
    else:
        pairs = av_pairs(chal.target_info)
        timestamp = next((v for i, v in pairs if i == 7), struct.pack("<Q", 0))
        if mic:
            pairs = [p for p in pairs if p[0] != 6] + [(6, struct.pack("<I", 2))]
        temp = b"\x01\x01" + b"\0" * 6 + timestamp + os.urandom(8) + b"\0" * 4 + encode_av_pairs(pairs) + b"\0" * 4
        key = ntlm_crypto.ntowfv2(user, ntlm_crypto.ntowfv1(password), domain)
        proof = ntlm_crypto.hmac_md5(key, chal.server_challenge + temp)
        nt = proof + temp
        lm = b"\0" * 24
        base = ntlm_crypto.hmac_md5(key, proof)
    if flags & 0x40000000:
        encrypted = ntlm_crypto.rc4k(base, exported)
        encrypted = (encrypted * 4)[:session_key_len]
    else:
        encrypted, exported = b"", base
    if anonymous:
        flags |= 0x800
    payload = [lm, nt, utf16(domain), utf16(user), utf16("HOSTILE"), encrypted]
    pos, fields = 88, b""
    for i, p in enumerate(payload):
        ln, off = (len(p), pos) if not offsets or i not in offsets else offsets[i]
        fields += struct.pack("<HHI", ln, ln, off)
        pos += len(p)
    msg = bytearray(NTLMSSP + struct.pack("<I", 3) + fields + struct.pack("<I", flags) + VERSION + b"\0" * 16
                    + b"".join(payload))
    if mic and not anonymous:
        value = ntlm_crypto.hmac_md5(exported, negotiate + challenge + bytes(msg))
        if tamper_mic:
            value = bytes([value[0] ^ 1]) + value[1:]
        msg[72:88] = value
    return Authenticate(bytes(msg), exported, flags)


def mech_list_mic(auth, mechs_der):
    """The client's mechListMIC: NTLM MAC of the mechTypes DER with sequence 0 (MS-NLMP 3.4.4.2)."""
    sign_key = hashlib.md5(auth.session_key + b"session key to client-to-server signing key magic constant\0").digest()
    checksum = ntlm_crypto.hmac_md5(sign_key, struct.pack("<I", 0) + mechs_der)[:8]
    if auth.flags & 0x40000000:
        seal_key = hashlib.md5(auth.session_key + b"session key to client-to-server sealing key magic constant\0").digest()
        checksum = ntlm_crypto.rc4k(seal_key, checksum)
    return struct.pack("<I", 1) + checksum + struct.pack("<I", 0)


# --- signing keys (MS-SMB2 3.1.4.2) -------------------------------------------------------------

def kdf(key, label, context):
    return hmac.new(key, struct.pack(">I", 1) + label + b"\0" + context + struct.pack(">I", 128),
                    hashlib.sha256).digest()[:16]


def sign_pdu(pdu, dialect, key):
    pdu = bytearray(pdu)
    struct.pack_into("<I", pdu, 16, struct.unpack_from("<I", pdu, 16)[0] | FLAGS_SIGNED)
    pdu[48:64] = b"\0" * 16
    if dialect >= 0x0300:
        c = CMAC(algorithms.AES(key))
        c.update(bytes(pdu))
        sig = c.finalize()
    else:
        sig = hmac.new(key, bytes(pdu), hashlib.sha256).digest()[:16]
    pdu[48:64] = sig
    return bytes(pdu)


# --- the client ------------------------------------------------------------------------------------

@dataclass
class Target:
    """Where a server listens and who may log on."""

    port: int
    user: str
    password: str
    share: str = "share"
    host: str = "127.0.0.1"
    domain: str = "WORKGROUP"
    # The local address to connect from (another loopback address looks like another client).
    source: str = ""

    def unc(self, share=None):
        return "\\\\%s\\%s" % (self.host, share or self.share)


class Dropped(Exception):
    """The server closed the connection."""


@dataclass
class Smb2:
    target: Target
    timeout: float = 5.0
    sock: socket.socket = None
    next_mid: int = 0
    dialect: int = 0
    session_id: int = 0
    tree_id: int = 0
    signing_key: bytes = None
    sign_all: bool = False
    preauth: bytes = b"\0" * 64
    session_preauth: bytes = b""
    granted: int = 0
    negotiate_response: Response = None
    sent: list = field(default_factory=list)

    def __post_init__(self):
        source = (self.target.source, 0) if self.target.source else None
        self.sock = socket.create_connection((self.target.host, self.target.port), timeout=self.timeout,
                                             source_address=source)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    # transport
    def send_raw(self, data):
        # A server that drops the connection part-way through a large frame may do so before
        # the frame is all sent; the next receive reports the drop.
        try:
            self.sock.sendall(data)
        except (ConnectionResetError, BrokenPipeError):
            pass

    def send(self, message):
        self.send_raw(struct.pack(">I", len(message)) + message)

    def _recv_exact(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise Dropped()
            out += chunk
        return out

    def recv_frame(self, timeout=None):
        """The next frame (without its prefix); Dropped when the server closes."""
        self.sock.settimeout(timeout or self.timeout)
        try:
            prefix = self._recv_exact(4)
            return self._recv_exact(int.from_bytes(prefix[1:], "big"))
        except (ConnectionResetError, BrokenPipeError):
            raise Dropped()

    def recv_responses(self, timeout=None):
        """The responses of the next frame that is not only interim STATUS_PENDING answers."""
        while True:
            rs = split_responses(self.recv_frame(timeout))
            for r in rs:
                self.granted += r.credits
            if not all(r.status == 0x103 and r.flags & FLAGS_ASYNC for r in rs):
                return rs

    def outcome(self, timeout=3.0):
        """The status name of the next response, DROP if the server closes, SILENT if it says
        nothing within `timeout`."""
        try:
            return self.recv_responses(timeout)[0].name
        except Dropped:
            return DROP
        except socket.timeout:
            return SILENT

    def dropped(self, timeout=3.0):
        """Whether the server closes the connection (without answering) within `timeout`."""
        try:
            self.recv_frame(timeout)
            return False
        except Dropped:
            return True
        except socket.timeout:
            return False

    # requests
    def mid(self, charge=1):
        m = self.next_mid
        self.next_mid += max(charge, 1)
        return m

    def pdu(self, command, body, session_id=None, tree_id=None, flags=0, credit_charge=1, credits=64,
            message_id=None, sign=None, **kw):
        h = header(command, self.mid(credit_charge) if message_id is None else message_id,
                   self.session_id if session_id is None else session_id,
                   self.tree_id if tree_id is None else tree_id, flags=flags, credit_charge=credit_charge,
                   credits=credits, **kw)
        p = h + body
        if sign is None:
            sign = self.sign_all and self.signing_key is not None and command not in (NEGOTIATE, SESSION_SETUP)
        if sign:
            p = sign_pdu(p, self.dialect, self.signing_key)
        return p

    def request(self, command, body, **kw):
        """Sends one request and returns its response (raises Dropped)."""
        self.send(self.pdu(command, body, **kw))
        return self.recv_responses()[0]

    def call(self, command, body, **kw):
        """Sends one request; returns the status name, DROP or SILENT."""
        self.send(self.pdu(command, body, **kw))
        return self.outcome()

    # protocol steps
    def negotiate(self, dialects=(0x0202, 0x0210, 0x0300, 0x0302, 0x0311), **kw):
        body = negotiate_body(list(dialects), **kw)
        p = self.pdu(NEGOTIATE, body, session_id=0, tree_id=0, credit_charge=0)
        self.send(p)
        r = self.recv_responses()[0]
        if r.status == 0:
            self.dialect = struct.unpack_from("<H", r.body, 4)[0]
            self.negotiate_response = r
            if self.dialect == 0x0311:
                self.preauth = hashlib.sha512(hashlib.sha512(self.preauth + p).digest() + r.pdu).digest()
        return r

    def session_setup(self, token, session_id=0, **kw):
        p = self.pdu(SESSION_SETUP, session_setup_body(token, **kw), session_id=session_id, tree_id=0)
        self.send(p)
        r = self.recv_responses()[0]
        if self.dialect == 0x0311:
            if not self.session_preauth:
                self.session_preauth = self.preauth
            self.session_preauth = hashlib.sha512(self.session_preauth + p).digest()
            if r.status == 0xC0000016:
                self.session_preauth = hashlib.sha512(self.session_preauth + r.pdu).digest()
        return r

    def login(self, user=None, password=None, spnego=True, mic=True, v1=False, anonymous=False,
              tamper_mic=False, session_key_len=16, offsets=None, drop_mech_list_mic=False):
        """An NTLM logon; returns the final SESSION_SETUP response (or raises Dropped)."""
        user = self.target.user if user is None else user
        password = self.target.password if password is None else password
        negotiate = ntlm_negotiate()
        r = self.session_setup(spnego_init(negotiate) if spnego else negotiate)
        if r.status != 0xC0000016:
            return r
        off, ln = struct.unpack_from("<HH", r.body, 4)
        blob = r.pdu[off:off + ln]
        challenge = spnego_response_token(blob) if spnego else blob
        auth = ntlm_authenticate(negotiate, challenge, user, password, self.target.domain, mic=mic, v1=v1,
                                 anonymous=anonymous, tamper_mic=tamper_mic, session_key_len=session_key_len,
                                 offsets=offsets)
        if spnego:
            m = None if (drop_mech_list_mic or anonymous or not mic) else mech_list_mic(auth, mech_types_der())
            token = spnego_resp(auth.message, m)
        else:
            token = auth.message
        session_id = r.session_id
        r = self.session_setup(token, session_id=session_id)
        if r.status == 0:
            self.session_id = session_id
            # A null session has no key to sign with (MS-SMB2 3.2.5.3.1).
            if not anonymous:
                self.derive_signing_key(auth.session_key)
        return r

    def reauthenticate(self, user=None, password=None, anonymous=False):
        """Re-authenticates the current session (MS-SMB2 3.3.5.5.2), both legs signed with the
        session's key when it has one; the key stays the first logon's. Returns the final
        response (or raises Dropped)."""
        user = self.target.user if user is None else user
        password = self.target.password if password is None else password
        sign = self.signing_key is not None
        negotiate = ntlm_negotiate()
        r = self.request(SESSION_SETUP, session_setup_body(spnego_init(negotiate)), tree_id=0, sign=sign)
        if r.status != 0xC0000016:
            return r
        off, ln = struct.unpack_from("<HH", r.body, 4)
        challenge = spnego_response_token(r.pdu[off:off + ln])
        auth = ntlm_authenticate(negotiate, challenge, user, password, self.target.domain, anonymous=anonymous)
        m = None if anonymous else mech_list_mic(auth, mech_types_der())
        return self.request(SESSION_SETUP, session_setup_body(spnego_resp(auth.message, m)), tree_id=0, sign=sign)

    def derive_signing_key(self, session_key):
        if self.dialect == 0x0311:
            self.signing_key = kdf(session_key, b"SMBSigningKey\0", self.session_preauth)
        elif self.dialect >= 0x0300:
            self.signing_key = kdf(session_key, b"SMB2AESCMAC\0", b"SmbSign\0")
        else:
            self.signing_key = session_key

    def tree_connect(self, share=None, sign=None):
        """TREE_CONNECT; signed by default on 3.1.1, as MS-SMB2 3.2.4.1.1 requires of clients."""
        if sign is None:
            sign = (self.dialect == 0x0311 or self.sign_all) and self.signing_key is not None
        r = self.request(TREE_CONNECT, tree_connect_body(self.target.unc(share)), tree_id=0, sign=sign)
        if r.status == 0:
            self.tree_id = r.tree_id
        return r

    def create(self, name, **kw):
        """(response, FileId bytes or None)."""
        r = self.request(CREATE, create_body(name, **kw))
        return r, (r.body[64:80] if r.status == 0 else None)

    def read(self, fid, offset=0, length=65536):
        r = self.request(READ, read_body(fid, offset, length))
        if r.status == 0:
            off, _, ln = struct.unpack_from("<BBI", r.body, 2)
            return r, r.pdu[off:off + ln]
        return r, b""

    def write(self, fid, offset, data):
        return self.request(WRITE, write_body(fid, offset, data))

    def close_file(self, fid):
        return self.request(CLOSE, close_body(fid))

    def echo(self):
        return self.request(ECHO, RESERVED4)


def connect(target, dialects=(0x0311,), share=True, sign_all=False, **login):
    """A client negotiated, logged on and (with `share`) connected to the share."""
    c = Smb2(target)
    c.sign_all = sign_all
    r = c.negotiate(dialects)
    assert r.status == 0, r.name
    r = c.login(**login)
    assert r.status == 0, "logon: %s" % r.name
    if share:
        r = c.tree_connect()
        assert r.status == 0, "tree connect: %s" % r.name
    return c


def served(target, name="served.txt", expect=b"served\n", sign_all=False):
    """A well-behaved client is served: negotiate, logon, tree connect, open, read, close, logoff."""
    c = connect(target, sign_all=sign_all)
    try:
        r, fid = c.create(name)
        assert r.status == 0, "open %s: %s" % (name, r.name)
        r, data = c.read(fid, 0, 4096)
        assert r.status == 0 and data == expect, (r.name, data)
        assert c.close_file(fid).status == 0
        assert c.request(LOGOFF, RESERVED4).status == 0
    finally:
        c.close()
    return True


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0
