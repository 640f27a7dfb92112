//! A provider without cryptography, **for fuzzing only**: it lets a fuzzer drive signed and
//! encrypted code paths without forging MACs. Never use it in a server that talks to anyone.

use crate::{
    Cipher, CryptoError, CryptoProvider, MessageCipher, MessageSigner, SigningAlgorithm, check_key,
    check_nonce,
};

/// FOR FUZZING ONLY: signs with zeros, accepts every signature, "encrypts" as the identity
/// with an all-zero tag, and fills "random" buffers with zeros so runs are reproducible.
#[derive(Debug, Clone, Copy, Default)]
pub struct NullProvider;

impl CryptoProvider for NullProvider {
    fn signer(&self, _alg: SigningAlgorithm, _key: &[u8; 16]) -> Box<dyn MessageSigner> {
        Box::new(NullSigner)
    }

    fn cipher(&self, cipher: Cipher, key: &[u8]) -> Result<Box<dyn MessageCipher>, CryptoError> {
        check_key(cipher, key)?;
        Ok(Box::new(NullCipher(cipher)))
    }

    fn fill_random(&self, buf: &mut [u8]) {
        buf.fill(0);
    }
}

/// FOR FUZZING ONLY: writes a zero signature and verifies everything.
struct NullSigner;

impl MessageSigner for NullSigner {
    fn sign(&self, msg: &mut [u8]) {
        if let Some(sig) = msg.get_mut(48..64) {
            sig.fill(0);
        }
    }

    fn verify(&self, msg: &mut [u8]) -> bool {
        msg.len() >= 64
    }
}

/// FOR FUZZING ONLY: leaves the data as it is; the tag is zero and never checked.
struct NullCipher(Cipher);

impl MessageCipher for NullCipher {
    fn encrypt(&self, nonce: &[u8], _aad: &[u8], _buf: &mut [u8]) -> Result<[u8; 16], CryptoError> {
        check_nonce(self.0, nonce)?;
        Ok([0; 16])
    }

    fn decrypt(
        &self,
        nonce: &[u8],
        _aad: &[u8],
        _buf: &mut [u8],
        _tag: &[u8; 16],
    ) -> Result<(), CryptoError> {
        check_nonce(self.0, nonce)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_provider_is_identity() {
        let p = NullProvider;
        let signer = p.signer(SigningAlgorithm::AesGmac, &[1; 16]);
        let mut msg = [0xAAu8; 80];
        signer.sign(&mut msg);
        assert_eq!(&msg[48..64], &[0; 16]);
        assert!(signer.verify(&mut msg));
        let cipher = p.cipher(Cipher::Aes128Gcm, &[2; 16]).unwrap();
        let mut buf = *b"plain";
        let tag = cipher.encrypt(&[0; 12], b"aad", &mut buf).unwrap();
        assert_eq!(&buf, b"plain");
        cipher.decrypt(&[0; 12], b"", &mut buf, &tag).unwrap();
        assert!(cipher.encrypt(&[0; 11], b"", &mut buf).is_err());
    }
}
