"""The results table (terminal and docs/benchmarks.md)."""

import statistics

FORMATS = {"MiB/s": "%.0f", "ops/s": "%.0f", "files/s": "%.0f", "s": "%.2f", "KiB/conn": "%.1f", "KiB/open": "%.2f",
           "us/op": "%.1f", "us": "%.0f"}


def fmt(value, unit):
    return FORMATS.get(unit, "%.3g") % value


class Table:
    """Rows of per-server medians with footnotes for failed runs."""

    def __init__(self, labels):
        self.labels = labels  # (baseline, contender), e.g. ("Samba", "smb3d")
        self.rows = []
        self.notes = []
        self.raw = []
        self.medians = {}  # workload name -> (baseline median, contender median) of its first row
        self.extra_medians = {}  # (workload name, extras key) -> (baseline, contender) medians
        self.cpu_medians = {}  # throughput workload name -> (baseline, contender) CPU s/GiB
        # machine floor row name -> (the load row it floors, CPU s/GiB median, lowest sample, peer's median),
        # None for what failed
        self.floors = {}
        self.floor_rows = []
        self.tool_cpu_medians = {}  # throughput workload name -> the client's CPU s/GiB medians per server

    def _note(self, text):
        if text not in self.notes:
            self.notes.append(text)
        return "[%d]" % (self.notes.index(text) + 1)

    def _cell(self, label, samples, pick, unit):
        """(median or None, markdown cell) for one server's samples."""
        if samples is None:
            return None, "n/a"
        values = [pick(s) for s in samples if s.error is None and pick(s) is not None]
        errors = [s.error for s in samples if s.error is not None]
        if not values:
            return None, "failed " + self._note("%s: %s" % (label, errors[0] if errors else "no value"))
        median = statistics.median(values)
        cell = fmt(median, unit)
        if errors:
            cell += " " + self._note("%s: %d of %d runs failed: %s" % (label, len(errors), len(samples), errors[0]))
        return median, cell

    def add(self, workload, results, load):
        """One workload's samples per server label (None: server not measured); load is the
        1-minute load average when it started, kept with the raw runs."""
        rows = [(None, workload.title, workload.unit, workload.higher_is_better, lambda s: s.value)]
        for key, title, unit, higher in workload.extra_rows:
            rows.append((key, title, unit, higher, lambda s, key=key: s.extras.get(key)))
        base_label, new_label = self.labels
        for key, title, unit, higher, pick in rows:
            base, base_cell = self._cell(base_label, results.get(base_label), pick, unit)
            new, new_cell = self._cell(new_label, results.get(new_label), pick, unit)
            self.medians.setdefault(workload.name, (base, new))
            if key is not None:
                self.extra_medians[(workload.name, key)] = (base, new)
            ratio = "-"
            if base and new:
                ratio = "%.2f" % (new / base if higher else base / new)
            cpu = ["", ""]
            if workload.throughput and key is None:
                cpu_medians = []
                for label in self.labels:
                    samples = [s for s in results.get(label) or () if s.error is None and s.cpu_per_gib is not None]
                    cpu_medians.append(statistics.median(s.cpu_per_gib for s in samples) if samples else None)
                self.cpu_medians.setdefault(workload.name, tuple(cpu_medians))
                tool = []
                for label in self.labels:
                    values = [s.extras.get("tool_cpu_per_gib") for s in results.get(label) or () if s.error is None]
                    values = [v for v in values if v is not None]
                    tool.append(statistics.median(values) if values else None)
                self.tool_cpu_medians[workload.name] = tuple(tool)
                cpu = ["-" if m is None else "%.2f" % m for m in cpu_medians]
            self.rows.append([title, unit, base_cell, new_cell, ratio] + cpu)
            for label in self.labels:
                samples = results.get(label)
                if samples:
                    runs = ", ".join("error" if s.error or pick(s) is None else fmt(pick(s), unit) for s in samples)
                    if workload.throughput and key is None:
                        runs += "; server CPU s/GiB " + ", ".join(
                            "-" if s.error or s.cpu_per_gib is None else "%.2f" % s.cpu_per_gib for s in samples)
                    self.raw.append("%s, %s (%s): %s; load %.1f" % (title, label, unit, runs, load))

    def add_floor(self, workload, samples, load):
        """A machine floor row's samples (bench/smbbench/floor.py): its rate, its process's CPU
        per GiB and its peer's, medians; load as in add()."""
        ok = [s for s in samples if s.error is None]
        errors = [s.error for s in samples if s.error is not None]
        if ok:
            cpu = statistics.median(s.cpu_per_gib for s in ok)
            peer = statistics.median(s.extras["peer_cpu_per_gib"] for s in ok)
            lowest = min(s.cpu_per_gib for s in ok)
            self.floors[workload.name] = (workload.floors, cpu, lowest, peer)
            cells = ["%.0f" % statistics.median(s.value for s in ok), "%.3f" % cpu, "%.3f" % lowest, "%.3f" % peer]
            if errors:
                cells[0] += " " + self._note("%s: %d of %d runs failed: %s" % (workload.name, len(errors), len(samples), errors[0]))
        else:
            self.floors[workload.name] = (workload.floors, None, None, None)
            cells = ["failed " + self._note("%s: %s" % (workload.name, errors[0] if errors else "no value")), "-", "-", "-"]
        self.floor_rows.append(["`%s`" % workload.name, workload.title] + cells)
        runs = "; ".join("error" if s.error else "%.0f MiB/s, %.3f s/GiB, peer %.3f" % (
            s.value, s.cpu_per_gib, s.extras["peer_cpu_per_gib"]) for s in samples)
        self.raw.append("%s: %s; load %.1f" % (workload.title, runs, load))

    def floors_markdown(self):
        """The machine floor rows measured in this run, or an empty string."""
        if not self.floor_rows:
            return ""
        lines = ["| floor row | what its process does | MiB/s | CPU s/GiB, median | lowest sample | peer's CPU s/GiB |",
                 "|---|---|---:|---:|---:|---:|"]
        lines += ["| " + " | ".join(row) + " |" for row in self.floor_rows]
        # On loopback the kernel runs a segment's receive in whichever process holds the
        # receiving socket or sends it, so how the work splits between the two ends moves with
        # timing; the sum of both ends does not depend on the split.
        pairs = []
        for row in dict.fromkeys(r for r, *_ in self.floors.values()):
            floor = self.floor_of(row)
            servers = self.cpu_medians.get(row, (None, None))
            tools = self.tool_cpu_medians.get(row, (None, None))
            if floor is None:
                continue
            cells = ["-" if s is None or t is None else "%.3f" % (s + t) for s, t in zip(servers, tools)]
            _, cpu, _, peer = self.floors[floor[0]]
            pairs.append("| %s | %s | %.3f (`%s`) |" % (row, " | ".join(cells), cpu + peer, floor[0]))
        if pairs:
            base, new = self.labels
            lines += ["", "| both ends, CPU s/GiB (medians) | %s + smbload | %s + smbload | floor + its peer |" % (base, new),
                      "|---|---:|---:|---:|"] + pairs
        return "\n".join(lines)

    def floor_of(self, load_row):
        """(floor row name, median CPU s/GiB, lowest sample) of the floor under load_row whose
        median is least, or None when none was measured."""
        measured = [(cpu, lowest, name) for name, (row, cpu, lowest, _) in self.floors.items()
                    if row == load_row and cpu is not None]
        if not measured:
            return None
        cpu, lowest, name = min(measured)
        return name, cpu, lowest

    def markdown(self):
        base, new = self.labels
        head = ["workload", "unit", "%s median" % base, "%s median" % new, "ratio (>1: %s better)" % new,
                "%s CPU s/GiB" % base, "%s CPU s/GiB" % new]
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * 5) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        if self.notes:
            lines.append("")
            lines += ["%d. %s" % (i + 1, n) for i, n in enumerate(self.notes)]
        return "\n".join(lines)


