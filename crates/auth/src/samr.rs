//! Password change with the old password as the proof (MS-SAMR 3.1.5.10.3
//! SamrUnicodeChangePasswordUser2): the client sends the new password encrypted with the old
//! NT hash (SAMPR_ENCRYPTED_USER_PASSWORD, MS-SAMR 2.2.6.21) and the old NT hash encrypted
//! with the new one (ENCRYPTED_NT_OWF_PASSWORD, MS-SAMR 2.2.7.3 and 2.2.11.1). Only someone
//! who knows the old password can produce a pair that checks, so no session is needed.

use des::Des;
use des::cipher::{BlockCipherEncrypt, KeyInit};
use rc4::{Rc4, StreamCipher};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::ntlm::Key16;

/// Bytes of a SAMPR_ENCRYPTED_USER_PASSWORD: a 512-byte buffer and the 4-byte length.
pub const ENCRYPTED_PASSWORD_LEN: usize = 516;
/// The buffer the password is right-aligned in.
const PASSWORD_BUFFER_LEN: usize = 512;

/// What the client sent to prove the old password and carry the new one.
#[derive(Clone)]
pub struct PasswordChange {
    /// NewPasswordEncryptedWithOldNt.
    pub new_password_encrypted: [u8; ENCRYPTED_PASSWORD_LEN],
    /// OldNtOwfPasswordEncryptedWithNewNt.
    pub old_nt_hash_encrypted: [u8; 16],
}

impl core::fmt::Debug for PasswordChange {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("PasswordChange { .. }")
    }
}

/// Why a password change was refused. Every variant but [`Self::Store`] answers
/// STATUS_WRONG_PASSWORD on the wire, so that a client cannot tell an unknown or disabled
/// account from a wrong password (as Windows); the variants are for the audit log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PasswordChangeError {
    /// The pair does not check with the stored hash: the old password is wrong, or the
    /// decrypted length is impossible (which is what a wrong key gives).
    #[error("wrong old password")]
    WrongPassword,
    /// No account of that name, or one without a password.
    #[error("unknown user")]
    UnknownUser,
    /// The account is disabled; nothing is changed even with the right old password.
    #[error("account disabled")]
    Disabled,
    /// The store cannot change passwords, or writing the change failed; nothing changed.
    #[error("the user database could not be changed")]
    Store,
}

impl PasswordChange {
    /// The client's side: `new_password` encrypted with `old_nt_hash`, random padding before
    /// it, and the old hash encrypted with the new one. `None` for a password longer than 256
    /// UTF-16 units or when the system has no random source.
    pub fn encrypt(old_nt_hash: &[u8; 16], new_password: &str) -> Option<Self> {
        let mut clear = Zeroizing::new([0u8; ENCRYPTED_PASSWORD_LEN]);
        let mut utf16 = Zeroizing::new(Vec::new());
        smb3d_wire::encode_utf16le(new_password, &mut utf16);
        let start = PASSWORD_BUFFER_LEN.checked_sub(utf16.len())?;
        getrandom::fill(clear.get_mut(..start)?).ok()?;
        clear
            .get_mut(start..PASSWORD_BUFFER_LEN)?
            .copy_from_slice(&utf16);
        let length = u32::try_from(utf16.len()).ok()?.to_le_bytes();
        clear
            .get_mut(PASSWORD_BUFFER_LEN..)?
            .copy_from_slice(&length);
        let mut new_password_encrypted = *clear;
        Rc4::new_from_slice(old_nt_hash)
            .ok()?
            .apply_keystream(&mut new_password_encrypted);
        let new_nt_hash = nt_hash_of_utf16(&utf16);
        Some(Self {
            new_password_encrypted,
            old_nt_hash_encrypted: encrypt_16_with_16(old_nt_hash, &new_nt_hash),
        })
    }

    /// Checks the change against `old_nt_hash`, the stored hash of the account, and returns
    /// the NT hash of the new password.
    pub fn new_nt_hash(&self, old_nt_hash: &[u8; 16]) -> Result<Key16, PasswordChangeError> {
        let mut clear = Zeroizing::new(self.new_password_encrypted);
        let mut cipher =
            Rc4::new_from_slice(old_nt_hash).map_err(|_| PasswordChangeError::WrongPassword)?;
        cipher.apply_keystream(clear.as_mut_slice());
        let (buffer, length) = clear.split_at(PASSWORD_BUFFER_LEN);
        let length = length
            .try_into()
            .map(u32::from_le_bytes)
            .map_err(|_| PasswordChangeError::WrongPassword)?;
        // A wrong old hash decrypts the length to noise; the right one always gives an even
        // count of UTF-16 bytes that fits. The two cannot be told apart before the verifier
        // is checked, and that needs the password, so both are a wrong password.
        let length = usize::try_from(length).map_err(|_| PasswordChangeError::WrongPassword)?;
        if length > PASSWORD_BUFFER_LEN || length % 2 != 0 {
            return Err(PasswordChangeError::WrongPassword);
        }
        let password = buffer
            .get(PASSWORD_BUFFER_LEN - length..)
            .ok_or(PasswordChangeError::WrongPassword)?;
        let new_nt_hash = nt_hash_of_utf16(password);
        let expected = encrypt_16_with_16(old_nt_hash, &new_nt_hash);
        if bool::from(expected.ct_eq(&self.old_nt_hash_encrypted)) {
            Ok(new_nt_hash)
        } else {
            Err(PasswordChangeError::WrongPassword)
        }
    }
}

/// MD4 of a password already in UTF-16LE (NTOWFv1 without the encoding step): the client's
/// bytes are hashed as sent, as Windows stores them.
fn nt_hash_of_utf16(password: &[u8]) -> Key16 {
    use md4::{Digest, Md4};
    Zeroizing::new(Md4::digest(password).into())
}

