use doubleagent::agent::agui::interrupt::*;

#[test]
fn int4_response_schema_must_be_an_object() {
    assert!(
        serde_json::from_str::<Interrupt>(r#"{"id":"a","reason":"x","responseSchema":[1]}"#)
            .is_err()
    );
    assert!(
        serde_json::from_str::<Interrupt>(r#"{"id":"a","reason":"x","responseSchema":null}"#)
            .is_err()
    );
    assert!(
        serde_json::from_str::<Interrupt>(r#"{"id":"a","reason":"x","responseSchema":{}}"#).is_ok()
    );
}
