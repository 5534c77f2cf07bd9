//! The HTTP server: accepts connections under a cap, with timeouts, and serves the router
//! on each (HTTP/1.1 and websocket upgrades).
//!
//! # Why not `axum::serve`
//! It has no header-read or idle timeout and no connection cap: 1,100 half-open requests
//! held every file descriptor of a relay under systemd's usual limit of 1,024, HTTP was
//! down for everyone and journal writes failed with "Too many open files". Here:
//!
//! - **Timeouts.** hyper's `header_read_timeout` ([`ServerLimits::header_timeout`]) runs
//!   from the connection's opening, and again from the end of each response, until a whole
//!   request head has arrived: a half-open request and an idle keep-alive connection are
//!   both closed after it. A request's handling, its body included, has
//!   [`ServerLimits::request_timeout`] (then `408`).
//! - **A cap on open sockets** ([`ServerLimits::max_connections`]), websockets included
//!   (the count follows the socket through the upgrade). At the cap, a new connection
//!   closes the oldest *idle* one (no request in progress, not a websocket): half-open
//!   connections cannot lock a normal client out, they only push each other out. When
//!   every connection is busy, the new one gets a `503` and is closed.
//! - **File descriptors.** [`FdBudget`] reads `RLIMIT_NOFILE` at start (raising the soft
//!   limit to the hard one, at most [`FD_TARGET`]), keeps room for ports, journals and PGN
//!   files, and sizes the connection cap and the subscriber cap under the rest.
//!
//! The peer's address goes into each request as axum's `ConnectInfo<SocketAddr>`.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use axum::response::{IntoResponse, Response};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::shutdown::Listener;

/// The soft file descriptor limit the relay raises itself to, when the hard limit allows.
pub const FD_TARGET: u64 = 65_536;
/// File descriptors kept for the process itself: standard streams, the runtime's epoll
/// and event descriptors, the listener, signal handling, name resolution.
pub const FD_BASE: u64 = 64;
/// File descriptors kept per board: its port, its journal, a PGN file being written, one
/// spare (a simulated board's pseudo-terminal in the demo).
pub const FD_PER_BOARD: u64 = 4;
/// Boards assumed at least when sizing, for boards found later (`--discover`).
pub const MIN_BOARDS: u64 = 32;
/// The least number of connections the relay accepts.
pub const MIN_CONNECTIONS: usize = 16;

/// Limits of the HTTP server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerLimits {
    /// Most open connections (HTTP and websockets).
    pub max_connections: usize,
    /// Longest wait for a request head, from the opening or the previous response.
    pub header_timeout: Duration,
    /// Longest handling of one request (reading its body included).
    pub request_timeout: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_connections: 1000,
            header_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
        }
    }
}

/// How the process's file descriptors are shared out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FdBudget {
    /// The soft limit in force (after raising it).
    pub limit: u64,
    /// The soft limit found at start, when it was raised.
    pub raised_from: Option<u64>,
    /// Kept for the process, ports and files.
    pub reserve: u64,
    /// Most open connections.
    pub max_connections: usize,
    /// Most websocket subscribers.
    pub max_subscribers: usize,
}

impl FdBudget {
    /// Shares out `limit` descriptors for `boards` boards (at least [`MIN_BOARDS`]): a
    /// reserve for the process and the boards, connections under the rest (or the
    /// configured number, when it fits), and subscribers under the connections, leaving an
    /// eighth of them (at least 8) to plain HTTP.
    pub fn plan(
        limit: u64,
        raised_from: Option<u64>,
        boards: usize,
        connections: Option<usize>,
        subscribers: usize,
    ) -> FdBudget {
        let reserve = FD_BASE + FD_PER_BOARD * (boards as u64).max(MIN_BOARDS);
        let room = usize::try_from(limit.saturating_sub(reserve)).unwrap_or(usize::MAX).max(MIN_CONNECTIONS);
        let max_connections = connections.map_or(room, |c| c.min(room)).max(MIN_CONNECTIONS);
        let http = (max_connections / 8).max(8);
        let max_subscribers = subscribers.min(max_connections.saturating_sub(http)).max(1);
        FdBudget { limit, raised_from, reserve, max_connections, max_subscribers }
    }
}

