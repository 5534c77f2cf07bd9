//! The three real byte captures of a DGT board with a clock (`board-captures/*.inbytes`,
//! one base64 line per original `read()`), written into a pty we control, chunk by chunk
//! with their original chunking, into the real relay; the relay must publish exactly the
//! games that were played.
//!
//! The captures carry no timestamps; chunks are written `step` apart. The capture begins
//! after the board was already in update mode, so this fake board answers the relay's
//! handshake itself (version, serial number, a board dump of the current position on
//! request, the serial number as keep-alive) and starts the capture once the relay has put
//! it in an update mode.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use base64::Engine;
use dgt_hil_sim::pty::{Link, Pty};
use dgt_protocol::{BoardDump, Command, CommandParser, Decoded, Decoder, HostInput, Message};
use shakmaty::san::SanPlus;
use shakmaty::{CastlingMode, Chess, Position};

use crate::feed::{FeedGame, Recorder};
use crate::relay::Relay;

/// The names of the captures.
pub const NAMES: [&str; 3] = ["1", "2", "johan"];

/// A capture and the game that was played.
#[derive(Clone, Debug)]
pub struct Capture {
    /// `1`, `2` or `johan`.
    pub name: String,
    /// The original read() chunks.
    pub chunks: Vec<Vec<u8>>,
    /// The moves played, UCI.
    pub moves: Vec<String>,
    /// The result, when the file gives one.
    pub result: Option<String>,
}

/// Loads a capture and its moves (`N.uci` or `N.pgn`).
pub fn load(name: &str) -> anyhow::Result<Capture> {
    let dir = crate::acceptance::data_dir().join("board-captures");
    let text = std::fs::read_to_string(dir.join(format!("{name}.inbytes")))?;
    let chunks = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| base64::engine::general_purpose::STANDARD.decode(l.trim()))
        .collect::<Result<Vec<_>, _>>()?;
    let is_result = |t: &str| matches!(t, "*" | "1-0" | "0-1" | "1/2-1/2");
    let (moves, result) = if let Ok(uci) = std::fs::read_to_string(dir.join(format!("{name}.uci"))) {
        let moves = uci.split_whitespace().filter(|t| !t.ends_with('.') && !is_result(t)).map(str::to_owned);
        let result = uci.split_whitespace().rfind(|t| is_result(t)).filter(|r| *r != "*").map(str::to_owned);
        (moves.collect(), result)
    } else {
        let pgn = std::fs::read_to_string(dir.join(format!("{name}.pgn")))?;
        let mut pos = Chess::default();
        let mut moves = Vec::new();
        let mut result = None;
        for t in pgn.split_whitespace().filter(|t| !t.ends_with('.')) {
            if is_result(t) {
                result = Some(t.to_owned()).filter(|r| r != "*");
                continue;
            }
            let san: SanPlus = t.parse().with_context(|| format!("{name}.pgn: {t}"))?;
            let m = san.san.to_move(&pos).with_context(|| format!("{name}.pgn: {t} is not legal"))?;
            moves.push(m.to_uci(CastlingMode::Standard).to_string());
            pos.play_unchecked(m);
        }
        (moves, result)
    };
    Ok(Capture { name: name.to_owned(), chunks, moves, result })
}

