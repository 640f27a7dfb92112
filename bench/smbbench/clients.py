"""The third-party clients: smbclient sessions driven over a pipe, and smbtorture."""

import re
import subprocess
import threading

# smbclient answers `pwd` with this line; sending it after a batch of commands marks the end of
# the batch, so a batch can be timed without the connection and logon before it.
MARKER = "Current directory is"


class ClientError(Exception):
    """A client run that failed or produced output that does not prove the work was done."""


def tail(text, lines=6):
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])


class Smbclient:
    """One smbclient process with one connection, fed commands on stdin.

    smbclient waits for its input descriptor to become readable before each command, then reads
    the command through stdio: with a buffered stdin, lines already in the buffer wait for more
    input that never comes. stdbuf makes stdin unbuffered, and stdout line-buffered so the end of
    each batch is seen as soon as it happens."""

    def __init__(self, server, protection="off", timeout=600):
        self.timeout = timeout
        self.proc = subprocess.Popen(
            ["stdbuf", "-i0", "-oL", "smbclient", server.unc, "-p", str(server.port), "-U", server.credentials, "-m", "SMB3_11",
             "--client-protection=" + protection],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        try:
            self.run([])
        except BaseException:
            self.proc.kill()
            self.proc.wait()
            raise

    def run(self, commands):
        """Send commands, then wait until they have all been answered; returns their output."""
        script = "".join(c + "\n" for c in commands) + "pwd\n"
        timer = threading.Timer(self.timeout, self.proc.kill)
        timer.start()
        try:
            # A writer thread, because a long script's output can fill the pipe before the
            # script has been written.
            writer = threading.Thread(target=self._write, args=(script,), daemon=True)
            writer.start()
            out = []
            for line in self.proc.stdout:
                if line.startswith(MARKER):
                    writer.join()
                    return "".join(out)
                out.append(line)
            raise ClientError("smbclient exited (%s): %s" % (self.proc.wait(), tail("".join(out))))
        finally:
            timer.cancel()

    def _write(self, script):
        try:
            self.proc.stdin.write(script)
            self.proc.stdin.flush()
        except OSError:
            pass  # the process died; run() reports it with its output

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is not None and self.proc.poll() is None:
            self.proc.kill()
        self.close()


def check_clean(output, what):
    """smbclient reports failures as NT_STATUS_* lines but keeps going; any is a failed run."""
    bad = [line for line in output.splitlines() if "NT_STATUS_" in line or "ERRDOS" in line]
    if bad:
        raise ClientError("%s: %d errors, first: %s" % (what, len(bad), bad[0].strip()))


def smbtorture(server, test, nprocs, seconds):
    """Run one smb2.bench.* test; returns its full output.

    Options read by source4/torture/smb2 (Samba 4.17, bench tests in create.c and oplock.c):
    torture:nprocs connections, torture:timelimit seconds, torture:progress per-second lines."""
    cmd = ["smbtorture", "//127.0.0.1/share", "-p", str(server.port), "-U", server.credentials, "-m", "SMB3_11",
           "--option=torture:nprocs=%d" % nprocs, "--option=torture:timelimit=%d" % seconds,
           "--option=torture:progress=no", test]
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=seconds + 120)
    except subprocess.TimeoutExpired as e:
        raise ClientError("smbtorture %s timed out" % test) from e
    name = test.rsplit(".", 1)[-1]
    if r.returncode != 0 or not re.search(r"^success: %s$" % re.escape(name), r.stdout, re.M):
        # smbtorture's subunit-style report: "failure: NAME [" then the reason lines, then "]".
        reason = re.search(r"^(?:failure|error): \S+ \[\n(.*?)^\]", r.stdout, re.M | re.S)
        raise ClientError("smbtorture %s failed: %s" % (test, tail(reason.group(1) if reason else r.stdout)))
    return r.stdout
