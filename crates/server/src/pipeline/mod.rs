//! The request pipeline (MS-SMB2 3.3.5.2): a frame from the transport (`frames`), its requests
//! in order (`chain`), admitted (`admission`) and dispatched to their handlers (`dispatch`),
//! on the reader's task or one of their own (`scheduling`); large WRITEs whose data waits in a
//! pipe (`piped_write`). The top of the server: it builds each request's context
//! (`crate::request`) over the connection's state (`crate::state::connection`), and is the
//! only layer that calls the handlers.

mod admission;
mod chain;
mod dispatch;
mod frames;
pub mod piped_write;
mod scheduling;
