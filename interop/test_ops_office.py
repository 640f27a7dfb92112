"""Issue 23's check: a realistic office smb.conf (interop/office.py), served by Samba as written
and by smb3d as imported, gives the same answers to the same clients: who may connect from where
and as whom, the modes files get on disk, what is hidden, where deleted files go."""

import os
import pwd
import shutil
import socket
import uuid
from contextlib import contextmanager

import pytest
from smbprotocol import transport
from smbprotocol.connection import Connection
from smbprotocol.exceptions import AccessDenied, LogonFailure
from smbprotocol.session import Session
from smbprotocol.tree import TreeConnect

import secdesc
from office import GUEST, start_office, stop_office
from samba import available as samba_available

pytestmark = pytest.mark.skipif(not samba_available(), reason="needs Debian's smbd")


@pytest.fixture(scope="module")
def office():
    office = start_office()
    yield office
    stop_office(office)


def test_an_office_user_works_in_the_office_share_on_both(office, tmp_path):
    (tmp_path / "memo.txt").write_text("minutes\n")
    for server in office.both:
        code, out = server.smbclient("office", "worker", "lcd %s; put memo.txt; ls" % tmp_path)
        assert code == 0 and "memo.txt" in out, (server.name, out, server.log_tail())
        assert (server.root / "office" / "memo.txt").read_text() == "minutes\n", server.name


def _status(out):
    """The NT status an smbclient failure names, for comparing two servers' answers."""
    import re
    found = re.search(r"NT_STATUS_[A-Z_]+", out)
    return found.group(0) if found else None


