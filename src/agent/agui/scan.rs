//! The common `RunAgentInput` read without a `serde_json::Value` tree.
//!
//! Every run parsed its body twice over: into a `Value` (for the ledger, which keeps the body as
//! `serde_json` writes it back: compact, members in name order), then that tree into a
//! [`RunAgentInput`], and dropped both trees' worth of small allocations. [`scan`] reads the
//! shapes clients actually send (a user turn; a continuation with assistant tool calls and tool
//! results) in one pass over borrowed text: a flat node list, from which it writes the ledger's
//! text and builds the input.
//!
//! It declines (`None`) anything it does not handle exactly as the general path does, which then
//! reads the body as before, errors included: escapes in strings (their text would need
//! unescaping), numbers other than small integers (serde_json rewrites floats and `-0`), an
//! object repeating a member name, nesting deeper than [`MAX_DEPTH`], any member or message kind
//! it does not know (unknown members are warned about and stripped by the general path), a
//! `null` where the types refuse one, and any value of the wrong type.

use serde_json::{Map, Number, Value};

use super::wire::{
    AssistantMessage, Content, FunctionCall, FunctionKind, Message, RunAgentInput, TextMessage,
    ToolCall, ToolMessage, UserMessage,
};
use crate::template::escape_at;

/// Deeper documents go to the general path (serde_json's own limit is 128).
const MAX_DEPTH: usize = 32;

/// No node (end of a sibling list).
const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    True,
    False,
    /// An integer written as serde_json writes it back (`text`).
    Int,
    /// A string without escapes (`text` is its content).
    Str,
    Arr,
    Obj,
}

/// One value of the document; an object's or array's members are a list through `next`.
#[derive(Clone, Copy)]
struct Node<'a> {
    kind: Kind,
    text: &'a str,
    /// The member name, for a member of an object.
    key: &'a str,
    first: u32,
    next: u32,
}

/// A body read by [`scan`]: the input, and the body's JSON as the ledger keeps it.
pub(crate) struct Scanned {
    pub input: RunAgentInput,
    pub ledger_text: Vec<u8>,
}

/// Read `body` as a `RunAgentInput`, or `None` to leave it to the general path (see the module
/// docs). When `Some`, the input equals [`RunAgentInput::parse`]'s and the text equals
/// `serde_json::to_vec` of [`super::wire::parse_json`]'s tree.
pub(crate) fn scan(body: &[u8]) -> Option<Scanned> {
    let text = std::str::from_utf8(body).ok()?;
    let mut p = Parser {
        text,
        pos: 0,
        nodes: Vec::with_capacity(24),
    };
    let root = p.value(0)?;
    p.skip_ws();
    if p.pos != text.len() {
        return None;
    }
    let nodes = p.nodes;
    let mut ledger_text = Vec::with_capacity(body.len());
    let mut order = Vec::with_capacity(16);
    write(&nodes, root, &mut ledger_text, &mut order)?;
    let input = build(&nodes, root)?;
    Some(Scanned { input, ledger_text })
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    nodes: Vec<Node<'a>>,
}

