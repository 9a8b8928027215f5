//! The connections a server has open, told to finish when it stops: `serve` waits for them while
//! it drains.
//!
//! hyper-util's `GracefulShutdown` does the same with a watch channel that every connection
//! polls on every poll, several times a request, taking the channel's lock each time; here a
//! connection reads one flag and takes the lock only when its task's waker changes (for a
//! spawned task: on its first poll).

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;

use hyper_util::server::graceful::GracefulConnection;
use tokio::sync::Notify;

#[derive(Default)]
pub struct Drain {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    stopping: AtomicBool,
    conns: Mutex<Conns>,
    /// Told when the last connection goes after stopping began.
    gone: Notify,
}

#[derive(Default)]
struct Conns {
    next: u64,
    /// Each open connection's waker (`None` until it is first polled).
    wakers: HashMap<u64, Option<Waker>>,
}

impl Inner {
    fn conns(&self) -> MutexGuard<'_, Conns> {
        // A panic elsewhere while this was held leaves the map consistent: go on with it.
        self.conns.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A connection's place in the map, given up when the connection's future is dropped.
struct Place {
    inner: Arc<Inner>,
    id: u64,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut conns = self.inner.conns();
        conns.wakers.remove(&self.id);
        if conns.wakers.is_empty() && self.inner.stopping.load(Ordering::Acquire) {
            self.inner.gone.notify_waiters();
        }
    }
}

impl Drain {
    pub fn new() -> Drain {
        Drain::default()
    }

    /// `conn`, counted from now until it ends, and told to shut down gracefully (finish the
    /// request in hand, then close) once [`Drain::shutdown`] is called.
    pub fn watch<C: GracefulConnection>(&self, conn: C) -> impl Future<Output = C::Output> {
        let inner = self.inner.clone();
        let id = {
            let mut conns = inner.conns();
            let id = conns.next;
            conns.next += 1;
            conns.wakers.insert(id, None);
            id
        };
        let place = Place { inner, id };
        async move {
            let mut conn = std::pin::pin!(conn);
            let mut told = false;
            let mut known: Option<Waker> = None;
            std::future::poll_fn(|cx| {
                if !told {
                    // Registered before the flag is read: a shutdown that set the flag after this
                    // read finds the waker, one that set it before is seen here.
                    if !known.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        let w = cx.waker().clone();
                        if let Some(slot) = place.inner.conns().wakers.get_mut(&place.id) {
                            *slot = Some(w.clone());
                        }
                        known = Some(w);
                    }
                    if place.inner.stopping.load(Ordering::Acquire) {
                        told = true;
                        conn.as_mut().graceful_shutdown();
                    }
                }
                conn.as_mut().poll(cx)
            })
            .await
        }
    }

    /// Tell every connection to finish, and wait until all have.
    pub async fn shutdown(&self) {
        self.inner.stopping.store(true, Ordering::Release);
        let wakers: Vec<Waker> = self
            .inner
            .conns()
            .wakers
            .values()
            .flatten()
            .cloned()
            .collect();
        for w in wakers {
            w.wake();
        }
        loop {
            let gone = self.inner.gone.notified();
            let mut gone = std::pin::pin!(gone);
            // Listening before looking, so a last connection leaving in between is not missed.
            gone.as_mut().enable();
            if self.inner.conns().wakers.is_empty() {
                return;
            }
            gone.await;
        }
    }
}
