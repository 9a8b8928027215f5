//! [`Conn`]: a TCP stream whose next write can be made to fail (a dropped response) or to reset
//! the connection, flipped by the request handler through a control cell the two share. hyper is
//! handed a placeholder response, and not one byte of it reaches the client.
//!
//! The same cell keeps a client that half-closes after sending (`shutdown(SHUT_WR)`, as
//! `curl --data @- < file` and some SDKs do) from losing its request: hyper treats an end of
//! input on a busy connection as the client gone and drops the handler, so while a request's
//! body is being read the end of input is held back from hyper. Once the body is in, it is let
//! through: a client that leaves while a response is deliberately delayed is still seen as gone.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::sync::unpoisoned;

pub(crate) const NORMAL: u8 = 0;
pub(crate) const DROP: u8 = 1;
pub(crate) const RESET: u8 = 2;

/// What a connection's request handler and its socket share.
#[derive(Default)]
pub(crate) struct ConnCtl {
    fate: AtomicU8,
    eof: Mutex<Eof>,
}

/// The end of input, as seen while a request is in flight.
#[derive(Default)]
struct Eof {
    /// A request is being read: an end of input is not passed to hyper yet.
    hold: bool,
    /// hyper's read, parked on an end of input held back.
    parked: Option<Waker>,
    /// The handler, waiting for body bytes that may never come.
    reader: Option<Waker>,
}

impl ConnCtl {
    /// Make the next write fail: [`DROP`] or [`RESET`].
    pub(crate) fn sabotage(&self, how: u8) {
        self.fate.store(how, Ordering::Release);
    }

    /// A request has arrived: hold back an end of input until [`ConnCtl::release`].
    pub(crate) fn hold(self: &Arc<Self>) -> Release {
        let mut eof = unpoisoned(self.eof.lock());
        *eof = Eof {
            hold: true,
            ..Eof::default()
        };
        Release(self.clone())
    }

    /// Let an end of input through (idempotent).
    pub(crate) fn release(&self) {
        let parked = {
            let mut eof = unpoisoned(self.eof.lock());
            eof.hold = false;
            eof.reader = None;
            eof.parked.take()
        };
        if let Some(w) = parked {
            w.wake();
        }
    }

    /// The handler's body read is pending: if the input has already ended, the rest of the
    /// body will never come, so let hyper see the end (it then fails the body); otherwise be
    /// woken if it ends.
    pub(crate) fn body_pending(&self, waker: &Waker) {
        let ended = {
            let mut eof = unpoisoned(self.eof.lock());
            if eof.parked.is_none() {
                eof.reader = Some(waker.clone());
            }
            eof.parked.is_some()
        };
        if ended {
            self.release();
        }
    }

    /// hyper read an end of input: true if it is held back (and hyper's waker parked).
    fn park_eof(&self, waker: &Waker) -> bool {
        let reader = {
            let mut eof = unpoisoned(self.eof.lock());
            if !eof.hold {
                return false;
            }
            eof.parked = Some(waker.clone());
            eof.reader.take()
        };
        if let Some(w) = reader {
            w.wake();
        }
        true
    }
}

/// Releases the hold when a request's handling ends, however it ends.
pub(crate) struct Release(Arc<ConnCtl>);

impl Drop for Release {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// A TCP stream whose next write can be made to fail (drop) or to reset the connection.
pub(crate) struct Conn {
    pub(crate) stream: TcpStream,
    pub(crate) ctl: Arc<ConnCtl>,
}

impl Conn {
    fn sabotage(&self) -> Option<io::Error> {
        match self.ctl.fate.load(Ordering::Acquire) {
            NORMAL => None,
            RESET => {
                // Without it the close is a FIN instead of a reset: still a lost answer.
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
        let (before, room) = (buf.filled().len(), buf.remaining() > 0);
        let read = Pin::new(&mut self.stream).poll_read(cx, buf);
        let ended = matches!(read, Poll::Ready(Ok(()))) && room && buf.filled().len() == before;
        if ended && self.ctl.park_eof(cx.waker()) {
            return Poll::Pending;
        }
        read
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
