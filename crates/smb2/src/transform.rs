//! The SMB2 TRANSFORM_HEADER of encrypted messages (MS-SMB2 2.2.41) and the
//! COMPRESSION_TRANSFORM_HEADER of compressed ones (2.2.42), headers only: the ciphers live in
//! the crypto crate, the compression codecs elsewhere.

use core::ops::Range;

use smb3d_wire::{DecodeError, DecodeErrorKind, Reader, Writer};

use crate::header::{COMPRESSION_PROTOCOL_ID, TRANSFORM_PROTOCOL_ID};
use crate::negotiate::CompressionAlgorithm;
use crate::util::{len32, to_usize};

/// Length of the TRANSFORM_HEADER.
pub const TRANSFORM_HEADER_LEN: usize = 52;
/// The bytes of a transform header authenticated as AEAD associated data: Nonce through
/// SessionId (MS-SMB2 3.1.4.3).
pub const AAD_RANGE: Range<usize> = 20..TRANSFORM_HEADER_LEN;

smb3d_wire::open_flags! {
    /// TRANSFORM_HEADER Flags (3.1.1), EncryptionAlgorithm in 3.0/3.0.2; both use 1.
    pub struct TransformFlags(u16) {
        ENCRYPTED = 0x0001,
    }
}

/// SMB2 TRANSFORM_HEADER (MS-SMB2 2.2.41).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransformHeader {
    /// The AEAD tag.
    pub signature: [u8; 16],
    /// The nonce: 11 bytes for CCM, 12 for GCM, zero-padded to 16.
    pub nonce: [u8; 16],
    /// The plaintext length (equal to the ciphertext length).
    pub original_message_size: u32,
    pub flags: TransformFlags,
    pub session_id: u64,
}

impl TransformHeader {
    /// Decodes the header of an encrypted frame and returns the ciphertext's range, which
    /// OriginalMessageSize must match exactly.
    pub fn decode(frame: &[u8]) -> Result<(Self, Range<usize>), DecodeError> {
        let mut r = Reader::new(frame);
        if r.array::<4>("ProtocolId")? != TRANSFORM_PROTOCOL_ID {
            return Err(DecodeError::invalid("ProtocolId"));
        }
        let signature = r.array("Signature")?;
        let nonce = r.array("Nonce")?;
        let original_message_size = r.u32("OriginalMessageSize")?;
        r.skip(2, "Reserved")?;
        let flags = TransformFlags(r.u16("Flags")?);
        let session_id = r.u64("SessionId")?;
        let ciphertext = r.remaining();
        if to_usize(original_message_size) != ciphertext {
            return Err(DecodeError::new(
                "OriginalMessageSize",
                DecodeErrorKind::BadSize {
                    expected: len32(ciphertext),
                    got: original_message_size,
                },
            ));
        }
        let header = Self {
            signature,
            nonce,
            original_message_size,
            flags,
            session_id,
        };
        Ok((header, TRANSFORM_HEADER_LEN..frame.len()))
    }

    /// Writes the 52 header bytes.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.bytes(&TRANSFORM_PROTOCOL_ID)
            .bytes(&self.signature)
            .bytes(&self.nonce)
            .u32(self.original_message_size)
            .u16(0)
            .u16(self.flags.0)
            .u64(self.session_id);
    }
}

/// The associated data of an encrypted frame: header bytes 20..52 (empty if the frame is
/// shorter than a transform header).
pub fn aad(frame: &[u8]) -> &[u8] {
    frame.get(AAD_RANGE).unwrap_or_default()
}

smb3d_wire::open_flags! {
    /// Compression header and payload header Flags (MS-SMB2 2.2.42).
    pub struct CompressionFlags(u16) {
        CHAINED = 0x0001,
    }
}

/// SMB2_COMPRESSION_TRANSFORM_HEADER_UNCHAINED (MS-SMB2 2.2.42.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnchainedHeader {
    pub original_compressed_segment_size: u32,
    pub algorithm: CompressionAlgorithm,
    /// Bytes between this header and the compressed segment, sent uncompressed.
    pub offset: u32,
}

impl UnchainedHeader {
    /// Length of the header.
    pub const LEN: usize = 16;

    /// Writes the header (Flags 0).
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.bytes(&COMPRESSION_PROTOCOL_ID)
            .u32(self.original_compressed_segment_size)
            .u16(self.algorithm.0)
            .u16(0)
            .u32(self.offset);
    }
}

/// SMB2_COMPRESSION_CHAINED_PAYLOAD_HEADER (MS-SMB2 2.2.42.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadHeader {
    pub algorithm: CompressionAlgorithm,
    /// CHAINED on the first payload; kept as sent on the others.
    pub flags: CompressionFlags,
    /// Length of the payload, including OriginalPayloadSize when present.
    pub length: u32,
    /// Present for LZNT1, LZ77, LZ77+Huffman and LZ4.
    pub original_payload_size: Option<u32>,
}

