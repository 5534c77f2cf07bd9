//! `dgt-relay`: the DGT live relay daemon (see `API.md` for the CLI, feed and HTTP API).

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use dgt_relay::clock::Clock;
use dgt_relay::config::Config;
use dgt_relay::relay::Relay;
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(
    name = "dgt-relay",
    version,
    about = "Live relay for DGT e-boards: websocket feed and PGN over HTTP"
)]
struct Cli {
    /// Log format on standard error: `text` (coloured only on a terminal) or `json` (one
    /// object a line, for journald or a log shipper).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object a line.
    Json,
}

#[derive(Subcommand)]
enum Cmd {
    /// Relay real boards on serial ports.
    Run {
        /// A TOML configuration file.
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// A serial port to open (repeatable): one board, or a chain of boards, which is
        /// detected and driven in DGT's bus mode.
        #[arg(long = "port", short)]
        ports: Vec<PathBuf>,
        /// A serial port with a chain of boards in DGT's bus mode, without trying it as one
        /// board first (repeatable).
        #[arg(long = "bus")]
        bus: Vec<PathBuf>,
        /// A serial port with a relay box on it, whose firmware runs the board's session
        /// (repeatable; see docs/bridge.md).
        #[arg(long = "bridge")]
        bridge: Vec<PathBuf>,
        /// Also open every serial device that appears with a DGT board's USB vendor id, and
        /// every Bluetooth RFCOMM port.
        #[arg(long)]
        discover: bool,
        /// Pairings from a FIDE TRF-16 report (Swiss-Manager, Vega, JaVaFo, bbpPairings).
        #[arg(long, value_name = "FILE", requires = "round")]
        trf: Option<PathBuf>,
        /// The round of the TRF report to relay.
        #[arg(long, value_name = "N", requires = "trf", value_parser = clap::value_parser!(u32).range(1..=999))]
        round: Option<u32>,
        #[command(flatten)]
        common: Common,
    },
    /// Simulated boards replaying corpus games on pseudo-terminals (on Windows: in-process
    /// links); no hardware needed.
    #[cfg(feature = "demo")]
    Demo {
        /// Number of simulated boards.
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=200))]
        boards: u32,
        /// Simulator speed factor (1 = real time).
        #[arg(long, default_value_t = 10.0)]
        speed: f64,
        /// PGN file of games to replay.
        #[arg(long)]
        games: Option<PathBuf>,
        /// The first simulated board's number (the others follow): two demo relays
        /// publishing to one NATS stream need distinct board numbers.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=900))]
        first_board: u32,
        /// A TOML configuration file (token, delay, `[event]`, `[lichess]`...); the demo adds
        /// its boards to it.
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// The boards on in-process links instead of pseudo-terminals (always so on
        /// Windows, which has none): the same port code, without a tty between.
        #[arg(long)]
        in_process: bool,
        #[command(flatten)]
        common: Common,
    },
    /// A relay with no boards: serves the feed, PGN and live page from a NATS JetStream
    /// stream that venue relays publish to (`[nats]` or `--nats`).
    Edge {
        /// The NATS server, nats://HOST:PORT (default: `[nats] url` of the configuration).
        #[arg(long, value_name = "URL", required_unless_present = "config")]
        nats: Option<String>,
        /// A TOML configuration file (listen, token, `[lichess]`, `[nats]` server,
        /// credentials and stream); boards and ports in it are ignored.
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// Only this event (as named in the venue relays' `[event]`); default: every event
        /// in the stream.
        #[arg(long)]
        event: Option<String>,
        /// Address to listen on, HOST:PORT (default 127.0.0.1:8080).
        #[arg(long, value_name = "ADDR", value_parser = parse_listen)]
        listen: Option<SocketAddr>,
        /// Folder for the PGN files the edge writes (default dgt-relay-edge).
        #[arg(long)]
        data: Option<PathBuf>,
    },
    /// Check a configuration file and exit.
    CheckConfig {
        /// The file.
        file: PathBuf,
    },
}

