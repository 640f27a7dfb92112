//! Golden vectors for CREATE, from captures of smbtorture, smbclient and Python smbprotocol
//! against Samba 4.17 (see each constant's comment).

use super::*;
use crate::testutil::{golden, hex, pdu_round_trip, pdu_with_body, with_header};
use proptest::prelude::*;
use smb3d_dtyp::NtStatus;
use smb3d_wire::{FileTime, Guid};

// smbtorture smb2.create.blob: MxAc (no timestamp) + AlSi + DHnQ, and Samba's response with
// MxAc; then the same plus TWrp.
const BLOB_REQUEST: &str = "
    fe534d4240000100000000000500010010000000000000000b000000000000000000000082f58713312ad51f00000000
    000000000000000000000000000000003900000000000000000000000000000000000000000000000000000280000000
    07000000050000006400200078001e00980000006000000074006500730074005f006300720065006100740065002e00
    6400610074000000180000001000040000001800000000004d7841630000000020000000100004000000180008000000
    416c53690000000000001000000000000000000010000400000018001000000044486e51000000000000000000000000
    0000000000000000";
const BLOB_RESPONSE: &str = "
    fe534d4240000100000000000500010011000000000000000b000000000000000000000082f58713312ad51f00000000
    000000000000000000000000000000005900000003000000d43f07ca217add01d43f07ca217add012dfb07ca217add01
    2dfb07ca217add0100001000000000000000000000000000200000000000000022470de300000000dc4b99c900000000
    9800000020000000000000001000040000001800080000004d7841630000000000000000ff011f00";
// The same contexts plus TWrp.
const TIMEWARP_REQUEST: &str = "
    fe534d4240000100000000000500010010000000000000000d000000000000000000000082f58713312ad51f00000000
    000000000000000000000000000000003900000000000000000000000000000000000000000000000000000280000000
    07000000050000006400200078001e00980000008000000074006500730074005f006300720065006100740065002e00
    6400610074000000180000001000040000001800000000004d7841630000000020000000100004000000180008000000
    416c53690000000000001000000000002800000010000400000018001000000044486e51000000000000000000000000
    00000000000000000000000010000400000018000800000054577270000000001027000000000000";
// smbtorture smb2.lease.request: a v1 lease (RWH) and Samba's grant.
const LEASE_V1_REQUEST: &str = "
    fe534d4240000100000000000500010010000000000000000700000000000000000000008b306f6abcc73aa800000000
    00000000000000000000000000000000390000ff0200000000000000000000000000000000000000ff011f0080000000
    07000000030000006400200078002200a0000000380000006c0065006100730065005f00720065007100750065007300
    74002e006400610074000000000000000000000010000400000018002000000052714c73000000000df0dde0fe0fdcba
    f20f221f01f0234507000000000000000000000000000000";
const LEASE_V1_RESPONSE: &str = "
    fe534d4240000100000000000500010011000000000000000700000000000000000000008b306f6abcc73aa800000000
    000000000000000000000000000000005900ff0002000000db5e459f217add01db5e459f217add01db5e459f217add01
    db5e459f217add01001000000000000000000000000000002000000000000000b08f3dfc00000000a569709800000000
    98000000380000000000000010000400000018002000000052714c73000000000df0dde0fe0fdcbaf20f221f01f02345
    07000000000000000000000000000000";
// smbtorture smb2.lease.v2_epoch1: a v2 lease with epoch 0x4711, granted with epoch 0x4712.
const LEASE_V2_REQUEST: &str = "
    fe534d4240000100000000000500010010000000000000000500000000000000000000007ad916f36cb2ffac00000000
    00000000000000000000000000000000390000ff0200000000000000000000000000000000000000ff011f0080000000
    07000000030000006400200078002600a00000004c0000006c0065006100730065005f00760032005f00650070006f00
    6300680031002e0064006100740000000000000010000400000018003400000052714c73000000000df0dde0fe0fdcba
    f20f221f01f02345070000000000000000000000000000000000000000000000000000000000000011470000";
const LEASE_V2_RESPONSE: &str = "
    fe534d4240000100000000000500010011000000000000000500000000000000000000007ad916f36cb2ffac00000000
    000000000000000000000000000000005900ff0002000000b16068ce217add01b16068ce217add01b16068ce217add01
    b16068ce217add01001000000000000000000000000000002000000000000000349991fd00000000310c7c1500000000
    980000004c0000000000000010000400000018003400000052714c73000000000df0dde0fe0fdcbaf20f221f01f02345
    070000000000000000000000000000000000000000000000000000000000000012470000";