/// MS-SAMR 2.2.11.1.1: the first 8 bytes of `block` encrypted with the first 7 bytes of `key`,
/// the last 8 with the next 7.
pub fn encrypt_16_with_16(block: &[u8; 16], key: &[u8; 16]) -> [u8; 16] {
    let mut out = [0u8; 16];
    for ((dst, src), key) in out
        .chunks_exact_mut(8)
        .zip(block.chunks_exact(8))
        .zip([key.get(..7), key.get(7..14)])
    {
        let mut half = [0u8; 8];
        half.copy_from_slice(src);
        encrypt_8_with_7(&mut half, key.unwrap_or_default());
        dst.copy_from_slice(&half);
    }
    out
}

/// MS-SAMR 2.2.11.1.2: DES-ECB of one block with a 56-bit key spread over eight bytes, seven
/// bits each (the low bit is DES's parity bit, which it ignores).
fn encrypt_8_with_7(block: &mut [u8; 8], key7: &[u8]) {
    let mut bits = 0u64;
    for byte in key7.iter().take(7) {
        bits = (bits << 8) | u64::from(*byte);
    }
    let mut key = Zeroizing::new([0u8; 8]);
    for (i, k) in key.iter_mut().enumerate() {
        let seven = (bits >> (49 - 7 * i)) & 0x7f;
        *k = u8::try_from(seven << 1).unwrap_or(0);
    }
    let cipher = Des::new(&(*key).into());
    cipher.encrypt_block(block.into());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ntlm::crypto::nt_hash;

    fn unhex<const N: usize>(s: &str) -> [u8; N] {
        let bytes: Vec<u8> = (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect();
        bytes.try_into().unwrap()
    }

    /// impacket 0.12's `crypto.SamEncryptNTLMHash(NT("old"), NT("new"))`.
    #[test]
    fn encrypted_owf_matches_impacket() {
        let got = encrypt_16_with_16(&nt_hash("old"), &nt_hash("new"));
        assert_eq!(got, vector::<16>("OLD_WITH_NEW"));
    }

    /// What impacket's `hSamrUnicodeChangePasswordUser2` sends for "old" to "new" (its padding is
    /// fixed).
    #[test]
    fn impacket_change_decrypts_to_the_new_hash() {
        let change = PasswordChange {
            new_password_encrypted: vector::<516>("NEW_WITH_OLD"),
            old_nt_hash_encrypted: vector::<16>("OLD_WITH_NEW"),
        };
        assert_eq!(
            *change.new_nt_hash(&nt_hash("old")).unwrap(),
            *nt_hash("new")
        );
        assert_eq!(
            change.new_nt_hash(&nt_hash("wrong")).unwrap_err(),
            PasswordChangeError::WrongPassword
        );
        let mut tampered = change.clone();
        tampered.old_nt_hash_encrypted[0] ^= 1;
        assert_eq!(
            tampered.new_nt_hash(&nt_hash("old")).unwrap_err(),
            PasswordChangeError::WrongPassword
        );
    }

    /// Encrypts `password` as a client does, with `length` as the length field.
    fn encrypt(old: &[u8; 16], password: &str, length: u32) -> [u8; 516] {
        let mut buf = [0x5au8; 516];
        let utf16: Vec<u8> = password.encode_utf16().flat_map(u16::to_le_bytes).collect();
        buf[512 - utf16.len()..512].copy_from_slice(&utf16);
        buf[512..].copy_from_slice(&length.to_le_bytes());
        Rc4::new_from_slice(old).unwrap().apply_keystream(&mut buf);
        buf
    }

    #[test]
    fn lengths_that_do_not_fit_are_a_wrong_password() {
        let old = nt_hash("old");
        let verifier = encrypt_16_with_16(&old, &nt_hash("new"));
        for length in [513, 0xffff_ffff, 5, 1] {
            let change = PasswordChange {
                new_password_encrypted: encrypt(&old, "new", length),
                old_nt_hash_encrypted: verifier,
            };
            assert_eq!(
                change.new_nt_hash(&old).unwrap_err(),
                PasswordChangeError::WrongPassword,
                "{length}"
            );
        }
        let good = PasswordChange {
            new_password_encrypted: encrypt(&old, "new", 6),
            old_nt_hash_encrypted: verifier,
        };
        assert_eq!(*good.new_nt_hash(&old).unwrap(), *nt_hash("new"));
        // The longest password, 256 UTF-16 units, fills the buffer.
        let long = "p".repeat(256);
        let change = PasswordChange {
            new_password_encrypted: encrypt(&old, &long, 512),
            old_nt_hash_encrypted: encrypt_16_with_16(&old, &nt_hash(&long)),
        };
        assert_eq!(*change.new_nt_hash(&old).unwrap(), *nt_hash(&long));
    }

    #[test]
    fn client_side_round_trips() {
        let old = nt_hash("old");
        for new in ["", "new", "Jörg's €", &"p".repeat(256)] {
            let change = PasswordChange::encrypt(&old, new).unwrap();
            assert_eq!(*change.new_nt_hash(&old).unwrap(), *nt_hash(new), "{new}");
        }
        assert!(PasswordChange::encrypt(&old, &"p".repeat(257)).is_none());
    }

    /// A line `NAME=HEX` of the vectors `crates/rpc/tools/samr_vectors.py` made with impacket.
    fn vector<const N: usize>(name: &str) -> [u8; N] {
        let text = include_str!("../../rpc/tests/captures/samr_vectors.txt");
        unhex(
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}=")))
                .unwrap(),
        )
    }
}
