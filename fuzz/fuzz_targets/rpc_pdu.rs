#![no_main]
//! The connection-oriented PDU decoders: the common header, bind/alter_context, bind_ack,
//! request, response and fault bodies. What decodes must encode back to a PDU that decodes to
//! the same value.

use libfuzzer_sys::fuzz_target;
use smb3d_rpc::pdu::{Bind, BindAck, Fault, Header, PacketType, Request, Response};

fuzz_target!(|data: &[u8]| {
    let Ok(header) = Header::decode(data) else {
        return;
    };
    assert_eq!(header.to_bytes()[..2], data[..2]);
    let Some(pdu) = data.get(..usize::from(header.frag_length)) else {
        return;
    };
    if let Ok(bind) = Bind::decode(&header, pdu)
        && bind.auth_verifier.is_empty()
        && header.is_little_endian()
    {
        let again = bind.to_pdu(PacketType::BIND, header.flags, header.call_id);
        let h = Header::decode(&again).expect("encoded bind has a header");
        assert_eq!(
            Bind::decode(&h, &again).expect("encoded bind decodes"),
            bind
        );
    }
    if let Ok(ack) = BindAck::decode(&header, pdu) {
        let again = ack.to_pdu(PacketType::BIND_ACK, 0, header.call_id);
        let h = Header::decode(&again).expect("encoded bind_ack has a header");
        let decoded = BindAck::decode(&h, &again).expect("encoded bind_ack decodes");
        assert_eq!(decoded.results, ack.results);
        assert_eq!(decoded.assoc_group_id, ack.assoc_group_id);
    }
    if let Ok(request) = Request::decode(&header, pdu)
        && request.auth_verifier.is_empty()
        && header.is_little_endian()
    {
        let again = request.to_pdu(header.flags, header.call_id);
        let h = Header::decode(&again).expect("encoded request has a header");
        assert_eq!(
            Request::decode(&h, &again).expect("encoded request decodes"),
            request
        );
    }
    let _ = Response::decode(&header, pdu);
    if let Ok(fault) = Fault::decode(&header, pdu) {
        let again = fault.to_pdu(header.flags, 0, header.call_id);
        let h = Header::decode(&again).expect("encoded fault has a header");
        assert_eq!(
            Fault::decode(&h, &again).expect("encoded fault decodes"),
            fault
        );
    }
});
