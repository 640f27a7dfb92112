"""A Samba Active Directory domain controller for the interop tests (Debian samba-ad-dc):
`samba-tool domain provision` into a temporary directory, then `samba -i` bound to 127.0.0.50
only (added to lo here, idempotently), serving the KDC, LDAP and RPC of realm AD.SMB3D.TEST.
Nothing of the machine's own Samba or Kerberos setup is read or changed: the DC has its own
smb.conf (samba-tool and samba get -s), and clients get KRB5_CONFIG pointing at a krb5.conf
written here that names the DC's KDC.

Provisioning takes 10-15 s of CPU: a test module provisions one DC (a module-scoped fixture)
and its tests share it; each test makes the accounts it needs."""

import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

from conftest import end_process

REALM = "AD.SMB3D.TEST"
DOMAIN = "SMB3DAD"
DNS_DOMAIN = REALM.lower()
ADDRESS = "127.0.0.50"
ADMIN_PASSWORD = "Adm1n-Pass-smb3d"
# The member server's name: cifs/<HOST> is its service principal.
HOST = "filesrv." + DNS_DOMAIN
# samba-tool and samba are Python/C programs of the Debian packages: they need the system's
# Python (its samba modules), not a virtual environment's.
SYSTEM_PYTHON = "/usr/bin/python3"


def available():
    """Whether Samba's AD DC can be provisioned and run here (scripts/test-all installs
    samba-ad-dc; adding 127.0.0.50 to lo needs CAP_NET_ADMIN)."""
    return (all(shutil.which(t) for t in ("samba", "samba-tool", "kinit", "klist"))
            and Path("/usr/share/samba/setup").is_dir() and _address_on_lo())


def _address_on_lo():
    shown = subprocess.run(["ip", "-o", "addr", "show", "dev", "lo"], capture_output=True, text=True)
    if " %s/" % ADDRESS in shown.stdout:
        return True
    added = subprocess.run(["ip", "addr", "add", ADDRESS + "/32", "dev", "lo"], capture_output=True, text=True)
    return added.returncode == 0 or "File exists" in added.stderr


def _listening(address, port):
    try:
        with socket.create_connection((address, port), timeout=0.2):
            return True
    except OSError:
        return False


