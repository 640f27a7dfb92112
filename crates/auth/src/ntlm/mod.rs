//! NTLM (MS-NLMP): message codecs, the NTLMv2 functions and the server side of the exchange.

pub mod crypto;
pub mod messages;
pub mod rpc;
pub mod server;

pub use crypto::{Direction, Key16, SessionSecurity};
pub use messages::{
    AuthenticateMessage, AvFlags, AvId, AvPairWriter, AvPairs, ChallengeMessage, NegotiateFlags,
    NegotiateMessage, Version,
};
pub use server::{ChallengeState, NtlmOutcome};
