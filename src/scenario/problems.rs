//! A scenario's problems, located in its source: every issue found while loading, reported as
//! `file:line:col: key.path: message`, with "did you mean" hints for misspelled names.

use std::fmt;

use super::Issues;

/// One problem in a scenario, located in its source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// 1-based; 0 (with `col` 0) for a problem with no place in the source, e.g. a file that
    /// could not be read: it is printed without a position.
    pub line: usize,
    pub col: usize,
    /// `services.payments.routes[0].fates`; empty for document-level syntax errors.
    pub path: String,
    pub message: String,
}

impl Problem {
    /// A problem of the whole file, not of a place in it.
    pub fn unlocated(message: String) -> Problem {
        Problem {
            line: 0,
            col: 0,
            path: String::new(),
            message,
        }
    }
}

/// A scenario that failed to load: every problem found, with the file it came from.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    pub file: String,
    pub problems: Vec<Problem>,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            if p.line == 0 {
                write!(f, "{}: ", self.file)?;
            } else {
                write!(f, "{}:{}:{}: ", self.file, p.line, p.col)?;
            }
            if !p.path.is_empty() {
                write!(f, "{}: ", p.path)?;
            }
            write!(f, "{}", p.message)?;
        }
        Ok(())
    }
}

/// A serde path as a key path (`a.b[2].c`), leaving out the steps serde could not name.
pub(super) fn path_string(p: &serde_path_to_error::Path) -> String {
    steps_string(&p.iter().filter_map(step).collect::<Vec<_>>())
}

pub(super) fn locate_serde_error(src: &str, path: &str, e: &toml::de::Error) -> Problem {
    let (path, message) = explain(path, e);
    let offset = match e.span() {
        Some(span) => Some(span.start),
        None => toml::de::DeTable::parse(src)
            .ok()
            .and_then(|doc| find_in(&doc, &path)),
    };
    let (line, col) = offset.map_or((1, 1), |o| line_col(src, o));
    Problem {
        line,
        col,
        path,
        message,
    }
}

/// A serde error as (key path, message), naming an unknown key with a "did you mean".
pub(crate) fn explain(path: &str, e: &toml::de::Error) -> (String, String) {
    let mut message = e.message().trim().to_string();
    let mut path = path.to_string();
    if let Some((field, expected)) = parse_unknown(&message) {
        if !path.ends_with(&field) {
            path = if path.is_empty() {
                field.clone()
            } else {
                format!("{path}.{field}")
            };
        }
        message = format!(
            "unknown key `{field}`{}",
            did_you_mean(&field, expected.iter().map(String::as_str))
        );
        if !expected.is_empty() {
            message.push_str(&format!(" (expected one of: {})", expected.join(", ")));
        }
    } else if let Some(hint) = parse_unknown_variant(&message) {
        message.push_str(&hint);
    } else if let Some(rest) = message.strip_prefix("unknown fate \"") {
        let name = rest.split(['"', ':']).next().unwrap_or_default();
        let hint = did_you_mean(name, crate::fate::NAMES.iter().copied());
        if let Some(at) = message.find("; expected") {
            message.insert_str(at, &hint);
        }
    }
    (path, message)
}

/// Deserialize an agent's sub-table into its protocol's raw model, failures under `prefix`.
pub(crate) fn sub_table<T: serde::de::DeserializeOwned>(
    table: &toml::Table,
    prefix: &str,
    issues: &mut Issues,
) -> Option<T> {
    match serde_path_to_error::deserialize(toml::Value::Table(table.clone())) {
        Ok(v) => Some(v),
        Err(e) => {
            let sub = path_string(e.path());
            let full = if sub.is_empty() {
                prefix.to_string()
            } else if sub.starts_with('[') {
                format!("{prefix}{sub}")
            } else {
                format!("{prefix}.{sub}")
            };
            let (path, message) = explain(&full, e.inner());
            issues.add(path, message);
            None
        }
    }
}

/// `unknown field `x`, expected one of `a`, `b`` → ("x", ["a", "b"]).
fn parse_unknown(msg: &str) -> Option<(String, Vec<String>)> {
    let rest = msg.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    Some((field.to_string(), backticked(rest)))
}

fn parse_unknown_variant(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("unknown variant `")?;
    let (found, rest) = rest.split_once('`')?;
    Some(did_you_mean(
        found,
        backticked(rest).iter().map(String::as_str),
    ))
}