// smbtorture smb2.durable-v2-open.reopen1a: DH2Q, its response, and the DH2C reconnect with
// an empty name (contexts at 0x78).
const DH2Q_REQUEST: &str = "
    fe534d4240000100000000000500010010000000000000000500000000000000000000001167f2c830247ed700000000
    00000000000000000000000000000000390000090200000000000000000000000000000000000000ff011f0080000000
    00000000030000006400200078004a00c800000038000000640075007200610062006c0065005f00760032005f006f00
    700065006e005f00720065006f00700065006e00310061005f0068007500650052003800500074005f002e0064006100
    7400000000000000000000001000040000001800200000004448325100000000ffffffff000000000000000000000000
    a76b01d31e410d4c81e881c80c8d76c6";
const DH2Q_RESPONSE: &str = "
    fe534d4240000100000000000500010011000000000000000500000000000000000000001167f2c830247ed700000000
    000000000000000000000000000000005900090002000000ff3ba1d9217add01ff3ba1d9217add01ff3ba1d9217add01
    ff3ba1d9217add010010000000000000000000000000000020000000000000003bc0f7c900000000f9ccddbf00000000
    9800000020000000000000001000040000001800080000004448325100000000e093040000000000";
const DH2C_REQUEST: &str = "
    fe534d4240000100000000000500010010000000000000000600000000000000000000001167f2c830247ed700000000
    000000000000000000000000000000003900000000000000000000000000000000000000000000000000000000000000
    00000000000000000000000078000000780000003c000000000000001000040000001800240000004448324300000000
    3bc0f7c900000000f9ccddbf00000000a76b01d31e410d4c81e881c80c8d76c600000000";
// smbtorture smb2.durable-open.reopen1: DHnQ with a batch oplock, its response, DHnC.
const DHNQ_REQUEST: &str = "
    fe534d42400001000000000005000100100000000000000005000000000000000000000065880f56f35380dd00000000
    00000000000000000000000000000000390000090200000000000000000000000000000000000000ff011f0080000000
    00000000030000006400200078004200c000000028000000640075007200610062006c0065005f006f00700065006e00
    5f00720065006f00700065006e0031005f00750043004800690055003600320073002e00640061007400000000000000
    0000000010000400000018001000000044486e510000000000000000000000000000000000000000";
const DHNQ_RESPONSE: &str = "
    fe534d42400001000000000005000100110000000000000005000000000000000000000065880f56f35380dd00000000
    0000000000000000000000000000000059000900020000004646c1b7217add014646c1b7217add014646c1b7217add01
    4646c1b7217add0100100000000000000000000000000000200000000000000068ee91ae00000000028d769b00000000
    98000000200000000000000010000400000018000800000044486e51000000000000000000000000";
const DHNC_REQUEST: &str = "
    fe534d42400001000000000005000100100000000000000006000000000000000000000065880f56f35380dd00000000
    000000000000000000000000000000003900000000000000000000000000000000000000000000000000000000000000
    00000000000000000000000078004200c000000028000000640075007200610062006c0065005f006f00700065006e00
    5f00720065006f00700065006e0031005f00750043004800690055003600320073002e00640061007400000000000000
    0000000010000400000018001000000044486e430000000068ee91ae00000000028d769b00000000";
// Python smbprotocol 1.17: MxAc with timestamp, QFid, RqLs v2 with parent key, DH2Q, AlSi;
// Samba answers with MxAc and QFid. smbprotocol writes DataOffset 0 for empty data.
const SMBPROTOCOL_REQUEST: &str = "
    fe534d424000010000000000050001000800000000000000050000000000000000000000dd34ed0a912c51bf00000000
    f7d05e96772776fbff23b95d978ebc79390000000200000000000000000000000000000000000000000001c080000000
    01000000050000004000000078000e0088000000e00000006300740078002e0074007800740000002000000010000400
    00001800080000004d784163000000000080350cd1dfd601180000001000040000000000000000005146696400000000
    5000000010000400000018003400000052714c7300000000000102030405060708090a0b0c0d0e0f0700000000000000
    0000000000000000101112131415161718191a1b1c1d1e1f010000000000000038000000100004000000180020000000
    444832510000000030750000000000000000000000000000aaaaaaaabbbbccccddddeeeeeeeeeeee0000000010000400
    0000180008000000416c5369000000000010000000000000";