#[derive(Args)]
struct Common {
    /// Address to listen on, HOST:PORT with an IP address or a host name (default
    /// 127.0.0.1:8080; loopback unless told otherwise).
    #[arg(long, value_name = "ADDR", value_parser = parse_listen)]
    listen: Option<SocketAddr>,
    /// Data folder for journals and PGN.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Publish every journal record to this NATS server's JetStream (nats://HOST:PORT), as
    /// `[nats] url` in the configuration does.
    #[arg(long, value_name = "URL")]
    nats: Option<String>,
    /// Speak DGT LiveChess's EBoard API (ws://127.0.0.1:1982/api/v1.0), for chess.com,
    /// Lichess's /dgt page and other LiveChess clients; optionally on another loopback
    /// ADDR.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:1982",
          value_parser = parse_eboard_api)]
    eboard_api: Option<SocketAddr>,
}

#[cfg(feature = "demo")]
/// Games the demo replays when `--games` is not given: 16 real World Cup 2025 games,
/// embedded so that the demo works on any machine (provenance in `host/demo/README.md`).
const DEMO_GAMES: &str = include_str!("../demo/worldcup2025-sample.pgn");

/// `--eboard-api`: a loopback address and port.
fn parse_eboard_api(s: &str) -> Result<SocketAddr, dgt_relay::invalid::Invalid> {
    dgt_relay::config::eboard_api_address(s)
}

/// `--listen`: an IP address and port, or a host name and port resolved now.
fn parse_listen(s: &str) -> Result<SocketAddr, dgt_relay::invalid::Invalid> {
    dgt_relay::config::resolve_listen(s)
}

/// Logs go to standard error, as text (ANSI colours only when standard error is a terminal
/// and `NO_COLOR` is not set) or as JSON lines.
fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        LogFormat::Text => {
            let colour =
                std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            logs.with_ansi(colour).init();
        }
        LogFormat::Json => logs.with_ansi(false).json().init(),
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // The one clock of the relay: every part that reads the time gets it from here.
    let clock = Clock::system();
    init_logging(cli.log_format);
    match cli.command {
        Cmd::CheckConfig { file } => {
            let c = Config::load(&file)?;
            println!(
                "{}: ok ({} boards, round {})",
                file.display(),
                c.board_count(),
                c.tournament.live_round()
            );
            Ok(())
        }
        Cmd::Run { config, ports, bus, bridge, discover, trf, round, common } => {
            let mut cfg = match &config {
                Some(path) => Config::load(path)?,
                None => Config::default(),
            };
            if let (Some(path), Some(round)) = (trf, round) {
                let bytes = std::fs::read(&path)
                    .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
                let trf = dgt_relay::trf::Trf::parse_bytes(&bytes);
                let boards = trf
                    .as_ref()
                    .map_err(Clone::clone)
                    .and_then(|t| t.pairings(round))
                    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
                // A TRF-26 report's time control (222) is the event's.
                if let Ok(t) = trf {
                    if let Some(tc) = t.trf26.time_control.as_ref().and_then(|tc| tc.pgn()) {
                        cfg.tournament.event.time_control = Some(tc);
                    }
                    cfg.tournament.event.tie_breaks = [t.trf26.tie_breaks, t.trf26.standings];
                }
                tracing::info!(round, boards = boards.len(), "pairings from {}", path.display());
                cfg.tournament.replace_pairings(round, boards.into_iter().map(|b| (b.board, b.pairing)));
            }
            cfg.ports.extend(ports);
            cfg.bus.extend(bus);
            cfg.bridge.extend(bridge);
            cfg.discover |= discover;
            apply_common(&mut cfg, common)?;
            if cfg.ports.is_empty() && cfg.bus.is_empty() && cfg.bridge.is_empty() && !cfg.discover {
                bail!(
                    "no board to relay: give --port PATH, --bus PATH, --bridge PATH, --discover, or \
                     ports/bus/bridge/discover in the config"
                );
            }
            run(cfg, clock, None, None)
        }
        Cmd::Edge { nats, config, event, listen, data } => {
            let mut cfg = match &config {
                Some(path) => Config::load(path)?,
                None => Config { data: PathBuf::from("dgt-relay-edge"), ..Config::default() },
            };
            // An edge has no boards: the configuration's are the venue relays' business.
            cfg.boards.clear();
            cfg.ports.clear();
            cfg.discover = false;
            if let Some(url) = &nats {
                set_nats_url(&mut cfg, url)?;
            }
            if let Some(l) = listen {
                cfg.listen = l;
            }
            if let Some(d) = data {
                cfg.data = d;
            }
            let settings = cfg
                .nats
                .take()
                .context("an edge needs a NATS server: --nats URL, or [nats] url in the configuration")?;
            run(cfg, clock, None, Some(dgt_relay::nats::edge::EdgeOptions { nats: settings, event }))
        }
        #[cfg(feature = "demo")]
        Cmd::Demo { boards, speed, games, first_board, config, in_process, common } => {
            if !(speed > 0.0 && speed <= 1000.0) {
                bail!("--speed must be between 0 and 1000");
            }
            let games = match games {
                Some(path) => dgt_hil_sim::pgn::read_games(&path)?,
                None => dgt_hil_sim::pgn::parse_games(DEMO_GAMES),
            };
            let mut cfg = match &config {
                Some(path) => Config::load(path)?,
                None => Config {
                    tournament: dgt_relay::tournament::Tournament::new(
                        dgt_relay::tournament::Event {
                            name: "DGT live relay demo".into(),
                            site: "Simulated boards".into(),
                            ..dgt_relay::tournament::Event::default()
                        },
                        1,
                    ),
                    ..Config::default()
                },
            };
            if cfg.data == Config::default().data {
                // A fresh folder for every run (its games start at round 1 again); `--data`
                // keeps one across runs.
                cfg.data = PathBuf::from("dgt-relay-demo").join(run_stamp(&clock));
            }
            apply_common(&mut cfg, common)?;
            let opts = dgt_relay::demo::DemoOptions {
                boards,
                speed,
                first_serial: 10_000 + first_board,
                first_board,
                in_process: in_process || cfg!(windows),
            };
            // Simulated board i has serial 10000 + first_board + i and board number
            // first_board + i.
            for i in 0..boards {
                cfg.boards.push(dgt_relay::config::BoardConfig {
                    number: first_board + i,
                    serial: Some(format!("{:05}", opts.first_serial + i)),
                });
            }
            run(cfg, clock, Some((games, opts)), None)
        }
    }
}

