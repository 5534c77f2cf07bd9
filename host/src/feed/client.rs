//! One websocket client's task: it reads what the client sends with the websocket
//! protocol's state and answers through the client's writer, which writes the feed to it.

use std::collections::VecDeque;
use std::sync::Arc;

use axum::body::Bytes;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::protocol::{Message, Role, WebSocketConfig, WebSocketContext};

use super::hub::Hub;
use super::session::{
    ClientAction, ClientEnd, ClientInput, ClientLimits, ClientSession, error_frame, snapshot_frame,
};
use super::wire;
use super::writer::Keep;
use crate::shutdown::Listener;

/// The largest client message accepted, bytes.
pub const MAX_CLIENT_MESSAGE: usize = 4096;
/// The websocket read buffer per client, bytes: client messages are small (at most
/// [`MAX_CLIENT_MESSAGE`]).
pub const READ_BUFFER: usize = 1024;

/// A websocket client's connection, past the HTTP upgrade: the socket, the bytes the HTTP
/// server read past the request, and what holds its place.
#[derive(Debug)]
pub struct ClientSocket {
    /// The socket.
    pub stream: TcpStream,
    /// Bytes already read from it after the upgrade request.
    pub read_ahead: Bytes,
    /// Kept until the socket closes.
    pub keep: Keep,
    /// Its place in its address's quota (see [`super::AddressQuotas`]), which its
    /// snapshots are taken from.
    pub ticket: super::AddressTicket,
}

/// What the client sent, for the websocket protocol's reader, and what the protocol
/// answers by itself (pongs, the closing reply), for the client's writer.
#[derive(Default)]
struct Inbox {
    input: VecDeque<u8>,
    output: Vec<u8>,
}

impl std::io::Read for Inbox {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.input.is_empty() {
            return Err(std::io::ErrorKind::WouldBlock.into());
        }
        std::io::Read::read(&mut self.input, buf)
    }
}

impl std::io::Write for Inbox {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.output.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What to do after a client's frames were read.
enum Read {
    /// Go on.
    More,
    /// The session ends.
    End(ClientEnd),
}

/// Serves one websocket client until it leaves, misbehaves or the relay stops: reads what
/// it asks for here, while its writer (`writer.rs`) writes the feed to it.
pub async fn serve_client(
    socket: ClientSocket,
    hub: Arc<Hub>,
    mut stop: Listener,
    limits: ClientLimits,
) -> ClientEnd {
    let clock = hub.clock().clone();
    let mut client = ClientSession::new(limits, clock.now());
    let (read, write) = socket.stream.into_split();
    let (snap, seat) = hub.join(write, socket.keep, &stop, limits);
    let alerts = hub.relay_alerts();
    seat.snapshot(snap.seq, None, wire::text(&snapshot_frame(&snap, None, false, &alerts, clock.wall_ms())));
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_CLIENT_MESSAGE))
        .max_frame_size(Some(MAX_CLIENT_MESSAGE))
        .read_buffer_size(READ_BUFFER);
    let mut protocol = WebSocketContext::new(Role::Server, Some(config));
    let mut inbox = Inbox::default();
    inbox.input.extend(socket.read_ahead.iter());
    let mut buf = [0u8; READ_BUFFER];
    let mut resyncs: VecDeque<Instant> = VecDeque::new();
    let stopping = stop.wait();
    tokio::pin!(stopping);
    loop {
        // Every whole message read so far, then what the protocol answered by itself.
        let read_all = loop {
            let message = match protocol.read(&mut inbox) {
                Ok(m) => m,
                Err(tokio_tungstenite::tungstenite::Error::Io(e))
                    if e.kind() == std::io::ErrorKind::WouldBlock =>
                {
                    break Read::More;
                }
                // A protocol error, an oversized message, the end of the connection.
                Err(_) => break Read::End(ClientEnd::Closed),
            };
            let action = match message {
                Message::Text(t) => client.on_message(ClientInput::Text(t.as_str()), clock.now()),
                Message::Binary(_) => client.on_message(ClientInput::Binary, clock.now()),
                Message::Close(_) => break Read::End(ClientEnd::Closed),
                // Pings are answered by the protocol.
                _ => continue,
            };
            match action {
                ClientAction::Reply(m) => seat.send(wire::text(&m)),
                ClientAction::Snapshot { .. } if !socket.ticket.snapshot(clock.now()) => {
                    match client.address_limited(clock.now()) {
                        ClientAction::Close(m, end) => {
                            tracing::info!(?end, "websocket client disconnected");
                            seat.close(vec![wire::text(&m)]);
                            return end;
                        }
                        other => {
                            if let ClientAction::Reply(m) = other {
                                seat.send(wire::text(&m));
                            }
                        }
                    }
                }
                ClientAction::Snapshot { resync } => {
                    let snap = hub.snapshot_for(&seat);
                    let frame =
                        snapshot_frame(&snap, client.filter(), resync, &hub.relay_alerts(), clock.wall_ms());
                    seat.snapshot(snap.seq, client.filter(), wire::text(&frame));
                }
                ClientAction::Close(m, end) => {
                    tracing::info!(?end, "websocket client disconnected");
                    seat.close(vec![wire::text(&m)]);
                    return end;
                }
            }
        };
        if !inbox.output.is_empty() {
            seat.send(std::mem::take(&mut inbox.output).into());
        }
        if let Read::End(end) = read_all {
            return end;
        }
        tokio::select! {
            biased;
            // The writer closes the connection (code 1001).
            () = &mut stopping => return ClientEnd::Shutdown,
            () = seat.signal.changed() => {
                if let Some(end) = seat.signal.ended() {
                    return end;
                }
                if seat.signal.take_lagged() == 0 {
                    continue;
                }
                let now = clock.now();
                while resyncs.front().is_some_and(|t| now.duration_since(*t) > limits.resync_window) {
                    resyncs.pop_front();
                }
                resyncs.push_back(now);
                if resyncs.len() > limits.max_resyncs {
                    tracing::warn!("websocket client too slow, dropped");
                    let f = error_frame("too_slow", "the client fell behind too often and is disconnected");
                    seat.close(vec![wire::text(&f)]);
                    return ClientEnd::TooSlow;
                }
                tracing::info!("websocket client lagged, resynchronising");
                let snap = hub.snapshot_for(&seat);
                let frame = snapshot_frame(&snap, client.filter(), true, &hub.relay_alerts(), clock.wall_ms());
                seat.snapshot(snap.seq, client.filter(), wire::text(&frame));
            }
            ready = read.readable() => {
                if ready.is_err() {
                    return ClientEnd::Closed;
                }
                match read.try_read(&mut buf) {
                    Ok(0) => return ClientEnd::Closed,
                    Ok(n) => inbox.input.extend(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => return ClientEnd::Closed,
                }
            }
        }
    }
}