impl<'a> Parser<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn skip_ws(&mut self) {
        let b = self.bytes();
        while self.pos < b.len() && matches!(b[self.pos], b' ' | b'\n' | b'\r' | b'\t') {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.pos).copied()
    }

    fn push(&mut self, kind: Kind, text: &'a str) -> u32 {
        self.nodes.push(Node {
            kind,
            text,
            key: "",
            first: NONE,
            next: NONE,
        });
        (self.nodes.len() - 1) as u32
    }

    fn value(&mut self, depth: usize) -> Option<u32> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.skip_ws();
        match self.peek()? {
            b'{' => self.container(Kind::Obj, b'}', depth),
            b'[' => self.container(Kind::Arr, b']', depth),
            b'"' => {
                let s = self.string()?;
                Some(self.push(Kind::Str, s))
            }
            b't' => self.literal("true", Kind::True),
            b'f' => self.literal("false", Kind::False),
            b'n' => self.literal("null", Kind::Null),
            b'-' | b'0'..=b'9' => self.integer(),
            _ => None,
        }
    }

    fn container(&mut self, kind: Kind, close: u8, depth: usize) -> Option<u32> {
        self.pos += 1;
        let node = self.push(kind, "");
        let mut last = NONE;
        self.skip_ws();
        if self.peek()? == close {
            self.pos += 1;
            return Some(node);
        }
        loop {
            let key = if kind == Kind::Obj {
                self.skip_ws();
                if self.peek()? != b'"' {
                    return None;
                }
                let key = self.string()?;
                self.skip_ws();
                if self.peek()? != b':' {
                    return None;
                }
                self.pos += 1;
                key
            } else {
                ""
            };
            let child = self.value(depth + 1)?;
            self.nodes[child as usize].key = key;
            if last == NONE {
                self.nodes[node as usize].first = child;
            } else {
                self.nodes[last as usize].next = child;
            }
            last = child;
            self.skip_ws();
            match self.peek()? {
                b',' => self.pos += 1,
                c if c == close => {
                    self.pos += 1;
                    return Some(node);
                }
                _ => return None,
            }
        }
    }

    /// A string's content, at its opening quote; `None` for escapes and control characters.
    fn string(&mut self) -> Option<&'a str> {
        let b = self.bytes();
        let start = self.pos + 1;
        let i = start + escape_at(b.get(start..)?)?;
        match b.get(i)? {
            b'"' => {
                self.pos = i + 1;
                // Both ends are ASCII quotes: char boundaries of the UTF-8 text.
                self.text.get(start..i)
            }
            _ => None,
        }
    }

    fn literal(&mut self, word: &'static str, kind: Kind) -> Option<u32> {
        if !self.text[self.pos..].starts_with(word) {
            return None;
        }
        self.pos += word.len();
        Some(self.push(kind, word))
    }

    /// `0` or `-?[1-9][0-9]{0,17}`, not followed by a fraction or exponent: written back as it
    /// is (larger ones, `-0`, floats: the general path).
    fn integer(&mut self) -> Option<u32> {
        let b = self.bytes();
        let start = self.pos;
        let mut i = start;
        if b[i] == b'-' {
            i += 1;
        }
        let digits = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let n = i - digits;
        if n == 0 || n > 18 || (b[digits] == b'0' && (n > 1 || digits > start)) {
            return None;
        }
        if i < b.len() && matches!(b[i], b'.' | b'e' | b'E') {
            return None;
        }
        self.pos = i;
        Some(self.push(Kind::Int, &self.text[start..i]))
    }
}

/// The members (or elements) of node `n`, with their positions.
fn children<'n, 'a>(
    nodes: &'n [Node<'a>],
    n: u32,
) -> impl Iterator<Item = (u32, &'n Node<'a>)> + 'n {
    let mut at = nodes[n as usize].first;
    std::iter::from_fn(move || {
        let here = at;
        let node = nodes.get(here as usize)?;
        at = node.next;
        Some((here, node))
    })
}