fn backticked(s: &str) -> Vec<String> {
    s.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// `; did you mean `fates`?` when a candidate is within a small edit distance: optimal string
/// alignment, where a swap of neighbours (`nmae`), the commonest typo, is one edit.
pub fn did_you_mean<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    candidates
        .map(|c| (strsim::osa_distance(word, c), c))
        .filter(|(d, c)| *d <= (c.len().max(word.len()) / 3).max(1))
        .min()
        .map(|(_, c)| format!("; did you mean `{c}`?"))
        .unwrap_or_default()
}

/// Locate every issue, parsing the document and indexing its lines once, so thousands of
/// problems are located in time linear in the scenario's size.
pub(super) fn locate_all(src: &str, issues: Issues) -> Vec<Problem> {
    let doc = toml::de::DeTable::parse(src).ok();
    let starts = line_starts(src);
    issues
        .0
        .into_iter()
        .map(|(path, message)| {
            let (line, col) = doc
                .as_ref()
                .and_then(|d| find_in(d, &path))
                .map_or((1, 1), |o| position(src, &starts, o));
            Problem {
                line,
                col,
                path,
                message,
            }
        })
        .collect()
}

/// Byte offset of the value (or key) at a `a.b[2].c` path in the document, if it exists.
fn find_in(doc: &toml::Spanned<toml::de::DeTable<'_>>, path: &str) -> Option<usize> {
    use toml::de::DeValue;
    let mut segs = Vec::new();
    for part in path.split('.') {
        let (key, mut rest) = part
            .split_once('[')
            .map(|(k, r)| (k, Some(r)))
            .unwrap_or((part, None));
        if !key.is_empty() {
            segs.push(Err(key.to_string()));
        }
        while let Some(r) = rest {
            let (idx, after) = r.split_once(']')?;
            segs.push(Ok(idx.parse::<usize>().ok()?));
            rest = after.strip_prefix('[');
        }
    }
    let mut best = doc.span().start;
    let mut table = Some(doc.get_ref());
    let mut array: Option<&toml::de::DeArray> = None;
    for seg in segs {
        let value = match (seg, table, array) {
            (Err(key), Some(t), _) => {
                let (k, v) = t.iter().find(|(k, _)| k.get_ref() == &key)?;
                best = k.span().start;
                v
            }
            (Ok(i), _, Some(a)) => {
                let v = a.get(i)?;
                best = v.span().start;
                v
            }
            _ => return Some(best),
        };
        table = None;
        array = None;
        match value.get_ref() {
            DeValue::Table(t) => table = Some(t),
            DeValue::Array(a) => array = Some(a),
            _ => {}
        }
    }
    Some(best)
}

/// 1-based line and column (in characters) of a byte offset.
pub(super) fn line_col(src: &str, offset: usize) -> (usize, usize) {
    position(src, &line_starts(src), offset)
}