def _ratio(medians, name, higher_is_better=True):
    base, new = medians.get(name, (None, None))
    if not base or not new:
        return None
    return new / base if higher_is_better else base / new


def checks_markdown(table, tcp_limit):
    """Issue 7's checks against this run's medians: what is needed, what was measured, and
    whether it holds. Only the workloads that ran are checked."""
    rows = []

    def check(what, measured, holds):
        rows.append("| %s | %s | %s |" % (what, measured, "n/a" if holds is None else "yes" if holds else "**no**"))

    def ratio_check(name, needed, higher_is_better=True):
        if name not in table.medians:
            return
        r = _ratio(table.medians, name, higher_is_better)
        check("%s: smb3d >= %.1fx Samba" % (name, needed), "-" if r is None else "%.2fx" % r,
              None if r is None else r >= needed)

    ratio_check("read-plain", 1.6)
    ratio_check("write-plain", 1.3)
    for name in ("read-plain", "write-plain"):
        if name in table.medians:
            new = table.medians[name][1]
            check("%s: smb3d >= 60%% of loopback TCP" % name, "-" if not new else "%.0f%%" % (100 * new / tcp_limit),
                  None if not new else new >= 0.6 * tcp_limit)
    for name in ("read-signed", "read-encrypted", "write-signed", "write-encrypted"):
        ratio_check(name, 2.0)
    for name, (base, new) in table.cpu_medians.items():
        if name.startswith("load-"):
            continue
        check("%s: smb3d CPU/GiB <= 0.5x Samba" % name, "-" if base is None or new is None else "%.2fx" % (new / base),
              None if base is None or new is None else new <= 0.5 * base)
    for n in (4, 16):
        ratio_check("echo-%d" % n, 1.5)
        ratio_check("path-contention-%d" % n, 3.0)
    if "dirscan" in table.medians:
        r = _ratio(table.medians, "dirscan", higher_is_better=False)
        check("dirscan: smb3d time <= 0.5x Samba", "-" if r is None else "%.2fx" % (1 / r), None if r is None else r >= 2.0)
    if "idle-memory" in table.medians:
        new = table.medians["idle-memory"][1]
        check("idle-memory: smb3d <= 64 KiB RSS per connection", "-" if new is None else "%.1f KiB" % new,
              None if new is None else new <= 64)
    tables = []
    if rows:
        tables.append("\n".join(["| issue 7 check | measured | holds |", "|---|---:|---|"] + rows))
    issue21 = issue21_checks(table)
    if issue21:
        tables.append("\n".join(["| issue 21 check | measured | holds | machine floor as a share of Samba's CPU |",
                                  "|---|---:|---|---|"] + issue21))
    return "\n\n".join(tables)


