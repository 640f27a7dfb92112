//! samr (MS-SAMR): the password change a user makes knowing the old password,
//! SamrUnicodeChangePasswordUser2, which `smbpasswd -r`, impacket and Windows' "change a
//! password" use. It needs no handle and no session: the old password is the proof, so
//! anonymous callers may make it (as on Windows and Samba). The check and the change are the
//! directory's ([`crate::Directory::change_password`]); this module only decodes and answers.

use smb3d_dtyp::NtStatus;

use crate::PasswordChangeRequest;
use crate::ndr::{NdrReader, NdrWriter};
use crate::service::{CallContext, CallFault};

/// MS-SAMR 3.1.5.10.3.
const SAMR_UNICODE_CHANGE_PASSWORD_USER2: u16 = 55;
/// Bytes of a SAMPR_ENCRYPTED_USER_PASSWORD (MS-SAMR 2.2.6.21).
const ENCRYPTED_USER_PASSWORD_LEN: usize = 516;
/// Bytes of an ENCRYPTED_NT_OWF_PASSWORD or ENCRYPTED_LM_OWF_PASSWORD (MS-SAMR 2.2.7.3).
const ENCRYPTED_OWF_LEN: usize = 16;

/// Runs one samr call.
pub fn call(
    cx: &CallContext<'_>,
    opnum: u16,
    stub: &[u8],
    out: &mut NdrWriter<'_>,
) -> Result<(), CallFault> {
    match opnum {
        SAMR_UNICODE_CHANGE_PASSWORD_USER2 => {
            let status = match decode_change_password_user2(stub)? {
                Some(request) => cx.directory.change_password(&request),
                None => NtStatus::INVALID_PARAMETER,
            };
            out.u32(status.0);
            Ok(())
        }
        _ => Err(CallFault::OpRange),
    }
}

/// The in-parameters of SamrUnicodeChangePasswordUser2 (MS-SAMR 3.1.5.10.3); `None` when
/// the NT pair is missing, which the server answers with STATUS_INVALID_PARAMETER. The LM
/// pair is read and ignored: smb3d keeps no LM hashes, and the NT pair alone proves the old
/// password.
pub fn decode_change_password_user2(
    stub: &[u8],
) -> Result<Option<PasswordChangeRequest>, CallFault> {
    let mut r = NdrReader::new(stub);
    // [in, unique] PRPC_UNICODE_STRING ServerName: MAY be ignored (MS-SAMR 3.1.5.10.3).
    if r.pointer("ServerName")? {
        let header = r.counted_string_header("ServerName")?;
        if header.present {
            r.counted_string_body(header, "ServerName")?;
        }
    }
    // [in] PRPC_UNICODE_STRING UserName: a top-level reference pointer, not on the wire.
    let header = r.counted_string_header("UserName")?;
    let user = if header.present {
        r.counted_string_body(header, "UserName")?
    } else if header.length == 0 {
        String::new()
    } else {
        return Err(CallFault::BadStub);
    };
    let new_password =
        optional::<ENCRYPTED_USER_PASSWORD_LEN>(&mut r, "NewPasswordEncryptedWithOldNt")?;
    let old_hash = optional::<ENCRYPTED_OWF_LEN>(&mut r, "OldNtOwfPasswordEncryptedWithNewNt")?;
    r.u8("LmPresent")?;
    optional::<ENCRYPTED_USER_PASSWORD_LEN>(&mut r, "NewPasswordEncryptedWithOldLm")?;
    optional::<ENCRYPTED_OWF_LEN>(&mut r, "OldLmOwfPasswordEncryptedWithNewNt")?;
    if r.remaining() != 0 {
        return Err(CallFault::BadStub);
    }
    Ok(new_password
        .zip(old_hash)
        .map(
            |(new_password_encrypted, old_nt_hash_encrypted)| PasswordChangeRequest {
                user,
                new_password_encrypted,
                old_nt_hash_encrypted,
            },
        ))
}

/// A `[unique]` pointer to a fixed byte array: the referent id, then the bytes.
fn optional<const N: usize>(
    r: &mut NdrReader<'_>,
    field: &'static str,
) -> Result<Option<[u8; N]>, CallFault> {
    if r.pointer(field)? {
        Ok(Some(r.array::<N>(field)?))
    } else {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// The stub impacket's `hSamrUnicodeChangePasswordUser2(dce, '\x00', 'bench', 'old', 'new')`
    /// sends (`tools/samr_vectors.py` wrote `tests/captures/samr_vectors.txt`).
    #[test]
    fn impacket_request_decodes() {
        let stub = vector("IMPACKET_OPNUM55");
        let request = decode_change_password_user2(&stub).unwrap().unwrap();
        assert_eq!(request.user, "bench");
        assert_eq!(
            request.new_password_encrypted.to_vec(),
            vector("NEW_WITH_OLD")
        );
        assert_eq!(
            request.old_nt_hash_encrypted.to_vec(),
            vector("OLD_WITH_NEW")
        );
    }

    #[test]
    fn every_truncation_is_bad_stub_data() {
        let stub = vector("IMPACKET_OPNUM55");
        for len in 0..stub.len() {
            assert!(
                decode_change_password_user2(&stub[..len]).is_err(),
                "{len} bytes"
            );
        }
        let mut longer = stub.clone();
        longer.push(0);
        assert_eq!(
            decode_change_password_user2(&longer).unwrap_err(),
            CallFault::BadStub
        );
    }

    /// A line `NAME=HEX` of `tests/captures/samr_vectors.txt`.
    fn vector(name: &str) -> Vec<u8> {
        let text = include_str!("../tests/captures/samr_vectors.txt");
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap();
        unhex(line)
    }
}
