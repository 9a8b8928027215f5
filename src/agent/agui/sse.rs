//! The SSE binding of AG-UI: one `data:` frame per event, and which `Accept` headers admit the
//! stream.

use super::event::Event;

pub const EVENT_STREAM_CONTENT_TYPE: &str = "text/event-stream";

/// One SSE frame appended to `out`: `data: <json>\n\n`, LF only. The JSON has no raw newline
/// (serde_json escapes them), so a frame is exactly one `data:` line.
pub fn write_sse_frame(out: &mut Vec<u8>, event: &Event) {
    out.extend_from_slice(b"data: ");
    // Events hold only strings, integers and JSON values, and serde_json's maps have string
    // keys: serializing them into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, event);
    out.extend_from_slice(b"\n\n");
}

/// Whether an `Accept` header lets the producer answer `text/event-stream`. `HttpAgent`
/// sends `text/event-stream`; TanStack's `fetchServerSentEvents` sends `*/*`; a missing
/// header accepts anything.
pub fn accepts_event_stream(accept: Option<&str>) -> bool {
    let Some(accept) = accept else { return true };
    // What clients send, settled without splitting.
    if accept == EVENT_STREAM_CONTENT_TYPE || accept.trim().is_empty() {
        return true;
    }
    crate::service::form::media_types(accept).any(|media| {
        media == "*/*"
            || media.eq_ignore_ascii_case("text/*")
            || media.eq_ignore_ascii_case(EVENT_STREAM_CONTENT_TYPE)
    })
}
