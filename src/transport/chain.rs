//! Walking an error's source chain for a type, the one way the transports
//! decide what a failure was: by the types in it, never its message.

/// Whether `error` or anything in its source chain is a `T`.
pub(crate) fn chain_has<T: std::error::Error + 'static>(
    error: &(dyn std::error::Error + 'static),
) -> bool {
    chain_find::<T>(error).is_some()
}

/// The first `T` in `error`'s source chain. An `io::Error` hides the
/// error it wraps from `source()` (it returns that error's own source),
/// so the walk steps into it instead: a rustls error inside the I/O error
/// of a TLS stream is found.
pub(crate) fn chain_find<'a, T: std::error::Error + 'static>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(found) = e.downcast_ref::<T>() {
            return Some(found);
        }
        current = match e.downcast_ref::<std::io::Error>() {
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => e.source(),
        };
    }
    None
}
