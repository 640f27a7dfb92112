//! What a handler sees of its request: the connection, session and tree it acts in, what the
//! compound chain before it left, and what it sets for its response.

use std::sync::Arc;

use smb3d_crypto::MessageSigner;
use smb3d_dtyp::NtStatus;
use smb3d_smb2::header::{Header, HeaderFlags};
use smb3d_vfs::PipedData;

use crate::identity::Identity;
use crate::state::connection::limits::Inflight;
use crate::state::connection::pending::PendingRequest;
use crate::state::connection::{Connection, Negotiated, Seal};
use crate::state::session::{Session, Tree};

/// What the previous request of a compound chain left for related requests (MS-SMB2
/// 3.3.5.2.7.2).
#[derive(Default)]
pub(crate) struct ChainState {
    pub session_id: u64,
    pub tree_id: u32,
    pub file_id: Option<smb3d_smb2::create::FileId>,
    pub status: NtStatus,
    /// The frame's arrival number on its connection.
    pub frame: u64,
}

/// Everything a handler may use and set for the response.
pub(crate) struct Ctx<'a> {
    pub conn: &'a Arc<Connection>,
    /// What NEGOTIATE settled; requests other than NEGOTIATE only reach handlers after it.
    pub negotiated: &'a Negotiated,
    pub hdr: &'a Header,
    pub session: Option<Arc<Session>>,
    pub tree: Option<Arc<Tree>>,
    pub chain: &'a mut ChainState,
    /// SessionId for the response header when the handler made a new session.
    pub response_session_id: Option<u64>,
    /// TreeId for the response header when the handler made a new tree connect.
    pub response_tree_id: Option<u32>,
    /// Sign the response with this (the 3.1.1 final SESSION_SETUP response).
    pub sign_with: Option<Arc<dyn MessageSigner>>,
    /// Hash the response into this session's preauth value (3.1.1 SESSION_SETUP).
    pub preauth_session: Option<Arc<Session>>,
    /// End the connection instead of answering (MS-SMB2 3.3.5.15.12).
    pub disconnect: Option<&'static str>,
    /// The request arrived encrypted.
    pub encrypted: bool,
    /// ErrorData for an error response (MS-SMB2 2.2.2), e.g. the size a buffer needs.
    pub error_data: Vec<u8>,
    /// ErrorContextCount: how many 3.1.1 error contexts (MS-SMB2 2.2.2.1) `error_data` holds.
    pub error_contexts: u8,
    /// The request's entry in the connection's pending table, if its command may wait.
    pub pending: Option<Arc<PendingRequest>>,
    /// Whether this is the last request of its compound (only that one may wait).
    pub last_in_chain: bool,
    /// The key that encrypts the responses, if they are encrypted.
    pub seal: Option<&'a Seal>,
    /// Request.AsyncId once the request went async, else 0.
    pub async_id: u64,
    /// The request's failure does not fail the related requests after it (a request refused
    /// for waiting inside a compound, as Windows answers).
    pub isolated_failure: bool,
    /// The data of a WRITE that the transport left in a pipe (`piped_write`).
    pub piped: Option<PipedData>,
    /// The frame's in-flight bytes, with the room reserved for its responses.
    pub inflight: &'a mut Inflight,
}

impl Ctx<'_> {
    /// The identity of the request's session on the request's tree (a share may force
    /// another), for access checks and file-system work.
    pub fn identity(&self) -> Result<Arc<Identity>, NtStatus> {
        if let Some(forced) = self.tree.as_ref().and_then(|t| t.identity.clone()) {
            return Ok(forced);
        }
        self.session
            .as_ref()
            .and_then(|s| s.identity())
            .ok_or(NtStatus::USER_SESSION_DELETED)
    }
}

impl Ctx<'_> {
    /// The SessionId and TreeId of the response: those the handler made, else the request's,
    /// or for a related request those it acted in (MS-SMB2 3.3.5.2.7.2).
    pub fn response_ids(&self) -> (u64, u32) {
        let related = self.hdr.is_related();
        let session_id = self.response_session_id.unwrap_or(if related {
            self.chain.session_id
        } else {
            self.hdr.session_id
        });
        let tree_id = self.response_tree_id.unwrap_or(if related {
            self.chain.tree_id
        } else {
            self.hdr.tree_id
        });
        (session_id, tree_id)
    }

    /// The key that signs the response with `status` in `session_id` (MS-SMB2 3.3.4.1.1): none
    /// when the frame is encrypted or the response interim; the one the handler chose; else
    /// the channel's, when the request was signed or the session or share requires signing.
    pub fn response_signer(
        &self,
        session_id: u64,
        status: NtStatus,
    ) -> Option<Arc<dyn MessageSigner>> {
        if self.seal.is_some() {
            return None;
        }
        if let Some(signer) = &self.sign_with {
            return Some(signer.clone());
        }
        if session_id == 0 || status == NtStatus::PENDING {
            return None;
        }
        let session = self.conn.session(session_id)?;
        let share_requires = self.tree.as_ref().is_some_and(|t| t.share.require_signing);
        self.conn
            .response_signer_of(self.hdr, &session, share_requires)
    }

    /// Whether a successful response will go out neither signed nor encrypted, so that its
    /// data may follow from the file: the decision `run_chain` takes when it sends it.
    pub fn response_in_clear(&self) -> bool {
        self.seal.is_none()
            && self
                .response_signer(self.response_ids().0, NtStatus::SUCCESS)
                .is_none()
    }
}

/// A signed request naming a session that is not on its connection is refused with
/// STATUS_USER_SESSION_DELETED. When the signature holds under the key of a session that ended
/// on this connection lately, or under Session.SigningKey of a session on another connection,
/// the refusal is signed with that key, as Windows answers (smbtorture smb2.session.bind2,
/// reconnect1): the client signs for that session and trusts only a signed answer.
pub(crate) fn sign_refusal(cx: &mut Ctx<'_>, pdu: &[u8]) {
    if !cx.hdr.flags.contains(HeaderFlags::SIGNED) {
        return;
    }
    let id = cx.hdr.session_id;
    cx.sign_with = cx
        .conn
        .ended_signer(id)
        .or_else(|| cx.conn.server.session(id)?.session_signer())
        .filter(|s| signature_holds(s.as_ref(), pdu));
}

/// Verifies a request's signature on a copy, leaving the request as it came.
pub(crate) fn signature_holds(signer: &dyn MessageSigner, message: &[u8]) -> bool {
    signer.verify(&mut message.to_vec())
}