const SMBPROTOCOL_RESPONSE: &str = "
    fe534d424000010000000000050001000900000000000000050000000000000000000000dd34ed0a912c51bf00000000
    0243f31377263d51e09a5765536067675900000002000000515422f5217add01515422f5217add01515422f5217add01
    515422f5217add010010000000000000000000000000000020000000000000009bcaa32500000000844fae8e00000000
    9800000058000000200000001000040000001800080000004d7841630000000000000000ff011f000000000010000400
    00001800200000005146696400000000f7c098000000000000fe00000000000000000000000000000000000000000000";
// Python smbprotocol 1.17: the same with an ExtA context (which Samba refused).
const EA_REQUEST: &str = "
    fe534d42400001000000000005000100080000000000000005000000000000000000000019b4caa181105d0600000000
    edb6b7fd1209a7b66179df954a9e988d390000000200000000000000000000000000000000000000000001c080000000
    01000000050000004000000078000e0088000000100100006300740078002e0074007800740000002000000010000400
    00001800080000004d784163000000000080350cd1dfd601180000001000040000000000000000005146696400000000
    5000000010000400000018003400000052714c7300000000000102030405060708090a0b0c0d0e0f0700000000000000
    0000000000000000101112131415161718191a1b1c1d1e1f010000000000000038000000100004000000180020000000
    444832510000000030750000000000000000000000000000aaaaaaaabbbbccccddddeeeeeeeeeeee3000000010000400
    00001800130000004578744100000000000000000005050054455354454176616c756500000000000000000010000400
    0000180008000000416c5369000000000010000000000000";
// smbtorture smb2.create.nulldacl: a SecD context holding a security descriptor.
const SECD_REQUEST: &str = "
    fe534d4240000100000000000500010010000000000000000500000000000000000000009db3d90ddf4da18a00000000
    0000000000000000000000000000000039000000000000000000000000000000000000000000000000000e0080000000
    03000000020000006400200078001800900000002c0000006e0075006c006c006400610063006c002e00740078007400
    0000000010000400000018001400000053656344000000000100008000000000000000000000000000000000";
// smbclient -m SMB3_11: a.txt without contexts (smbclient pads the name with two zero bytes),
// and the response without contexts.
const SMBCLIENT_REQUEST: &str = "
    fe534d424000010000000000050001001000000000000000070000000000000000000000a3d50cb7b523934800000000
    000000000000000000000000000000003900000002000000000000000000000000000000000000009f01120000000000
    03000000050000004000000078000a00000000000000000061002e007400780074000000";
const SMBCLIENT_RESPONSE: &str = "
    fe534d424000010000000000050001001100000000000000070000000000000000000000a3d50cb7b523934800000000
    000000000000000000000000000000005900000002000000194eb691217add01194eb691217add01194eb691217add01
    194eb691217add010010000000000000000000000000000020000000000000002608bb1400000000a985037600000000
    0000000000000000";
// smbclient -m SMB2_02: opening the share root (empty name, a pad byte).
const EMPTY_NAME_REQUEST: &str = "
    fe534d424000000000000000050001000000000000000000090000000000000000000000ad3e9a00fb43232000000000
    000000000000000000000000000000003900000002000000000000000000000000000000000000008100000010000000
    03000000010000000100000078000000000000000000000000";

/// Decodes a request, checks it re-encodes to the same bytes, and returns its typed contexts.
fn request(pdu: &[u8]) -> (CreateRequest<'_>, Vec<CreateContext<'_>>) {
    let req = CreateRequest::decode(pdu).unwrap();
    assert_eq!(with_header(pdu, |w| req.encode(w)), pdu, "re-encoding");
    let contexts = req.contexts.iter().collect::<Result<Vec<_>, _>>().unwrap();
    assert_eq!(contexts.len(), req.contexts.len());
    // The typed contexts rebuild the chain Samba's client wrote, byte for byte.
    let mut rebuilt = Vec::new();
    CreateContext::encode_chain(&contexts, &mut Writer::new(&mut rebuilt));
    assert_eq!(rebuilt, req.contexts.as_bytes(), "typed chain");
    (req, contexts)
}

fn response(pdu: &[u8]) -> CreateResponse<'_> {
    let rsp = CreateResponse::decode(pdu).unwrap();
    assert_eq!(with_header(pdu, |w| rsp.encode(w)), pdu, "re-encoding");
    rsp
}

