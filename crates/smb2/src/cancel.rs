//! CANCEL (MS-SMB2 2.2.30). There is no response; the request names its target through the
//! header's MessageId or AsyncId.

use crate::util::reserved_only_pdu;

reserved_only_pdu! {
    /// SMB2 CANCEL Request (MS-SMB2 2.2.30).
    CancelRequest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::Header;
    use crate::testutil::hex;
    use crate::util::reserved_only_tests::check;

    // smbtorture smb2.lock.cancel against Samba 4.17: cancels the pending LOCK with AsyncId 10.
    const REQUEST: &str = "
        fe534d4240000000000000000c00000012000000000000000a000000000000000a00000000000000ae772cdf00000000
        0000000000000000000000000000000004000000";

    #[test]
    fn captured() {
        check::<CancelRequest>(REQUEST);
        let h = Header::decode(&hex(REQUEST)).unwrap();
        assert!(h.is_async());
        assert_eq!(h.async_id, 10);
    }
}