class DomainController:
    """A provisioned, running DC. `run_tool` runs samba-tool against its database."""

    def __init__(self, root: Path):
        self.root = root
        self.dir = root / "dc"
        started = time.monotonic()
        self._provision()
        self.provision_seconds = time.monotonic() - started
        self.smb_conf = self.dir / "etc" / "smb.conf"
        self._configure()
        self.krb5_conf = root / "krb5.conf"
        self.krb5_conf.write_text(
            "[libdefaults]\n"
            "  default_realm = %(realm)s\n"
            "  dns_lookup_kdc = false\n"
            "  dns_lookup_realm = false\n"
            "  dns_canonicalize_hostname = false\n"
            "  rdns = false\n"
            "  udp_preference_limit = 1\n"
            "[realms]\n"
            "  %(realm)s = {\n    kdc = %(addr)s:88\n  }\n"
            "[domain_realm]\n"
            "  .%(dns)s = %(realm)s\n"
            % {"realm": REALM, "addr": ADDRESS, "dns": DNS_DOMAIN})
        self.env = dict(os.environ, KRB5_CONFIG=str(self.krb5_conf), KRB5CCNAME="FILE:%s/ccache" % root)
        if _listening(ADDRESS, 88):
            raise RuntimeError("%s:88 is already served: another test DC still runs" % ADDRESS)
        started = time.monotonic()
        self.proc = subprocess.Popen(["samba", "-i", "-M", "single", "-s", str(self.smb_conf)], env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=open(root / "samba.out", "wb"))
        try:
            self._wait()
            self.start_seconds = time.monotonic() - started
            self.domain_sid = self._sid_of_domain()
        except BaseException:
            self.stop()
            raise

    def _provision(self):
        r = subprocess.run(
            ["samba-tool", "domain", "provision", "--targetdir", str(self.dir), "--realm", REALM,
             "--domain", DOMAIN, "--adminpass", ADMIN_PASSWORD, "--use-rfc2307", "--host-ip", ADDRESS,
             "--host-name", "dc1", "--server-role", "dc", "--dns-backend", "NONE"],
            capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError("samba-tool domain provision failed:\n%s%s" % (r.stdout, r.stderr))

    def _configure(self):
        """Binds the DC to ADDRESS alone, runs only what the tests use (KDC, LDAP, RPC), and
        keeps its logs and pid files in its directory."""
        text = self.smb_conf.read_text().split("[homes]")[0]
        text = re.sub(r"\tserver services = .*\n", "\tserver services = kdc, ldap, rpc\n", text)
        text = re.sub(r"\tlog file = .*\n", "\tlog file = %s/log.%%m\n" % self.dir, text)
        text = re.sub(r"\tpanic action = .*\n", "", text)
        text += ("\tinterfaces = %s\n\tbind interfaces only = yes\n\tpid directory = %s\n"
                 % (ADDRESS, self.dir))
        self.smb_conf.write_text(text)

    def _wait(self, timeout=60.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("samba exited: %s" % (self.root / "samba.out").read_text())
            if _listening(ADDRESS, 88):
                return
            time.sleep(0.1)
        raise RuntimeError("the DC's KDC did not listen on %s:88" % ADDRESS)

    def run(self, *cmd, input=None, check=True, env=None):
        r = subprocess.run(list(cmd), env=env or self.env, input=input, text=True, capture_output=True,
                           timeout=120)
        if check and r.returncode != 0:
            raise AssertionError("%s failed (%d): %s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
        return r

    def run_tool(self, *args, check=True):
        return self.run("samba-tool", *args, "-s", str(self.smb_conf), check=check)

    def _sid_of_domain(self):
        out = self.run(SYSTEM_PYTHON, "-I", "-c", _PYTHON_DOMAIN_SID, str(self.smb_conf)).stdout.strip()
        assert re.fullmatch(r"S-1-5-21-\d+-\d+-\d+", out), out
        return out

    def add_user(self, name, password, groups=()):
        """A domain user, member of `groups` (made when missing); returns its SID."""
        self.run_tool("user", "add", name, password)
        for group in groups:
            self.run_tool("group", "add", group, check=False)
            self.run_tool("group", "addmembers", group, name)
        return self.sid_of(name)

    def sid_of(self, name):
        out = self.run(SYSTEM_PYTHON, "-I", "-c", _PYTHON_SID_OF, str(self.smb_conf), name).stdout.strip()
        assert out.startswith("S-1-5-"), out
        return out

    def join(self, keytab: Path, host=HOST):
        """What a join makes for the member `host`: its machine account (NAME$) with the SPNs
        cifs/<host> and host/<host>, a password, AES as its only enctypes (an account without
        msDS-SupportedEncryptionTypes gets RC4 service tickets), and the keytab of its keys,
        exported on the DC. Returns the keytab's path; the password stays in machine_password,
        as a join leaves it to the member for Netlogon's secure channel."""
        account = host.split(".")[0].upper()
        self.run_tool("computer", "create", account, "--service-principal-name=cifs/" + host,
                      "--service-principal-name=host/" + host)
        self.machine_password = os.urandom(18).hex() + "-Aa1"
        self.run_tool("user", "setpassword", account + "$", "--newpassword=" + self.machine_password)
        self.run(SYSTEM_PYTHON, "-I", "-c", _PYTHON_AES_ONLY, str(self.smb_conf), account + "$")
        self.run_tool("domain", "exportkeytab", str(keytab), "--principal=cifs/" + host)
        return keytab

    def kinit(self, name, password, ccache):
        env = dict(self.env, KRB5CCNAME="FILE:%s" % ccache)
        self.run("kinit", "%s@%s" % (name, REALM), input=password + "\n", env=env)
        return env

    def stop(self):
        end_process(self.proc)


# The DC's database is read in process (samba's own Python modules, as root; -I keeps
# interop/samba.py from shadowing them): no network
# round trip and no LDAP bind to set up.
_PYTHON_DOMAIN_SID = """
import sys
from samba.samdb import SamDB
from samba.auth import system_session
from samba.param import LoadParm
lp = LoadParm(); lp.load(sys.argv[1])
print(SamDB(url=lp.samdb_url(), lp=lp, session_info=system_session()).get_domain_sid())
"""

# msDS-SupportedEncryptionTypes = 0x18: aes128 and aes256 (MS-KILE 2.2.7).
_PYTHON_AES_ONLY = """
import sys
import ldb
from samba.samdb import SamDB
from samba.auth import system_session
from samba.param import LoadParm
lp = LoadParm(); lp.load(sys.argv[1])
db = SamDB(url=lp.samdb_url(), lp=lp, session_info=system_session())
res = db.search(base=db.domain_dn(), scope=ldb.SCOPE_SUBTREE,
                expression="(sAMAccountName=%s)" % ldb.binary_encode(sys.argv[2]), attrs=[])
m = ldb.Message(res[0].dn)
m["e"] = ldb.MessageElement("24", ldb.FLAG_MOD_REPLACE, "msDS-SupportedEncryptionTypes")
db.modify(m)
"""

_PYTHON_SID_OF = """
import sys
import ldb
from samba.samdb import SamDB
from samba.auth import system_session
from samba.param import LoadParm
from samba.dcerpc import security
from samba.ndr import ndr_unpack
lp = LoadParm(); lp.load(sys.argv[1])
db = SamDB(url=lp.samdb_url(), lp=lp, session_info=system_session())
res = db.search(base=db.domain_dn(), scope=ldb.SCOPE_SUBTREE,
                expression="(sAMAccountName=%s)" % ldb.binary_encode(sys.argv[2]), attrs=["objectSid"])
print(ndr_unpack(security.dom_sid, res[0]["objectSid"][0]))
"""