fn utf16(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

#[test]
fn maximal_access_allocation_durable() {
    let pdu = hex(BLOB_REQUEST);
    let (req, contexts) = request(&pdu);
    assert_eq!(req.name, utf16("test_create.dat"));
    assert_eq!(req.desired_access, AccessMask::MAXIMUM_ALLOWED);
    assert_eq!(req.create_disposition, CreateDisposition::OVERWRITE_IF);
    assert_eq!(req.share_access, ShareAccess(7));
    assert_eq!(
        contexts,
        [
            CreateContext::MaximalAccessRequest { timestamp: None },
            CreateContext::AllocationSize(0x0010_0000),
            CreateContext::DurableHandleRequest,
        ]
    );
    assert_eq!(req.contexts.find(b"AlSi").unwrap().data.len(), 8);
    assert!(req.contexts.find(b"RqLs").is_none());

    let pdu = hex(BLOB_RESPONSE);
    let rsp = response(&pdu);
    assert_eq!(rsp.create_action, CreateAction::OVERWRITTEN);
    assert_eq!(rsp.file_attributes, 0x20);
    assert_eq!(
        rsp.contexts,
        [ResponseContext::MaximalAccess(MaximalAccessResponse {
            query_status: NtStatus::SUCCESS,
            maximal_access: AccessMask::FILE_ALL_ACCESS,
        })]
    );

    let pdu = hex(TIMEWARP_REQUEST);
    let (_, contexts) = request(&pdu);
    assert_eq!(
        contexts.last(),
        Some(&CreateContext::TimewarpToken(FileTime(10_000)))
    );
}

#[test]
fn lease_v1() {
    let pdu = hex(LEASE_V1_REQUEST);
    let (req, contexts) = request(&pdu);
    assert_eq!(req.requested_oplock_level, OplockLevel::LEASE);
    let lease = Lease {
        lease_key: LeaseKey(hex("0df0dde0fe0fdcbaf20f221f01f02345").try_into().unwrap()),
        lease_state: LeaseState(7),
        lease_flags: LeaseFlags::empty(),
        lease_duration: 0,
        v2: None,
    };
    assert_eq!(contexts, [CreateContext::RequestLease(lease)]);

    let pdu = hex(LEASE_V1_RESPONSE);
    let rsp = response(&pdu);
    assert_eq!(rsp.oplock_level, OplockLevel::LEASE);
    assert_eq!(rsp.contexts, [ResponseContext::Lease(lease)]);
}

#[test]
fn lease_v2() {
    let pdu = hex(LEASE_V2_REQUEST);
    let (_, contexts) = request(&pdu);
    let CreateContext::RequestLease(lease) = contexts[0] else {
        panic!("{contexts:?}");
    };
    assert_eq!(
        lease.v2,
        Some(LeaseV2 {
            parent_lease_key: LeaseKey([0; 16]),
            epoch: 0x4711
        })
    );
    let pdu = hex(LEASE_V2_RESPONSE);
    let rsp = response(&pdu);
    let ResponseContext::Lease(granted) = rsp.contexts[0] else {
        panic!("{:?}", rsp.contexts);
    };
    assert_eq!(granted.v2.unwrap().epoch, 0x4712);
    assert_eq!(granted.lease_state, LeaseState(7));
}

#[test]
fn durable_v2() {
    let pdu = hex(DH2Q_REQUEST);
    let (req, contexts) = request(&pdu);
    assert_eq!(req.requested_oplock_level, OplockLevel::BATCH);
    let create_guid = Guid(hex("a76b01d31e410d4c81e881c80c8d76c6").try_into().unwrap());
    assert_eq!(
        contexts,
        [CreateContext::DurableHandleRequestV2(
            DurableHandleRequestV2 {
                timeout: u32::MAX,
                flags: DurableHandleFlags::empty(),
                create_guid,
            }
        )]
    );
    let pdu = hex(DH2Q_RESPONSE);
    let rsp = response(&pdu);
    assert_eq!(
        rsp.contexts,
        [ResponseContext::DurableHandleV2(DurableHandleResponseV2 {
            timeout: 300_000,
            flags: DurableHandleFlags::empty(),
        })]
    );
    let pdu = hex(DH2C_REQUEST);
    let (req, contexts) = request(&pdu);
    assert!(req.name.is_empty());
    assert_eq!(
        contexts,
        [CreateContext::DurableHandleReconnectV2(
            DurableHandleReconnectV2 {
                file_id: rsp.file_id,
                create_guid,
                flags: DurableHandleFlags::empty(),
            }
        )]
    );
}

#[test]
fn durable_v1() {
    let pdu = hex(DHNQ_REQUEST);
    let (_, contexts) = request(&pdu);
    assert_eq!(contexts, [CreateContext::DurableHandleRequest]);
    let pdu = hex(DHNQ_RESPONSE);
    let rsp = response(&pdu);
    assert_eq!(rsp.oplock_level, OplockLevel::BATCH);
    assert_eq!(rsp.contexts, [ResponseContext::DurableHandle]);
    let pdu = hex(DHNC_REQUEST);
    let (_, contexts) = request(&pdu);
    assert_eq!(
        contexts,
        [CreateContext::DurableHandleReconnect {
            file_id: rsp.file_id
        }]
    );
}

#[test]
fn smbprotocol_contexts() {
    let pdu = hex(SMBPROTOCOL_REQUEST);
    let req = golden::<CreateRequest>(&pdu);
    let contexts = req.contexts.iter().collect::<Result<Vec<_>, _>>().unwrap();
    assert_eq!(contexts.len(), 5);
    assert!(matches!(
        contexts[0],
        CreateContext::MaximalAccessRequest { timestamp: Some(_) }
    ));
    assert_eq!(contexts[1], CreateContext::QueryOnDiskId);
    let CreateContext::RequestLease(lease) = contexts[2] else {
        panic!("{contexts:?}");
    };
    assert_eq!(lease.lease_key.0, core::array::from_fn(|i| i as u8));
    assert_eq!(
        lease.v2.unwrap().parent_lease_key.0,
        core::array::from_fn(|i| 16 + i as u8)
    );
    assert!(matches!(contexts[3], CreateContext::DurableHandleRequestV2(d) if d.timeout == 30_000));
    assert_eq!(contexts[4], CreateContext::AllocationSize(4096));
    // Rebuilt from the typed contexts, only QFid's DataOffset differs: smbprotocol writes 0
    // for empty data where Samba writes the aligned offset.
    let mut rebuilt = Vec::new();
    CreateContext::encode_chain(&contexts, &mut Writer::new(&mut rebuilt));
    let mut expected = req.contexts.as_bytes().to_vec();
    let qfid = expected.windows(4).position(|w| w == b"QFid").unwrap();
    expected[qfid - 6] = 0x18;
    assert_eq!(rebuilt, expected);

    let pdu = hex(SMBPROTOCOL_RESPONSE);
    let rsp = response(&pdu);
    assert_eq!(rsp.contexts.len(), 2);
    assert!(matches!(
        rsp.contexts[1],
        ResponseContext::QueryOnDiskId(QueryOnDiskIdResponse { file_id, volume_id: 0xfe00 }) if file_id != 0
    ));
}

#[test]
fn raw_security_descriptor_and_ea() {
    let pdu = hex(SECD_REQUEST);
    let (_, contexts) = request(&pdu);
    let [CreateContext::SecurityDescriptor(sd)] = contexts[..] else {
        panic!("{contexts:?}");
    };
    assert_eq!(sd.len(), 20);
    assert_eq!(sd[0], 1, "revision");

    let pdu = hex(EA_REQUEST);
    let req = CreateRequest::decode(&pdu).unwrap();
    let ea = req
        .contexts
        .iter()
        .find_map(|c| match c.unwrap() {
            CreateContext::EaBuffer(ea) => Some(ea),
            _ => None,
        })
        .unwrap();
    assert_eq!(ea.len(), 19);
}

#[test]
fn without_contexts() {
    let pdu = hex(SMBCLIENT_REQUEST);
    let req = CreateRequest::decode(&pdu).unwrap();
    assert_eq!(req.name, utf16("a.txt"));
    assert!(req.contexts.is_empty());
    assert_eq!(req.create_options, CreateOptions::NON_DIRECTORY_FILE);
    assert_eq!(
        with_header(&pdu, |w| req.encode(w)),
        pdu[..pdu.len() - 2],
        "all but smbclient's padding"
    );
    let pdu = hex(SMBCLIENT_RESPONSE);
    let rsp = response(&pdu);
    assert!(rsp.contexts.is_empty());
    assert_eq!(rsp.create_action, CreateAction::CREATED);
    let pdu = hex(EMPTY_NAME_REQUEST);
    let (req, _) = request(&pdu);
    assert!(req.name.is_empty());
    assert!(req.create_options.contains(CreateOptions::DIRECTORY_FILE));
}

/// A CREATE request body with the given name and context chain (offsets as encoded).
fn create_pdu(name: &[u8], chain: &[u8]) -> Vec<u8> {
    let req = CreateRequest {
        security_flags: 0,
        requested_oplock_level: OplockLevel::NONE,
        impersonation_level: ImpersonationLevel::IMPERSONATION,
        smb_create_flags: 0,
        desired_access: AccessMask::FILE_READ_DATA,
        file_attributes: 0,
        share_access: ShareAccess::READ,
        create_disposition: CreateDisposition::OPEN,
        create_options: CreateOptions::empty(),
        name,
        contexts: CreateContexts::parse(chain).unwrap_or_default(),
    };
    let mut buf = vec![0u8; 64];
    req.encode(&mut Writer::with_base(&mut buf, 0));
    if CreateContexts::parse(chain).is_err() {
        // Splice the malformed chain in by hand after the name.
        let at = (120 + name.len()).next_multiple_of(8);
        buf.resize(at, 0);
        buf[64 + 48..64 + 52].copy_from_slice(&(at as u32).to_le_bytes());
        buf[64 + 52..64 + 56].copy_from_slice(&(chain.len() as u32).to_le_bytes());
        buf.extend_from_slice(chain);
    }
    buf
}

fn one_context(next: u32, name_off: u16, name_len: u16, data_off: u16, data_len: u32) -> Vec<u8> {
    let mut c = Vec::new();
    c.extend_from_slice(&next.to_le_bytes());
    c.extend_from_slice(&name_off.to_le_bytes());
    c.extend_from_slice(&name_len.to_le_bytes());
    c.extend_from_slice(&[0, 0]);
    c.extend_from_slice(&data_off.to_le_bytes());
    c.extend_from_slice(&data_len.to_le_bytes());
    c.extend_from_slice(b"MxAc\0\0\0\0");
    c.extend_from_slice(&[0; 8]);
    c
}

#[test]
fn context_chain_rejections() {
    use smb3d_wire::DecodeErrorKind::*;
    for (chain, kind) in [
        // Name beyond the entry; name inside the entry header.
        (one_context(0, 16, 40, 0, 0), OutOfBounds),
        (one_context(0, 8, 4, 0, 0), OutOfBounds),
        // Data beyond the entry, overlapping the name, overflowing.
        (one_context(0, 16, 4, 24, 9), OutOfBounds),
        (one_context(0, 16, 4, 16, 8), OutOfBounds),
        (one_context(0, 16, 4, 0xFFFF, u32::MAX), OutOfBounds),
        // Next misaligned, too small, beyond the chain, or pointing at nothing.
        (one_context(20, 16, 4, 24, 8), Misaligned),
        (one_context(8, 16, 4, 24, 8), OutOfBounds),
        (one_context(40, 16, 4, 24, 8), OutOfBounds),
        (one_context(32, 16, 4, 24, 8), Truncated),
        // Shorter than a context header.
        (vec![0; 12], Truncated),
    ] {
        let err = CreateContexts::parse(&chain).unwrap_err();
        assert_eq!(err.kind, kind, "{chain:02x?}");
        assert!(CreateRequest::decode(&create_pdu(b"a\0", &chain)).is_err());
    }
    // A data limit that includes Next's entry but not the following one: Data may not run into
    // the next context.
    let mut two = one_context(32, 16, 4, 24, 9);
    two.extend_from_slice(&one_context(0, 16, 4, 24, 8));
    assert_eq!(CreateContexts::parse(&two).unwrap_err().kind, OutOfBounds);
    two[12] = 8;
    assert_eq!(CreateContexts::parse(&two).unwrap().len(), 2);
}

#[test]
fn typed_body_size_errors() {
    for (name, len) in [
        (&b"RqLs"[..], 40),
        (b"DHnQ", 8),
        (b"DH2Q", 31),
        (b"DH2C", 32),
        (b"AlSi", 4),
        (b"MxAc", 4),
        (b"TWrp", 0),
        (b"DHnC", 15),
        (&names::APP_INSTANCE_ID[..], 16),
        (&names::APP_INSTANCE_ID[..], 24),
        (&names::APP_INSTANCE_VERSION[..], 20),
        (&names::APP_INSTANCE_VERSION[..], 32),
    ] {
        let data = vec![0u8; len];
        let raw = RawCreateContext { name, data: &data };
        assert!(CreateContext::decode(raw).is_err(), "{name:?}");
    }
    let data = [0u8; 4];
    for name in [&b"MxAc"[..], b"QFid", b"DHnQ", b"DH2Q", b"RqLs"] {
        assert!(ResponseContext::decode(RawCreateContext { name, data: &data }).is_err());
    }
    // SVHDX_OPEN_DEVICE_CONTEXT (MS-RSVD 2.2.4.12), which the server does not type.
    let other = RawCreateContext {
        name: &[
            0x9c, 0xcb, 0xcf, 0x9e, 0x04, 0xc1, 0xe6, 0x43, 0x98, 0x0e, 0x15, 0x8d, 0xa1, 0xf6,
            0xec, 0x83,
        ],
        data: &data,
    };
    assert_eq!(
        CreateContext::decode(other).unwrap(),
        CreateContext::Other(other)
    );
}

#[test]
fn name_rejections() {
    use smb3d_wire::DecodeErrorKind::*;
    let pdu = create_pdu(b"a\0b\0", &[]);
    let mut bad = pdu.clone();
    bad[64 + 46] = 3;
    assert_eq!(CreateRequest::decode(&bad).unwrap_err().kind, InvalidUtf16);
    let mut bad = pdu.clone();
    bad[64 + 46] = 6;
    assert_eq!(CreateRequest::decode(&bad).unwrap_err().kind, OutOfBounds);
    let mut bad = pdu.clone();
    bad[64 + 44] = 0x76;
    assert_eq!(CreateRequest::decode(&bad).unwrap_err().kind, OutOfBounds);
    assert!(CreateRequest::decode(&pdu_with_body(&[57, 0, 0])).is_err());
}

fn arb_request_context() -> impl Strategy<Value = CreateContext<'static>> {
    let sd: &'static [u8] = &[1, 0, 4, 0x80, 0, 0, 0, 0];
    prop_oneof![
        Just(CreateContext::SecurityDescriptor(sd)),
        Just(CreateContext::EaBuffer(sd)),
        Just(CreateContext::DurableHandleRequest),
        Just(CreateContext::QueryOnDiskId),
        any::<u64>().prop_map(CreateContext::AllocationSize),
        proptest::option::of(any::<u64>()).prop_map(|t| CreateContext::MaximalAccessRequest {
            timestamp: t.map(FileTime)
        }),
        any::<u64>().prop_map(|t| CreateContext::TimewarpToken(FileTime(t))),
        any::<[u64; 2]>().prop_map(|[p, v]| CreateContext::DurableHandleReconnect {
            file_id: FileId {
                persistent: p,
                volatile: v
            }
        }),
        (
            any::<[u8; 16]>(),
            any::<u32>(),
            any::<u32>(),
            proptest::option::of((any::<[u8; 16]>(), any::<u16>()))
        )
            .prop_map(
                |(key, state, flags, v2)| CreateContext::RequestLease(Lease {
                    lease_key: LeaseKey(key),
                    lease_state: LeaseState(state),
                    lease_flags: LeaseFlags(flags),
                    lease_duration: 0,
                    v2: v2.map(|(p, epoch)| LeaseV2 {
                        parent_lease_key: LeaseKey(p),
                        epoch
                    }),
                })
            ),
        (any::<u32>(), any::<u32>(), any::<[u8; 16]>()).prop_map(|(timeout, flags, g)| {
            CreateContext::DurableHandleRequestV2(DurableHandleRequestV2 {
                timeout,
                flags: DurableHandleFlags(flags),
                create_guid: Guid(g),
            })
        }),
        (any::<[u64; 2]>(), any::<[u8; 16]>(), any::<u32>()).prop_map(|([p, v], g, flags)| {
            CreateContext::DurableHandleReconnectV2(DurableHandleReconnectV2 {
                file_id: FileId {
                    persistent: p,
                    volatile: v,
                },
                create_guid: Guid(g),
                flags: DurableHandleFlags(flags),
            })
        }),
    ]
}

