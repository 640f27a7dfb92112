"""Server CPU time and memory from /proc, summed over a process tree.

Samba forks one smbd per connection, so a server is the process tree under its master. CPU time
of the tree is the sum over live processes of utime+stime+cutime+cstime: a child that exits is
reaped by its parent and its time moves into the parent's cutime/cstime, so every tick is
counted exactly once, before and after the child's exit.
"""

import os
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid):
    """Fields of /proc/PID/stat after the command name (field 3 onwards), or None if gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
    except OSError:
        return None
    # The command name may contain spaces and parentheses; it ends at the last ')'.
    return data[data.rfind(b")") + 2:].split()


def tree_pids(root):
    """root and all its live descendants."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat_fields(int(entry))
        if fields is None:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    pids, queue = [], [root]
    while queue:
        pid = queue.pop()
        pids.append(pid)
        queue.extend(children.get(pid, ()))
    return pids


def cpu_seconds(root):
    """User+system CPU seconds consumed so far by the tree under root, reaped children included."""
    ticks = 0
    for pid in tree_pids(root):
        fields = _stat_fields(pid)
        if fields is not None:
            # utime, stime, cutime, cstime are stat fields 14-17.
            ticks += sum(int(v) for v in fields[11:15])
    return ticks / CLOCK_TICKS


def _status_kib(pid, key):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _pss_kib(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def memory_kib(root):
    """(RSS, PSS) in KiB summed over the tree. RSS counts pages shared between forked
    processes once per process; PSS divides them among the sharers."""
    pids = tree_pids(root)
    return sum(_status_kib(p, "VmRSS:") for p in pids), sum(_pss_kib(p) for p in pids)


def wait_for_process_count(root, at_most, timeout):
    """Wait until the tree has at most `at_most` processes (connection children gone)."""
    deadline = time.monotonic() + timeout
    while len(tree_pids(root)) > at_most:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
