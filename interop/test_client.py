"""smb3d's own client (crates/client, driven through bench/load's `smbcp`) against smb3d and a
reference Samba (issue 21 item 1): it negotiates each dialect, logs on, signs with HMAC-SHA256,
AES-CMAC and AES-GMAC, encrypts with AES-128/256-GCM and AES-128/256-CCM, and moves data both
ways with many READs and WRITEs in flight; smbclient reads what it wrote and writes what it
reads. smbcp fails on any bad, unsigned or clear-text response, so a pass is each server's
signatures and encryption checked by the client."""

import json
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT, interop_uid, start_smb3d, stop
import samba

SMBCP = Path(os.environ.get("SMBCP_BIN", ROOT / "target" / "release" / "smbcp"))

pytestmark = pytest.mark.skipif(os.getuid() != 0 or not samba.available(),
                                reason="needs root (Samba serves the share as a system account) and smbd")

# (dialect, protection, signing offered, cipher offered, what the session must report)
CASES = [
    ("3.1.1", "plain", "gmac", "aes-128-gcm", {"signed": False, "encrypted": False}),
    ("3.1.1", "sign", "gmac", "aes-128-gcm", {"signed": True, "signing": "AesGmac"}),
    ("3.1.1", "sign", "cmac", "aes-128-gcm", {"signed": True, "signing": "AesCmac"}),
    ("3.1.1", "encrypt", "gmac", "aes-128-gcm", {"encrypted": True, "cipher": "Aes128Gcm"}),
    ("3.1.1", "encrypt", "gmac", "aes-256-gcm", {"encrypted": True, "cipher": "Aes256Gcm"}),
    ("3.1.1", "encrypt", "gmac", "aes-128-ccm", {"encrypted": True, "cipher": "Aes128Ccm"}),
    ("3.1.1", "encrypt", "gmac", "aes-256-ccm", {"encrypted": True, "cipher": "Aes256Ccm"}),
    ("3.0.2", "sign", "gmac", "aes-128-ccm", {"signed": True, "signing": "AesCmac"}),
    ("3.0", "encrypt", "gmac", "aes-128-ccm", {"encrypted": True, "cipher": "Aes128Ccm"}),
    ("2.1", "sign", "gmac", "aes-128-gcm", {"signed": True, "signing": "HmacSha256"}),
    ("2.0.2", "plain", "gmac", "aes-128-gcm", {"signed": False}),
]


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    if not SMBCP.exists():
        pytest.fail("%s is missing: run `cargo build --release` first" % SMBCP)
    tmp = tmp_path_factory.mktemp("client")
    # Samba enters the share as the user, so every directory above it must be traversable.
    share = Path(tempfile.mkdtemp(prefix="smb3d-client-"))
    share.chmod(0o755)
    (share / "ours").mkdir()
    ours = start_smb3d(tmp / "smb3d", shares={"share": {"path": str(share / "ours")}})
    account = pwd.getpwuid(interop_uid()).pw_name
    (share / "theirs").mkdir()
    os.chown(share / "theirs", interop_uid(), pwd.getpwuid(interop_uid()).pw_gid)
    theirs = samba.start_samba(tmp / "samba", share / "theirs", account, "pw-" + secrets.token_hex(8))
    yield {"smb3d": ours, "samba": theirs}
    samba.stop_samba(theirs)
    stop(ours)
    shutil.rmtree(share)


def smbcp(server, direction, source, target, dialect="3.1.1", protection="plain", signing="gmac",
          cipher="aes-128-gcm", chunk=65536):
    cmd = [str(SMBCP), direction, str(source), str(target), "--server", "127.0.0.1:%d" % server.port,
           "--user", server.user, "--password", server.password, "--dialect", dialect,
           "--protection", protection, "--signing", signing, "--cipher", cipher, "--chunk", str(chunk)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, "smbcp %s failed: %s" % (" ".join(cmd[1:4]), r.stderr)
    return json.loads(r.stdout)


def payload(tmp_path, name, size):
    path = tmp_path / name
    path.write_bytes(secrets.token_bytes(size))
    return path


@pytest.mark.parametrize("server_name", ["smb3d", "samba"])
@pytest.mark.parametrize("dialect,protection,signing,cipher,expected", CASES,
                         ids=["%s-%s-%s" % (c[0], c[1], c[3] if c[1] == "encrypt" else c[2]) for c in CASES])
def test_the_client_moves_data_both_ways(servers, server_name, tmp_path, dialect, protection, signing, cipher,
                                         expected):
    server = servers[server_name]
    # Chunks of 64 KiB: a 1 MiB + 123 byte file is 17 requests, all in flight at once.
    source = payload(tmp_path, "up.bin", (1 << 20) + 123)
    remote = "c-%s-%s-%s.bin" % (dialect, protection, cipher)
    put = smbcp(server, "put", source, remote, dialect, protection, signing, cipher)
    back = tmp_path / "down.bin"
    got = smbcp(server, "get", remote, back, dialect, protection, signing, cipher)
    assert back.read_bytes() == source.read_bytes()
    for report in (put, got):
        assert report["bytes"] == source.stat().st_size
        assert report["dialect"] == {"2.0.2": "SMB2_0_2", "2.1": "SMB2_1", "3.0": "SMB3_0", "3.0.2": "SMB3_0_2",
                                     "3.1.1": "SMB3_1_1"}[dialect]
        for key, value in expected.items():
            assert report[key] == value, (key, report)


@pytest.mark.parametrize("server_name", ["smb3d", "samba"])
def test_smbclient_reads_what_the_client_wrote_and_the_reverse(servers, server_name, tmp_path):
    server = servers[server_name]
    ours = payload(tmp_path, "ours.bin", 3 * (1 << 20) + 7)
    smbcp(server, "put", ours, "from-client.bin", protection="encrypt", chunk=1 << 20)
    fetched = tmp_path / "fetched.bin"
    server.smbclient("get from-client.bin %s" % fetched)
    assert fetched.read_bytes() == ours.read_bytes()

    theirs = payload(tmp_path, "theirs.bin", 2 * (1 << 20) + 11)
    server.smbclient("put %s from-smbclient.bin" % theirs)
    back = tmp_path / "back.bin"
    report = smbcp(server, "get", "from-smbclient.bin", back, protection="sign", chunk=1 << 20)
    assert report["signed"] and report["signing"] == "AesGmac"
    assert back.read_bytes() == theirs.read_bytes()
