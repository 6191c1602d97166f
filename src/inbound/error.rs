//! Why a server's request for input could not be answered.

/// Why a 2026-07-28 result (`resultType`) could not be turned into a
/// completed one. Never a default: an unknown type is this error, not an
/// empty success.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputRequiredError {
    /// The server asked for input (sampling, elicitation, roots) that no
    /// handler answers, or the handler refused it with this JSON-RPC code.
    #[error("no handler answered the server's input request")]
    Unanswered {
        /// The handler's error code (`-32601` when there is no handler).
        code: i64,
    },
    /// The server kept asking past the round limit.
    #[error("more than {limit} input rounds")]
    TooManyRounds {
        /// The round limit.
        limit: u32,
    },
    /// An `input_required` result with neither `inputRequests` nor
    /// `requestState`, or with input requests of the wrong shape.
    #[error("malformed input_required result")]
    Malformed,
    /// A `resultType` this client does not know.
    #[error("unknown result type")]
    UnknownResultType,
}
