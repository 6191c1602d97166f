//! The 2026-07-28 era's multi-round-trip requests (SEP-2322): while the
//! result is `input_required`, the session's handler answers the input
//! requests and the request is sent again (a new id) with
//! `inputResponses` and the server's `requestState` echoed verbatim, at
//! most [`MAX_INPUT_ROUNDS`] times. The request's deadline bounds every
//! round. Other eras' results stand as they are.

use mcp_connect_layers::Stage;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::Verdict;
use crate::error::{Error, ErrorKind, InputRequiredError};
use crate::protocol::{Era, Request};
use crate::session::Session;

/// The most `input_required` rounds one request goes through.
pub const MAX_INPUT_ROUNDS: u32 = 8;

/// One request's input rounds so far.
#[derive(Default)]
pub(super) struct InputRounds(u32);

impl InputRounds {
    /// How many rounds the request took.
    pub(super) fn taken(&self) -> u32 {
        self.0
    }

    /// A final result stands; one asking for input is answered and the
    /// request made again with the answers (the caller sends it).
    pub(super) async fn judge(
        &mut self,
        session: &Session,
        request: &mut Request,
        raw: &RawValue,
    ) -> Result<Verdict, Error> {
        if session.era() != Era::Modern {
            return Ok(Verdict::Stands);
        }
        let body = request.body();
        let offered_task = body.offers_task()
            || (body.has_own_meta()
                && crate::extensions::tasks::offered(body.params_value().as_ref()));
        let asked = match input_required(raw, offered_task) {
            Ok(None) => return Ok(Verdict::Stands),
            Ok(Some(asked)) => asked,
            Err(error) => return Err(input_error(error)),
        };
        self.0 += 1;
        if self.0 > MAX_INPUT_ROUNDS {
            return Err(input_error(InputRequiredError::TooManyRounds {
                limit: MAX_INPUT_ROUNDS,
            }));
        }
        let responses = session
            .inbound
            .answer_inputs(&asked.input_requests)
            .await
            .map_err(input_error)?;
        // The retry is the original request with this round's answers
        // (never an earlier round's) and the state exactly as sent.
        let mut params = match request.body().params_value() {
            Some(Value::Object(params)) => params,
            _ => Map::new(),
        };
        params.remove("inputResponses");
        params.remove("requestState");
        if !responses.is_empty() {
            params.insert("inputResponses".into(), Value::Object(responses));
        }
        if let Some(state) = asked.request_state {
            params.insert("requestState".into(), Value::String(state));
        }
        request.body_mut().set_params(&Value::Object(params));
        Ok(Verdict::SendAgain)
    }
}

/// What an `input_required` result asks for.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct InputRequired {
    #[serde(default)]
    input_requests: Map<String, Value>,
    #[serde(default)]
    request_state: Option<String>,
}

/// `None` for a completed result (no `resultType`, which older servers
/// never send, or `"complete"`); the input asked for; or why it is neither.
/// A task handle (`"task"`) counts as final where the request offered
/// the Tasks extension (the caller reads it), and is unknown elsewhere.
fn input_required(
    raw: &RawValue,
    offered_task: bool,
) -> Result<Option<InputRequired>, InputRequiredError> {
    #[derive(serde::Deserialize)]
    struct Kind<'a> {
        #[serde(rename = "resultType", default, borrow)]
        result_type: Option<std::borrow::Cow<'a, str>>,
    }
    let kind: Kind<'_> = match serde_json::from_str(raw.get()) {
        Ok(kind) => kind,
        // Not an object: no result type to read (MCP results are objects,
        // but a raw request may ask for anything).
        Err(_) if !raw.get().starts_with('{') => return Ok(None),
        Err(_) => return Err(InputRequiredError::Malformed),
    };
    match kind.result_type.as_deref() {
        None | Some("complete") => Ok(None),
        Some("task") if offered_task => Ok(None),
        Some("input_required") => {
            let asked: InputRequired =
                serde_json::from_str(raw.get()).map_err(|_| InputRequiredError::Malformed)?;
            if asked.input_requests.is_empty() && asked.request_state.is_none() {
                return Err(InputRequiredError::Malformed);
            }
            Ok(Some(asked))
        }
        Some(_) => Err(InputRequiredError::UnknownResultType),
    }
}

fn input_error(error: InputRequiredError) -> Error {
    Error::new(Stage::REQUEST, ErrorKind::InputRequired(error))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Result<Option<InputRequired>, InputRequiredError> {
        input_required(&RawValue::from_string(json.to_owned()).unwrap(), false)
    }

    #[test]
    fn result_types() {
        assert!(matches!(read(r#"{"content":[]}"#), Ok(None)));
        assert!(matches!(read(r#"{"resultType":"complete"}"#), Ok(None)));
        assert!(matches!(read("true"), Ok(None)));
        assert!(matches!(
            read(r#"{"resultType":7}"#),
            Err(InputRequiredError::Malformed)
        ));
        assert!(matches!(
            read(r#"{"resultType":"x"}"#),
            Err(InputRequiredError::UnknownResultType)
        ));
        let asked = read(r#"{"resultType":"input_required","requestState":"s"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(asked.request_state.as_deref(), Some("s"));
    }

    /// A task handle is final only for a request that offered tasks.
    #[test]
    fn a_task_handle_needs_the_offer() {
        let task = RawValue::from_string(r#"{"resultType":"task","taskId":"t"}"#.into()).unwrap();
        assert!(matches!(input_required(&task, true), Ok(None)));
        assert!(matches!(
            input_required(&task, false),
            Err(InputRequiredError::UnknownResultType)
        ));
    }
}
