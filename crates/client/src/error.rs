//! What can go wrong talking to a server.

use smb3d_dtyp::NtStatus;
use smb3d_smb2::{Command, DecodeError};

/// Why a request failed. Cloneable, as one broken connection fails every request in flight.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The socket failed or closed.
    #[error("{0:?}: {1}")]
    Io(std::io::ErrorKind, String),
    /// The connection ended (by the server, an earlier error or the client).
    #[error("connection closed: {0}")]
    Closed(String),
    /// The server answered with an error status.
    #[error("{command:?} failed: {status}")]
    Status { command: Command, status: NtStatus },
    /// A response that the decoders refuse.
    #[error("malformed {command:?} response: {error}")]
    Malformed {
        command: Command,
        error: DecodeError,
    },
    /// A response that breaks the protocol (no request has its MessageId, a missing
    /// signature, a frame too long, an answer the client did not offer...).
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// A response whose signature does not verify.
    #[error("bad signature on the {0:?} response")]
    BadSignature(Command),
    /// An encrypted frame that does not decrypt under the session's key.
    #[error("an encrypted response did not decrypt")]
    Decrypt,
    /// The logon did not complete.
    #[error("logon failed: {0}")]
    Logon(String),
    /// A request the client cannot send (too long, an option the connection lacks).
    #[error("cannot send: {0}")]
    Unsupported(String),
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e.kind(), e.to_string())
    }
}

impl Error {
    /// The status of a [`Error::Status`], if it is one.
    pub fn status(&self) -> Option<NtStatus> {
        match self {
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    pub(crate) fn protocol(what: impl Into<String>) -> Self {
        Self::Protocol(what.into())
    }
}

/// A result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