proptest! {
    #[test]
    fn request_round_trips(
        name in proptest::collection::vec(any::<u16>(), 0..30),
        contexts in proptest::collection::vec(arb_request_context(), 0..6),
        fields in any::<[u32; 6]>(),
    ) {
        let name: Vec<u8> = name.iter().flat_map(|u| u.to_le_bytes()).collect();
        let mut chain = Vec::new();
        CreateContext::encode_chain(&contexts, &mut Writer::new(&mut chain));
        let req = CreateRequest {
            security_flags: 0,
            requested_oplock_level: OplockLevel(fields[0] as u8),
            impersonation_level: ImpersonationLevel(fields[1]),
            smb_create_flags: 0,
            desired_access: AccessMask(fields[2]),
            file_attributes: fields[3],
            share_access: ShareAccess(fields[4]),
            create_disposition: CreateDisposition(fields[5]),
            create_options: CreateOptions(fields[0]),
            name: &name,
            contexts: CreateContexts::parse(&chain).unwrap(),
        };
        let mut buf = Vec::new();
        let decoded = pdu_round_trip(&req, &mut buf);
        prop_assert_eq!(&decoded, &req);
        let typed = decoded.contexts.iter().collect::<Result<Vec<_>, _>>().unwrap();
        prop_assert_eq!(typed, contexts);
    }

    #[test]
    fn response_round_trips(
        times in any::<[u64; 6]>(),
        access in any::<u32>(),
        ids in any::<[u64; 2]>(),
        lease in proptest::option::of(any::<[u8; 16]>()),
        durable in any::<bool>(),
    ) {
        let mut contexts = vec![ResponseContext::MaximalAccess(MaximalAccessResponse { query_status: NtStatus::SUCCESS, maximal_access: AccessMask(access) })];
        if let Some(key) = lease {
            contexts.push(ResponseContext::Lease(Lease { lease_key: LeaseKey(key), lease_state: LeaseState(5), ..Lease::default() }));
        }
        if durable {
            contexts.push(ResponseContext::DurableHandle);
            contexts.push(ResponseContext::DurableHandleV2(DurableHandleResponseV2 { timeout: access, flags: DurableHandleFlags::PERSISTENT }));
        }
        contexts.push(ResponseContext::QueryOnDiskId(QueryOnDiskIdResponse { file_id: ids[0], volume_id: ids[1] }));
        let rsp = CreateResponse {
            oplock_level: OplockLevel::LEASE,
            flags: CreateResponseFlags::empty(),
            create_action: CreateAction::OPENED,
            times: FileTimes {
                creation: FileTime(times[0]),
                last_access: FileTime(times[1]),
                last_write: FileTime(times[2]),
                change: FileTime(times[3]),
            },
            allocation_size: times[4],
            end_of_file: times[5],
            file_attributes: access,
            file_id: FileId { persistent: ids[0], volatile: ids[1] },
            contexts,
        };
        let mut buf = Vec::new();
        prop_assert_eq!(pdu_round_trip(&rsp, &mut buf), rsp);
    }

    #[test]
    fn chain_parser_never_panics(chain in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(contexts) = CreateContexts::parse(&chain) {
            prop_assert_eq!(contexts.raw().count(), contexts.len());
            for c in contexts.raw() {
                prop_assert!(c.name.len() + c.data.len() <= chain.len());
            }
            let _ = contexts.iter().count();
        }
    }
}