/// The demo's folder name for this run: the UTC time it started, `YYYYMMDD-HHMMSS`.
#[cfg(feature = "demo")]
fn run_stamp(clock: &Clock) -> String {
    let (date, time) = dgt_relay::pgn::utc_date_time(clock.unix_s());
    format!("{}-{}", date.replace('.', ""), time.replace(':', ""))
}

fn apply_common(cfg: &mut Config, common: Common) -> anyhow::Result<()> {
    if let Some(l) = common.listen {
        cfg.listen = l;
    }
    if let Some(d) = common.data {
        cfg.data = d;
    }
    if let Some(url) = common.nats {
        set_nats_url(cfg, &url)?;
    }
    if common.eboard_api.is_some() {
        cfg.eboard_api = common.eboard_api;
    }
    Ok(())
}

/// Sets the NATS server, keeping the configuration's credentials and stream if it has them.
fn set_nats_url(cfg: &mut Config, url: &str) -> anyhow::Result<()> {
    let fresh = dgt_relay::nats::NatsSettings::from_url(url).map_err(|m| anyhow::anyhow!("--nats: {m}"))?;
    match &mut cfg.nats {
        Some(n) => n.url = fresh.url,
        None => cfg.nats = Some(fresh),
    }
    Ok(())
}

/// The demo's games and options (none when relaying real boards).
#[cfg(feature = "demo")]
type DemoSetup = Option<(Vec<dgt_hil_sim::pgn::SourceGame>, dgt_relay::demo::DemoOptions)>;
/// Without the `demo` feature there is no demo.
#[cfg(not(feature = "demo"))]
type DemoSetup = Option<std::convert::Infallible>;

/// Runs the relay on two tokio runtimes. The boards (serial sessions, trackers, journal)
/// run on one; HTTP and the websocket clients on the other. With many subscribers a
/// published move wakes one task per client; on a shared runtime the next clock press's
/// serial bytes would wait in the run queue behind all of them, so the boards get their
/// own worker threads, which the kernel runs as soon as bytes arrive.
fn run(
    cfg: Config,
    clock: Clock,
    demo: DemoSetup,
    edge: Option<dgt_relay::nats::edge::EdgeOptions>,
) -> anyhow::Result<()> {
    let boards = tokio::runtime::Builder::new_multi_thread().thread_name("boards").enable_all().build()?;
    let feed = tokio::runtime::Builder::new_multi_thread().thread_name("feed").enable_all().build()?;
    let result = boards.block_on(serve(cfg, clock, demo, edge, feed.handle().clone()));
    feed.shutdown_timeout(std::time::Duration::from_secs(1));
    result
}

