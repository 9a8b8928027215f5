//! doubleagent's own outbound HTTP calls (the CLI reading a running server's ledger; agents
//! delivering push notifications), over hyper-util's client. Plain `http://` only: doubleagent
//! talks to loopback peers and sidecars, never to the internet.

use std::sync::OnceLock;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("unsupported URL \"{0}\": expected http://HOST:PORT/...")]
    Url(String),
    #[error("cannot reach {0}: {1}")]
    Request(String, hyper_util::client::legacy::Error),
    #[error("HTTP error reading the answer from {0}: {1}")]
    Body(String, hyper::Error),
    #[error("bad request to {0}: {1}")]
    Build(String, hyper::http::Error),
    #[error("no answer from {0} within {1:?}")]
    Timeout(String, Duration),
}

/// A response, fully read.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: Bytes,
}

/// One client for the process: its pool keeps connections to a peer that is called often (push
/// receivers) open between calls.
fn client() -> &'static Client<HttpConnector, Full<Bytes>> {
    static CLIENT: OnceLock<Client<HttpConnector, Full<Bytes>>> = OnceLock::new();
    CLIENT.get_or_init(|| {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        Client::builder(TokioExecutor::new()).build(connector)
    })
}

/// Send one request and read the whole response, within `timeout` (wall clock: this bounds how
/// long doubleagent waits on a peer, not simulated time).
pub async fn send(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
    timeout: Duration,
) -> Result<Reply, ClientError> {
    let call = async {
        let uri: hyper::Uri = url.parse().map_err(|_| ClientError::Url(url.into()))?;
        if uri.scheme_str() != Some("http") || uri.host().is_none_or(str::is_empty) {
            return Err(ClientError::Url(url.into()));
        }
        let mut req = hyper::Request::builder().method(method).uri(uri);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| ClientError::Build(url.into(), e))?;
        let resp = client()
            .request(req)
            .await
            .map_err(|e| ClientError::Request(url.into(), e))?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| ClientError::Body(url.into(), e))?
            .to_bytes();
        Ok::<_, ClientError>(Reply {
            status,
            headers,
            body,
        })
    };
    let answered = tokio::time::timeout(timeout, call).await;
    answered.unwrap_or_else(|_| Err(ClientError::Timeout(url.into(), timeout)))
}
