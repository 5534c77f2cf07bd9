//! Frames on the line: `COBS(version | postcard body | CRC-32) 0x00`.
//!
//! - The **version** byte comes first and outside the body, so a frame of another protocol
//!   version is recognised (and refused by name) without decoding a body whose layout
//!   this build does not know.
//! - The **CRC-32** (ISO-HDLC, the zlib and Ethernet polynomial) covers the version and the
//!   body; a frame whose checksum does not match is counted and skipped, never decoded.
//! - **COBS** leaves no zero byte inside a frame. A frame is written between two zeros, so
//!   a reader that starts mid-frame, or meets garbage, is back in step at the next zero,
//!   and garbage that did not end in a zero never swallows the frame after it. Empty
//!   frames (zeros in a row) are skipped.
//!
//! A frame is at most [`MAX_FRAME`] bytes before COBS. See `docs/bridge.md`.

use alloc::vec::Vec;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The protocol version this build speaks, first byte of every frame.
pub const VERSION: u8 = 1;
/// Most bytes of a frame before COBS: version, body and checksum.
pub const MAX_FRAME: usize = 1024;
/// Most bytes of a frame on the line, its closing zero excluded.
pub const MAX_ENCODED: usize = MAX_FRAME + MAX_FRAME / 254 + 1;

const CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);

/// Why a frame was not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Longer than [`MAX_FRAME`]: skipped up to the next zero.
    #[error("frame longer than {MAX_FRAME} bytes")]
    TooLong,
    /// Not valid COBS, or too short to hold a version and a checksum.
    #[error("not a frame (bad COBS or too short)")]
    Framing,
    /// The checksum does not match: a byte was lost or changed.
    #[error("checksum mismatch")]
    Checksum,
    /// A frame of another protocol version: refused, its body unread.
    #[error("frame of bridge protocol {0}, this build speaks {VERSION}")]
    Version(u8),
    /// The checksum matched but the body is not a message of this version.
    #[error("body does not decode")]
    Body,
    /// The message does not fit in a frame (never for a valid message; a bug if seen).
    #[error("message too large for a frame")]
    Oversize,
}

/// Appends `msg` as one frame, between zeros, to `out`.
pub fn encode<T: Serialize>(msg: &T, out: &mut Vec<u8>) -> Result<(), FrameError> {
    let mut raw = [0u8; MAX_FRAME];
    raw[0] = VERSION;
    let body = postcard::to_slice(msg, &mut raw[1..MAX_FRAME - 4]).map_err(|_| FrameError::Oversize)?.len();
    let crc = CRC32.checksum(&raw[..1 + body]);
    raw[1 + body..1 + body + 4].copy_from_slice(&crc.to_le_bytes());
    let len = 1 + body + 4;
    out.push(0);
    let start = out.len();
    out.resize(start + cobs::max_encoding_length(len), 0);
    let n = cobs::encode(&raw[..len], &mut out[start..]);
    out.truncate(start + n);
    out.push(0);
    Ok(())
}

/// Counts of what a [`FrameDecoder`] met.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameStats {
    /// Frames taken.
    pub frames: u32,
    /// Frames skipped as damaged: too long, bad COBS, bad checksum, undecodable body.
    pub bad: u32,
    /// Frames of another protocol version, refused.
    pub refused: u32,
    /// The version of the last refused frame.
    pub refused_version: Option<u8>,
}

/// Reads frames out of a byte stream: resynchronises at every zero, counts what it
/// skips, takes only whole frames with a matching checksum and this version.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    /// The frame under way is too long: skip to the next zero.
    overrun: bool,
    stats: FrameStats,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        FrameDecoder::new()
    }
}

impl FrameDecoder {
    /// A decoder at the start of a stream (what comes before the first zero is a frame too;
    /// if it is a fragment, it is counted as bad).
    pub fn new() -> FrameDecoder {
        FrameDecoder { buf: Vec::with_capacity(MAX_ENCODED), overrun: false, stats: FrameStats::default() }
    }

    /// What was met so far.
    pub fn stats(&self) -> FrameStats {
        self.stats
    }

    /// Feeds bytes; calls `on` with every frame that ends in them, in order: the message,
    /// or why the frame was skipped (already counted).
    pub fn feed<T: DeserializeOwned>(&mut self, bytes: &[u8], mut on: impl FnMut(Result<T, FrameError>)) {
        for &b in bytes {
            if b != 0 {
                if self.buf.len() < MAX_ENCODED {
                    self.buf.push(b);
                } else {
                    self.overrun = true;
                }
                continue;
            }
            if self.overrun {
                self.overrun = false;
                self.buf.clear();
                self.stats.bad += 1;
                on(Err(FrameError::TooLong));
                continue;
            }
            if self.buf.is_empty() {
                // Zeros between frames: a writer's way to end any garbage before a frame.
                continue;
            }
            let got = self.decode_frame();
            self.buf.clear();
            match &got {
                Ok(_) => self.stats.frames += 1,
                Err(FrameError::Version(v)) => {
                    self.stats.refused += 1;
                    self.stats.refused_version = Some(*v);
                }
                Err(_) => self.stats.bad += 1,
            }
            on(got);
        }
    }

