//! Revisions (`doubleagent::revision`, rule REC-2): whole numbers compare however they are
//! written; anything else is kept as text and not ordered.

use doubleagent::revision::Revision;
use serde_json::json;
use serde_json::Value;

#[test]
fn rec2_a_whole_number_is_the_same_revision_however_it_is_written() {
    for v in [json!(1), json!(1.0), json!("1"), json!(" 1 ")] {
        assert_eq!(Revision::of(&v), Some(Revision::Number(1)), "{v}");
        let read: Revision = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(read, Revision::Number(1), "{v}");
    }
    assert_eq!(Revision::parse("1"), Revision::Number(1));
    assert_eq!(serde_json::to_string(&Revision::Number(1)).unwrap(), "1");
}

#[test]
fn rec2_other_revisions_are_kept_but_not_ordered() {
    for (v, text) in [
        (json!("rev-b"), "rev-b"),
        (json!(1.5), "1.5"),
        (json!(true), "true"),
    ] {
        let r = Revision::of(&v).unwrap();
        assert_eq!(r, Revision::Text(text.into()));
        assert_eq!(r.ordinal(), None);
        let read: Revision = serde_json::from_value(v).unwrap();
        assert_eq!(read, r);
    }
    let object: Revision = serde_json::from_str(r#"{"v": 1}"#).unwrap();
    assert_eq!(object, Revision::Text(r#"{"v":1}"#.into()));
    assert!(serde_json::from_str::<Revision>("null").is_err());
    assert_eq!(Revision::of(&Value::Null), None);
    assert_eq!(Revision::Text("rev-b".into()).to_string(), "\"rev-b\"");
}

/// A whole number past `i64` is not rounded onto its end (Schemathesis found
/// -9223372036854775809 read as `i64::MIN`).
#[test]
fn rec2_a_number_beyond_i64_is_not_ordered() {
    for text in ["-9223372036854775809", "9223372036854775808", "1e300"] {
        let v: Value = serde_json::from_str(text).unwrap();
        assert_eq!(Revision::of(&v).and_then(|r| r.ordinal()), None, "{text}");
    }
    let min: Value = serde_json::from_str("-9223372036854775808").unwrap();
    assert_eq!(Revision::of(&min), Some(Revision::Number(i64::MIN)));
}