def floor_share(table, name, limit, holds):
    """The issue 21 table's last cell for a row: its machine floor (bench/smbbench/floor.py) as a
    share of Samba's server CPU per GiB in the same run, and whether that rules the goal out."""
    floor = table.floor_of(name)
    base, ours = table.cpu_medians.get(name, (None, None))
    if floor is None or not base:
        return "-"
    floor_name, cpu, lowest = floor
    text = "floor %.3f s/GiB (`%s`, median) = %.2fx Samba's" % (cpu, floor_name, cpu / base)
    if holds is False:
        # Each sample, the floor's or smb3d's own, shows the machine needed no more than it
        # spent, so only the least of them can rule a goal out.
        least, which = (lowest, "the floor's lowest sample") if ours is None or lowest <= ours else (ours, "smb3d's own")
        verdict = "ruled out by the machine floor" if least / base > limit else "not ruled out"
        return "%s: %s; least shown (%s) %.3f = %.2fx %s %.2fx" % (
            verdict, text, which, least, least / base, ">" if least / base > limit else "<=", limit)
    return text


def issue21_checks(table):
    """Issue 21's checks on the smbload rows: server CPU per operation against Samba's (with the
    machine floor of the 1 MiB rows), the many-clients mix's rate and p99, NBENCH's rate."""
    rows = []

    def check(what, measured, holds, floor="-"):
        rows.append("| %s | %s | %s | %s |" % (what, measured, "n/a" if holds is None else "yes" if holds else "**no**",
                                               floor))

    for (name, key), (base, new) in table.extra_medians.items():
        if key != "cpu_us_per_op" or not name.startswith("load-") or name.startswith("load-mix"):
            continue
        limit = 0.35 if name == "load-read-1m-plain" else 0.5
        ratio = new / base if base and new else None
        holds = None if ratio is None else ratio <= limit
        check("%s: smb3d server CPU per operation <= %.2fx Samba" % (name, limit),
              "-" if ratio is None else "%.2fx" % ratio, holds, floor_share(table, name, limit, holds))
    for name in ("load-mix-64", "load-mix-256"):
        if name in table.medians:
            r = _ratio(table.medians, name)
            check("%s: smb3d ops/s >= 3x Samba" % name, "-" if r is None else "%.2fx" % r, None if r is None else r >= 3)
            base, new = table.extra_medians.get((name, "p99_us"), (None, None))
            check("%s: smb3d p99 <= Samba's" % name, "-" if not base or not new else "%.0f vs %.0f us" % (new, base),
                  None if not base or not new else new <= base)
    for name in ("nbench-8", "nbench-32"):
        if name in table.medians:
            r = _ratio(table.medians, name)
            check("%s: smb3d ops/s >= 2x Samba" % name, "-" if r is None else "%.2fx" % r, None if r is None else r >= 2)
    return rows