    fn decode_frame<T: DeserializeOwned>(&mut self) -> Result<T, FrameError> {
        let len = cobs::decode_in_place(&mut self.buf).map_err(|_| FrameError::Framing)?;
        if len > MAX_FRAME {
            return Err(FrameError::TooLong);
        }
        if len < 1 + 4 {
            return Err(FrameError::Framing);
        }
        let raw = &self.buf[..len];
        let (data, crc) = raw.split_at(len - 4);
        let crc = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        if CRC32.checksum(data) != crc {
            return Err(FrameError::Checksum);
        }
        if data[0] != VERSION {
            return Err(FrameError::Version(data[0]));
        }
        postcard::from_bytes(&data[1..]).map_err(|_| FrameError::Body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;
    use alloc::vec;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    enum Msg {
        Ping(u32),
        Text(String),
    }

    fn frames(bytes: &[u8], d: &mut FrameDecoder) -> Vec<Result<Msg, FrameError>> {
        let mut out = Vec::new();
        d.feed(bytes, |m| out.push(m));
        out
    }

    #[test]
    fn a_frame_round_trips_between_its_only_zeros() {
        let mut line = Vec::new();
        encode(&Msg::Ping(0), &mut line).unwrap();
        encode(&Msg::Text("e2e4".into()), &mut line).unwrap();
        assert_eq!(line.iter().filter(|b| **b == 0).count(), 4);
        let mut d = FrameDecoder::new();
        assert_eq!(frames(&line, &mut d), vec![Ok(Msg::Ping(0)), Ok(Msg::Text("e2e4".into()))]);
        assert_eq!(d.stats().frames, 2);
    }

    #[test]
    fn a_changed_byte_is_a_bad_checksum_and_the_next_frame_is_taken() {
        let mut line = Vec::new();
        encode(&Msg::Ping(7), &mut line).unwrap();
        line[2] ^= 0x10;
        encode(&Msg::Ping(8), &mut line).unwrap();
        let mut d = FrameDecoder::new();
        let got = frames(&line, &mut d);
        assert_eq!(got.len(), 2);
        assert!(matches!(got[0], Err(FrameError::Checksum) | Err(FrameError::Framing)));
        assert_eq!(got[1], Ok(Msg::Ping(8)));
        assert_eq!(d.stats().bad, 1);
    }

    #[test]
    fn garbage_and_overlong_runs_are_counted_and_skipped() {
        let mut line = b"\x13\x37garbage\x00".to_vec();
        line.extend(core::iter::repeat_n(0x55u8, 3000));
        line.push(0);
        encode(&Msg::Ping(1), &mut line).unwrap();
        let mut d = FrameDecoder::new();
        let got = frames(&line, &mut d);
        assert_eq!(got.len(), 3);
        assert_eq!(got[1], Err(FrameError::TooLong));
        assert_eq!(got[2], Ok(Msg::Ping(1)));
        assert_eq!(d.stats().bad, 2);
    }

    #[test]
    fn garbage_without_a_closing_zero_does_not_swallow_the_next_frame() {
        let mut line = b"\x42\x07\x99".to_vec();
        encode(&Msg::Ping(3), &mut line).unwrap();
        let mut d = FrameDecoder::new();
        assert_eq!(frames(&line, &mut d), vec![Err(FrameError::Framing), Ok(Msg::Ping(3))]);
    }

    #[test]
    fn another_version_is_refused_by_name() {
        let mut raw = vec![0u8, 0x00, 0x05];
        raw[0] = 0;
        let crc = CRC32.checksum(&raw);
        raw.extend(crc.to_le_bytes());
        let mut line = vec![0u8; cobs::max_encoding_length(raw.len())];
        let n = cobs::encode(&raw, &mut line);
        line.truncate(n);
        line.push(0);
        let mut d = FrameDecoder::new();
        assert_eq!(frames(&line, &mut d), vec![Err(FrameError::Version(0))]);
        assert_eq!((d.stats().refused, d.stats().refused_version), (1, Some(0)));
    }

    #[test]
    fn a_frame_split_anywhere_is_read_whole() {
        let mut line = Vec::new();
        encode(&Msg::Text("a longer message, split in two".into()), &mut line).unwrap();
        for cut in 0..line.len() {
            let mut d = FrameDecoder::new();
            let mut got = frames(&line[..cut], &mut d);
            got.extend(frames(&line[cut..], &mut d));
            assert_eq!(got, vec![Ok(Msg::Text("a longer message, split in two".into()))], "cut at {cut}");
        }
    }
}
