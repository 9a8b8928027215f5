//! Scenario parsing (`doubleagent::scenario`): the quickstart validates, path templates match
//! whole segments, misspelt keys and semantic problems are located with their key path.

use doubleagent::scenario::{did_you_mean, PathTemplate, Scenario};

fn err(src: &str) -> String {
    Scenario::from_toml(src, "s.toml").unwrap_err().to_string()
}

#[test]
fn the_quickstart_validates() {
    let s = Scenario::quickstart();
    assert!(s.service("payments").is_some());
}

#[test]
fn path_templates_match_whole_segments() {
    let t = PathTemplate::parse("/v1/transfers/{id}").unwrap();
    assert_eq!(
        t.matches("/v1/transfers/act_3"),
        Some(vec![("id".into(), "act_3".into())])
    );
    assert_eq!(t.matches("/v1/transfers"), None);
    assert_eq!(t.matches("/v1/transfers/"), None);
    assert!(PathTemplate::parse("v1").is_err());
    assert!(PathTemplate::parse("/v1/x{id}").is_err());
    // Without parameters, compared whole: the same answers as segment by segment.
    let l = PathTemplate::parse("/v1/transfers").unwrap();
    for (path, fits) in [
        ("/v1/transfers", true),
        ("//v1/transfers", true),
        ("/v1/transfers/", false),
        ("/v1/transfer", false),
        ("/v1//transfers", false),
        ("/v1/transfers/x", false),
        ("/v1", false),
        ("", false),
    ] {
        assert_eq!(l.matches(path), fits.then(Vec::new), "{path}");
    }
    assert_eq!(PathTemplate::parse("/").unwrap().matches("/"), Some(vec![]));
    assert_eq!(PathTemplate::parse("/").unwrap().matches("/a"), None);
}

#[test]
fn misspelt_key_is_located_with_a_hint() {
    let src = "name = \"x\"\n[services.payments]\n[[services.payments.routes]]\nname = \"a\"\nmethod = \"POST\"\npath = \"/a\"\nkind = \"action\"\nfatez = [\"respond\"]\n";
    let e = err(src);
    assert!(e.starts_with("s.toml:8:1: services.payments.routes[0].fatez: unknown key `fatez`; did you mean `fates`?"), "{e}");
}

#[test]
fn semantic_problems_name_their_key_path() {
    let src = "[services._admin]\n";
    assert_eq!(err(src), "s.toml:1:11: services._admin: \"_admin\" is reserved for doubleagent's own endpoints; pick another service name");
}

#[test]
fn edit_distance_suggests_close_words_only() {
    assert_eq!(
        did_you_mean("fatez", ["fates", "intent"].into_iter()),
        "; did you mean `fates`?"
    );
    assert_eq!(did_you_mean("zzz", ["fates", "intent"].into_iter()), "");
    assert_eq!(
        did_you_mean("nmae", ["name", "seed"].into_iter()),
        "; did you mean `name`?"
    );
}
