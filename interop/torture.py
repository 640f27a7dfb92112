"""Runs smbtorture suites against a server and compares the results with the checked-in
knownfail list: a failure not listed fails the run, and so does a listed test that passes
(an unexpected pass means the list is stale)."""

import re
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent / "torture"
# A test's name runs to the end of its line, or to the " [" that opens its reason; some
# (vfs.fruit's) have spaces in them.
RESULT = re.compile(r"^(success|failure|error|skip|xfail|uxsuccess|successful|fail): (.+?)(?: \[)?$")


def read_list(name):
    path = HERE / name
    items = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            items.append(line)
    return items


def run_suite(server, suite, extra=(), timeout=1200):
    """Returns {subtest: result} and the raw output."""
    cmd = ["smbtorture", server.unc(), "-p", str(server.port), "-U", server.creds, "--fullname",
           "--target=samba3", *extra, suite]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    results = {}
    for line in proc.stdout.splitlines():
        m = RESULT.match(line)
        if m:
            word = {"successful": "success", "fail": "failure"}.get(m.group(1), m.group(1))
            results[m.group(2)] = word
    if not results:
        results[suite] = "error"
    return results, proc.stdout


def judge(results, knownfail):
    """Lists the problems: unexpected failures and unexpected passes."""
    problems = []
    for name, result in sorted(results.items()):
        listed = any(name == k or name.startswith(k + ".") for k in knownfail)
        if result in ("failure", "error", "uxsuccess") and not listed:
            problems.append("unexpected failure: %s" % name)
        if result == "success" and listed:
            problems.append("unexpected pass (remove it from knownfail): %s" % name)
    return problems


def sections_of(output, problems, limit=3000):
    """The output of each test named in `problems`, from its "test:" line to its result (its
    last `limit` characters): what a failure says, which the suite's tail may not show."""
    parts = []
    for problem in problems:
        name = problem.rsplit(": ", 1)[-1]
        start = output.find("test: %s\n" % name)
        if start < 0:
            continue
        result = output.find(": %s" % name, start + 6 + len(name))
        end = output.find("\n", result) if result >= 0 else -1
        if end > 0 and output[end - 1] == "[":
            # The reason follows, up to a line of its own that closes it.
            end = output.find("\n]", end)
            end = end + 2 if end >= 0 else -1
        parts.append("--- %s ---\n%s" % (name, output[start:end if end > 0 else None][-limit:]))
    return "\n".join(parts)