impl PayloadHeader {
    /// Whether payloads of this algorithm carry OriginalPayloadSize.
    pub const fn has_original_size(algorithm: CompressionAlgorithm) -> bool {
        matches!(algorithm.0, 0x0001 | 0x0002 | 0x0003 | 0x0005)
    }

    /// Writes the payload header (8 or 12 bytes).
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u16(self.algorithm.0).u16(self.flags.0).u32(self.length);
        if let Some(size) = self.original_payload_size {
            w.u32(size);
        }
    }
}

/// One payload of a chained compressed message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainedPayload<'a> {
    pub algorithm: CompressionAlgorithm,
    pub flags: CompressionFlags,
    pub original_payload_size: Option<u32>,
    /// The payload after its header: compressed data, raw data (NONE) or the 8-byte
    /// Pattern_V1 record.
    pub data: &'a [u8],
}

/// A compressed message (MS-SMB2 2.2.42), its segments borrowed from the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompressedMessage<'a> {
    /// 2.2.42.1: an uncompressed prefix, then one compressed segment.
    Unchained {
        header: UnchainedHeader,
        uncompressed: &'a [u8],
        compressed: &'a [u8],
    },
    /// 2.2.42.2: a sequence of payloads, each with its own algorithm.
    Chained {
        original_compressed_segment_size: u32,
        payloads: Vec<ChainedPayload<'a>>,
    },
}

impl<'a> CompressedMessage<'a> {
    /// Decodes the headers of a compressed frame. The sizes are only checked against the bytes
    /// present; bounding the decompressed size is the decompressor's job.
    pub fn decode(frame: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(frame);
        if r.array::<4>("ProtocolId")? != COMPRESSION_PROTOCOL_ID {
            return Err(DecodeError::invalid("ProtocolId"));
        }
        let original_compressed_segment_size = r.u32("OriginalCompressedSegmentSize")?;
        let mut peek = r.clone();
        peek.skip(2, "CompressionAlgorithm")?;
        let flags = CompressionFlags(peek.u16("Flags")?);
        if !flags.contains(CompressionFlags::CHAINED) {
            let algorithm = CompressionAlgorithm(r.u16("CompressionAlgorithm")?);
            r.skip(2, "Flags")?;
            let offset = r.u32("Offset")?;
            let uncompressed = r.bytes(to_usize(offset), "Offset")?;
            return Ok(Self::Unchained {
                header: UnchainedHeader {
                    original_compressed_segment_size,
                    algorithm,
                    offset,
                },
                uncompressed,
                compressed: r.rest(),
            });
        }
        // Each payload header is at least 8 bytes, which bounds the allocation.
        let mut payloads = Vec::with_capacity(r.remaining() / 8);
        while !r.is_empty() {
            let algorithm = CompressionAlgorithm(r.u16("CompressionAlgorithm")?);
            let flags = CompressionFlags(r.u16("Flags")?);
            let length = to_usize(r.u32("Length")?);
            let (original_payload_size, data_len) = if PayloadHeader::has_original_size(algorithm) {
                let data_len = length
                    .checked_sub(4)
                    .ok_or(DecodeError::new("Length", DecodeErrorKind::InvalidValue))?;
                (Some(r.u32("OriginalPayloadSize")?), data_len)
            } else {
                (None, length)
            };
            payloads.push(ChainedPayload {
                algorithm,
                flags,
                original_payload_size,
                data: r.bytes(data_len, "CompressedPayload")?,
            });
        }
        Ok(Self::Chained {
            original_compressed_segment_size,
            payloads,
        })
    }

    /// Writes the headers and the borrowed segments.
    pub fn encode(&self, w: &mut Writer<'_>) {
        match self {
            Self::Unchained {
                header,
                uncompressed,
                compressed,
            } => {
                header.encode(w);
                w.bytes(uncompressed).bytes(compressed);
            }
            Self::Chained {
                original_compressed_segment_size,
                payloads,
            } => {
                w.bytes(&COMPRESSION_PROTOCOL_ID)
                    .u32(*original_compressed_segment_size);
                for p in payloads {
                    let extra = if p.original_payload_size.is_some() {
                        4
                    } else {
                        0
                    };
                    PayloadHeader {
                        algorithm: p.algorithm,
                        flags: p.flags,
                        length: len32(p.data.len() + extra),
                        original_payload_size: p.original_payload_size,
                    }
                    .encode(w);
                    w.bytes(p.data);
                }
            }
        }
    }
}