/// Reads `RLIMIT_NOFILE` and raises the soft limit to the hard one (at most
/// [`FD_TARGET`]); returns the soft limit in force and the one found, if it was raised.
pub fn fd_limit() -> (u64, Option<u64>) {
    #[cfg(unix)]
    {
        use nix::sys::resource::{Resource, getrlimit, setrlimit};
        let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else { return (1024, None) };
        let want = hard.min(FD_TARGET);
        if want > soft && setrlimit(Resource::RLIMIT_NOFILE, want, hard).is_ok() {
            return (want, Some(soft));
        }
        (soft, None)
    }
    #[cfg(not(unix))]
    {
        (1024, None)
    }
}

/// One open connection, as the cap sees it.
#[derive(Debug, Default)]
struct ConnState {
    /// Requests being handled.
    busy: AtomicUsize,
    /// Upgraded to a websocket: never closed to make room.
    upgraded: AtomicBool,
    /// Told to close (to make room for a new connection); still counted until it has.
    evicting: AtomicBool,
    /// Tells its task to close it.
    evict: Notify,
}

impl ConnState {
    fn idle(&self) -> bool {
        self.busy.load(Ordering::Acquire) == 0
            && !self.upgraded.load(Ordering::Acquire)
            && !self.evicting.load(Ordering::Acquire)
    }
}

#[derive(Debug, Default)]
struct ConnsInner {
    next: u64,
    /// Open connections by id: oldest first.
    open: BTreeMap<u64, Arc<ConnState>>,
    /// Connections closed to make room, and refused, since the last log line.
    evicted: u64,
    refused: u64,
    last_log: Option<Instant>,
}

/// The open connections and their cap.
#[derive(Debug)]
pub struct Connections {
    max: usize,
    inner: Mutex<ConnsInner>,
    /// Woken when a connection has closed.
    closed: Notify,
}

/// A counted connection; dropping it (with its socket) frees its place.
#[derive(Debug)]
pub struct ConnGuard {
    conns: Arc<Connections>,
    id: u64,
    state: Arc<ConnState>,
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.conns.lock().open.remove(&self.id);
        self.conns.closed.notify_waiters();
    }
}

