"""Identities and access with smb3d running as root (file-semantics issue, check 3) and the share
options that change who a session is or what it may do (force_user, read_list, write_list,
access_based_share_enum): each session works on the disk as its own system account, so files
belong to their creators, users without rights are refused, and what local users set with
chmod is what clients see."""

import grp
import os
import pwd
import subprocess

import pytest

import secdesc
import smb2raw
from conftest import interop_uid, start_smb3d, stop, system_account

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="needs root (sessions take on their users' uids)")

OTHER_ACCOUNT = "smb3d-interop-b"
READ = smb2raw.GENERIC_READ_FILE
WRITE_DATA = 0x2
ALL = 0x001F01FF


class Env:
    def __init__(self, server, other_password, uid_a, uid_b):
        self.server = server
        self.other_password = other_password
        self.uid_a = uid_a
        self.uid_b = uid_b

    def client(self, who="tester", share="share"):
        password = self.server.password if who == "tester" else self.other_password
        return secdesc.Client(self.server.port, who, password, share)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("identity")
    uid_a = interop_uid()
    uid_b = system_account(OTHER_ACCOUNT)
    share = tmp / "share"
    forced = tmp / "forced"
    for d in (share, forced):
        d.mkdir()
    group_a = grp.getgrgid(pwd.getpwuid(uid_a).pw_gid).gr_name
    shares = {
        "share": {"path": str(share)},
        "forced": {"path": str(forced), "force_user": OTHER_ACCOUNT},
        "readlisted": {"path": str(share), "read_list": ["tester"]},
        "writelisted": {"path": str(share), "read_only": True, "write_list": ["@" + group_a]},
        "private": {"path": str(share), "valid_users": ["tester"], "access_based_share_enum": True},
    }
    # Lists go into the configuration as Python writes them, which TOML reads as literal strings.
    server = start_smb3d(tmp, shares=shares)
    # Only the creator of the share's files, and the forced user of its own, may write there.
    share.chmod(0o755)
    os.chown(forced, uid_b, pwd.getpwuid(uid_b).pw_gid)
    yield Env(server, server.add_user("other", uid_b), uid_a, uid_b)
    stop(server)


def make_file(c, name, data=b"data\n"):
    r, fid = c.open(name, ALL, smb2raw.FILE_CREATE)
    assert fid is not None, r.name
    assert c.c.write(fid, 0, data).status == 0
    c.c.close_file(fid)


def test_files_belong_to_their_creators_and_chmod_shows(env):
    a, b = env.client(), env.client("other")
    path = env.server.share_dir / "a.txt"
    make_file(a, "a.txt")
    assert os.stat(path).st_uid == env.uid_a
    name, raw = a.get_path("a.txt")
    owner = secdesc.decode(raw)["owner"]
    # The owner leaves everyone else out: the mode follows, and B is refused.
    assert a.set_path("a.txt", secdesc.descriptor(dacl=[secdesc.ace(owner, ALL)]), secdesc.DACL) == "STATUS_SUCCESS"
    assert os.stat(path).st_mode & 0o077 == 0
    r, _ = b.open("a.txt", READ)
    assert r.name == "STATUS_ACCESS_DENIED"
    # A local chmod wins over the stored descriptor: clients see the mode's rights.
    os.chmod(path, 0o644)
    name, raw = b.get_path("a.txt")
    assert name == "STATUS_SUCCESS"
    sd = secdesc.decode(raw)
    assert sd["owner"] == owner
    everyone = [mask for kind, _, mask, sid in sd["dacl"] if sid == secdesc.EVERYONE and kind == secdesc.ALLOWED]
    assert everyone and everyone[0] & READ == READ, sd
    r, fid = b.open("a.txt", READ)
    assert fid is not None, r.name
    assert b.c.read(fid, 0, 100)[1] == b"data\n"
    b.c.close_file(fid)
    r, _ = b.open("a.txt", WRITE_DATA)
    assert r.name == "STATUS_ACCESS_DENIED"
    a.close()
    b.close()


def test_forced_user_owns_what_anyone_creates(env):
    a = env.client(share="forced")
    make_file(a, "made-by-a.txt")
    st = os.stat(env.server.share_dir.parent / "forced" / "made-by-a.txt")
    assert (st.st_uid, st.st_gid) == (env.uid_b, pwd.getpwuid(env.uid_b).pw_gid)
    a.close()


def test_read_and_write_lists(env):
    make_file(env.client(), "listed.txt")
    ro = env.client(share="readlisted")
    r, _ = ro.open("new-in-readlisted.txt", ALL, smb2raw.FILE_CREATE)
    assert r.name == "STATUS_ACCESS_DENIED"
    r, fid = ro.open("listed.txt", READ)
    assert fid is not None, r.name
    ro.c.close_file(fid)
    rw = env.client(share="writelisted")
    make_file(rw, "new-in-writelisted.txt")
    other = env.client("other", share="writelisted")
    r, _ = other.open("new-by-other.txt", ALL, smb2raw.FILE_CREATE)
    assert r.name == "STATUS_ACCESS_DENIED"
    for c in (ro, rw, other):
        c.close()


