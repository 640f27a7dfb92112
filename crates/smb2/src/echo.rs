//! ECHO (MS-SMB2 2.2.28, 2.2.29).

use crate::util::reserved_only_pdu;

reserved_only_pdu! {
    /// SMB2 ECHO Request (MS-SMB2 2.2.28).
    EchoRequest
}

reserved_only_pdu! {
    /// SMB2 ECHO Response (MS-SMB2 2.2.29).
    EchoResponse
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::reserved_only_tests::check;

    // Python smbprotocol 1.17 against Samba 4.17 (signed, 3.1.1).
    const REQUEST: &str = "
        fe534d4240000100000000000d000100080000000000000004000000000000000000000000000000912c51bf00000000
        a8878216aeac5b3200a7003063c8d15d04000000";
    const RESPONSE: &str = "
        fe534d4240000100000000000d000100090000000000000004000000000000000000000000000000912c51bf00000000
        dce11437ea8e5a65027697acc228284f04000000";

    #[test]
    fn captured() {
        check::<EchoRequest>(REQUEST);
        check::<EchoResponse>(RESPONSE);
    }
}