impl Connections {
    /// At most `max` connections.
    pub fn new(max: usize) -> Arc<Connections> {
        Arc::new(Connections {
            max: max.max(1),
            inner: Mutex::new(ConnsInner::default()),
            closed: Notify::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ConnsInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Open connections.
    pub fn open(&self) -> usize {
        self.lock().open.len()
    }

    /// The cap.
    pub fn max(&self) -> usize {
        self.max
    }

    /// A place for a new connection: a free one, or the oldest idle connection's, once it
    /// has closed (a connection is counted until its socket is closed, so the sockets open
    /// never exceed the cap by more than the one just accepted). `None` when every
    /// connection is busy, or no place came free within a second.
    async fn admit(self: &Arc<Self>) -> Option<ConnGuard> {
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            let closed = self.closed.notified();
            tokio::pin!(closed);
            closed.as_mut().enable();
            {
                let mut inner = self.lock();
                if inner.open.len() < self.max {
                    inner.next += 1;
                    let id = inner.next;
                    let state = Arc::new(ConnState::default());
                    inner.open.insert(id, Arc::clone(&state));
                    return Some(ConnGuard { conns: Arc::clone(self), id, state });
                }
                let waiting = inner.open.values().any(|c| c.evicting.load(Ordering::Acquire));
                if !waiting {
                    match inner.open.values().find(|c| c.idle()).cloned() {
                        Some(old) => {
                            old.evicting.store(true, Ordering::Release);
                            old.evict.notify_one();
                            inner.evicted += 1;
                            Connections::log_pressure(&mut inner, self.max);
                        }
                        None => {
                            inner.refused += 1;
                            Connections::log_pressure(&mut inner, self.max);
                            return None;
                        }
                    }
                }
            }
            if tokio::time::timeout_at(deadline, closed).await.is_err() {
                let mut inner = self.lock();
                inner.refused += 1;
                Connections::log_pressure(&mut inner, self.max);
                return None;
            }
        }
    }

    /// At most one line every 10 s while connections are closed or refused at the cap.
    fn log_pressure(inner: &mut ConnsInner, max: usize) {
        let now = Instant::now();
        if inner.last_log.is_some_and(|t| now.duration_since(t) < Duration::from_secs(10)) {
            return;
        }
        inner.last_log = Some(now);
        tracing::warn!(
            max_connections = max,
            closed_idle = inner.evicted,
            refused = inner.refused,
            "connection cap reached: idle connections closed to make room, or new ones refused when all are busy"
        );
        inner.evicted = 0;
        inner.refused = 0;
    }
}

/// A socket that holds its place under the cap for as long as it is open, through a
/// websocket upgrade too.
struct Counted {
    io: TcpStream,
    _guard: ConnGuard,
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

/// The socket under an upgraded connection (a websocket), with the bytes the server read
/// past the upgrade request and what holds the connection's place under the cap (to keep
/// for as long as the socket is open). Connections of this server and of `axum::serve`
/// are TCP sockets; `None` for anything else.
pub fn upgraded_socket(upgraded: hyper::upgrade::Upgraded) -> Option<(TcpStream, Bytes, Option<ConnGuard>)> {
    match upgraded.downcast::<TokioIo<Counted>>() {
        Ok(parts) => {
            let Counted { io, _guard } = parts.io.into_inner();
            Some((io, parts.read_buf, Some(_guard)))
        }
        Err(upgraded) => {
            let parts = upgraded.downcast::<TokioIo<TcpStream>>().ok()?;
            Some((parts.io.into_inner(), parts.read_buf, None))
        }
    }
}

/// Marks a connection busy while a request is handled.
struct Busy(Arc<ConnState>);

impl Busy {
    fn new(state: &Arc<ConnState>) -> Busy {
        state.busy.fetch_add(1, Ordering::AcqRel);
        Busy(Arc::clone(state))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The router for one connection: adds the peer's address, counts the request as busy,
/// times it out, and notes a websocket upgrade.
#[derive(Clone)]
struct ConnService {
    router: Router,
    peer: SocketAddr,
    state: Arc<ConnState>,
    request_timeout: Duration,
}

impl hyper::service::Service<Request<Incoming>> for ConnService {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let busy = Busy::new(&self.state);
        let mut req = req.map(axum::body::Body::new);
        req.extensions_mut().insert(ConnectInfo(self.peer));
        let mut router = self.router.clone();
        let call = tower_service::Service::call(&mut router, req);
        let timeout = self.request_timeout;
        Box::pin(async move {
            let response = match tokio::time::timeout(timeout, call).await {
                Ok(Ok(r)) => r,
                Ok(Err(never)) => match never {},
                Err(_) => (StatusCode::REQUEST_TIMEOUT, "request not completed in time\n").into_response(),
            };
            if response.status() == StatusCode::SWITCHING_PROTOCOLS {
                busy.0.upgraded.store(true, Ordering::Release);
            }
            drop(busy);
            Ok(response)
        })
    }
}

/// What a refused connection is told before it is closed.
const BUSY_RESPONSE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\n\
Content-Type: text/plain\r\nContent-Length: 21\r\n\r\ntoo many connections\n";

/// Serves `router` on `listener` until `stop`, then closes idle connections and lets the
/// busy ones finish (websocket clients close on the same signal). Returns once every
/// connection task has ended.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ServerLimits,
    conns: Arc<Connections>,
    mut stop: Listener,
) {
    let mut tasks = tokio::task::JoinSet::new();
    let mut last_accept_error: Option<Instant> = None;
    loop {
        let accepted = tokio::select! {
            () = stop.wait() => break,
            a = listener.accept() => a,
        };
        while tasks.try_join_next().is_some() {}
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of descriptors (EMFILE, ENFILE) or a connection gone before it was
                // taken: wait a little, never spin.
                let now = Instant::now();
                if last_accept_error.is_none_or(|t| now.duration_since(t) >= Duration::from_secs(10)) {
                    last_accept_error = Some(now);
                    tracing::warn!(error = %e, "cannot accept a connection");
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // TCP_NODELAY: feed frames are small and latency matters; without it a frame
        // written while an earlier one is unacknowledged waits (Nagle) for the ACK.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        let Some(guard) = conns.admit().await else {
            let _ = stream.try_write(BUSY_RESPONSE);
            continue;
        };
        let state = Arc::clone(&guard.state);
        let service = ConnService {
            router: router.clone(),
            peer,
            state: Arc::clone(&state),
            request_timeout: limits.request_timeout,
        };
        let io = TokioIo::new(Counted { io: stream, _guard: guard });
        let mut stopping = stop.clone();
        let header_timeout = limits.header_timeout;
        tasks.spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .max_buf_size(64 * 1024)
                .keep_alive(true);
            let conn = builder.serve_connection(io, service).with_upgrades();
            tokio::pin!(conn);
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                }
                () = state.evict.notified() => {
                    tracing::debug!(%peer, "idle connection closed to make room");
                }
                () = stopping.wait() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
    drop(listener);
    while tasks.join_next().await.is_some() {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busy_answer_is_well_formed() {
        let text = std::str::from_utf8(BUSY_RESPONSE).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 "));
        assert!(head.contains(&format!("Content-Length: {}", body.len())), "{text}");
    }

    #[test]
    fn the_budget_fits_under_the_limit() {
        // systemd's usual soft limit, 1,024, with the default 2,000 subscribers.
        let b = FdBudget::plan(1024, None, 4, None, 2000);
        assert_eq!(b.reserve, FD_BASE + FD_PER_BOARD * MIN_BOARDS);
        assert_eq!(b.max_connections, 1024 - 192);
        assert_eq!(b.max_subscribers, 832 - 104);
        assert!(b.reserve + b.max_connections as u64 <= 1024);
        // 100 boards keep more for ports and journals.
        let b = FdBudget::plan(1024, None, 100, None, 2000);
        assert_eq!(b.max_connections, 1024 - 464);
        // A configured cap that fits is kept; one that does not is lowered.
        assert_eq!(FdBudget::plan(65_536, Some(1024), 4, Some(5000), 2000).max_connections, 5000);
        assert_eq!(FdBudget::plan(65_536, None, 4, None, 2000).max_subscribers, 2000);
        assert_eq!(FdBudget::plan(1024, None, 4, Some(5000), 2000).max_connections, 832);
        // A tiny limit still accepts a few connections.
        let b = FdBudget::plan(100, None, 4, None, 2000);
        assert_eq!((b.max_connections, b.max_subscribers), (MIN_CONNECTIONS, 8));
    }

    /// Admits a connection whose task closes it when told to, as `serve` does.
    async fn open(conns: &Arc<Connections>) -> Arc<ConnState> {
        let guard = conns.admit().await.expect("admitted");
        let state = Arc::clone(&guard.state);
        let task_state = Arc::clone(&state);
        tokio::spawn(async move {
            task_state.evict.notified().await;
            drop(guard);
        });
        state
    }

    #[tokio::test]
    async fn at_the_cap_the_oldest_idle_connection_makes_room() {
        let conns = Connections::new(3);
        let a = open(&conns).await;
        let b = open(&conns).await;
        let c = open(&conns).await;
        // `a` is handling a request, `b` is a websocket: `c` is the oldest idle one.
        let busy = Busy::new(&a);
        b.upgraded.store(true, Ordering::Release);
        let d = open(&conns).await;
        assert_eq!(conns.open(), 3);
        assert!(c.evicting.load(Ordering::Acquire));
        assert!(!a.evicting.load(Ordering::Acquire) && !b.evicting.load(Ordering::Acquire));
        // `d` is the only idle one now; then nobody is.
        let e = open(&conns).await;
        assert!(d.evicting.load(Ordering::Acquire));
        let _busy_e = Busy::new(&e);
        assert!(conns.admit().await.is_none(), "every connection busy: refused");
        drop(busy);
        let f = open(&conns).await;
        assert!(a.evicting.load(Ordering::Acquire), "a's request is done: a made room");
        assert_eq!(conns.open(), 3);
        drop(f);
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_told_to_close_is_counted_until_it_has() {
        let conns = Connections::new(1);
        let guard = conns.admit().await.unwrap();
        let state = Arc::clone(&guard.state);
        let waiting = tokio::spawn({
            let conns = Arc::clone(&conns);
            async move { conns.admit().await.map(|g| g.id) }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(state.evicting.load(Ordering::Acquire));
        assert!(!waiting.is_finished(), "no place until the old socket is closed");
        assert_eq!(conns.open(), 1);
        drop(guard);
        assert!(waiting.await.unwrap().is_some());
    }
}
