//! LOGOFF (MS-SMB2 2.2.7, 2.2.8).

use crate::util::reserved_only_pdu;

reserved_only_pdu! {
    /// SMB2 LOGOFF Request (MS-SMB2 2.2.7).
    LogoffRequest
}

reserved_only_pdu! {
    /// SMB2 LOGOFF Response (MS-SMB2 2.2.8).
    LogoffResponse
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::reserved_only_tests::check;

    // Python smbprotocol 1.17 against Samba 4.17 (signed, 3.1.1).
    const REQUEST: &str = "
        fe534d4240000100000000000200010008000000000000000c000000000000000000000000000000912c51bf00000000
        360885cf1a82fd4398fe8adce0c9209a04000000";
    const RESPONSE: &str = "
        fe534d4240000100000000000200010009000000000000000c000000000000000000000000000000912c51bf00000000
        c236de9f3df5431ee1b41b2190fb8ba404000000";

    #[test]
    fn captured() {
        check::<LogoffRequest>(REQUEST);
        check::<LogoffResponse>(RESPONSE);
    }
}
