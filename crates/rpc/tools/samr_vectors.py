#!/usr/bin/env python3
"""Golden vectors for the samr password change decoders (crates/auth/src/samr.rs,
crates/rpc/src/samr.rs): impacket builds the SamrUnicodeChangePasswordUser2 request exactly as
its hSamrUnicodeChangePasswordUser2 sends it (its padding is fixed 'A's), and Samba's Python
bindings build a ChangePasswordUser3 (opnum 63) request from the same pieces. Prints hex lines
NAME=HEX; paste them into the tests. Needs impacket, and Debian's python3-samba under
/usr/bin/python3 (run for the last line with `--samba OWF_HEX ENCRYPTED_HEX`)."""
import subprocess
import sys


def samba_opnum63(owf, encrypted):
    from samba.dcerpc import lsa, samr as ssamr
    from samba.ndr import ndr_pack_in

    call = ssamr.ChangePasswordUser3()
    server = lsa.String()
    server.string = "127.0.0.1"
    call.in_server = server
    account = lsa.String()
    account.string = USER
    call.in_account = account
    crypt = ssamr.CryptPassword()
    crypt.data = list(encrypted)
    call.in_nt_password = crypt
    verifier = ssamr.Password()
    verifier.hash = list(owf)
    call.in_nt_verifier = verifier
    call.in_lm_change = 0
    call.in_lm_password = None
    call.in_lm_verifier = None
    call.in_password3 = None
    return ndr_pack_in(call)


OLD, NEW, USER = "old", "new", "bench"

if len(sys.argv) == 4 and sys.argv[1] == "--samba":
    print(f"SAMBA_OPNUM63={samba_opnum63(bytes.fromhex(sys.argv[2]), bytes.fromhex(sys.argv[3])).hex()}")
    sys.exit(0)

from impacket import crypto, ntlm
from impacket.dcerpc.v5 import samr
from impacket.dcerpc.v5.dtypes import NULL
from Cryptodome.Cipher import ARC4

old_nt = ntlm.NTOWFv1(OLD)
new_nt = ntlm.NTOWFv1(NEW)
owf = crypto.SamEncryptNTLMHash(old_nt, new_nt)

user_password = samr.SAMPR_USER_PASSWORD()
encoded = NEW.encode("utf-16le")
user_password["Buffer"] = b"A" * (512 - len(encoded)) + encoded
user_password["Length"] = len(encoded)
encrypted = ARC4.new(old_nt).encrypt(user_password.getData())

# The request hSamrUnicodeChangePasswordUser2 builds, without sending it.
request = samr.SamrUnicodeChangePasswordUser2()
request["ServerName"] = "\x00"
request["UserName"] = USER
request["NewPasswordEncryptedWithOldNt"]["Buffer"] = encrypted
request["OldNtOwfPasswordEncryptedWithNewNt"] = owf
request["LmPresent"] = 0
request["NewPasswordEncryptedWithOldLm"] = NULL
request["OldLmOwfPasswordEncryptedWithNewNt"] = NULL
stub55 = request.getData()

print(f"OLD_WITH_NEW={owf.hex()}")
print(f"NEW_WITH_OLD={encrypted.hex()}")
print(f"IMPACKET_OPNUM55={stub55.hex()}")

out = subprocess.run(["/usr/bin/python3", __file__, "--samba", owf.hex(), encrypted.hex()],
                     capture_output=True, text=True, check=True)
print(out.stdout, end="")