def test_lookalike_names_are_no_accounts(tmp_path):
    """Issue 16: a session acts as the user database's spelling of its account, which share
    lists compare as account names compare; a name spelled with a lookalike that folds
    otherwise (K U+212A KELVIN SIGN, ſ U+017F LONG S) is no account, as Samba 4.17 answers.
    On main, "Kate" with the Kelvin sign logged on as kate and escaped her read_list."""
    server = start_smb3d(tmp_path, shares={"share": {"path": str(tmp_path / "share"), "read_list": ["kate"]}})
    try:
        kate = server.add_user("kate", interop_uid())
        sam = server.add_user("sam", interop_uid())

        def put(user, password):
            out = server.smbclient("put %s x.txt" % server.config, user="%s%%%s" % (user, password), check=False)
            return out.stdout.strip().splitlines()[-1]

        for spelling in ("kate", "KATE"):
            assert "NT_STATUS_ACCESS_DENIED" in put(spelling, kate), spelling
        assert "NT_STATUS_LOGON_FAILURE" in put("\u212aate", kate)
        assert "putting file" in put("Sam", sam)
        assert "NT_STATUS_LOGON_FAILURE" in put("\u017fam", sam)
    finally:
        stop(server)


def listed_shares(env, user, password):
    out = subprocess.run(["smbclient", "-L", "//127.0.0.1", "-p", str(env.server.port), "-U",
                          "%s%%%s" % (user, password), "-g"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    return {line.split("|")[1] for line in out.stdout.splitlines() if line.startswith("Disk|")}


def test_share_listed_only_to_those_admitted(env):
    assert "private" in listed_shares(env, "tester", env.server.password)
    theirs = listed_shares(env, "other", env.other_password)
    assert "private" not in theirs and "share" in theirs
    c = smb2raw.connect(smb2raw.Target(env.server.port, "other", env.other_password), share=False)
    assert c.tree_connect("private").name == "STATUS_ACCESS_DENIED"
    c.close()



def test_a_files_group_is_one_of_the_callers(env):
    """Issue 16 item 11: like chown(2) and Samba 4.17 (checked live), a user with WRITE_OWNER
    may make a file's group one of the user's own groups, and any other group with a Unix id is
    STATUS_INVALID_OWNER, by SET_INFO or by a new file's descriptor; nothing changes then."""
    gid_a = pwd.getpwuid(env.uid_a).pw_gid
    gid_b = pwd.getpwuid(env.uid_b).pw_gid
    group = lambda gid: secdesc.descriptor(group="S-1-22-2-%d" % gid)
    a = env.client()
    make_file(a, "grouped.txt")
    path = env.server.share_dir / "grouped.txt"
    for gid in (gid_b, 0):
        assert a.set_path("grouped.txt", group(gid), secdesc.GROUP) == "STATUS_INVALID_OWNER"
        assert os.stat(path).st_gid == gid_a
    r, _ = a.open("given-away.txt", ALL, smb2raw.FILE_CREATE,
                  contexts=smb2raw.create_context(b"SecD", group(gid_b)))
    assert r.name == "STATUS_INVALID_OWNER"
    assert not (env.server.share_dir / "given-away.txt").exists()
    # A file of another group (given to it locally) may be taken back into the owner's.
    os.chown(path, -1, gid_b)
    assert a.set_path("grouped.txt", group(gid_a), secdesc.GROUP) == "STATUS_SUCCESS"
    assert os.stat(path).st_gid == gid_a
    r, fid = a.open("grouped-new.txt", ALL, smb2raw.FILE_CREATE,
                    contexts=smb2raw.create_context(b"SecD", group(gid_a)))
    assert fid is not None, r.name
    a.c.close_file(fid)
    assert os.stat(env.server.share_dir / "grouped-new.txt").st_gid == gid_a
    a.close()


DELETE = 0x00010000
FILE_DELETE_ON_CLOSE = 0x00001000


def doomed_file(env, name):
    """B's file, writable and so deletable by anyone (mode 0666 grants Everyone DELETE), in a
    directory of B's that only B may write: only B's credentials can unlink it."""
    d = env.server.share_dir / "bs-dir"
    d.mkdir(exist_ok=True)
    os.chown(d, env.uid_b, pwd.getpwuid(env.uid_b).pw_gid)
    d.chmod(0o755)
    path = d / name
    path.write_bytes(b"b's\n")
    os.chown(path, env.uid_b, pwd.getpwuid(env.uid_b).pw_gid)
    path.chmod(0o666)
    return "bs-dir\\" + name, path


def test_delete_on_close_deletes_as_whoever_asked(env):
    """Issue 16 item 5: a file left delete-pending is deleted with the credentials of the open
    that made it so (as Samba does), not with those of whoever closes it last. A, granted DELETE
    by the file but unable to unlink it (its directory is B's), marks it while B has it open:
    B's close does not delete it for A. The other way round, B's mark holds after A closes
    last. Both by FileDispositionInformation and by FILE_DELETE_ON_CLOSE."""
    a, b = env.client(), env.client("other")
    for n, by_disposition in enumerate((True, False)):
        name, path = doomed_file(env, "a-marks-%d.txt" % n)
        r, held = b.open(name, READ)
        assert held is not None, r.name
        if by_disposition:
            r, fid = a.open(name, DELETE)
            assert fid is not None, r.name
            r = a.c.request(smb2raw.SET_INFO, smb2raw.set_info_body(fid, 1, 13, b"\x01"))
            assert r.name == "STATUS_SUCCESS"
        else:
            r, fid = a.open(name, DELETE, options=FILE_DELETE_ON_CLOSE)
            assert fid is not None, r.name
        a.c.close_file(fid)
        assert path.exists(), "A's close could not delete it"
        b.c.close_file(held)
        assert path.exists(), "B's close deleted it for A"

        name, path = doomed_file(env, "b-marks-%d.txt" % n)
        r, held = a.open(name, READ)
        assert held is not None, r.name
        if by_disposition:
            r, fid = b.open(name, DELETE)
            assert fid is not None, r.name
            r = b.c.request(smb2raw.SET_INFO, smb2raw.set_info_body(fid, 1, 13, b"\x01"))
            assert r.name == "STATUS_SUCCESS"
        else:
            r, fid = b.open(name, DELETE, options=FILE_DELETE_ON_CLOSE)
            assert fid is not None, r.name
        b.c.close_file(fid)
        assert path.exists(), "deleted before its last open closed"
        a.c.close_file(held)
        assert not path.exists(), "B's mark was lost when A closed last"
    a.close()
    b.close()


def test_a_session_never_changes_hands(tmp_path):
    """Issue 16 item 1, as the review found it: with signing required, A's session
    re-authenticated as B kept A's keys and read B's 0600 file, and an anonymous session
    re-authenticated as a user acted for it unsigned. Both re-authentications are refused
    (STATUS_ACCESS_DENIED) and end the session."""
    uid_b = system_account(OTHER_ACCOUNT)
    server = start_smb3d(tmp_path, signing="required")
    try:
        other_password = server.add_user("other", uid_b)
        secret = server.share_dir / "b-only.txt"
        secret.write_bytes(b"B's own\n")
        os.chown(secret, uid_b, pwd.getpwuid(uid_b).pw_gid)
        secret.chmod(0o600)
        target = smb2raw.Target(server.port, server.user, server.password)
        a = smb2raw.connect(target, sign_all=True)
        assert a.create("b-only.txt")[0].name == "STATUS_ACCESS_DENIED"
        assert a.reauthenticate("other", other_password).name == "STATUS_ACCESS_DENIED"
        assert a.create("b-only.txt")[0].name == "STATUS_USER_SESSION_DELETED"
        a.close()
        anonymous = smb2raw.Smb2(target)
        assert anonymous.negotiate((0x0311,)).status == 0
        assert anonymous.login(anonymous=True).status == 0
        assert anonymous.reauthenticate().name == "STATUS_ACCESS_DENIED"
        assert anonymous.tree_connect(sign=False).name == "STATUS_USER_SESSION_DELETED"
        anonymous.close()
        # Renewing the same user keeps the session and its keys.
        a = smb2raw.connect(target, sign_all=True)
        assert a.reauthenticate().status == 0
        r, fid = a.create("b-only.txt", access=0x80)
        assert fid is not None, r.name
        a.close()
    finally:
        stop(server)


DURABLE_REQUEST, DURABLE_RECONNECT = b"DHnQ", b"DHnC"
BATCH_OPLOCK = 0x09


def test_a_durable_open_goes_back_only_to_its_user(env):
    """Issue 16 item 14: every session on a force_user share works as the forced user, yet a
    disconnected durable open is reclaimed only by the user who opened it (the session's own
    logon), not by another user of the share who names its FileId."""

    def forced(who, password):
        return smb2raw.connect(smb2raw.Target(env.server.port, who, password, "forced"))

    a = forced("tester", env.server.password)
    r, fid = a.create("durable.txt", access=ALL, disposition=smb2raw.FILE_OVERWRITE_IF, oplock=BATCH_OPLOCK,
                      contexts=smb2raw.create_context(DURABLE_REQUEST, b"\0" * 16))
    assert fid is not None, r.name
    assert r.body[2] == BATCH_OPLOCK
    a.close()
    reconnect = smb2raw.create_context(DURABLE_RECONNECT, fid)
    b = forced("other", env.other_password)
    r, _ = b.create("durable.txt", access=ALL, oplock=BATCH_OPLOCK, contexts=reconnect)
    assert r.name == "STATUS_ACCESS_DENIED"
    b.close()
    a = forced("tester", env.server.password)
    r, again = a.create("durable.txt", access=ALL, oplock=BATCH_OPLOCK, contexts=reconnect)
    assert again == fid, r.name
    a.close_file(again)
    a.close()
