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
