//! Templates (`doubleagent::template`): placeholders expanded in text and JSON, and a compiled
//! template writing the same JSON text.

use doubleagent::template::{json, text, Compiled, Vars};
use serde_json::json as j;
use serde_json::Value;

struct V;
impl Vars for V {
    fn var(&self, name: &str) -> Option<Value> {
        match name {
            "n" => Some(j!(7)),
            "s" => Some(j!("x")),
            _ => None,
        }
    }
}

#[test]
fn placeholders_expand_typed_whole_and_interpolated_in_text() {
    assert_eq!(text("a {{s}} b {{ n }} {{nope}}", &V), "a x b 7 {{nope}}");
    assert_eq!(
        json(&j!({"k": "{{n}}", "t": "n={{n}}", "l": ["{{s}}"]}), &V),
        j!({"k": 7, "t": "n=7", "l": ["x"]})
    );
    assert_eq!(text("unclosed {{n", &V), "unclosed {{n");
}

#[test]
fn compiled_json_is_the_expanded_tree_as_text() {
    let t = j!({"k": "{{n}}", "t": "n={{n}}", "l": ["{{s}}", 1, null, {"z": "{{nope}}"}], "a\"b": "q\"{{s}}",
        "c": "tab\there\u{1}", "b\\": "back\\slash {{s}}", "u": "\u{e9}\u{7f}"});
    for t in [
        t,
        j!("{{s}}"),
        j!(" {{ n }} "),
        j!("x{{s}}"),
        j!(7),
        j!([]),
        j!({}),
        j!([{"a": ["{{nope}}", "{{n}}{{s}}", true]}]),
    ] {
        let mut out = Vec::new();
        Compiled::of(&t).write(&V, &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), json(&t, &V).to_string());
    }
}
