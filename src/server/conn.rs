//! [`Conn`]: a TCP stream whose next write can be made to fail (a dropped response) or to reset
//! the connection, flipped by the request handler through a control cell the two share. hyper is
//! handed a placeholder response, and not one byte of it reaches the client.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

pub(crate) const NORMAL: u8 = 0;
pub(crate) const DROP: u8 = 1;
pub(crate) const RESET: u8 = 2;

/// A TCP stream whose next write can be made to fail (drop) or to reset the connection.
pub(crate) struct Conn {
    pub(crate) stream: TcpStream,
    pub(crate) ctl: Arc<AtomicU8>,
}

impl Conn {
    fn sabotage(&self) -> Option<io::Error> {
        match self.ctl.load(Ordering::Acquire) {
            NORMAL => None,
            RESET => {
                let _ = self.stream.set_zero_linger();
                Some(io::Error::new(
                    io::ErrorKind::ConnectionReset,
                    "fate: reset-after-apply",
                ))
            }
            _ => Some(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "fate: response dropped",
            )),
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let Some(e) = self.sabotage() {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(e) = self.sabotage() {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.stream).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(e) = self.sabotage() {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
