#!/usr/bin/python3
"""Make the srvsvc, wkssvc and lsarpc calls smb3d serves, with Samba's own client library,
against a server on 127.0.0.1:PORT (user bench%pass), for a capture of both sides.

    samba_calls.py PORT

Needs Debian's python3-samba (run it with /usr/bin/python3). Every call is printed with its
outcome; failures are expected for some (unknown names, levels, rights) and are part of what
the capture records.
"""
import sys

from samba import credentials, param
from samba.dcerpc import lsa, security, srvsvc, wkssvc

PORT = sys.argv[1]
SERVER = "\\\\127.0.0.1"
MAXIMUM_ALLOWED = 0x02000000

lp = param.LoadParm()
lp.set("smb ports", PORT)
lp.set("client min protocol", "SMB2_02")
creds = credentials.Credentials()
creds.guess(lp)
creds.set_username("bench")
creds.set_password("pass")
creds.set_domain("")


def binding(pipe):
    return "ncacn_np:127.0.0.1[\\pipe\\%s,smb2]" % pipe


def attempt(label, call):
    try:
        result = call()
        print(label, "ok", result if isinstance(result, int) else "")
        return result
    except Exception as e:  # the call's error is the point of the exercise
        print(label, "->", e)
        return None


def share_ctr(level):
    ctr = srvsvc.NetShareInfoCtr()
    ctr.level = level
    ctr.ctr = getattr(srvsvc, "NetShareCtr%d" % level)()
    return ctr


def srvsvc_calls():
    c = srvsvc.srvsvc(binding("srvsvc"), lp, creds)
    for level in (0, 1, 2, 501, 502):
        attempt("NetShareEnumAll %d" % level,
                lambda: c.NetShareEnumAll(SERVER, share_ctr(level), 0xFFFFFFFF, 0))
    for level in (0, 1, 2, 501, 502, 1005, 7, 503):
        attempt("NetShareGetInfo share %d" % level,
                lambda: c.NetShareGetInfo(SERVER, "share", level))
    attempt("NetShareGetInfo hidden", lambda: c.NetShareGetInfo(SERVER, "hidden", 1))
    attempt("NetShareGetInfo SHARE", lambda: c.NetShareGetInfo(None, "SHARE", 1))
    attempt("NetShareGetInfo ipc$", lambda: c.NetShareGetInfo(SERVER, "ipc$", 2))
    attempt("NetShareGetInfo nosuch", lambda: c.NetShareGetInfo(SERVER, "nosuch", 1))
    for level in (100, 101, 102, 103):
        attempt("NetSrvGetInfo %d" % level, lambda: c.NetSrvGetInfo(SERVER, level))
    attempt("NetSrvGetInfo no server", lambda: c.NetSrvGetInfo(None, 100))
    attempt("NetShareEnumAll resume 1",
            lambda: c.NetShareEnumAll(SERVER, share_ctr(1), 0xFFFFFFFF, 1))
    attempt("NetShareEnumAll resume 5",
            lambda: c.NetShareEnumAll(SERVER, share_ctr(1), 0xFFFFFFFF, 5))
    attempt("NetShareEnumAll max 1", lambda: c.NetShareEnumAll(SERVER, share_ctr(1), 1, 0))
    attempt("NetShareEnum (sticky)", lambda: c.NetShareEnum(SERVER, share_ctr(1), 0xFFFFFFFF, 0))


def wkssvc_calls():
    c = wkssvc.wkssvc(binding("wkssvc"), lp, creds)
    for level in (100, 101, 102):
        attempt("NetWkstaGetInfo %d" % level, lambda: c.NetWkstaGetInfo(SERVER, level))


def names(values):
    out = []
    for v in values:
        s = lsa.String()
        s.string = v
        out.append(s)
    return out


def sids(values):
    array = lsa.SidArray()
    ptrs = []
    for v in values:
        p = lsa.SidPtr()
        p.sid = security.dom_sid(v)
        ptrs.append(p)
    array.sids = ptrs
    array.num_sids = len(ptrs)
    return array


