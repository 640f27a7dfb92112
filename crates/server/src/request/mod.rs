//! What a handler sees of the request it serves (`ctx`) and how its response goes out, at once
//! or, for a request that waits, after an interim response (`reply`). Between the state and
//! the handlers: the pipeline builds these, the handlers use them.

pub(crate) mod ctx;
pub(crate) mod reply;