async fn serve(
    mut cfg: Config,
    clock: Clock,
    demo: DemoSetup,
    edge: Option<dgt_relay::nats::edge::EdgeOptions>,
    feed: tokio::runtime::Handle,
) -> anyhow::Result<()> {
    // First of all, so that a signal during start-up is a clean stop too, not a kill.
    let mut signals = StopSignals::new().context("cannot install the signal handlers")?;
    let generated = cfg.ensure_token()?;
    // Connections and subscribers under the file descriptor limit, with room kept for the
    // ports, journals and PGN files.
    let (limit, raised_from) = dgt_relay::server::fd_limit();
    #[cfg(feature = "demo")]
    let demo_boards = demo.as_ref().map_or(0, |(_, o)| o.boards as usize);
    #[cfg(not(feature = "demo"))]
    let demo_boards = 0;
    let boards = cfg.board_count().max(cfg.ports.len()).max(demo_boards);
    let budget = dgt_relay::server::FdBudget::plan(
        limit,
        raised_from,
        boards,
        cfg.max_connections,
        cfg.max_subscribers,
    );
    if cfg.max_connections.is_some_and(|c| c > budget.max_connections) {
        tracing::warn!(
            configured = cfg.max_connections,
            max_connections = budget.max_connections,
            limit,
            "max_connections lowered to fit the file descriptor limit"
        );
    }
    if cfg.max_subscribers > budget.max_subscribers {
        tracing::warn!(
            configured = cfg.max_subscribers,
            max_subscribers = budget.max_subscribers,
            limit,
            "max_subscribers lowered to fit the file descriptor limit (raise it with LimitNOFILE= or ulimit -n)"
        );
    }
    tracing::info!(
        limit,
        raised_from,
        kept_for_ports_and_files = budget.reserve,
        max_connections = budget.max_connections,
        max_subscribers = budget.max_subscribers,
        header_timeout_ms = cfg.header_timeout_ms,
        "file descriptors shared out"
    );
    cfg.max_subscribers = budget.max_subscribers;
    let relay = Relay::start(&cfg, clock)
        .with_context(|| format!("cannot open the data folder {}", cfg.data.display()))?;
    relay.hub.hide_path(&cfg.data, "<data folder>");
    // Bound here, served on the feed runtime (a socket belongs to the runtime that first
    // polls it).
    let listener = std::net::TcpListener::bind(cfg.listen)
        .with_context(|| format!("cannot listen on {}", cfg.listen))?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let eboard_listener = match cfg.eboard_api {
        Some(at) => {
            let l = std::net::TcpListener::bind(at)
                .with_context(|| format!("cannot listen on {at} for the EBoard API (LiveChess running?)"))?;
            l.set_nonblocking(true)?;
            Some(l)
        }
        None => None,
    };
    if !addr.ip().is_loopback() {
        tracing::warn!(%addr, "listening beyond this machine: admin calls are protected by the token only");
    }
    #[cfg(feature = "demo")]
    let sim = match demo {
        Some((games, opts)) => {
            let (d, paths) = dgt_relay::demo::Demo::start(games, &opts, relay.tournament.clone())?;
            for p in paths {
                relay.add_port(p, false);
            }
            Some(d)
        }
        None => None,
    };
    #[cfg(not(feature = "demo"))]
    let _ = demo;
    for p in &cfg.ports {
        relay.add_port(p.clone(), false);
    }
    for p in &cfg.bus {
        relay.add_bus_port(p.clone());
    }
    for p in &cfg.bridge {
        relay.add_bridge(p.clone(), std::time::Duration::from_millis(cfg.silence_ms));
    }
    // An edge's feed comes from the stream.
    let follower = edge.map(|opts| {
        tracing::info!(url = %opts.nats.url, stream = %opts.nats.stream, "edge: serving from NATS");
        relay.follow_stream(opts)
    });
    if cfg.discover {
        relay.discover();
    }
    let base = format!("http://{addr}");
    // The first line is a contract (API.md): scripts read the address from it.
    println!("dgt-relay listening on {base}");
    println!("  live page:       {base}/live/   <- open this (spectators)");
    println!("  console:         {base}/console/   <- operators (admin token)");
    println!("  websocket feed:  ws://{addr}/ws");
    println!("  boards (JSON):   {base}/api/boards");
    let round = cfg.tournament.live_round();
    println!("  round PGN:       {base}/pgn/{round}");
    println!("  game PGN:        {base}/pgn/{round}/1");
    println!("  health:          {base}/health");
    if let Some(l) = &eboard_listener {
        println!("  EBoard API:      ws://{}/api/v1.0", l.local_addr()?);
    }
    println!("  data folder:     {}", cfg.data.display());
    if generated {
        println!(
            "  admin token:     {} (set DGT_RELAY_TOKEN or `token` in the config to fix it)",
            cfg.token.as_deref().unwrap_or("")
        );
    }
    use std::io::Write as _;
    let _ = std::io::stdout().flush();

    let access = dgt_relay::http::Access::new(addr, cfg.allowed_origins.clone());
    let app = dgt_relay::http::router(Arc::clone(&relay), access);
    let limits = dgt_relay::server::ServerLimits {
        max_connections: budget.max_connections,
        header_timeout: std::time::Duration::from_millis(cfg.header_timeout_ms),
        ..Default::default()
    };
    let conns = dgt_relay::server::Connections::new(limits.max_connections);
    let stop = relay.shutdown().listener();
    let server = feed.spawn(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        dgt_relay::server::serve(listener, app, limits, conns, stop).await;
        Ok::<(), std::io::Error>(())
    });
    // LiveChess's API on its own port, with a small connection cap of its own.
    let eboard_server = match (eboard_listener, relay.eboards.clone()) {
        (Some(l), Some(eboards)) => {
            let app = dgt_relay::eboard::api::router(Arc::clone(&relay), eboards);
            let limits = dgt_relay::server::ServerLimits { max_connections: 64, ..limits };
            let conns = dgt_relay::server::Connections::new(limits.max_connections);
            let stop = relay.shutdown().listener();
            Some(feed.spawn(async move {
                let listener = tokio::net::TcpListener::from_std(l)?;
                dgt_relay::server::serve(listener, app, limits, conns, stop).await;
                Ok::<(), std::io::Error>(())
            }))
        }
        _ => None,
    };
    let signal = signals.recv().await;
    tracing::info!(signal, "shutting down");
    relay.stop().await;
    if let Some(f) = follower {
        let _ = f.await;
    }
    match tokio::time::timeout(std::time::Duration::from_secs(5), server).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => tracing::warn!(error = %e, "server error at shutdown"),
        Ok(Err(e)) => tracing::warn!(error = %e, "server task failed"),
        Err(_) => tracing::warn!("server did not stop within 5 s"),
    }
    if let Some(s) = eboard_server {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), s).await;
    }
    #[cfg(feature = "demo")]
    if let Some(d) = sim {
        d.stop();
    }
    tracing::info!("stopped; journals and PGN flushed");
    Ok(())
}