/// Node `n` as serde_json writes the equivalent `Value`: compact, members in name order;
/// `None` if an object repeats a member name. `order` is scratch space.
fn write(nodes: &[Node<'_>], n: u32, out: &mut Vec<u8>, order: &mut Vec<u32>) -> Option<()> {
    let node = &nodes[n as usize];
    match node.kind {
        Kind::Null | Kind::True | Kind::False | Kind::Int => {
            out.extend_from_slice(node.text.as_bytes())
        }
        Kind::Str => {
            // No escapes and no control characters: serde_json writes it as it is.
            out.push(b'"');
            out.extend_from_slice(node.text.as_bytes());
            out.push(b'"');
        }
        Kind::Arr => {
            out.push(b'[');
            let mut at = node.first;
            while at != NONE {
                if at != node.first {
                    out.push(b',');
                }
                write(nodes, at, out, order)?;
                at = nodes[at as usize].next;
            }
            out.push(b']');
        }
        Kind::Obj => {
            let base = order.len();
            let mut at = node.first;
            while at != NONE {
                order.push(at);
                at = nodes[at as usize].next;
            }
            order[base..].sort_unstable_by(|a, b| {
                nodes[*a as usize]
                    .key
                    .as_bytes()
                    .cmp(nodes[*b as usize].key.as_bytes())
            });
            let end = order.len();
            out.push(b'{');
            for i in base..end {
                let m = order[i];
                let key = nodes[m as usize].key;
                if i > base {
                    if nodes[order[i - 1] as usize].key == key {
                        return None;
                    }
                    out.push(b',');
                }
                out.push(b'"');
                out.extend_from_slice(key.as_bytes());
                out.extend_from_slice(b"\":");
                write(nodes, m, out, order)?;
                // What the member wrote beyond `end` is its own scratch.
                order.truncate(end);
            }
            order.truncate(base);
            out.push(b'}');
        }
    }
    Some(())
}

/// Node `n` as a `Value` (for the members kept as trees: `state`, `forwardedProps`).
fn to_value(nodes: &[Node<'_>], n: u32) -> Option<Value> {
    let node = &nodes[n as usize];
    Some(match node.kind {
        Kind::Null => Value::Null,
        Kind::True => Value::Bool(true),
        Kind::False => Value::Bool(false),
        Kind::Int => Value::Number(match node.text.strip_prefix('-') {
            Some(_) => Number::from(node.text.parse::<i64>().ok()?),
            None => Number::from(node.text.parse::<u64>().ok()?),
        }),
        Kind::Str => Value::String(node.text.to_string()),
        Kind::Arr => Value::Array(
            children(nodes, n)
                .map(|(c, _)| to_value(nodes, c))
                .collect::<Option<_>>()?,
        ),
        Kind::Obj => {
            let mut map = Map::new();
            let mut at = node.first;
            while at != NONE {
                map.insert(nodes[at as usize].key.to_string(), to_value(nodes, at)?);
                at = nodes[at as usize].next;
            }
            Value::Object(map)
        }
    })
}

fn string(node: &Node<'_>) -> Option<String> {
    (node.kind == Kind::Str).then(|| node.text.to_string())
}

/// The input from the document's root; `None` for anything the typed parse might read otherwise.
fn build(nodes: &[Node<'_>], root: u32) -> Option<RunAgentInput> {
    if nodes[root as usize].kind != Kind::Obj {
        return None;
    }
    let (mut thread_id, mut run_id, mut messages) = (None, None, None);
    let mut input = RunAgentInput::new(String::new(), String::new());
    for (at, m) in children(nodes, root) {
        match m.key {
            "threadId" => thread_id = Some(string(m)?),
            "runId" => run_id = Some(string(m)?),
            "protocolVersion" => input.protocol_version = Some(string(m)?),
            "parentRunId" => input.parent_run_id = Some(string(m)?),
            "state" => {
                input.state = match m.kind {
                    Kind::Null => None,
                    _ => Some(to_value(nodes, at)?),
                }
            }
            "forwardedProps" if m.kind != Kind::Null => {
                input.forwarded_props = Some(to_value(nodes, at)?)
            }
            "messages" if m.kind == Kind::Arr => {
                messages = Some(
                    children(nodes, at)
                        .map(|(c, _)| message(nodes, c))
                        .collect::<Option<Vec<_>>>()?,
                )
            }
            // Tools and context entries are rare in a run's input: only empty lists here.
            "tools" | "context" if m.kind == Kind::Arr && m.first == NONE => {}
            _ => return None,
        }
    }
    input.thread_id = thread_id?;
    input.run_id = run_id?;
    input.messages = messages?;
    Some(input)
}

/// A message of the roles and members handled here; `None` for anything else.
fn message(nodes: &[Node<'_>], n: u32) -> Option<Message> {
    if nodes[n as usize].kind != Kind::Obj {
        return None;
    }
    let (_, role) = children(nodes, n).find(|(_, m)| m.key == "role")?;
    if role.kind != Kind::Str {
        return None;
    }
    let (mut id, mut content, mut name, mut tool_calls, mut tool_call_id, mut error) =
        (None, None, None, None, None, None);
    for (at, m) in children(nodes, n) {
        match m.key {
            "role" => {}
            "id" => id = Some(string(m)?),
            "content" => content = Some(string(m)?),
            "name" => name = Some(string(m)?),
            "toolCallId" => tool_call_id = Some(string(m)?),
            "error" => error = Some(string(m)?),
            "toolCalls" if m.kind == Kind::Arr => {
                tool_calls = Some(
                    children(nodes, at)
                        .map(|(c, _)| tool_call(nodes, c))
                        .collect::<Option<Vec<_>>>()?,
                )
            }
            _ => return None,
        }
    }
    let id = id?;
    Some(match role.text {
        "user" if tool_calls.is_none() && tool_call_id.is_none() && error.is_none() => {
            Message::User(UserMessage {
                id,
                content: Content::Text(content?),
                name,
                encrypted_value: None,
                subagent_run_id: None,
                metadata: None,
                extra: Map::new(),
            })
        }
        "system" | "developer"
            if tool_calls.is_none() && tool_call_id.is_none() && error.is_none() =>
        {
            let m = TextMessage {
                id,
                content: content?,
                name,
                encrypted_value: None,
                subagent_run_id: None,
                metadata: None,
                extra: Map::new(),
            };
            if role.text == "system" {
                Message::System(m)
            } else {
                Message::Developer(m)
            }
        }
        "assistant" if tool_call_id.is_none() && error.is_none() => {
            Message::Assistant(AssistantMessage {
                id,
                content,
                tool_calls,
                name,
                encrypted_value: None,
                subagent_run_id: None,
                metadata: None,
                extra: Map::new(),
            })
        }
        "tool" if tool_calls.is_none() && name.is_none() => Message::Tool(ToolMessage {
            id,
            content: Content::Text(content?),
            tool_call_id: tool_call_id?,
            error,
            encrypted_value: None,
            subagent_run_id: None,
            metadata: None,
            extra: Map::new(),
        }),
        _ => return None,
    })
}

/// `{id, type: "function", function: {name, arguments}}`, nothing else.
fn tool_call(nodes: &[Node<'_>], n: u32) -> Option<ToolCall> {
    if nodes[n as usize].kind != Kind::Obj {
        return None;
    }
    let (mut id, mut kind, mut function) = (None, None, None);
    for (at, m) in children(nodes, n) {
        match m.key {
            "id" => id = Some(string(m)?),
            "type" if m.kind == Kind::Str && m.text == "function" => {
                kind = Some(FunctionKind::Function)
            }
            "function" if m.kind == Kind::Obj => {
                let (mut name, mut arguments) = (None, None);
                for (_, f) in children(nodes, at) {
                    match f.key {
                        "name" => name = Some(string(f)?),
                        "arguments" => arguments = Some(string(f)?),
                        _ => return None,
                    }
                }
                function = Some(FunctionCall {
                    name: name?,
                    arguments: arguments?,
                    extra: Map::new(),
                });
            }
            _ => return None,
        }
    }
    Some(ToolCall {
        id: id?,
        kind: kind?,
        function: function?,
        encrypted_value: None,
        metadata: None,
        extra: Map::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::agui::wire::parse_json;

    /// Whatever `scan` accepts, the general path reads the same: the same input, and the same
    /// ledger text as serializing its tree.
    fn agrees(body: &str) -> bool {
        let Some(s) = scan(body.as_bytes()) else {
            return false;
        };
        let general = RunAgentInput::parse(body.as_bytes())
            .unwrap_or_else(|e| panic!("scan accepted what the general path refuses: {body}: {e}"));
        assert_eq!(s.input, general, "{body}");
        let (tree, repeats) = parse_json(body.as_bytes()).unwrap();
        assert!(!repeats, "{body}");
        assert_eq!(
            String::from_utf8(s.ledger_text).unwrap(),
            serde_json::to_string(&tree).unwrap(),
            "{body}"
        );
        true
    }

    #[test]
    fn common_inputs_are_scanned_as_the_general_path_reads_them() {
        for body in [
            // The benchmark's, and @ag-ui/client's first run.
            r#"{"threadId":"t-1","runId":"r-1","messages":[{"id":"m-1","role":"user","content":"pay the vendor"}],"tools":[],"context":[],"state":{}}"#,
            r#"{"threadId":"t","runId":"r","messages":[]}"#,
            " {\n \"runId\" : \"r\" ,\t\"threadId\":\"t\",\r\n\"messages\":[ ] } \n",
            r#"{"threadId":"t","runId":"r","messages":[],"state":null,"protocolVersion":"1.0","parentRunId":"p"}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"state":{"b":[1,-2,0,true,false,null,"x"],"a":{"z":{},"y":[]},"é":"ü ☃"},"forwardedProps":{"k":123456789012345678}}"#,
            // A continuation: assistant tool calls, their results, system and developer turns.
            r#"{"threadId":"t","runId":"r2","messages":[{"role":"system","id":"s","content":"be brief"},{"role":"developer","id":"d","content":"x","name":"n"},{"id":"m1","role":"user","content":"go","name":"ann"},{"id":"a1","role":"assistant","content":"ok","toolCalls":[{"id":"call-0-0-r1","type":"function","function":{"name":"transfer_funds","arguments":"{}"}}]},{"id":"a2","role":"assistant","toolCalls":[]},{"id":"t1","role":"tool","content":"done","toolCallId":"call-0-0-r1","error":"e"}],"state":{"n":1}}"#,
        ] {
            assert!(agrees(body), "not scanned: {body}");
        }
    }

    #[test]
    fn awkward_inputs_are_left_to_the_general_path() {
        for body in [
            "",
            "null",
            "[]",
            "{}",
            r#"{"threadId":"t","runId":"r"}"#,
            // Escapes, floats, big or signed-zero numbers, repeats, nulls where refused.
            r#"{"threadId":"t\u0041","runId":"r","messages":[]}"#,
            r#"{"threadId":"t\"","runId":"r","messages":[]}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"state":{"x":1.0}}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"state":{"x":1e3}}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"state":{"x":-0}}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"state":{"x":01}}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"state":{"x":12345678901234567890}}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"state":{"x":1,"x":2}}"#,
            r#"{"threadId":"t","threadId":"u","runId":"r","messages":[]}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"a","id":"n"}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"protocolVersion":null}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"parentRunId":null}"#,
            r#"{"threadId":null,"runId":"r","messages":[]}"#,
            r#"{"threadId":1,"runId":"r","messages":[]}"#,
            r#"{"threadId":"t","runId":"r","messages":{}}"#,
            // Unknown members, members and kinds handled only by the general path.
            r#"{"threadId":"t","runId":"r","messages":[],"data":{}}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"resume":[]}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"tools":[{"name":"x","description":"y"}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"context":[{"description":"x","value":"y"}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":[{"type":"text","text":"a"}]}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user"}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"role":"user","content":"a"}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"robot","content":"a"}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":1,"content":"a"}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","content":"a"}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"a","note":1}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"a","metadata":{}}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"tool","content":"a","toolCallId":"c","name":"x"}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"tool","content":"a"}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"a","toolCallId":"c"}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"assistant","content":null}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"assistant","toolCalls":[{"id":"c","type":"other","function":{"name":"f","arguments":"{}"}}]}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":"f"}}]}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}","x":1}}]}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"assistant","toolCalls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]}]}"#,
            // Malformed JSON.
            r#"{"threadId":"t","runId":"r","messages":[]"#,
            r#"{"threadId":"t","runId":"r","messages":[]}}"#,
            r#"{"threadId":"t","runId":"r","messages":[],}"#,
            r#"{"threadId":"t","runId":"r","messages":[1,]}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"state":tru}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"state":{"a" 1}}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"state":{1:1}}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"state":-}"#,
            "{\"threadId\":\"t\tx\",\"runId\":\"r\",\"messages\":[]}",
            "{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[]}\0",
        ] {
            assert!(!agrees(body), "scanned: {body}");
        }
        // Deep nesting, and bytes that are not UTF-8.
        let deep = format!(
            r#"{{"threadId":"t","runId":"r","messages":[],"state":{}{}}}"#,
            "[".repeat(40),
            "]".repeat(40)
        );
        assert!(!agrees(&deep));
        assert!(scan(b"{\"threadId\":\"t\xff\",\"runId\":\"r\",\"messages\":[]}").is_none());
    }
}
