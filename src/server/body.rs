//! Response bodies and turning the service's [`Response`] into hyper's: whole (sent with its
//! length), streamed from an agent's channel, or cut off after the headers (an MCP event stream
//! whose answer is dropped).

use std::borrow::Cow;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use http_body_util::Full;
use hyper::body::{Body, Bytes, Frame, SizeHint};
use hyper::header::HeaderName;
use tokio::sync::mpsc;

use crate::service::Response;

/// A response body: whole (most responses: sent with its length), or streamed (an agent's
/// events). An enum rather than a boxed body: a box is an allocation on every response.
pub(crate) enum HttpBody {
    Full(Full<Bytes>),
    Channel(ChannelBody),
    Ready(ReadyBody),
    Cut(CutBody),
}

/// The error a [`CutBody`] ends with: hyper then closes the connection without ending the body,
/// as a server that crashed mid-response would.
#[derive(Debug, thiserror::Error)]
#[error("response stream cut off on purpose (a dropped answer)")]
pub(crate) struct Cut;

/// Headers (and `lead`, events before the answer), then the connection closed mid-stream. It
/// waits one turn before the cut, so that hyper flushes what went before (a cut in the same
/// turn would lose it with the rest).
pub(crate) struct CutBody {
    lead: Option<Bytes>,
    waited: bool,
    clean: bool,
}

impl CutBody {
    /// `clean`: the body ends normally after `lead` instead of failing (a stream closed on
    /// purpose, whose client is expected to resume it).
    pub(crate) fn after(lead: Option<Bytes>, clean: bool) -> CutBody {
        CutBody {
            lead,
            waited: false,
            clean,
        }
    }
}

impl Body for CutBody {
    type Data = Bytes;
    type Error = Cut;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Cut>>> {
        if let Some(lead) = self.lead.take().filter(|l| !l.is_empty()) {
            return Poll::Ready(Some(Ok(Frame::data(lead))));
        }
        if self.waited {
            return Poll::Ready((!self.clean).then_some(Err(Cut)));
        }
        self.waited = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// A body that never fails, as one of [`HttpBody`]'s.
fn infallible<F>(p: Poll<Option<Result<F, Infallible>>>) -> Poll<Option<Result<F, Cut>>> {
    p.map(|o| o.map(|r| r.map_err(|never| match never {})))
}

impl HttpBody {
    pub(crate) fn full(bytes: impl Into<Bytes>) -> HttpBody {
        HttpBody::Full(Full::new(bytes.into()))
    }
}

impl Body for HttpBody {
    type Data = Bytes;
    type Error = Cut;
    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Cut>>> {
        match self.get_mut() {
            HttpBody::Full(b) => infallible(Pin::new(b).poll_frame(cx)),
            HttpBody::Channel(b) => infallible(Pin::new(b).poll_frame(cx)),
            HttpBody::Ready(b) => infallible(Pin::new(b).poll_frame(cx)),
            HttpBody::Cut(b) => Pin::new(b).poll_frame(cx),
        }
    }

    // Only a whole body knows its end and size; the streamed ones keep `Body`'s defaults.
    fn is_end_stream(&self) -> bool {
        match self {
            HttpBody::Full(b) => b.is_end_stream(),
            _ => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            HttpBody::Full(b) => b.size_hint(),
            _ => SizeHint::default(),
        }
    }
}

/// A response body fed by a channel: each message is one frame, sent as soon as it arrives.
pub(crate) struct ChannelBody(pub(crate) mpsc::Receiver<Bytes>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|m| m.map(|b| Ok(Frame::data(b))))
    }
}

/// A stream body that was whole before the response started (an agent's
/// [`Reply::Ready`]): one frame, then the end. No size hint, so it goes out chunked like a
/// [`ChannelBody`].
pub(crate) struct ReadyBody(pub(crate) Option<Bytes>);

impl Body for ReadyBody {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        // No empty data frame (hyper writes none): an empty body is just the end.
        Poll::Ready(
            self.0
                .take()
                .filter(|b| !b.is_empty())
                .map(|b| Ok(Frame::data(b))),
        )
    }
}

pub(crate) fn to_hyper(r: Response) -> hyper::Response<HttpBody> {
    match build(r.status, r.headers, HttpBody::full(r.body)) {
        Ok(resp) => resp,
        Err(e) => {
            let r = build_error(e);
            let mut resp = hyper::Response::new(HttpBody::full(r.body));
            *resp.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
            resp
        }
    }
}

/// An agent's streamed reply as a hyper response (a 500 if a header cannot be sent).
pub(crate) fn streamed(
    status: u16,
    headers: Vec<crate::idempotency::Header>,
    body: HttpBody,
) -> hyper::Response<HttpBody> {
    build(status, headers, body).unwrap_or_else(|e| to_hyper(build_error(e)))
}

/// A hyper response from its parts. Header values take over their strings' buffers (no copy);
/// static names and values are used as they are.
fn build<K, V>(
    status: u16,
    headers: Vec<(K, V)>,
    body: HttpBody,
) -> Result<hyper::Response<HttpBody>, hyper::http::Error>
where
    K: Into<Cow<'static, str>>,
    V: Into<Cow<'static, str>>,
{
    let mut resp = hyper::Response::new(body);
    *resp.status_mut() = hyper::StatusCode::from_u16(status)?;
    let map = resp.headers_mut();
    map.reserve(headers.len());
    for (k, v) in headers {
        let name = header_name(&k.into())?;
        let value = match v.into() {
            // The usual ones, checked at compile time.
            Cow::Borrowed("application/json") => APPLICATION_JSON,
            Cow::Borrowed("true") => TRUE,
            // Checked once, as hyper checks any value (a bad one is an error, not a panic).
            Cow::Borrowed(v) => {
                hyper::header::HeaderValue::from_maybe_shared(Bytes::from_static(v.as_bytes()))?
            }
            Cow::Owned(v) => hyper::header::HeaderValue::from_maybe_shared(Bytes::from(v))?,
        };
        map.append(name, value);
    }
    Ok(resp)
}

const APPLICATION_JSON: hyper::header::HeaderValue =
    hyper::header::HeaderValue::from_static("application/json");
const TRUE: hyper::header::HeaderValue = hyper::header::HeaderValue::from_static("true");
/// The replay header of the presets that have one (`idempotency::Policy`), on every replay.
const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// A response header's name; the two every replay or JSON answer carries are not parsed again.
fn header_name(k: &str) -> Result<HeaderName, hyper::header::InvalidHeaderName> {
    if k.eq_ignore_ascii_case("content-type") {
        return Ok(hyper::header::CONTENT_TYPE);
    }
    if k.eq_ignore_ascii_case("idempotent-replayed") {
        return Ok(IDEMPOTENT_REPLAYED);
    }
    HeaderName::from_bytes(k.as_bytes())
}

/// Only a scenario header value hyper refuses can fail a response build; say so, don't panic.
fn build_error(e: hyper::http::Error) -> Response {
    Response::own_error(
        500,
        format_args!("doubleagent could not build the response: {e}"),
    )
}
