//! The HTML timeline page (`doubleagent::report`): its data embedded safely, nothing fetched.

use doubleagent::report::render;
use doubleagent::{verify, Entry};

#[test]
fn the_page_embeds_its_data_safely_and_fetches_nothing() {
    let e = Entry {
        seq: 1,
        service: "payments".into(),
        body: serde_json::json!({"note": "</script><script>alert(1)</script>"}),
        ..Entry::default()
    };
    let entries = vec![e];
    let page = render("t<1>", &entries, &verify(&entries, None));
    assert!(
        !page.contains("</script><script>alert"),
        "data cannot close the script element"
    );
    assert!(page.contains("doubleagent — t&lt;1&gt;"));
    assert!(
        !page.contains("src=\"http") && !page.contains("href=\"http") && !page.contains("@import")
    );
    assert_eq!(page.matches("__DATA__").count(), 0);
}
