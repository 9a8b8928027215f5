//! A minimal HTTP/1.1 client over hyper's connection API, for doubleagent's own outbound calls
//! (the CLI reading a running server's ledger; agents delivering push notifications). Plain
//! `http://` only: doubleagent talks to loopback peers and sidecars, never to the internet.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use tokio::net::TcpStream;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("unsupported URL \"{0}\": expected http://HOST:PORT/...")]
    Url(String),
    #[error("cannot connect to {0}: {1}")]
    Connect(String, std::io::Error),
    #[error("HTTP error talking to {0}: {1}")]
    Http(String, hyper::Error),
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

/// `http://host:port/path?q` → (`host:port`, `/path?q`).
pub fn split_url(url: &str) -> Result<(String, String), ClientError> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| ClientError::Url(url.into()))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() {
        return Err(ClientError::Url(url.into()));
    }
    let authority = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    Ok((authority, path.to_string()))
}

/// Send one request on a fresh connection and read the whole response, within `timeout`
/// (wall clock: this bounds how long doubleagent waits on a peer, not simulated time).
pub async fn send(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
    timeout: Duration,
) -> Result<Reply, ClientError> {
    match tokio::time::timeout(timeout, send_now(method, url, headers, body)).await {
        Ok(r) => r,
        Err(_) => Err(ClientError::Timeout(url.into(), timeout)),
    }
}

async fn send_now(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Result<Reply, ClientError> {
    let (authority, path) = split_url(url)?;
    let stream = TcpStream::connect(&authority)
        .await
        .map_err(|e| ClientError::Connect(authority.clone(), e))?;
    let io = hyper_util::rt::TokioIo::new(stream);
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| ClientError::Http(url.into(), e))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut req = hyper::Request::builder()
        .method(method)
        .uri(&path)
        .header("host", &authority);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| ClientError::Build(url.into(), e))?;
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| ClientError::Http(url.into(), e))?;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| ClientError::Http(url.into(), e))?
        .to_bytes();
    Ok(Reply {
        status,
        headers,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_authority_and_path() {
        assert_eq!(
            split_url("http://127.0.0.1:7070/a?b=1").unwrap(),
            ("127.0.0.1:7070".into(), "/a?b=1".into())
        );
        assert_eq!(
            split_url("http://localhost").unwrap(),
            ("localhost:80".into(), "/".into())
        );
        assert!(split_url("https://x").is_err());
        assert!(split_url("http:///x").is_err());
    }
}
