//! Per-core throughput of every algorithm in every back end that implements it natively, at
//! 64 KiB and 1 MiB messages. The table in docs/crypto.md comes from:
//!
//! `cargo bench -p smb3d-crypto --features ring --bench throughput -- --warm-up-time 1 --measurement-time 2`

use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use smb3d_crypto::{Cipher, CryptoProvider, RustCryptoProvider, SigningAlgorithm};

const SIZES: [usize; 2] = [64 * 1024, 1024 * 1024];

/// A back end and the algorithms it implements itself (not borrowed from RustCrypto).
struct Candidate {
    name: &'static str,
    provider: Box<dyn CryptoProvider>,
    ciphers: &'static [Cipher],
    signing: &'static [SigningAlgorithm],
}

fn candidates() -> Vec<Candidate> {
    let all = [
        Some(Candidate {
            name: "rustcrypto",
            provider: Box::new(RustCryptoProvider),
            ciphers: &[
                Cipher::Aes128Gcm,
                Cipher::Aes256Gcm,
                Cipher::Aes128Ccm,
                Cipher::Aes256Ccm,
            ],
            signing: &[
                SigningAlgorithm::HmacSha256,
                SigningAlgorithm::AesCmac,
                SigningAlgorithm::AesGmac,
            ],
        }),
        #[cfg(feature = "aws-lc")]
        Some(Candidate {
            name: "aws-lc",
            provider: Box::new(smb3d_crypto::AwsLcProvider),
            ciphers: &[
                Cipher::Aes128Gcm,
                Cipher::Aes256Gcm,
                Cipher::Aes128Ccm,
                Cipher::Aes256Ccm,
            ],
            signing: &[SigningAlgorithm::AesCmac, SigningAlgorithm::AesGmac],
        }),
        #[cfg(feature = "ring")]
        Some(Candidate {
            name: "ring",
            provider: Box::new(smb3d_crypto::RingProvider),
            ciphers: &[Cipher::Aes128Gcm, Cipher::Aes256Gcm],
            signing: &[SigningAlgorithm::HmacSha256, SigningAlgorithm::AesGmac],
        }),
        None,
    ];
    all.into_iter().flatten().collect()
}

fn ciphers(c: &mut Criterion) {
    for cipher in [
        Cipher::Aes128Gcm,
        Cipher::Aes256Gcm,
        Cipher::Aes128Ccm,
        Cipher::Aes256Ccm,
    ] {
        let key = vec![0x42u8; cipher.key_len()];
        let nonce = vec![7u8; cipher.nonce_len()];
        let aad = [9u8; 32];
        for op in ["encrypt", "decrypt"] {
            let mut group = c.benchmark_group(format!("{cipher:?}/{op}"));
            for size in SIZES {
                group.throughput(Throughput::Bytes(size as u64));
                for cand in candidates().iter().filter(|k| k.ciphers.contains(&cipher)) {
                    let mc = cand.provider.cipher(cipher, &key).unwrap();
                    let id = BenchmarkId::new(cand.name, size);
                    let mut buf = vec![0x5Au8; size];
                    if op == "encrypt" {
                        group.bench_function(id, |b| {
                            b.iter(|| mc.encrypt(&nonce, &aad, black_box(&mut buf)).unwrap())
                        });
                    } else {
                        let tag = mc.encrypt(&nonce, &aad, &mut buf).unwrap();
                        // The ciphertext is restored outside the timed part.
                        group.bench_function(id, |b| {
                            b.iter_batched_ref(
                                || buf.clone(),
                                |ct| mc.decrypt(&nonce, &aad, black_box(ct), &tag).unwrap(),
                                BatchSize::LargeInput,
                            )
                        });
                    }
                }
            }
            group.finish();
        }
    }
}

fn signing(c: &mut Criterion) {
    let key = [0x42u8; 16];
    for alg in [
        SigningAlgorithm::HmacSha256,
        SigningAlgorithm::AesCmac,
        SigningAlgorithm::AesGmac,
    ] {
        for op in ["sign", "verify"] {
            let mut group = c.benchmark_group(format!("{alg:?}/{op}"));
            for size in SIZES {
                group.throughput(Throughput::Bytes(size as u64));
                for cand in candidates().iter().filter(|k| k.signing.contains(&alg)) {
                    let signer = cand.provider.signer(alg, &key);
                    let id = BenchmarkId::new(cand.name, size);
                    let mut msg = vec![0x5Au8; size];
                    msg[..4].copy_from_slice(b"\xfeSMB");
                    if op == "sign" {
                        group.bench_function(id, |b| b.iter(|| signer.sign(black_box(&mut msg))));
                    } else {
                        signer.sign(&mut msg);
                        let mut sig = [0u8; 16];
                        sig.copy_from_slice(&msg[48..64]);
                        group.bench_function(id, |b| {
                            b.iter(|| {
                                msg[48..64].copy_from_slice(&sig);
                                assert!(signer.verify(black_box(&mut msg)));
                            })
                        });
                    }
                }
            }
            group.finish();
        }
    }
}

criterion_group!(benches, ciphers, signing);
criterion_main!(benches);
