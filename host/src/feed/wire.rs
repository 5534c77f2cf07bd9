//! Websocket frames from the relay to a client, as the bytes written to its socket: made
//! once per feed frame and written to every client as they are.
//!
//! The server's frames are not masked (RFC 6455, 5.1), so a frame's bytes are the same for
//! every client; the library's frame type encodes them.

use axum::body::Bytes;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::{CloseFrame, Frame};

/// A text frame holding `text`.
pub fn text(text: &str) -> Bytes {
    encode(
        Frame::message(Bytes::copy_from_slice(text.as_bytes()), OpCode::Data(Data::Text), true),
        text.len(),
    )
}

/// A closing frame with its status code and reason.
pub fn close(code: u16, reason: &'static str) -> Bytes {
    encode(
        Frame::close(Some(CloseFrame { code: CloseCode::from(code), reason: reason.into() })),
        reason.len() + 2,
    )
}

fn encode(frame: Frame, payload: usize) -> Bytes {
    let mut out = Vec::with_capacity(payload + 14);
    // Into a vector: writing cannot fail.
    let _ = frame.format(&mut out);
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_tungstenite::tungstenite::protocol::{Message, Role, WebSocketContext};

    /// What a client reads from `bytes`.
    fn read(bytes: &[u8]) -> Vec<Message> {
        struct Wire<'a>(&'a [u8], Vec<u8>);
        impl std::io::Read for Wire<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if self.0.is_empty() {
                    return Err(std::io::ErrorKind::WouldBlock.into());
                }
                let n = buf.len().min(self.0.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        impl std::io::Write for Wire<'_> {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.1.extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut client = WebSocketContext::new(Role::Client, None);
        let mut wire = Wire(bytes, Vec::new());
        std::iter::from_fn(|| client.read(&mut wire).ok()).collect()
    }

    #[test]
    fn a_client_reads_the_frames_as_sent() {
        let long = "x".repeat(70_000);
        let bytes = [text("{\"v\":1}"), text(&long), close(1001, "relay shutting down")].concat();
        let got = read(&bytes);
        assert_eq!(got[0], Message::text("{\"v\":1}"));
        assert_eq!(got[1], Message::text(long));
        match &got[2] {
            Message::Close(Some(c)) => {
                assert_eq!((u16::from(c.code), c.reason.as_str()), (1001, "relay shutting down"))
            }
            other => panic!("{other:?}"),
        }
    }
}
