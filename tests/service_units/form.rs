//! Form-encoded request bodies read as JSON (`doubleagent::service::form`).

use doubleagent::service::form::{decode, encoding, Encoding};
use hyper::header::CONTENT_TYPE;
use hyper::HeaderMap;
use serde_json::{json, Value};

fn form(text: &str) -> Value {
    decode(Encoding::Form, text.as_bytes()).unwrap()
}

#[test]
fn a_stripe_style_form_becomes_nested_json_with_string_values() {
    assert_eq!(
        form("amount=100&currency=usd&metadata[order]=7&items[0][price]=p_1&items[1][price]=p_2&expand[]=a&expand[]=b"),
        json!({
            "amount": "100", "currency": "usd", "metadata": {"order": "7"},
            "items": [{"price": "p_1"}, {"price": "p_2"}], "expand": ["a", "b"],
        })
    );
}

#[test]
fn percent_and_plus_escapes_are_decoded() {
    assert_eq!(form("name=J%C3%B6rg+M"), json!({"name": "Jörg M"}));
}

#[test]
fn only_a_declared_form_is_read_as_one() {
    let mut h = HeaderMap::new();
    assert_eq!(encoding(&h), Encoding::Json);
    h.insert(
        CONTENT_TYPE,
        "application/x-www-form-urlencoded; charset=utf-8"
            .parse()
            .unwrap(),
    );
    assert_eq!(encoding(&h), Encoding::Form);
    assert_eq!(decode(Encoding::Json, b"amount=1"), None);
}
