"""Security descriptors (MS-DTYP 2.4.6) for interop tests: a small codec and helpers that get
and set them over the raw SMB2 client of `smb2raw`."""

import struct

import smb2raw

OWNER, GROUP, DACL, SACL = 0x1, 0x2, 0x4, 0x8
SELF_RELATIVE, DACL_PRESENT = 0x8000, 0x0004
DACL_AUTO_INHERIT_REQ, DACL_AUTO_INHERITED, DACL_PROTECTED = 0x0100, 0x0400, 0x1000
ALLOWED, DENIED = 0, 1
OBJECT_INHERIT, CONTAINER_INHERIT, NO_PROPAGATE, INHERIT_ONLY, INHERITED = 0x1, 0x2, 0x4, 0x8, 0x10
EVERYONE = "S-1-1-0"
CREATOR_OWNER = "S-1-3-0"
CREATOR_GROUP = "S-1-3-1"
OWNER_RIGHTS = "S-1-3-4"
SECURITY_INFO = 3


def sid_bytes(text):
    parts = text.split("-")
    assert parts[0] == "S" and parts[1] == "1", text
    subs = [int(p) for p in parts[3:]]
    return struct.pack("<BB", 1, len(subs)) + int(parts[2]).to_bytes(6, "big") + b"".join(
        struct.pack("<I", s) for s in subs)


def sid_text(buf, pos=0):
    count = buf[pos + 1]
    authority = int.from_bytes(buf[pos + 2:pos + 8], "big")
    subs = struct.unpack_from("<%dI" % count, buf, pos + 8)
    return "S-1-%d" % authority + "".join("-%d" % s for s in subs), 8 + 4 * count


def ace(sid, mask, flags=0, kind=ALLOWED):
    body = struct.pack("<I", mask) + sid_bytes(sid)
    return struct.pack("<BBH", kind, flags, 4 + len(body)) + body


def acl(aces):
    body = b"".join(aces)
    return struct.pack("<BBHHH", 2, 0, 8 + len(body), len(aces), 0) + body


def descriptor(owner=None, group=None, dacl=None, control=0):
    """A self-relative descriptor; `dacl` is a list of `ace(...)` or None for no DACL."""
    parts = b""
    offsets = []
    for part in (sid_bytes(owner) if owner else None, sid_bytes(group) if group else None, None,
                 acl(dacl) if dacl is not None else None):
        if part is None:
            offsets.append(0)
        else:
            offsets.append(20 + len(parts))
            parts += part
    if dacl is not None:
        control |= DACL_PRESENT
    return struct.pack("<BBHIIII", 1, 0, control | SELF_RELATIVE, *offsets) + parts


def decode(buf):
    """{"control", "owner", "group", "dacl": [(kind, flags, mask, sid)] or None}."""
    _, _, control, o_owner, o_group, _, o_dacl = struct.unpack_from("<BBHIIII", buf)
    out = {"control": control, "owner": None, "group": None, "dacl": None}
    if o_owner:
        out["owner"] = sid_text(buf, o_owner)[0]
    if o_group:
        out["group"] = sid_text(buf, o_group)[0]
    if o_dacl and control & DACL_PRESENT:
        _, _, _, count, _ = struct.unpack_from("<BBHHH", buf, o_dacl)
        pos = o_dacl + 8
        aces = []
        for _ in range(count):
            kind, flags, size, mask = struct.unpack_from("<BBHI", buf, pos)
            aces.append((kind, flags, mask, sid_text(buf, pos + 8)[0]))
            pos += size
        out["dacl"] = aces
    return out


class Client:
    """A logged-on raw SMB2 client with descriptor helpers."""

    def __init__(self, port, user, password, share="share"):
        self.c = smb2raw.connect(smb2raw.Target(port, user, password, share))

    def close(self):
        self.c.close()

    def open(self, name, access=0x00020000, disposition=smb2raw.FILE_OPEN, options=0, contexts=b"",
             attrs=0x80):
        r, fid = self.c.create(name, access=access, disposition=disposition, options=options,
                               contexts=contexts, attrs=attrs)
        return r, fid

    def get(self, fid, info=OWNER | GROUP | DACL):
        r = self.c.request(smb2raw.QUERY_INFO, smb2raw.query_info_body(fid, SECURITY_INFO, 0, 65536,
                                                                     additional=info))
        if r.status != 0:
            return r.name, None
        off, ln = struct.unpack_from("<HI", r.body, 2)
        return r.name, r.pdu[off:off + ln]

    def set(self, fid, sd, info):
        r = self.c.request(smb2raw.SET_INFO, smb2raw.set_info_body(fid, SECURITY_INFO, 0, sd, additional=info))
        return r.name

    def get_path(self, name, info=OWNER | GROUP | DACL, options=0):
        r, fid = self.open(name, 0x00020000, options=options)
        if fid is None:
            return r.name, None
        try:
            return self.get(fid, info)
        finally:
            self.c.close_file(fid)

    def set_path(self, name, sd, info, options=0):
        r, fid = self.open(name, 0x00060000 | 0x00080000 if info & (OWNER | GROUP) else 0x00060000,
                           options=options)
        if fid is None:
            return r.name
        try:
            return self.set(fid, sd, info)
        finally:
            self.c.close_file(fid)