// MS-SMB2 2.2.13.2.13 and 2.2.13.2.15, laid out by hand from the spec: SMB2_CREATE_APP_INSTANCE_ID
// (StructureSize 20, AppInstanceId 00112233-4455-6677-8899-aabbccddeeff) then
// SMB2_CREATE_APP_INSTANCE_VERSION (StructureSize 24, High 2, Low 0x0102030405060708).
const APP_INSTANCE_CHAIN: &str = "
    38000000 1000 1000 0000 2000 14000000
    45bca66aefa7f74a9008fa462e144d74
    1400 0000 33221100 5544 7766 8899aabbccddeeff 00000000
    00000000 1000 1000 0000 2000 18000000
    b982d0b73b56074fa07b524a8116a010
    1800 0000 00000000 0200000000000000 0807060504030201";

#[test]
fn app_instance_contexts_golden() {
    let chain = hex(APP_INSTANCE_CHAIN);
    let contexts = CreateContexts::parse(&chain).unwrap();
    let typed: Vec<_> = contexts.iter().collect::<Result<_, _>>().unwrap();
    let id = Guid([
        0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee,
        0xff,
    ]);
    let version = AppInstanceVersion {
        high: 2,
        low: 0x0102_0304_0506_0708,
    };
    assert_eq!(
        typed,
        [
            CreateContext::AppInstanceId(id),
            CreateContext::AppInstanceVersion(version)
        ]
    );
    // Built back byte for byte.
    let mut rebuilt = Vec::new();
    CreateContext::encode_chain(&typed, &mut Writer::new(&mut rebuilt));
    assert_eq!(rebuilt, chain);
    // The version orders by High, then Low (MS-SMB2 3.3.5.9.13).
    assert!(
        AppInstanceVersion {
            high: 1,
            low: u64::MAX
        } < version
    );
    assert!(AppInstanceVersion { high: 2, low: 0 } < version);
}

#[test]
fn app_instance_structure_size_is_checked() {
    let decodes = |name: &[u8; 16], data: &[u8]| {
        CreateContext::decode(RawCreateContext { name, data }).is_ok()
    };
    let mut id = [0u8; 20];
    id[0] = 20;
    assert!(decodes(names::APP_INSTANCE_ID, &id));
    id[0] = 24;
    assert!(!decodes(names::APP_INSTANCE_ID, &id));
    let mut version = [0u8; 24];
    version[0] = 24;
    assert!(decodes(names::APP_INSTANCE_VERSION, &version));
    version[0] = 20;
    assert!(!decodes(names::APP_INSTANCE_VERSION, &version));
}
