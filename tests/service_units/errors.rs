//! A failure's body in every provider's error shape (`doubleagent::service::errors`).

use doubleagent::idempotency::ErrorShape;
use doubleagent::scenario::ErrorStyle;
use doubleagent::service::errors::{Failure, Kind};
use serde_json::Value;

fn body(shape: ErrorShape, f: Failure) -> Value {
    serde_json::from_slice(
        &f.respond(
            &ErrorStyle {
                shape,
                template: None,
            },
            7,
        )
        .body,
    )
    .unwrap()
}

#[test]
fn stripe_errors_carry_the_type_stripe_python_picks_its_exception_by() {
    let f = |s, k| body(ErrorShape::Stripe, Failure::new(s, k, "x"))["error"]["type"].clone();
    assert_eq!(f(500, Kind::Fate), "api_error");
    assert_eq!(f(402, Kind::Fate), "card_error");
    assert_eq!(f(429, Kind::Fate), "invalid_request_error");
    assert_eq!(f(404, Kind::NotFound), "invalid_request_error");
    assert_eq!(f(400, Kind::Mismatch), "idempotency_error");
}

#[test]
fn facts_ride_along_in_every_shape_without_overwriting_the_providers_own() {
    for shape in [
        ErrorShape::Generic,
        ErrorShape::Problem,
        ErrorShape::Stripe,
        ErrorShape::Adyen,
        ErrorShape::Paypal,
        ErrorShape::Checkout,
    ] {
        let b = body(
            shape,
            Failure::new(404, Kind::NotFound, "no action").with("id", "pi_9"),
        );
        assert_eq!(b["id"], "pi_9", "{shape:?}");
    }
    let b = body(
        ErrorShape::Generic,
        Failure::new(404, Kind::NotFound, "no action").with("error", "x"),
    );
    assert_eq!(b["error"], "no action", "the provider's own member wins");
}

#[test]
fn problem_details_are_served_as_problem_json() {
    let r = Failure::new(422, Kind::Mismatch, "m").respond(
        &ErrorStyle {
            shape: ErrorShape::Problem,
            template: None,
        },
        1,
    );
    assert_eq!(r.headers[0].1, "application/problem+json");
    let b: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        (b["title"].as_str(), b["status"].as_u64()),
        (Some("Unprocessable Entity"), Some(422))
    );
}