fn line_starts(src: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(src.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

/// [`line_col`] with the lines' starts found once.
fn position(src: &str, starts: &[usize], offset: usize) -> (usize, usize) {
    let o = offset.min(src.len());
    let line = starts.partition_point(|&s| s <= o);
    let from = starts[line - 1];
    (line, src.get(from..o).map_or(0, |t| t.chars().count()) + 1)
}

/// One step of a key path: a table key (or an enum's variant) or an array index.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// Every shape problem of a document, not only the first: serde stops at the first failure,
/// so the offending value is taken out of a copy and the copy read again, until it reads or
/// nothing more can go. `first` is located by its span, the rest by path. A value a required
/// key needed goes with its table; the "missing field" that causes is not reported, nor is a
/// problem of an array an element was taken out of.
pub(super) fn every_shape_problem<T: serde::de::DeserializeOwned>(
    src: &str,
    first: Problem,
) -> Vec<Problem> {
    const MAX_PROBLEMS: usize = 100;
    let mut problems = vec![first];
    let Ok(mut doc) = src.parse::<toml::Table>() else {
        return problems;
    };
    // Array elements taken out, by the array's original path: later paths are reported in the
    // document's own indices, not the shrunk copy's.
    let mut holes: Vec<(Vec<Step>, usize)> = Vec::new();
    let mut taken: Vec<Vec<Step>> = Vec::new();
    while problems.len() < MAX_PROBLEMS {
        let Err(e) = serde_path_to_error::deserialize::<_, T>(toml::Value::Table(doc.clone()))
        else {
            break;
        };
        let Some(mut current) = steps(e.path()) else {
            break;
        };
        let mut at = original(&current, &holes);
        let inner = e.into_inner();
        let message = inner.message().trim().to_string();
        let missing = message
            .strip_prefix("missing field `")
            .and_then(|r| r.split('`').next());
        let ours = missing.is_some_and(|f| {
            let mut p = at.clone();
            p.push(Step::Key(f.to_string()));
            taken.contains(&p)
        }) || shrunk(&at, &taken);
        if !ours {
            let p = locate_serde_error(src, &steps_string(&at), &inner);
            if !problems
                .iter()
                .any(|q| q.path == p.path && q.message == p.message)
            {
                problems.push(p);
            }
        }
        // An unknown key goes itself; a missing one takes its table; a bad value goes.
        if missing.is_none() {
            let named = |p: &[Step], f: &str| matches!(p.last(), Some(Step::Key(k)) if k == f);
            if let Some((field, _)) = parse_unknown(&message).filter(|(f, _)| !named(&current, f)) {
                current.push(Step::Key(field.clone()));
                at.push(Step::Key(field));
            }
        }
        if take_out(&mut doc, &current).is_none() {
            break;
        }
        if let (Some(Step::Index(i)), Some(Step::Index(_))) = (at.last(), current.last()) {
            holes.push((at[..at.len() - 1].to_vec(), *i));
        }
        taken.push(at);
    }
    // Top to bottom, as a reader fixes them.
    problems.sort_by_key(|p| (p.line, p.col));
    problems
}

/// Whether `at` is an array an element was taken out of: what is wrong with it now (e.g. "needs
/// at least one fate" once its only, invalid, fate went) is the copy's, not the document's.
fn shrunk(at: &[Step], taken: &[Vec<Step>]) -> bool {
    taken
        .iter()
        .any(|t| matches!(t.split_last(), Some((Step::Index(_), parent)) if parent == at))
}

/// One step of a serde path; `None` for a step serde could not name.
fn step(seg: &serde_path_to_error::Segment) -> Option<Step> {
    use serde_path_to_error::Segment;
    match seg {
        Segment::Seq { index } => Some(Step::Index(*index)),
        Segment::Map { key } | Segment::Enum { variant: key } => Some(Step::Key(key.clone())),
        Segment::Unknown => None,
    }
}

fn steps(p: &serde_path_to_error::Path) -> Option<Vec<Step>> {
    p.iter().map(step).collect()
}

fn steps_string(steps: &[Step]) -> String {
    let mut out = String::new();
    for s in steps {
        match s {
            Step::Index(i) => out.push_str(&format!("[{i}]")),
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
        }
    }
    out
}

/// A path in the shrunk copy, in the document's original array indices.
fn original(current: &[Step], holes: &[(Vec<Step>, usize)]) -> Vec<Step> {
    let mut out = Vec::with_capacity(current.len());
    for s in current {
        let step = match s {
            Step::Key(_) => s.clone(),
            Step::Index(i) => {
                let mut gone: Vec<usize> = holes
                    .iter()
                    .filter(|(array, _)| *array == out)
                    .map(|(_, j)| *j)
                    .collect();
                gone.sort_unstable();
                let mut at = *i;
                for j in gone {
                    if j <= at {
                        at += 1;
                    }
                }
                Step::Index(at)
            }
        };
        out.push(step);
    }
    out
}

/// Take the value at `path` out of the document (`None` if there is none).
fn take_out(doc: &mut toml::Table, path: &[Step]) -> Option<toml::Value> {
    let (last, parents) = path.split_last()?;
    // `None` only before the first step: each later one is inside the value found.
    let mut value: Option<&mut toml::Value> = None;
    for step in parents {
        value = Some(match (step, value.take()) {
            (Step::Key(k), None) => doc.get_mut(k),
            (Step::Key(k), Some(toml::Value::Table(t))) => t.get_mut(k),
            (Step::Index(i), Some(toml::Value::Array(a))) => a.get_mut(*i),
            _ => None,
        }?);
    }
    match (last, value) {
        (Step::Key(k), None) => doc.remove(k),
        (Step::Key(k), Some(toml::Value::Table(t))) => t.remove(k),
        (Step::Index(i), Some(toml::Value::Array(a))) if *i < a.len() => Some(a.remove(*i)),
        _ => None,
    }
}
