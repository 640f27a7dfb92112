//! What the endpoint needs from a service: its interface, its endpoint name, and a call
//! dispatcher that reads the request stub and writes the response stub.

use smb3d_wire::DecodeError;

use crate::lsarpc::LsaState;
use crate::ndr::NdrWriter;
use crate::pdu::{SyntaxId, guid};
use crate::{CallerInfo, Directory, PipeKind, lsarpc, samr, srvsvc, wkssvc};

/// Why a call ends in a fault PDU instead of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallFault {
    /// The opnum is not one the service implements: nca_s_op_rng_error.
    OpRange,
    /// The stub could not be decoded: rpc_x_bad_stub_data.
    BadStub,
    /// A union discriminant the interface does not define: nca_s_fault_invalid_tag.
    InvalidTag,
    /// A context handle this pipe never issued: nca_s_fault_context_mismatch.
    ContextMismatch,
    /// The call may not be made on this transport: ERROR_ACCESS_DENIED.
    AccessDenied,
}

impl CallFault {
    /// The fault PDU's status (C706 appendix E, MS-RPCE 2.2.2.11).
    pub const fn status(self) -> u32 {
        match self {
            Self::OpRange => fault_status::NCA_S_OP_RNG_ERROR,
            Self::BadStub => fault_status::RPC_X_BAD_STUB_DATA,
            Self::InvalidTag => fault_status::NCA_S_FAULT_INVALID_TAG,
            Self::ContextMismatch => fault_status::NCA_S_FAULT_CONTEXT_MISMATCH,
            Self::AccessDenied => fault_status::ACCESS_DENIED,
        }
    }

    /// Whether the fault says PFC_DID_NOT_EXECUTE: Windows and Samba set it for an opnum
    /// they do not have, not for stubs that failed to unmarshal.
    pub const fn did_not_execute(self) -> bool {
        matches!(self, Self::OpRange)
    }
}

impl From<DecodeError> for CallFault {
    fn from(_: DecodeError) -> Self {
        Self::BadStub
    }
}

/// Fault statuses (C706 appendix E; the Windows codes of MS-ERREF 2.2).
pub mod fault_status {
    /// ERROR_ACCESS_DENIED: the call may not be made here, or a limit was exceeded.
    pub const ACCESS_DENIED: u32 = 0x0000_0005;
    /// RPC_S_NO_CALL_ACTIVE: a cancel for a call that has not started.
    pub const RPC_S_NO_CALL_ACTIVE: u32 = 0x0000_06bd;
    /// RPC_X_BAD_STUB_DATA: the stub does not unmarshal.
    pub const RPC_X_BAD_STUB_DATA: u32 = 0x0000_06f7;
    /// nca_s_fault_invalid_tag: a union discriminant without an arm.
    pub const NCA_S_FAULT_INVALID_TAG: u32 = 0x1c00_0006;
    /// nca_s_fault_context_mismatch: an unknown context handle.
    pub const NCA_S_FAULT_CONTEXT_MISMATCH: u32 = 0x1c00_001a;
    /// nca_s_op_rng_error: an opnum the interface does not have.
    pub const NCA_S_OP_RNG_ERROR: u32 = 0x1c01_0002;
    /// nca_s_unk_if: a presentation context that was never accepted.
    pub const NCA_S_UNKNOWN_IF: u32 = 0x1c01_0003;
    /// nca_s_proto_error: the PDU breaks the protocol.
    pub const NCA_S_PROTO_ERROR: u32 = 0x1c01_000b;
}

/// Win32 error codes the share and workstation services return (MS-ERREF 2.2).
pub mod werror {
    /// NERR_Success.
    pub const SUCCESS: u32 = 0;
    /// ERROR_ACCESS_DENIED.
    pub const ACCESS_DENIED: u32 = 5;
    /// ERROR_INVALID_LEVEL.
    pub const INVALID_LEVEL: u32 = 124;
    /// ERROR_MORE_DATA: an enumeration continues.
    pub const MORE_DATA: u32 = 234;
    /// NERR_NetNameNotFound: no share of that name.
    pub const NERR_NET_NAME_NOT_FOUND: u32 = 2310;
}

/// What a call may consult.
pub struct CallContext<'a> {
    /// The server's live data.
    pub directory: &'a dyn Directory,
    /// Who opened the pipe.
    pub caller: &'a CallerInfo,
}

/// A bound service with its per-pipe state.
pub enum Service {
    Srvsvc,
    Wkssvc,
    Lsarpc(LsaState),
    Samr,
}

