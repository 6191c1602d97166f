use proptest::prelude::*;

use super::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Any bytes are a message, a batch, or a typed error; never a
    /// panic.
    #[test]
    fn any_bytes_are_a_message_or_an_error(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = Incoming::parse(&bytes);
        let _ = Incoming::parse_many(&bytes);
        let _ = Incoming::error_in(&bytes);
    }

    /// Requests this client writes are read back as the same request.
    #[test]
    fn written_requests_read_back(id in any::<i64>(), method in "[a-z/_]{1,20}", n in any::<i64>()) {
        let request = Request::new(RequestId::Number(id), method.clone(), Some(serde_json::json!({ "n": n })));
        match Incoming::parse(&request.to_bytes()).unwrap() {
            Incoming::Request { id: got, method: m, params } => {
                prop_assert_eq!(got, RequestId::Number(id));
                prop_assert_eq!(m, method);
                prop_assert_eq!(params.unwrap()["n"].as_i64(), Some(n));
            }
            other => prop_assert!(false, "{other:?}"),
        }
    }
}
