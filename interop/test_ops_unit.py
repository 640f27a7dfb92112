"""Issue 23, item 9: the systemd unit's seccomp filter allows every system call the server
makes. The server runs under strace while smbclient works on a share and waits in a change
notify that a change made on the host completes (which needs fanotify_init, fanotify_mark and
open_by_handle_at); every call strace counted must be in the unit's SystemCallFilter, expanded
with systemd-analyze. Under a filter that lacks one, the call fails with EPERM
(SystemCallErrorNumber=EPERM) and the feature is silently off: @system-service alone lacked the
three fanotify calls. `systemd-analyze security --offline` rates the unit as well."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import BINARY, ROOT, start_smb3d, stop, wait_for_port
from smbprotocol_client import connect
from test_notify_host import ADDED, NAMES, Watch, open_dir

UNIT = ROOT / "contrib" / "smb3d.service"

needs_tools = pytest.mark.skipif(shutil.which("strace") is None or shutil.which("systemd-analyze") is None,
                                 reason="strace and systemd-analyze are needed")


def unit_settings(name):
    values = []
    for line in UNIT.read_text().splitlines():
        if line.startswith(name + "="):
            values.extend(line.split("=", 1)[1].split())
    return values


def syscall_groups():
    """Every group systemd knows, with its members (groups within groups as they are)."""
    out = subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True, text=True, check=True).stdout
    groups, current = {}, None
    for line in out.splitlines():
        if line.startswith("@"):
            current = groups.setdefault(line.strip(), [])
        elif line.startswith("    ") and current is not None and not line.strip().startswith("#"):
            current.append(line.strip())
    return groups


def allowed_syscalls():
    groups = syscall_groups()

    def expand(entry, seen):
        if not entry.startswith("@"):
            return {entry}
        if entry in seen:
            return set()
        seen.add(entry)
        return set().union(*(expand(e, seen) for e in groups.get(entry, [])))

    allowed = set()
    for entry in unit_settings("SystemCallFilter"):
        assert not entry.startswith("~"), "the test reads an allow-list"
        allowed |= expand(entry, set())
    return allowed


def syscalls_counted(summary):
    """The system calls of an `strace -c` summary."""
    names, table = set(), False
    for line in summary.read_text().splitlines():
        if line.startswith("------"):
            table = not table
            continue
        fields = line.split()
        if table and fields and fields[-1] != "total":
            names.add(fields[-1])
    return names


@needs_tools
def test_the_unit_allows_every_system_call_the_server_makes(tmp_path):
    summary = tmp_path / "strace.txt"
    server = start_smb3d(tmp_path)
    port = server.port
    # The same server again, under strace: counting every call of every thread.
    stop(server)
    proc = subprocess.Popen(["strace", "-f", "-c", "-o", str(summary), str(BINARY), "serve", "-c", str(server.config)],
                            stdout=open(tmp_path / "traced.log", "wb"), stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, proc, timeout=60)
        server.proc = proc
        # A change notify that a change made on the host completes: fanotify_init,
        # fanotify_mark and open_by_handle_at.
        conn, session, tree = connect(server)
        try:
            watch = Watch(open_dir(tree, ""), NAMES)
            (server.share_dir / "from-the-host.txt").write_text("made on the host\n")
            watch.until((ADDED, "from-the-host.txt"))
        finally:
            conn.disconnect()
        server.smbclient("mkdir d; put %s d/f.txt; get d/f.txt %s; rename d/f.txt d/g.txt; allinfo d/g.txt; "
                         "ls d/*; del d/g.txt; rmdir d" % (server.config, tmp_path / "back.txt"))
    finally:
        # The server stops on SIGTERM; strace then writes its summary and exits.
        children = Path("/proc/%d/task/%d/children" % (proc.pid, proc.pid)).read_text().split()
        for child in children:
            subprocess.run(["kill", "-TERM", child], check=False)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    made = syscalls_counted(summary)
    for needed in ("fanotify_init", "fanotify_mark", "open_by_handle_at", "setresuid", "openat2"):
        assert needed in made, "%s not seen: %s" % (needed, sorted(made))
    missing = sorted(made - allowed_syscalls())
    assert not missing, "calls the unit's SystemCallFilter refuses: %s" % missing


@needs_tools
def test_the_unit_keeps_its_hardening_and_quiet_checks():
    unit = (Path(ROOT) / "contrib" / "smb3d.service").read_text()
    exec_start_pre = [l for l in unit.splitlines() if l.startswith("ExecStartPre=")]
    assert exec_start_pre and all("--quiet" in l for l in exec_start_pre), exec_start_pre
    caps = unit_settings("CapabilityBoundingSet")
    # fanotify's mark needs CAP_SYS_ADMIN and open_by_handle_at CAP_DAC_READ_SEARCH.
    assert "CAP_SYS_ADMIN" in caps and "CAP_DAC_READ_SEARCH" in caps, caps
    local = Path(ROOT) / "target" / "smb3d-unit-check.service"
    local.write_text(unit.replace("/usr/local/bin/smb3d", str(BINARY)))
    try:
        r = subprocess.run(["systemd-analyze", "security", "--offline=true", "--no-pager", str(local)],
                           capture_output=True, text=True, timeout=120)
    finally:
        local.unlink()
    m = re.search(r"Overall exposure level for \S+: ([0-9.]+)", r.stdout + r.stderr)
    assert m, r.stdout + r.stderr
    # systemd rates 0-10; up to 4.0 is "OK". The unit measured 3.3 when this was written.
    assert float(m.group(1)) <= 4.0, r.stdout