impl Service {
    /// The service a pipe serves; `seed` makes its handles unpredictable.
    pub fn new(kind: PipeKind, seed: u64) -> Self {
        match kind {
            PipeKind::Srvsvc => Self::Srvsvc,
            PipeKind::Wkssvc => Self::Wkssvc,
            PipeKind::Lsarpc => Self::Lsarpc(LsaState::new(seed)),
            PipeKind::Samr => Self::Samr,
        }
    }

    /// The interface the pipe offers.
    pub const fn interface(&self) -> SyntaxId {
        match self {
            Self::Srvsvc => SRVSVC,
            Self::Wkssvc => WKSSVC,
            Self::Lsarpc(_) => LSARPC,
            Self::Samr => SAMR,
        }
    }

    /// The endpoint name bind_ack reports as secondary address; Windows serves lsarpc and
    /// samr from the lsass endpoint and names it so.
    pub const fn secondary_address(&self) -> &'static str {
        match self {
            Self::Srvsvc => "\\PIPE\\srvsvc",
            Self::Wkssvc => "\\PIPE\\wkssvc",
            Self::Lsarpc(_) | Self::Samr => "\\PIPE\\lsass",
        }
    }

    /// Runs one call: reads `stub`, writes the response stub into `out`.
    pub fn call(
        &mut self,
        cx: &CallContext<'_>,
        opnum: u16,
        stub: &[u8],
        out: &mut NdrWriter<'_>,
    ) -> Result<(), CallFault> {
        match self {
            Self::Srvsvc => srvsvc::call(cx, opnum, stub, out),
            Self::Wkssvc => wkssvc::call(cx, opnum, stub, out),
            Self::Lsarpc(state) => lsarpc::call(state, cx, opnum, stub, out),
            Self::Samr => samr::call(cx, opnum, stub, out),
        }
    }
}

/// Whether an interface a client proposes is served by `ours`: same UUID and major version,
/// and a minor version no newer (C706 12.6.3.1 on compatible interface versions).
pub fn interface_matches(ours: &SyntaxId, proposed: &SyntaxId) -> bool {
    ours.uuid == proposed.uuid && ours.major == proposed.major && proposed.minor <= ours.minor
}

/// srvsvc, 4b324fc8-1670-01d3-1278-5a47bf6ee188 v3.0 (MS-SRVS 1.9).
pub const SRVSVC: SyntaxId = SyntaxId {
    uuid: guid(
        0x4b32_4fc8,
        0x1670,
        0x01d3,
        [0x12, 0x78, 0x5a, 0x47, 0xbf, 0x6e, 0xe1, 0x88],
    ),
    major: 3,
    minor: 0,
};

/// wkssvc, 6bffd098-a112-3610-9833-46c3f87e345a v1.0 (MS-WKST 1.9).
pub const WKSSVC: SyntaxId = SyntaxId {
    uuid: guid(
        0x6bff_d098,
        0xa112,
        0x3610,
        [0x98, 0x33, 0x46, 0xc3, 0xf8, 0x7e, 0x34, 0x5a],
    ),
    major: 1,
    minor: 0,
};

/// lsarpc, 12345778-1234-abcd-ef00-0123456789ab v0.0 (MS-LSAT 1.9, MS-LSAD 1.9).
pub const LSARPC: SyntaxId = SyntaxId {
    uuid: guid(
        0x1234_5778,
        0x1234,
        0xabcd,
        [0xef, 0x00, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab],
    ),
    major: 0,
    minor: 0,
};

/// samr, 12345778-1234-abcd-ef00-0123456789ac v1.0 (MS-SAMR 1.9).
pub const SAMR: SyntaxId = SyntaxId {
    uuid: guid(
        0x1234_5778,
        0x1234,
        0xabcd,
        [0xef, 0x00, 0x01, 0x23, 0x45, 0x67, 0x89, 0xac],
    ),
    major: 1,
    minor: 0,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_uuids() {
        assert_eq!(
            SRVSVC.uuid.to_string(),
            "4b324fc8-1670-01d3-1278-5a47bf6ee188"
        );
        assert_eq!(
            WKSSVC.uuid.to_string(),
            "6bffd098-a112-3610-9833-46c3f87e345a"
        );
        assert_eq!(
            LSARPC.uuid.to_string(),
            "12345778-1234-abcd-ef00-0123456789ab"
        );
        assert_eq!(
            SAMR.uuid.to_string(),
            "12345778-1234-abcd-ef00-0123456789ac"
        );
    }

    #[test]
    fn version_matching() {
        let mut p = SRVSVC;
        assert!(interface_matches(&SRVSVC, &p));
        p.major = 2;
        assert!(!interface_matches(&SRVSVC, &p));
        p.major = 3;
        p.minor = 1;
        assert!(!interface_matches(&SRVSVC, &p));
    }
}