/// The signals that stop the relay cleanly. On Unix: SIGINT (Ctrl-C), SIGTERM (systemd,
/// `kill`) and SIGHUP (the terminal or the SSH session went away). On Windows: Ctrl-C,
/// Ctrl-Break and the console window being closed (Windows then allows a few seconds). A
/// relay stopped either way closes its websocket clients, flushes every journal and writes
/// the last PGN, and exits 0.
struct StopSignals {
    #[cfg(unix)]
    streams: [(tokio::signal::unix::Signal, &'static str); 3],
    #[cfg(windows)]
    streams:
        (tokio::signal::windows::CtrlC, tokio::signal::windows::CtrlBreak, tokio::signal::windows::CtrlClose),
}

impl StopSignals {
    /// Installs the handlers: from here on these signals no longer kill the process.
    fn new() -> std::io::Result<StopSignals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(StopSignals {
                streams: [
                    (signal(SignalKind::interrupt())?, "SIGINT"),
                    (signal(SignalKind::terminate())?, "SIGTERM"),
                    (signal(SignalKind::hangup())?, "SIGHUP"),
                ],
            })
        }
        #[cfg(windows)]
        {
            use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close};
            Ok(StopSignals { streams: (ctrl_c()?, ctrl_break()?, ctrl_close()?) })
        }
    }

    /// The name of the first signal received.
    async fn recv(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            let [(int, a), (term, b), (hup, c)] = &mut self.streams;
            tokio::select! {
                _ = int.recv() => a,
                _ = term.recv() => b,
                _ = hup.recv() => c,
            }
        }
        #[cfg(windows)]
        {
            let (c, brk, close) = &mut self.streams;
            tokio::select! {
                _ = c.recv() => "Ctrl-C",
                _ = brk.recv() => "Ctrl-Break",
                _ = close.recv() => "console closed",
            }
        }
    }
}