def lsa_calls():
    c = lsa.lsarpc(binding("lsarpc"), lp, creds)
    attr = lsa.ObjectAttribute()
    qos = lsa.QosInfo()
    qos.len = 12
    qos.impersonation_level = 2
    qos.context_mode = 1
    attr.sec_qos = qos
    h = c.OpenPolicy2(SERVER, attr, MAXIMUM_ALLOWED)
    for level in (3, 5, 6, 12, 2, 14):
        attempt("QueryInfoPolicy %d" % level, lambda: c.QueryInfoPolicy(h, level))
        attempt("QueryInfoPolicy2 %d" % level, lambda: c.QueryInfoPolicy2(h, level))
    found = c.LookupNames3(h, names(["bench"]), lsa.TransSidArray3(), 1, 0, 0, 2)
    user = str(found[1].sids[0].sid)
    domain = user.rsplit("-", 1)[0]
    for n in ("bench", "VM\\bench", "WORKGROUP\\bench", "Everyone", "BUILTIN\\Administrators",
              "nosuch", "VM", "bench@VM", "NT AUTHORITY\\SYSTEM", ""):
        attempt("LookupNames3 %r" % n,
                lambda: c.LookupNames3(h, names([n]), lsa.TransSidArray3(), 1, 0, 0, 2)[2])
    attempt("LookupNames3 several", lambda: c.LookupNames3(
        h, names(["bench", "nosuch", "Everyone"]), lsa.TransSidArray3(), 1, 0, 0, 2)[2])
    attempt("LookupNames3 none", lambda: c.LookupNames3(
        h, names([]), lsa.TransSidArray3(), 1, 0, 0, 2)[2])
    attempt("LookupNames2", lambda: c.LookupNames2(
        h, names(["bench", "nosuch"]), lsa.TransSidArray2(), 1, 0, 0, 2)[2])
    attempt("LookupNames", lambda: c.LookupNames(
        h, names(["bench", "VM"]), lsa.TransSidArray(), 1, 0)[2])
    for s in (user, domain, "S-1-1-0", "S-1-5-32-544", "S-1-5-21-1-2-3-4", "S-1-22-1-1000",
              "S-1-5-18", domain + "-9999"):
        attempt("LookupSids2 %s" % s,
                lambda: c.LookupSids2(h, sids([s]), lsa.TransNameArray2(), 1, 0, 0, 2)[2])
    attempt("LookupSids2 several", lambda: c.LookupSids2(
        h, sids([user, "S-1-5-21-1-2-3-4", "S-1-1-0"]), lsa.TransNameArray2(), 1, 0, 0, 2)[2])
    attempt("LookupSids2 none", lambda: c.LookupSids2(
        h, sids([]), lsa.TransNameArray2(), 1, 0, 0, 2)[2])
    for level in (0, 2, 7):
        attempt("LookupSids2 level %d" % level, lambda: c.LookupSids2(
            h, sids([user]), lsa.TransNameArray2(), level, 0, 0, 2)[2])
    attempt("LookupSids", lambda: c.LookupSids(
        h, sids([user, domain]), lsa.TransNameArray(), 1, 0)[2])
    attempt("LookupSids3", lambda: c.LookupSids3(
        sids([user]), lsa.TransNameArray2(), 1, 0, 0, 2)[2])
    view_only = c.OpenPolicy2(SERVER, attr, 0x1)
    attempt("LookupSids2 without lookup right", lambda: c.LookupSids2(
        view_only, sids([user]), lsa.TransNameArray2(), 1, 0, 0, 2)[2])
    attempt("QueryInfoPolicy with view right", lambda: c.QueryInfoPolicy(view_only, 5))
    for access in (0x800, 0x20, 0x10000000, 0x80000000, 0):
        attempt("OpenPolicy2 %#x" % access, lambda: c.OpenPolicy2(SERVER, attr, access))
    attempt("Close", lambda: c.Close(h))
    attempt("Close again", lambda: c.Close(h))


srvsvc_calls()
wkssvc_calls()
lsa_calls()
