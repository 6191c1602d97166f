//! Printing an error whole, in one call.
//!
//! Every error of this crate says what happened in its own words in
//! `Display` and keeps the cause as its `source()`, never repeated in its
//! message (so a chain prints each fact once). The price is that `{e}`
//! shows only the outermost fact: `server "py": call_tool failed on session 1`. A
//! [`Report`] walks the chain: `{}` joins every level with `: ` on one line,
//! `{:#}` puts each cause on a line of its own. Nothing is added to what the
//! errors say: a report holds no header, token, body or server message.
//!
//! What the server said (its JSON-RPC error message, which a model needs to
//! fix its call) is not in any `Display`: [`Report::server_message`] (and
//! `server_message()` on the crate's errors) hands it to the application,
//! which decides where it may go.

use std::error::Error as StdError;
use std::fmt;

use crate::protocol::RpcError;

/// An error and its causes, for printing whole (see the module docs).
#[derive(Clone, Copy)]
pub struct Report<'a>(&'a (dyn StdError + 'static));

impl<'a> Report<'a> {
    /// A report of `error` and every cause under it.
    pub fn new(error: &'a (dyn StdError + 'static)) -> Self {
        Report(error)
    }

    /// The message of the server's JSON-RPC error, when one is in the
    /// chain: the server's own words, for the application to use (show a
    /// model, log where server text may go), never printed by this crate.
    pub fn server_message(&self) -> Option<&'a str> {
        let mut current = Some(self.0);
        while let Some(error) = current {
            if let Some(rpc) = error.downcast_ref::<RpcError>() {
                return Some(rpc.message());
            }
            current = error.source();
        }
        None
    }
}

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            if f.alternate() {
                write!(f, "\n  caused by: {cause}")?;
            } else {
                write!(f, ": {cause}")?;
            }
            source = cause.source();
        }
        Ok(())
    }
}

impl fmt::Debug for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// `report()`, `server_message()` and the classification's questions
/// (`failure()`, `is_timeout()`, `is_auth()`, `http_status()`) for a
/// public error of this crate, so none needs an import; invoked beside
/// each error type.
macro_rules! reportable {
    ($($error:ty),* $(,)?) => {$(
        impl $error {
            /// What failed, payload-free: stage, kind, HTTP status, JSON-RPC
            /// code ([`Classify::failure`](crate::layers::Classify::failure),
            /// with no import).
            pub fn failure(&self) -> $crate::layers::Failure {
                $crate::layers::Classify::failure(self)
            }

            /// Whether it ended on a timeout (a stage's limit, the
            /// deadline, a request's timeout).
            pub fn is_timeout(&self) -> bool {
                self.failure().kind == $crate::layers::FailureKind::Timeout
            }

            /// Whether the server or its authorization server refused the
            /// credentials (401/403, a failed authorization).
            pub fn is_auth(&self) -> bool {
                self.failure().kind == $crate::layers::FailureKind::Auth
            }

            /// The HTTP status involved, if any.
            pub fn http_status(&self) -> Option<u16> {
                self.failure().http_status
            }

            /// This error and every cause, for printing whole:
            /// `{}` on one line, `{:#}` a cause a line
            /// ([`Report`](crate::error::report::Report)).
            pub fn report(&self) -> $crate::error::report::Report<'_> {
                $crate::error::report::Report::new(self)
            }

            /// The server's JSON-RPC error message, when this error holds
            /// one ([`Report::server_message`](crate::error::report::Report::server_message)).
            pub fn server_message(&self) -> Option<&str> {
                $crate::error::report::Report::new(self).server_message()
            }

            /// What to tell the model that asked for the call: `Error: `
            /// (as a tool error's result says it), this error, then the
            /// server's own message when it sent one (from which the model
            /// may correct its arguments), else every cause. It holds the
            /// server's text: for the model, never for a log.
            pub fn model_text(&self) -> String {
                match self.server_message() {
                    Some(message) => format!("Error: {self}: {message}"),
                    None => format!("Error: {}", self.report()),
                }
            }
        }
    )*};
}

pub(crate) use reportable;

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] Inner);

    #[derive(Debug, thiserror::Error)]
    #[error("inner")]
    struct Inner;

    #[test]
    fn one_line_and_a_cause_a_line() {
        let error = Outer(Inner);
        assert_eq!(Report::new(&error).to_string(), "outer: inner");
        assert_eq!(
            format!("{:#}", Report::new(&error)),
            "outer\n  caused by: inner"
        );
        assert_eq!(Report::new(&error).server_message(), None);
    }
}