smb3d_wire::impl_codec!(CompressedMessage<'a>);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::hex;
    use proptest::prelude::*;

    // smbclient -m SMB3_11 --client-protection=encrypt against Samba 4.17 (AES-128-GCM):
    // the first encrypted request (TREE_CONNECT) and its response; session 0x50008ee1.
    const GCM_REQUEST: &str = "
        fd534d42b7db6057740c4e6044adb6b3d8afefea0100000000000000a9b11231000000006800000000000100e18e0050
        000000008fbb91a9cad72f84d7a0224ac54573581de1cb0e3abfbcecad523b6c69e72c11325143ee8764c547b8d24cb8
        493d95a4f5def2d4abfe811c4cc8166400ef2af93a34bd9631cf2f0289e9d8c2f9fd6c2ab0824a12cb6d169b885b6a33
        c915bd166ef5075b0d79abf5";
    const GCM_RESPONSE: &str = "
        fd534d42aba1943699af349fc034e6d1dea516d801000000000000004ff226ad000000005000000000000100e18e0050
        00000000b2d9aa377e7c8e9bf2df0498c28e95716fa86ea04df08d106d99dacbdf64a985ffb0c560778903e675055940
        6b1e63091c90da1bd0c471767aac7130e56f23d075e8db769986c58737782b145135e7ba";
    // smbclient -m SMB3_00 --client-protection=encrypt (AES-128-CCM: an 11-byte nonce).
    const CCM_REQUEST: &str = "
        fd534d42e4562a0703ca75e994b6cd14c2f56b86010000000000000077891a00000000006800000000000100f9c25da9
        00000000028f11c1b83d2e32fefdb39db936dd301465301d85ad0e32ef5d67ba5542753ae18b83a33920a3e4bbba4058
        4a77fa35e4515ea5a76f1b909d99fcef50bf25117ae7fd111a2a5f2838d25daa42822a789265fb0fc2ce11ffed3bb607
        537cc846db587714b15a89df";

    fn round_trip(frame: &[u8]) -> TransformHeader {
        let (h, ciphertext) = TransformHeader::decode(frame).unwrap();
        assert_eq!(ciphertext, 52..frame.len());
        assert_eq!(h.original_message_size as usize, frame.len() - 52);
        let mut out = Vec::new();
        h.encode(&mut Writer::new(&mut out));
        assert_eq!(out, frame[..52]);
        assert_eq!(aad(frame), &frame[20..52]);
        h
    }

    #[test]
    fn captured_gcm_and_ccm() {
        let h = round_trip(&hex(GCM_REQUEST));
        assert_eq!(h.flags, TransformFlags::ENCRYPTED);
        assert_eq!(h.session_id, 0x5000_8ee1);
        assert_eq!(&h.nonce[12..], &[0; 4], "a 12-byte GCM nonce");
        let rsp = round_trip(&hex(GCM_RESPONSE));
        assert_eq!(rsp.session_id, h.session_id);
        assert_ne!(rsp.nonce, h.nonce);
        let ccm = round_trip(&hex(CCM_REQUEST));
        assert_eq!(&ccm.nonce[11..], &[0; 5], "an 11-byte CCM nonce");
    }

    #[test]
    fn transform_rejections() {
        let frame = hex(GCM_REQUEST);
        assert!(TransformHeader::decode(&frame[..51]).is_err());
        let e = TransformHeader::decode(&frame[..frame.len() - 1]).unwrap_err();
        assert_eq!(e.field, "OriginalMessageSize");
        let mut bad = frame.clone();
        bad[0] = 0xFE;
        assert_eq!(
            TransformHeader::decode(&bad).unwrap_err().field,
            "ProtocolId"
        );
        assert!(aad(&frame[..40]).is_empty());
    }

    // Neither Samba 4.17 nor smbprotocol compresses, so these are laid out by hand from
    // MS-SMB2 2.2.42.1 and 2.2.42.2.
    const UNCHAINED: &str = "
        fc534d42 00100000 0200 0000 04000000
        fe534d42
        aabbccdd";
    const CHAINED: &str = "
        fc534d42 70010000
        0000 0100 08000000 fe534d4240000100
        0500 0000 0a000000 c8070000 010203040506
        0400 0000 08000000 ee000000 38080000";

    #[test]
    fn unchained() {
        let frame = hex(UNCHAINED);
        let m = CompressedMessage::decode(&frame).unwrap();
        assert_eq!(
            m,
            CompressedMessage::Unchained {
                header: UnchainedHeader {
                    original_compressed_segment_size: 4096,
                    algorithm: CompressionAlgorithm::LZ77,
                    offset: 4,
                },
                uncompressed: b"\xfeSMB",
                compressed: &[0xaa, 0xbb, 0xcc, 0xdd],
            }
        );
        let mut out = Vec::new();
        m.encode(&mut Writer::new(&mut out));
        assert_eq!(out, frame);
    }

    #[test]
    fn chained() {
        let frame = hex(CHAINED);
        let m = CompressedMessage::decode(&frame).unwrap();
        let CompressedMessage::Chained {
            original_compressed_segment_size,
            payloads,
        } = &m
        else {
            panic!("{m:?}");
        };
        assert_eq!(*original_compressed_segment_size, 368);
        assert_eq!(payloads.len(), 3);
        assert_eq!(payloads[0].algorithm, CompressionAlgorithm::NONE);
        assert_eq!(payloads[0].flags, CompressionFlags::CHAINED);
        assert_eq!(payloads[0].data.len(), 8);
        assert_eq!(payloads[1].algorithm, CompressionAlgorithm::LZ4);
        assert_eq!(payloads[1].original_payload_size, Some(0x7c8));
        assert_eq!(payloads[1].data, &[1, 2, 3, 4, 5, 6]);
        assert_eq!(payloads[2].algorithm, CompressionAlgorithm::PATTERN_V1);
        assert_eq!(payloads[2].original_payload_size, None);
        let mut out = Vec::new();
        m.encode(&mut Writer::new(&mut out));
        assert_eq!(out, frame);
    }

    #[test]
    fn compression_rejections() {
        let frame = hex(UNCHAINED);
        // Offset beyond the frame.
        let mut bad = frame.clone();
        bad[12] = 0x20;
        assert_eq!(CompressedMessage::decode(&bad).unwrap_err().field, "Offset");
        let mut bad = frame.clone();
        bad[12..16].copy_from_slice(&[0xFF; 4]);
        assert!(CompressedMessage::decode(&bad).is_err());
        let mut bad = frame.clone();
        bad[0] = 0xFD;
        assert!(CompressedMessage::decode(&bad).is_err());
        assert!(CompressedMessage::decode(&frame[..11]).is_err());

        let frame = hex(CHAINED);
        // A payload length beyond the frame; a Length smaller than OriginalPayloadSize; a
        // truncated payload header.
        let mut bad = frame.clone();
        bad[12] = 0x40;
        assert_eq!(
            CompressedMessage::decode(&bad).unwrap_err().field,
            "CompressedPayload"
        );
        let mut bad = frame.clone();
        bad[28] = 2;
        assert_eq!(CompressedMessage::decode(&bad).unwrap_err().field, "Length");
        assert!(CompressedMessage::decode(&frame[..frame.len() - 13]).is_err());
    }

    proptest! {
        #[test]
        fn transform_round_trips(sig in any::<[u8; 16]>(), nonce in any::<[u8; 16]>(), flags in any::<u16>(), sid in any::<u64>(), body in proptest::collection::vec(any::<u8>(), 0..100)) {
            let h = TransformHeader { signature: sig, nonce, original_message_size: body.len() as u32, flags: TransformFlags(flags), session_id: sid };
            let mut frame = Vec::new();
            h.encode(&mut Writer::new(&mut frame));
            frame.extend_from_slice(&body);
            prop_assert_eq!(TransformHeader::decode(&frame).unwrap(), (h, 52..frame.len()));
        }

        #[test]
        fn chained_round_trips(parts in proptest::collection::vec((any::<u16>(), any::<u16>(), any::<u32>(), proptest::collection::vec(any::<u8>(), 0..30)), 1..5)) {
            let payloads: Vec<_> = parts.iter().enumerate().map(|(i, (alg, flags, size, data))| {
                let algorithm = CompressionAlgorithm(*alg);
                ChainedPayload {
                    algorithm,
                    flags: if i == 0 { CompressionFlags::CHAINED } else { CompressionFlags(*flags) },
                    original_payload_size: PayloadHeader::has_original_size(algorithm).then_some(*size),
                    data,
                }
            }).collect();
            let m = CompressedMessage::Chained { original_compressed_segment_size: 1, payloads };
            let mut frame = Vec::new();
            m.encode(&mut Writer::new(&mut frame));
            prop_assert_eq!(CompressedMessage::decode(&frame).unwrap(), m);
        }

        #[test]
        fn decoders_never_panic(frame in proptest::collection::vec(any::<u8>(), 0..120)) {
            let mut f = frame.clone();
            if f.len() >= 4 { f[..4].copy_from_slice(&COMPRESSION_PROTOCOL_ID); }
            let _ = CompressedMessage::decode(&f);
            if f.len() >= 4 { f[..4].copy_from_slice(&TRANSFORM_PROTOCOL_ID); }
            let _ = TransformHeader::decode(&f);
        }
    }
}
