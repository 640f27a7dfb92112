//! Presentation context negotiation (C706 12.6.4.3 and 12.6.4.4; MS-RPCE 3.3.1.5.x), the same
//! for the named pipes of IPC$ and the ncacn_ip_tcp listeners.

use crate::pdu::{ContextElement, ContextResult, SyntaxId, reason, result};
use crate::service::interface_matches;

/// Bind time features supported (MS-RPCE 2.2.2.14): security context multiplexing and keeping
/// the connection on orphaned calls, as Windows answers.
const SUPPORTED_FEATURES: u64 = 0x03;

/// The presentation contexts an association established, each with the interface it names.
#[derive(Debug)]
pub(crate) struct Contexts {
    established: Vec<(u16, SyntaxId)>,
    limit: usize,
}

impl Contexts {
    /// No context yet; at most `limit` ever.
    pub fn new(limit: usize) -> Self {
        Self {
            established: Vec::new(),
            limit,
        }
    }

    /// The interface context `id` was established for.
    pub fn interface(&self, id: u16) -> Option<SyntaxId> {
        self.established
            .iter()
            .find(|(known, _)| *known == id)
            .map(|(_, interface)| *interface)
    }

    /// Decides each proposed context as Windows does: an interface of `served` with NDR 2.0 is
    /// accepted (NDR64 is not supported), other interfaces are rejected, the same id twice in
    /// one PDU counts once, and in a bind a context whose first transfer syntax is the feature
    /// negotiation syntax is answered with negotiate_ack. `Err` is a protocol error: an
    /// established context presented again with a different known transfer syntax.
    pub fn present(
        &mut self,
        served: &[SyntaxId],
        contexts: &[ContextElement],
        in_bind: bool,
    ) -> Result<Vec<ContextResult>, ()> {
        let mut seen: Vec<u16> = Vec::with_capacity(contexts.len());
        let mut results = Vec::with_capacity(contexts.len());
        for ctx in contexts {
            let features = ctx
                .transfer_syntaxes
                .first()
                .and_then(SyntaxId::feature_bits);
            if in_bind && let Some(bits) = features {
                results.push(ContextResult {
                    result: result::NEGOTIATE_ACK,
                    reason: u16::try_from(bits & SUPPORTED_FEATURES).unwrap_or(0),
                    transfer_syntax: SyntaxId::NULL,
                });
                continue;
            }
            let reject = |why| ContextResult {
                result: result::PROVIDER_REJECTION,
                reason: why,
                transfer_syntax: SyntaxId::NULL,
            };
            if seen.contains(&ctx.context_id) {
                results.push(reject(reason::PROPOSED_TRANSFER_SYNTAXES_NOT_SUPPORTED));
                continue;
            }
            seen.push(ctx.context_id);
            let existing = self.interface(ctx.context_id).is_some();
            let Some(interface) = served
                .iter()
                .find(|s| interface_matches(s, &ctx.abstract_syntax))
                .copied()
            else {
                results.push(reject(reason::ABSTRACT_SYNTAX_NOT_SUPPORTED));
                continue;
            };
            if !ctx.transfer_syntaxes.contains(&SyntaxId::NDR) {
                if existing && ctx.transfer_syntaxes.contains(&SyntaxId::NDR64) {
                    return Err(());
                }
                results.push(reject(reason::PROPOSED_TRANSFER_SYNTAXES_NOT_SUPPORTED));
                continue;
            }
            if !existing {
                if self.established.len() >= self.limit {
                    results.push(reject(reason::LOCAL_LIMIT_EXCEEDED));
                    continue;
                }
                self.established.push((ctx.context_id, interface));
            }
            results.push(ContextResult {
                result: result::ACCEPTANCE,
                reason: reason::NOT_SPECIFIED,
                transfer_syntax: SyntaxId::NDR,
            });
        }
        Ok(results)
    }
}