fn write_all(pty: &Pty, mut bytes: &[u8]) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !bytes.is_empty() {
        match pty.write(bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() > deadline {
                    bail!("the relay does not read its port");
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

struct FakeBoard {
    pty: Pty,
    serial: String,
    parser: CommandParser,
    decoder: Decoder<256>,
    board: [u8; 64],
    listening: bool,
}

impl FakeBoard {
    /// Answers what the relay sent.
    fn service(&mut self) -> anyhow::Result<()> {
        let mut buf = [0u8; 256];
        loop {
            let n = match self.pty.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                // EIO: no host has the port open (yet).
                Err(_) => return Ok(()),
            };
            for &b in &buf[..n] {
                let Some(HostInput::Command(cmd)) = self.parser.push(b) else { continue };
                let mut out = [0u8; 80];
                let msg = match cmd {
                    Command::SendVersion => Some(Message::Version { major: 1, minor: 8 }),
                    Command::ReturnSerialNumber => Some(Message::SerialNumber(self.serial.as_bytes())),
                    Command::SendBoard => Some(Message::BoardDump(BoardDump { raw: self.board })),
                    Command::SendUpdate | Command::SendUpdateNice | Command::SendUpdateBoard => {
                        self.listening = true;
                        None
                    }
                    _ => None,
                };
                if let Some(m) = msg {
                    let len = m.encode(&mut out).map_err(|e| anyhow::anyhow!("encode: {e:?}"))?;
                    write_all(&self.pty, &out[..len])?;
                }
            }
        }
    }

    /// Writes one capture chunk, and follows the position it shows.
    fn chunk(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        write_all(&self.pty, bytes)?;
        let board = &mut self.board;
        self.decoder.feed(bytes, |d| match d {
            Decoded::Message(Message::BoardDump(d)) => *board = d.raw,
            Decoded::Message(Message::FieldUpdate(f)) => board[usize::from(f.square.index())] = f.raw & 0x0F,
            _ => {}
        });
        Ok(())
    }
}

/// What one capture produced.
#[derive(Debug)]
pub struct CaptureOutcome {
    /// The capture.
    pub capture: Capture,
    /// The relay's board number for it.
    pub board: Option<u64>,
    /// The feed at the end.
    pub feed: FeedGame,
    /// `/pgn/1/{board}`.
    pub pgn: Option<String>,
}

impl CaptureOutcome {
    /// What is wrong, empty when the game is exact: moves, no ghost, `%clk` and `%emt` on
    /// every move, the result, and the PGN agreeing with the feed.
    pub fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        let want = &self.capture.moves;
        let got: Vec<&str> = self.feed.moves.iter().map(|m| m.uci.as_str()).collect();
        if got != *want {
            let common = got.iter().zip(want).take_while(|(a, b)| *a == b).count();
            p.push(format!(
                "moves differ from ply {}: got {:?}, want {:?}",
                common + 1,
                got.get(common),
                want.get(common)
            ));
        }
        for (ply, uci) in &self.feed.confirmed_sent {
            if want.get((*ply as usize).wrapping_sub(1)) != Some(uci) {
                p.push(format!("ghost: ply {ply} {uci}"));
            }
        }
        for m in &self.feed.moves {
            if m.clk.is_none() || m.emt.is_none() {
                p.push(format!("ply {}: clk {:?} emt {:?}", m.ply, m.clk, m.emt));
            }
        }
        if self.feed.result != self.capture.result {
            p.push(format!("result {:?}, want {:?}", self.feed.result, self.capture.result));
        }
        match self.pgn.as_deref().map(dgt_hil_sim::pgn::parse_games) {
            Some(g) if g.len() == 1 => {
                let pm: Vec<&str> = g[0].moves.iter().map(|m| m.uci.as_str()).collect();
                if pm != got {
                    p.push("PGN moves differ from the feed".into());
                }
                let clocks: Vec<_> =
                    g[0].moves.iter().map(|m| (m.clk_s.map(u64::from), m.emt_s.map(u64::from))).collect();
                let feed_clocks: Vec<_> = self.feed.moves.iter().map(|m| (m.clk, m.emt)).collect();
                if clocks != feed_clocks {
                    p.push("PGN clocks differ from the feed".into());
                }
                let want = self.capture.result.clone().unwrap_or_else(|| "*".into());
                if g[0].result != want {
                    p.push(format!("PGN result {}, want {want}", g[0].result));
                }
            }
            other => p.push(format!("per-game PGN: {:?} games", other.map(|g| g.len()))),
        }
        p
    }
}

/// Replays the captures `names` at once, each on its own fake board (serials 40001...),
/// into one relay, chunks `step` apart.
pub fn run(
    names: &[&str],
    relay_bin: &Path,
    dir: &Path,
    step: Duration,
) -> anyhow::Result<Vec<CaptureOutcome>> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let captures = names.iter().map(|n| load(n)).collect::<anyhow::Result<Vec<_>>>()?;
    let mut boards = Vec::new();
    let mut links = Vec::new();
    let mut args: Vec<String> = vec!["run".into(), "--data".into(), dir.join("data").display().to_string()];
    for (i, _) in captures.iter().enumerate() {
        let pty = Pty::open()?;
        let path: PathBuf = dir.join(format!("capture-{}", i + 1));
        links.push(Link::create(&path, pty.slave_path())?);
        args.push("--port".into());
        args.push(path.display().to_string());
        boards.push(FakeBoard {
            pty,
            serial: format!("{}", 40001 + i),
            parser: CommandParser::new(),
            decoder: Decoder::new(),
            board: [0; 64],
            listening: false,
        });
    }
    let relay = Relay::start(relay_bin, dir, &args)?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let recorder = Recorder::start(rt.handle(), relay.addr)?;
    let stop = Arc::new(AtomicBool::new(false));
    let finished: Vec<anyhow::Result<()>> = std::thread::scope(|scope| {
        let handles: Vec<_> = boards
            .iter_mut()
            .zip(&captures)
            .map(|(fb, cap)| {
                let stop = Arc::clone(&stop);
                scope.spawn(move || -> anyhow::Result<()> {
                    let deadline = Instant::now() + Duration::from_secs(30);
                    while !fb.listening {
                        fb.service()?;
                        if Instant::now() > deadline {
                            bail!("capture {}: the relay never put the board in update mode", cap.name);
                        }
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    // Let the handshake finish before the game's bytes start.
                    let settle = Instant::now() + Duration::from_millis(300);
                    while Instant::now() < settle {
                        fb.service()?;
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    for c in &cap.chunks {
                        fb.chunk(c)?;
                        let next = Instant::now() + step;
                        while Instant::now() < next {
                            fb.service()?;
                            std::thread::sleep(Duration::from_millis(1).min(step));
                        }
                    }
                    // Keep answering keep-alives until the checks are done.
                    while !stop.load(Ordering::Relaxed) {
                        fb.service()?;
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    Ok(())
                })
            })
            .collect();
        // Wait for the chunks to be written: the feed shows the last move, or time is up.
        let total = captures.iter().map(|c| c.chunks.len()).max().unwrap_or(0) as u32;
        let budget = step * total + Duration::from_secs(20);
        let started = Instant::now();
        loop {
            let done = captures.iter().enumerate().all(|(i, c)| {
                recorder.with(|s| {
                    s.board_of_serial(&format!("{}", 40001 + i))
                        .and_then(|b| s.games.get(&(b, 1)))
                        .is_some_and(|g| {
                            g.moves.len() >= c.moves.len() && (c.result.is_none() || g.result.is_some())
                        })
                })
            });
            if (done && started.elapsed() > step * total) || started.elapsed() > budget {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // A little longer for a late confirmation or retraction to show.
        std::thread::sleep(Duration::from_millis(1500));
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("board thread panicked"))))
            .collect()
    });
    for f in finished {
        f?;
    }
    let mut out = Vec::new();
    for (i, capture) in captures.into_iter().enumerate() {
        let serial = format!("{}", 40001 + i);
        let board = recorder.with(|s| s.board_of_serial(&serial));
        let feed = recorder.with(|s| board.and_then(|b| s.games.get(&(b, 1))).cloned().unwrap_or_default());
        let pgn = board
            .and_then(|b| relay.get(&format!("/pgn/1/{b}")).ok())
            .filter(|(s, _)| *s == 200)
            .map(|(_, t)| t);
        out.push(CaptureOutcome { capture, board, feed, pgn });
    }
    drop(links);
    Ok(out)
}
