"""A standalone MIT Kerberos realm for the interop tests: krb5kdc (Debian krb5-kdc) on a free
loopback port, its database, configuration, keytab and credential caches all in a temporary
directory. Nothing of the machine's own Kerberos setup (/etc/krb5.conf) is read or changed:
every command gets KRB5_CONFIG and KRB5_KDC_PROFILE pointing at the files written here."""

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from conftest import end_process, free_port

REALM = "SMB3D.TEST"


def available():
    """Whether the MIT KDC and client tools are installed (scripts/test-all installs them)."""
    return all(shutil.which(t) for t in ("krb5kdc", "kdb5_util", "kadmin.local", "kinit", "klist"))


# The server's name in the tests. smbclient never uses Kerberos for `localhost` or an IP
# address, so the tests name the server thus and give smbclient its address with -I
# 127.0.0.1: nothing resolves the name, and /etc/hosts is left alone.
HOST = "filesrv.smb3d.test"


class Realm:
    """A running KDC of REALM. `host` is the name clients connect to."""

    def __init__(self, root: Path, host=HOST):
        self.root = root
        self.host = host
        self.port = free_port()
        root.mkdir(parents=True, exist_ok=True)
        self.krb5_conf = root / "krb5.conf"
        self.kdc_conf = root / "kdc.conf"
        self.krb5_conf.write_text(
            "[libdefaults]\n"
            "  default_realm = %(realm)s\n"
            "  dns_lookup_kdc = false\n"
            "  dns_lookup_realm = false\n"
            "  dns_canonicalize_hostname = false\n"
            "  rdns = false\n"
            "  udp_preference_limit = 1\n"
            "  permitted_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96\n"
            "[realms]\n"
            "  %(realm)s = {\n    kdc = 127.0.0.1:%(port)d\n  }\n"
            "[domain_realm]\n"
            "  %(host)s = %(realm)s\n"
            "  .smb3d.test = %(realm)s\n"
            % {"realm": REALM, "port": self.port, "host": host})
        self.kdc_conf.write_text(
            "[kdcdefaults]\n"
            "  kdc_ports = %(port)d\n"
            "  kdc_tcp_ports = %(port)d\n"
            "[realms]\n"
            "  %(realm)s = {\n"
            "    database_name = %(root)s/principal\n"
            "    key_stash_file = %(root)s/stash\n"
            "    acl_file = %(root)s/kadm5.acl\n"
            "    max_life = 10h 0m 0s\n"
            "    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n"
            "  }\n"
            "[logging]\n"
            "  kdc = FILE:%(root)s/kdc.log\n"
            % {"realm": REALM, "port": self.port, "root": root})
        (root / "kadm5.acl").write_text("")
        self.env = dict(os.environ, KRB5_CONFIG=str(self.krb5_conf), KRB5_KDC_PROFILE=str(self.kdc_conf),
                        KRB5CCNAME="FILE:%s/ccache" % root)
        self.run("kdb5_util", "-r", REALM, "-P", "master-" + os.urandom(8).hex(), "create", "-s")
        self.proc = subprocess.Popen(["krb5kdc", "-n", "-r", REALM], env=self.env, stdout=subprocess.DEVNULL,
                                     stderr=open(root / "krb5kdc.out", "wb"))
        self._wait()

    def _wait(self, timeout=20.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("krb5kdc exited: %s" % (self.root / "krb5kdc.out").read_text())
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("krb5kdc did not listen on %d" % self.port)

    def run(self, *cmd, input=None, check=True, env=None):
        r = subprocess.run(list(cmd), env=env or self.env, input=input, text=True, capture_output=True, timeout=60)
        if check and r.returncode != 0:
            raise AssertionError("%s failed (%d): %s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
        return r

    def kadmin(self, query):
        return self.run("kadmin.local", "-r", REALM, "-q", query)

    def add_user(self, name, password):
        self.kadmin("addprinc -pw %s %s@%s" % (password, name, REALM))

    def add_service(self, host=None):
        """Adds cifs/<host> with a random key; returns its principal."""
        principal = "cifs/%s@%s" % (host or self.host, REALM)
        self.kadmin("addprinc -randkey %s" % principal)
        return principal

    def keytab(self, path: Path, principal):
        """Writes `principal`'s keys into the keytab `path` (a new kvno: earlier keytabs of
        it no longer decrypt its tickets)."""
        self.kadmin("ktadd -k %s %s" % (path, principal))
        return path

    def kinit(self, name, password, lifetime=None, ccache=None):
        """Gets `name`'s TGT into `ccache` (default: the realm's); returns the environment a
        client uses it with."""
        env = dict(self.env)
        if ccache is not None:
            env["KRB5CCNAME"] = "FILE:%s" % ccache
        args = ["kinit"] + (["-l", lifetime] if lifetime else []) + ["%s@%s" % (name, REALM)]
        self.run(*args, input=password + "\n", env=env)
        return env

    def stop(self):
        end_process(self.proc)
