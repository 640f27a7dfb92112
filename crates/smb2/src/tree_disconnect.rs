//! TREE_DISCONNECT (MS-SMB2 2.2.11, 2.2.12).

use crate::util::reserved_only_pdu;

reserved_only_pdu! {
    /// SMB2 TREE_DISCONNECT Request (MS-SMB2 2.2.11).
    TreeDisconnectRequest
}

reserved_only_pdu! {
    /// SMB2 TREE_DISCONNECT Response (MS-SMB2 2.2.12).
    TreeDisconnectResponse
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::reserved_only_tests::check;

    // smbclient -m SMB3_11 against Samba 4.17, disconnecting from IPC$.
    const REQUEST: &str = "
        fe534d42400001000000000004000100100000000000000005000000000000000000000055969cedb523934800000000
        0000000000000000000000000000000004000000";
    const RESPONSE: &str = "
        fe534d42400001000000000004000100110000000000000005000000000000000000000055969cedb523934800000000
        0000000000000000000000000000000004000000";

    #[test]
    fn captured() {
        check::<TreeDisconnectRequest>(REQUEST);
        check::<TreeDisconnectResponse>(RESPONSE);
    }
}