def _listed_disks(server, user):
    """The disk shares `smbclient -L` shows `user` on `server`."""
    import subprocess
    creds = "%s%%%s" % (user, server.passwords[user])
    r = subprocess.run(["smbclient", "-L", "//127.0.0.1", "-p", str(server.port), "-U", creds, "-g"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert r.returncode == 0, (server.name, r.stdout, server.log_tail())
    return {line.split("|")[1] for line in r.stdout.splitlines() if line.startswith("Disk|")}


def test_alice_reaches_her_home_and_her_files_land_in_homes_alice_on_both(office, tmp_path):
    import pwd
    (tmp_path / "note.txt").write_text("mine\n")
    alice = pwd.getpwnam("alice")
    for server in office.both:
        code, out = server.smbclient("alice", "alice", "lcd %s; put note.txt; ls" % tmp_path)
        assert code == 0 and "note.txt" in out, (server.name, out, server.log_tail())
        stored = server.root / "homes" / "alice" / "note.txt"
        assert stored.read_text() == "mine\n", server.name
        assert stored.stat().st_uid == alice.pw_uid, server.name


def test_worker_cannot_reach_alices_home_on_both(office):
    answers = {}
    for server in office.both:
        code, out = server.smbclient("alice", "worker", "ls")
        assert code != 0, (server.name, out)
        answers[server.name] = _status(out)
    assert answers["samba"] is not None and answers["smb3d"] == answers["samba"], answers


def test_a_home_is_listed_to_its_owner_and_not_to_others_on_both(office):
    for server in office.both:
        seen_by_alice = _listed_disks(server, "alice")
        seen_by_worker = _listed_disks(server, "worker")
        assert "alice" in seen_by_alice, (server.name, seen_by_alice)
        assert "alice" not in seen_by_worker, (server.name, seen_by_worker)
        # browseable = no hides the template itself.
        assert "homes" not in seen_by_alice | seen_by_worker, server.name


def _mode(path):
    return oct(path.stat().st_mode & 0o7777)


def test_new_files_and_directories_get_the_same_modes_on_both(office, tmp_path):
    """create mask = 0660, directory mask = 0770, force directory mode = 2000 under a process
    umask of 022 (the unit's), with acl_xattr: the office directory has no NT ACL, so a new
    file inherits the one synthesized from its mode and the masks (CREATOR OWNER and CREATOR
    GROUP with rwx, Everyone nothing), whose POSIX side is 0o770; a directory 0o2770. Not cut
    by the umask."""
    assert office.umask == 0o022
    (tmp_path / "modes.txt").write_text("m\n")
    modes = {}
    for server in office.both:
        code, out = server.smbclient("office", "worker", "lcd %s; put modes.txt; mkdir modes-dir" % tmp_path)
        assert code == 0, (server.name, out, server.log_tail())
        share = server.root / "office"
        modes[server.name] = (_mode(share / "modes.txt"), _mode(share / "modes-dir"))
    assert modes["samba"] == ("0o770", "0o2770"), modes
    assert modes["smb3d"] == modes["samba"], modes


def _acl_by_role(server, user, path):
    """The descriptor `user` reads back for `path`, with the SIDs named by role (the two
    servers give users and groups SIDs of different domains): "owner", "group", or the
    well-known SID itself."""
    c = secdesc.Client(server.port, user, server.passwords[user], "office")
    try:
        status, raw = c.get_path(path)
    finally:
        c.close()
    assert raw is not None, (server.name, path, status)
    sd = secdesc.decode(raw)
    role = {sd["owner"]: "owner", sd["group"]: "group"}
    return [(kind, flags, hex(mask), role.get(sid, sid)) for kind, flags, mask, sid in sd["dacl"]]


def test_a_new_file_gets_the_acl_samba_synthesizes_for_its_parent_on_both(office, tmp_path):
    """acl_xattr and a parent without a stored NT ACL (MS-DTYP 2.5.3.4.1 over the ACL
    synthesized from the parent's mode): the file's ACL gives its creator and the creator's
    group full control and Everyone nothing, a directory also keeps CREATOR OWNER and CREATOR
    GROUP for its children; the file is its creator's, and another user (not in the group)
    may not read it."""
    (tmp_path / "acl.txt").write_text("acl\n")
    acls = {}
    for server in office.both:
        code, out = server.smbclient("office", "worker", "lcd %s; put acl.txt; mkdir acl-dir" % tmp_path)
        assert code == 0, (server.name, out, server.log_tail())
        assert os.stat(server.root / "office" / "acl.txt").st_uid == pwd.getpwnam("worker").pw_uid
        code, out = server.smbclient("office", "alice", "lcd %s; get acl.txt alice-%s" % (tmp_path, server.name))
        assert code != 0 and "NT_STATUS_ACCESS_DENIED" in out, (server.name, out)
        acls[server.name] = (_acl_by_role(server, "worker", "acl.txt"), _acl_by_role(server, "worker", "acl-dir"))
    full = hex(0x1F01FF)
    assert acls["samba"][0] == [(0, 0, full, "owner"), (0, 0, full, "group"), (0, 0, "0x0", secdesc.EVERYONE)], acls
    assert acls["smb3d"] == acls["samba"], acls


def test_inherit_owner_gives_what_is_dropped_to_the_directorys_owner_on_both(office, tmp_path):
    """[dropbox] (inherit owner = windows and unix) is alice's: a file and a directory worker
    puts there are alice's on disk, and the owner a client reads back is the directory's."""
    (tmp_path / "drop.txt").write_text("for alice\n")
    alice = pwd.getpwnam("alice").pw_uid
    for server in office.both:
        code, out = server.smbclient("dropbox", "worker", "lcd %s; put drop.txt; mkdir drop-dir" % tmp_path)
        assert code == 0, (server.name, out, server.log_tail())
        box = server.root / "dropbox"
        assert [os.stat(box / n).st_uid for n in ("drop.txt", "drop-dir")] == [alice, alice], server.name
        c = secdesc.Client(server.port, "worker", server.passwords["worker"], "dropbox")
        try:
            owners = [secdesc.decode(c.get_path(n)[1])["owner"] for n in ("", "drop.txt", "drop-dir")]
        finally:
            c.close()
        assert owners[1] == owners[0] and owners[2] == owners[0], (server.name, owners)


def test_vetoed_names_are_refused_and_invisible_on_both(office, tmp_path):
    """veto files = /*.tmp/.DS_Store/: a put of x.tmp is refused as Samba refuses it, and a
    vetoed file an admin left on disk is not listed, not readable."""
    (tmp_path / "x.tmp").write_text("scratch\n")
    (tmp_path / "plain.txt").write_text("plain\n")
    answers = {}
    for server in office.both:
        share = server.root / "office"
        (share / ".DS_Store").write_text("finder\n")
        code, put = server.smbclient("office", "worker", "lcd %s; put x.tmp" % tmp_path)
        _, listing = server.smbclient("office", "worker", "ls")
        _, get = server.smbclient("office", "worker", "lcd %s; get .DS_Store ds" % tmp_path)
        _, renamed = server.smbclient("office", "worker", "lcd %s; put plain.txt; rename plain.txt y.tmp" % tmp_path)
        get += renamed
        assert not (share / "x.tmp").exists() and not (share / "y.tmp").exists(), server.name
        assert (share / "plain.txt").exists(), server.name
        assert ".DS_Store" not in listing and "x.tmp" not in listing, (server.name, listing)
        assert not (tmp_path / "ds").exists(), server.name
        answers[server.name] = [line for line in (put + get).splitlines() if "NT_STATUS" in line]
    assert answers["samba"] and answers["smb3d"] == answers["samba"], answers


def test_a_directory_holding_only_vetoed_files_is_deleted_with_them_on_both(office):
    """delete veto files = yes: rmdir of a directory whose only entry is vetoed succeeds and
    takes the vetoed file with it; one holding a visible file stays."""
    outcomes = {}
    for server in office.both:
        share = server.root / "office"
        for name, content in (("only-veto", ".DS_Store"), ("with-file", "kept.txt")):
            (share / name).mkdir()
            os.chown(share / name, pwd.getpwnam("worker").pw_uid, -1)
            (share / name / content).write_text("x\n")
        _, out = server.smbclient("office", "worker", "rmdir only-veto; rmdir with-file")
        outcomes[server.name] = ((share / "only-veto").exists(), (share / "with-file").exists(),
                                 [line for line in out.splitlines() if "NT_STATUS" in line])
    assert outcomes["samba"][:2] == (False, True), outcomes
    assert outcomes["smb3d"] == outcomes["samba"], outcomes


def _tree(top, spec, owner):
    """Makes `spec` (name -> None for a file, a dict for a directory, a Path for a symlink to
    it) under `top`, owned by `owner`."""
    top.mkdir()
    os.chown(top, owner, -1)
    for name, what in spec.items():
        if isinstance(what, dict):
            _tree(top / name, what, owner)
        elif what is None:
            (top / name).write_text("x\n")
            os.chown(top / name, owner, -1)
        else:
            (top / name).symlink_to(what)
            os.lchown(top / name, owner, -1)


def test_vetoed_directories_go_with_the_directory_holding_them_on_both(office):
    """delete veto files = yes with vetoed subdirectories: a directory holding only vetoed
    names, one of them a directory with visible files and a subdirectory inside, is deleted
    with all of it (the files going to worker's recycle bin as any deleted file); one that
    also holds a visible file stays NOT_EMPTY, untouched."""
    worker = pwd.getpwnam("worker").pw_uid
    outcomes = {}
    for server in office.both:
        share = server.root / "office"
        _tree(share / "vt-only", {".DS_Store": None, "cache.tmp": {
            "inner.txt": None, "sub": {"deep.txt": None}}}, worker)
        _tree(share / "vt-mixed", {"cache.tmp": {"inner.txt": None}, "visible.txt": None}, worker)
        _, out = server.smbclient("office", "worker", "rmdir vt-only; rmdir vt-mixed")
        outcomes[server.name] = (
            (share / "vt-only").exists(), (share / "vt-mixed" / "cache.tmp" / "inner.txt").exists(),
            [line.strip() for line in out.splitlines() if "NT_STATUS" in line],
            [entry for entry in _bin_layout(share) if "vt-" in entry[0]])
    assert outcomes["samba"][:2] == (False, True), outcomes
    assert outcomes["smb3d"] == outcomes["samba"], outcomes


def test_removing_vetoed_directories_follows_no_symlink_and_takes_no_more_than_the_user_may(
        office, tmp_path):
    """Hostile, smb3d only (Samba 4.17's smbd drops the connection on both): a vetoed
    directory holding a symlink to a directory out of the share loses the link, never the
    target's files; a vetoed directory that is root's (worker may not empty it) stays with
    what it holds, and so does the directory holding it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    os.chmod(outside, 0o777)
    (outside / "keep.txt").write_text("outside\n")
    os.chmod(outside / "keep.txt", 0o666)
    worker = pwd.getpwnam("worker").pw_uid
    share = office.smb3d.root / "office"
    _tree(share / "vt-link", {"cache.tmp": {"out": outside}}, worker)
    _tree(share / "vt-locked", {"cache.tmp": {"inner.txt": None}}, worker)
    os.chown(share / "vt-locked" / "cache.tmp", 0, -1)
    os.chown(share / "vt-locked" / "cache.tmp" / "inner.txt", 0, -1)
    os.chmod(share / "vt-locked" / "cache.tmp", 0o755)
    _, out = office.smb3d.smbclient("office", "worker", "rmdir vt-link; rmdir vt-locked")
    assert not (share / "vt-link").exists(), (out, office.smb3d.log_tail())
    assert (outside / "keep.txt").read_text() == "outside\n"
    assert (share / "vt-locked" / "cache.tmp" / "inner.txt").exists(), out
    # The bin's directories made on the way (keeptree) go, so that the bin layouts other
    # questions compare with Samba's hold only their own deletions.
    for made in ("vt-link", "vt-locked"):
        shutil.rmtree(share / ".recycle" / "worker" / made, ignore_errors=True)


# Who may connect (issue 23 item 2): the same questions to both servers, from chosen loopback
# source addresses (smbclient cannot choose one; smbprotocol's socket is bound to it).

@contextmanager
def _from_address(source):
    plain = socket.create_connection

    def bound(address, timeout=None, source_address=None):
        return plain(address, timeout=timeout, source_address=(source, 0))

    transport.socket.create_connection = bound
    try:
        yield
    finally:
        transport.socket.create_connection = plain


def _ask(server, user, share, source="127.0.0.1", password=None):
    """What `server` answers `user` from `source` asking for `share`: "connected", or the
    step that failed and how."""
    password = server.passwords.get(user, "") if password is None else password
    with _from_address(source):
        conn = Connection(uuid.uuid4(), "127.0.0.1", server.port)
        try:
            conn.connect(timeout=10)
        except Exception as e:  # noqa: BLE001 - any failure to connect is the answer
            return "refused at connect (%s)" % type(e).__name__
    try:
        session = Session(conn, user, password, require_encryption=False)
        try:
            session.connect()
        except LogonFailure:
            return "logon failure"
        try:
            TreeConnect(session, r"\\127.0.0.1\%s" % share).connect()
        except AccessDenied:
            return "access denied"
        return "connected"
    finally:
        conn.disconnect()


def test_global_host_rules_decide_who_may_connect_on_both(office):
    """hosts allow = 127.0.0.1 127.0.0.77 ::1, hosts deny = ALL: 127.0.0.66 is in the deny
    list only. Samba answers it with a NetBIOS negative session response and closes; smb3d
    closes at accept. Either way the client gets no SMB answer at all."""
    for server in office.both:
        assert _ask(server, "worker", "public") == "connected", (server.name, server.log_tail())
        refused = _ask(server, "worker", "public", source="127.0.0.66")
        assert refused.startswith("refused at connect"), (server.name, refused)


def test_share_host_rules_refuse_a_host_on_office_only_on_both(office):
    """[office] has hosts allow = 127.0.0.1 ::1 and hosts deny = 127.0.0.77; [public] inherits
    the global lists, which admit 127.0.0.77. Both servers answer ACCESS_DENIED at tree
    connect."""
    for server in office.both:
        assert _ask(server, "worker", "office", source="127.0.0.77") == "access denied", server.name
        assert _ask(server, "worker", "public", source="127.0.0.77") == "connected", server.name
        assert _ask(server, "worker", "office") == "connected", (server.name, server.log_tail())


def test_invalid_users_are_refused_on_office_only_on_both(office):
    for server in office.both:
        code, out = server.smbclient("office", "intruder", "ls")
        assert code != 0 and "NT_STATUS_ACCESS_DENIED" in out, (server.name, out)
        code, out = server.smbclient("public", "intruder", "ls")
        assert code == 0, (server.name, out, server.log_tail())


def test_a_wrong_password_fails_on_both(office):
    for server in office.both:
        assert _ask(server, "worker", "public", password="not-the-password") == "logon failure", server.name


def test_an_unknown_name_is_a_guest_on_public_only_on_both(office, tmp_path):
    """map to guest = bad user: a name neither server knows logs on as a guest, which reaches
    [public] (guest ok) as the guest account, so its files are that account's, and is refused on
    [office]."""
    (tmp_path / "visit.txt").write_text("hello\n")
    guest_uid = pwd.getpwnam(GUEST).pw_uid
    for server in office.both:
        code, out = server.smbclient("public", "visitor-unknown", "lcd %s; put visit.txt" % tmp_path,
                                     password="any-guess")
        assert code == 0, (server.name, out, server.log_tail())
        assert os.stat(server.root / "public" / "visit.txt").st_uid == guest_uid, server.name
        code, out = server.smbclient("office", "visitor-unknown", "ls", password="any-guess")
        assert code != 0 and "NT_STATUS_ACCESS_DENIED" in out, (server.name, out)


def test_a_guest_logon_has_no_signing_key_on_both(office):
    """Nothing was proven, so neither server gives the guest session keys: smbprotocol has no
    signing key (it refuses to go on when the server signed anyway) and must be told not to
    verify the negotiation, which needs one."""
    for server in office.both:
        conn = Connection(uuid.uuid4(), "127.0.0.1", server.port, require_signing=False)
        conn.connect(timeout=10)
        try:
            session = Session(conn, "visitor-unknown", "any-guess", require_encryption=False)
            session.connect()
            assert session.signing_key is None, server.name
            TreeConnect(session, r"\\127.0.0.1\public").connect(require_secure_negotiate=False)
        finally:
            conn.disconnect()



def test_admin_users_act_as_root_on_office_on_both(office, tmp_path):
    """admin users = boss: boss works on [office] as root, so a file only root may read is
    boss's to read and worker's not (as smb.conf(5) describes admin users: "all file operations
    as the super-user"); with acl_xattr boss's new file inherits an NT ACL naming the SID
    boss's token keeps as owner, and both servers give it to boss on disk too."""
    for server in office.both:
        secret = server.root / "office" / "root-only.txt"
        secret.write_text("salaries\n")
        os.chown(secret, 0, 0)
        os.chmod(secret, 0o600)
        code, out = server.smbclient("office", "boss", "lcd %s; get root-only.txt" % tmp_path)
        assert code == 0, (server.name, out, server.log_tail())
        assert (tmp_path / "root-only.txt").read_text() == "salaries\n", server.name
        (tmp_path / "root-only.txt").unlink()
        code, out = server.smbclient("office", "worker", "lcd %s; get root-only.txt" % tmp_path)
        assert code != 0 and "NT_STATUS_ACCESS_DENIED" in out, (server.name, out)

    (tmp_path / "budget.txt").write_text("numbers\n")
    owners = {}
    for server in office.both:
        code, out = server.smbclient("office", "boss", "lcd %s; put budget.txt" % tmp_path)
        assert code == 0, (server.name, out, server.log_tail())
        owners[server.name] = os.stat(server.root / "office" / "budget.txt").st_uid
    boss = pwd.getpwnam("boss").pw_uid
    assert owners == {"samba": boss, "smb3d": boss}, owners


# The recycle bin (issue 23 item 6): recycle:repository = .recycle/%U, keeptree, versions,
# exclude = *.bak. Both servers get the same deletions; what lands on disk must agree.

def _bin_layout(share):
    """Every entry under the share's .recycle: path, kind, size, mode and owner's name."""
    layout = []
    top = share / ".recycle"
    for path in sorted(top.rglob("*")) if top.exists() else []:
        st = path.lstat()
        kind = "dir" if path.is_dir() else "file"
        layout.append((str(path.relative_to(share)), kind, st.st_size if kind == "file" else 0,
                       oct(st.st_mode & 0o7777), pwd.getpwuid(st.st_uid).pw_name))
    return layout


def test_deleted_files_land_in_the_users_bin_with_their_tree_and_versions_on_both(office, tmp_path):
    """A deleted file lands in .recycle/worker/<same tree>; a second delete of the same name keeps
    both as Samba names them ("Copy #1 of"); *.bak and empty files are deleted for real."""
    (tmp_path / "v1.txt").write_text("first draft\n")
    (tmp_path / "v2.txt").write_text("second, longer draft\n")
    (tmp_path / "old.bak").write_text("backup\n")
    (tmp_path / "empty.txt").write_text("")
    layouts = {}
    for server in office.both:
        share = server.root / "office"
        commands = ("lcd %s; mkdir plans; mkdir plans/q3; put v1.txt plans/q3/plan.txt; "
                    "del plans/q3/plan.txt; put v2.txt plans/q3/plan.txt; del plans/q3/plan.txt; "
                    "put old.bak plans/old.bak; del plans/old.bak; put empty.txt empty.txt; del empty.txt"
                    % tmp_path)
        code, out = server.smbclient("office", "worker", commands)
        assert code == 0 and "NT_STATUS" not in out, (server.name, out, server.log_tail())
        for gone in ("plans/q3/plan.txt", "plans/old.bak", "empty.txt"):
            assert not (share / gone).exists(), (server.name, gone)
        layouts[server.name] = _bin_layout(share)
    kept = {entry[0]: entry[2] for entry in layouts["samba"]}
    assert kept[".recycle/worker/plans/q3/plan.txt"] == len("first draft\n"), layouts
    assert kept[".recycle/worker/plans/q3/Copy #1 of plan.txt"] == len("second, longer draft\n"), layouts
    assert layouts["smb3d"] == layouts["samba"], layouts


def test_deleting_inside_the_bin_deletes_for_real_on_both(office, tmp_path):
    """Emptying the bin: a file deleted from .recycle/worker is gone, not moved into the bin
    again, as Samba does."""
    (tmp_path / "doomed.txt").write_text("doomed\n")
    layouts = {}
    for server in office.both:
        share = server.root / "office"
        code, out = server.smbclient(
            "office", "worker",
            "lcd %s; put doomed.txt doomed.txt; del doomed.txt; del .recycle/worker/doomed.txt" % tmp_path)
        assert code == 0 and "NT_STATUS" not in out, (server.name, out, server.log_tail())
        layouts[server.name] = [e for e in _bin_layout(share) if "doomed" in e[0] or "/.recycle" in e[0]]
    assert layouts["samba"] == [], layouts
    assert layouts["smb3d"] == layouts["samba"], layouts


def test_another_users_bin_is_not_readable_on_both(office, tmp_path):
    """.recycle/%U makes a bin per user, with recycle's directory mode (0700): alice cannot list
    or read what worker deleted."""
    (tmp_path / "private.txt").write_text("worker's notes\n")
    answers = {}
    for server in office.both:
        code, out = server.smbclient("office", "worker", "lcd %s; put private.txt; del private.txt" % tmp_path)
        assert code == 0 and "NT_STATUS" not in out, (server.name, out, server.log_tail())
        assert (server.root / "office" / ".recycle" / "worker" / "private.txt").exists(), server.name
        _, listing = server.smbclient("office", "alice", "ls .recycle/worker/*")
        _, get = server.smbclient("office", "alice", "lcd %s; get .recycle/worker/private.txt got-%s"
                                  % (tmp_path, server.name))
        assert not (tmp_path / ("got-" + server.name)).exists(), server.name
        answers[server.name] = [line.strip() for line in (listing + get).splitlines() if "NT_STATUS" in line]
    assert answers["samba"], answers
    assert answers["smb3d"] == answers["samba"], answers


def test_a_file_the_bin_cannot_take_is_answered_as_samba_answers(office, tmp_path):
    """The bin's directory for the file's tree exists but is root's (worker may not write in
    it): the move fails with EACCES, and both servers answer the delete and leave the disk
    alike (Samba purges a file it cannot move)."""
    (tmp_path / "x.txt").write_text("cannot be kept\n")
    outcomes = {}
    for server in office.both:
        share = server.root / "office"
        worker = pwd.getpwnam("worker")
        (share / "locked").mkdir()
        os.chown(share / "locked", worker.pw_uid, -1)
        blocked = share / ".recycle" / "worker" / "locked"
        blocked.parent.mkdir(parents=True, exist_ok=True)
        blocked.mkdir()
        os.chmod(blocked, 0o755)
        code, out = server.smbclient("office", "worker", "lcd %s; put x.txt locked/x.txt; del locked/x.txt" % tmp_path)
        outcomes[server.name] = ((share / "locked" / "x.txt").exists(), (blocked / "x.txt").exists(),
                                 [line.strip() for line in out.splitlines() if "NT_STATUS" in line])
    assert outcomes["samba"] == (False, False, []), outcomes
    assert outcomes["smb3d"] == outcomes["samba"], outcomes


def test_a_bin_directory_that_is_a_symlink_out_of_the_share_is_not_followed(office, tmp_path):
    """Hostile: someone with shell access replaced the bin's directory for `evil/` with a
    symlink to a directory outside the share. smb3d's delete lands nothing there (the move is
    confined to the share; the file is deleted for real)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    os.chmod(outside, 0o777)
    (tmp_path / "y.txt").write_text("must not leave the share\n")
    share = office.smb3d.root / "office"
    worker = pwd.getpwnam("worker")
    (share / "evil").mkdir()
    os.chown(share / "evil", worker.pw_uid, -1)
    link = share / ".recycle" / "worker" / "evil"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    code, out = office.smb3d.smbclient("office", "worker", "lcd %s; put y.txt evil/y.txt; del evil/y.txt" % tmp_path)
    assert code == 0 and "NT_STATUS" not in out, (out, office.smb3d.log_tail())
    assert not (share / "evil" / "y.txt").exists()
    assert list(outside.iterdir()) == []
