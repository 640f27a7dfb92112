"""The results table (terminal and docs/benchmarks.md)."""

import statistics

FORMATS = {"MiB/s": "%.0f", "ops/s": "%.0f", "files/s": "%.0f", "s": "%.2f", "KiB/conn": "%.1f", "KiB/open": "%.2f"}


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

    def add(self, workload, results):
        rows = [(workload.title, workload.unit, workload.higher_is_better, lambda s: s.value)]
        for key, title, unit, higher in workload.extra_rows:
            rows.append((title, unit, higher, lambda s, key=key: s.extras.get(key)))
        base_label, new_label = self.labels
        for title, unit, higher, pick in rows:
            base, base_cell = self._cell(base_label, results.get(base_label), pick, unit)
            new, new_cell = self._cell(new_label, results.get(new_label), pick, unit)
            self.medians.setdefault(workload.name, (base, new))
            ratio = "-"
            if base and new:
                ratio = "%.2f" % (new / base if higher else base / new)
            cpu = ["", ""]
            if workload.throughput:
                for i, label in enumerate(self.labels):
                    samples = [s for s in results.get(label) or () if s.error is None and s.cpu_per_gib is not None]
                    cpu[i] = "%.2f" % statistics.median(s.cpu_per_gib for s in samples) if samples else "-"
            self.rows.append([title, unit, base_cell, new_cell, ratio] + cpu)
            for label in self.labels:
                samples = results.get(label)
                if samples:
                    runs = ", ".join("error" if s.error or pick(s) is None else fmt(pick(s), unit) for s in samples)
                    self.raw.append("%s, %s (%s): %s" % (title, label, unit, runs))

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
