//! The journal file itself: a torn last line, a changed byte,
//! lines from older versions without a checksum.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use doubleagent::journal::{load, Fsync, Journal, Line};

fn fresh(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("da-journal-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("j.jsonl");
    let _ = std::fs::remove_file(&path);
    path
}

fn clock(secs: u64) -> Line {
    Line::Clock {
        session: None,
        now: Duration::from_secs(secs),
    }
}

/// One line's bytes as the journal writes them (newline and checksum included).
fn encoded(line: &Line) -> Vec<u8> {
    let path = fresh("encode");
    Journal::open(&path, Fsync::Never).unwrap().write(line);
    std::fs::read(&path).unwrap()
}

#[test]
fn a_torn_last_line_is_cut_off_the_file_and_the_rest_is_read() {
    let path = fresh("torn");
    let j = Journal::open(&path, Fsync::Never).unwrap();
    assert!(j.write(&clock(5)));
    assert!(j.write(&Line::Drop {
        session: "s".into(),
    }));
    drop(j);
    let whole = std::fs::metadata(&path).unwrap().len();
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(b"{\"line\":{\"t\":\"clock\",\"sess").unwrap();
    let lines = load(&path, false).unwrap().lines;
    assert_eq!(lines.len(), 2);
    assert!(matches!(lines[0], Line::Clock { now, .. } if now == Duration::from_secs(5)));
    assert_eq!(std::fs::metadata(&path).unwrap().len(), whole);
    assert!(load(&path.with_file_name("missing"), false)
        .unwrap()
        .lines
        .is_empty());
}

#[test]
fn a_changed_byte_is_detected_by_the_checksum() {
    let path = fresh("crc");
    let j = Journal::open(&path, Fsync::Never).unwrap();
    j.write(&clock(5));
    j.write(&clock(6));
    drop(j);
    let text = std::fs::read_to_string(&path).unwrap();
    // Still valid JSON, still a valid line: only the checksum can tell.
    std::fs::write(&path, text.replacen("\"secs\":5", "\"secs\":7", 1)).unwrap();
    let err = load(&path, false).err().unwrap().to_string();
    assert!(
        err.contains("line 1 is damaged") && err.contains("checksum"),
        "{err}"
    );
}

#[test]
fn lines_without_a_checksum_from_older_versions_still_load() {
    let path = fresh("legacy");
    let old = serde_json::to_string(&clock(3)).unwrap();
    std::fs::write(&path, format!("{old}\n")).unwrap();
    let j = Journal::open(&path, Fsync::Never).unwrap();
    j.write(&clock(4));
    drop(j);
    assert_eq!(load(&path, false).unwrap().lines.len(), 2);
    // After a checksummed line, one without is damage.
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(format!("{old}\n").as_bytes()).unwrap();
    f.write_all(&encoded(&clock(9))).unwrap();
    assert!(load(&path, false).is_err());
}
