//! `dgt-sim`: simulated DGT e-boards (with DGT 3000 clocks) on pseudo-terminals.
//!
//! Replay mode: `dgt-sim --boards 8 --pgn games.pgn --profile mixed --seed 7 --speed 20 --links DIR`
//! puts 8 boards behind `DIR/board-01` .. `DIR/board-08`; board k replays games k, k+8, ...
//! Single board: `dgt-sim --link /tmp/dgt0 --interactive` (commands on stdin) or
//! `--script FILE` (the same commands from a file).
//! Hand scripts: `dgt-sim --script FILE.json|DIR --links DIR` puts one board per script
//! (`dgt-hand-script/1`, the `*.json` files directly in DIR) behind `DIR/board-01` ..,
//! each replaying its script at the script's own pace (`--speed` still applies).
//! `--bursts MAX_MS[,SEED]` delivers each board's output late and in bursts, as over
//! Bluetooth (not on a chain).
//! Bus mode: `--bus` puts all the boards on one pty as a daisy chain (behind `--link PATH`,
//! or `DIR/bus` with `--links DIR`), each answering its own address, for software that
//! drives a chain in DGT's bus mode.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use dgt_hil_sim::clock::{Button, TimeControl};
use dgt_hil_sim::firmware::BoardConfig;
use dgt_hil_sim::hands::{GameEnd, PlanOptions, Profile, plan_game};
use dgt_hil_sim::pgn::{SourceGame, read_games};
use dgt_hil_sim::pty::ensure_dir;
use dgt_hil_sim::scenario::Action;
use dgt_hil_sim::transport::Bursts;
use dgt_hil_sim::{ScenarioHandle, SimBoard, SimChain, SimConfig, StartPolicy};
use dgt_protocol::ClockSide;
use nix::sys::signal::{SigSet, Signal};
use shakmaty::{Board, Color, Piece, Square};

#[derive(Parser, Debug)]
#[command(
    name = "dgt-sim",
    version,
    about = "Simulated DGT e-boards and DGT 3000 clocks on pseudo-terminals"
)]
struct Cli {
    /// Number of boards.
    #[arg(long, default_value_t = 1)]
    boards: usize,
    /// PGN file to replay (board k plays games k, k+N, k+2N, ...).
    #[arg(long)]
    pgn: Option<PathBuf>,
    /// Noise profile (see --list-profiles).
    #[arg(long, default_value = "clean")]
    profile: String,
    /// Seed of the noise.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Virtual time speed factor (1 = real time; clock displays always show game time).
    #[arg(long, default_value_t = 1.0)]
    speed: f64,
    /// Speed factor of a replay's hand sequences (a move's first lift to its press and the
    /// second after it, the end gesture), at most --speed; 1 = human pace.
    #[arg(long, default_value_t = 1.0)]
    hand_speed: f64,
    /// Folder for the stable links board-01, board-02, ...
    #[arg(long)]
    links: Option<PathBuf>,
    /// Stable link of a single board (instead of --links).
    #[arg(long)]
    link: Option<PathBuf>,
    /// Folder to write the ground truth JSON of every replay into.
    #[arg(long)]
    truth: Option<PathBuf>,
    /// First game of the file to use (0-based).
    #[arg(long, default_value_t = 0)]
    first_game: usize,
    /// Games per board (default: all assigned to it).
    #[arg(long)]
    games_per_board: Option<usize>,
    /// Replay the games again and again.
    #[arg(long = "loop")]
    repeat: bool,
    /// Keep the boards up after the last game (until killed).
    #[arg(long)]
    keep: bool,
    /// Start replays at once instead of waiting for a host to set an update mode.
    #[arg(long)]
    no_wait: bool,
    /// How game ends are shown: auto, kings, resign, flag, none.
    #[arg(long, default_value = "auto")]
    end: String,
    /// Board scan period in milliseconds (0: every change reported at once).
    #[arg(long, default_value_t = 200)]
    scan_ms: u64,
    /// Pace each board's output like a real 9600-baud line (960 bytes a second); clock
    /// readings that wait for the line give way to the latest.
    #[arg(long)]
    paced: bool,
    /// Deliver each board's output in bursts, as a Bluetooth serial link or a USB adapter's
    /// latency timer does: MAX_MS[,SEED[,MIN_MS]] (seed 1, MIN_MS 20): bytes are held back
    /// and let out together MIN_MS..=MAX_MS (real time) after the first byte of each burst.
    #[arg(long, value_name = "MAX_MS[,SEED[,MIN_MS]]", value_parser = Bursts::parse)]
    bursts: Option<Bursts>,
    /// All boards on one pty, daisy-chained for DGT's bus mode (behind --link PATH, or
    /// DIR/bus with --links DIR): each board answers its own address (its serial number),
    /// replies share the line at 9600 baud and collide when they overlap.
    #[arg(long)]
    bus: bool,
    /// Serial number of the first board (the others count up).
    #[arg(long, default_value_t = 10001)]
    serial: u32,
    /// Board firmware version, e.g. 1.80.
    #[arg(long, default_value = "1.80")]
    firmware: String,
    /// Single board: commands from stdin.
    #[arg(long)]
    interactive: bool,
    /// Single board: commands from a file. A hand script (`dgt-hand-script/1` JSON) or a
    /// folder of them (the *.json files directly in it) instead: one board per script,
    /// each replaying its script at the script's own pace.
    #[arg(long)]
    script: Option<PathBuf>,
    /// Time control of the single board's clock (e.g. 300+2, 40/7200:3600); "none" for no clock.
    #[arg(long, default_value = "5400+30")]
    clock: String,
    /// List the noise profiles and exit.
    #[arg(long)]
    list_profiles: bool,
}

/// Set when SIGINT or SIGTERM arrives: the boards are shut down and their links removed.
static STOP: AtomicBool = AtomicBool::new(false);

/// Links to remove if the process has to exit before the boards are shut down.
static LINKS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn register_link(board: &SimBoard) {
    if let (Some(link), Ok(mut links)) = (board.link(), LINKS.lock()) {
        links.push(link.to_path_buf());
    }
}

/// Blocks SIGINT/SIGTERM in every thread and waits for them in one (no signal handler, so
/// no unsafe code); a second signal, or a main thread that does not stop, exits at once.
fn watch_signals() {
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    if set.thread_block().is_err() {
        return;
    }
    let _ = std::thread::Builder::new().name("signals".into()).spawn(move || {
        if set.wait().is_ok() {
            STOP.store(true, Ordering::SeqCst);
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            std::thread::sleep(Duration::from_millis(50));
            if Instant::now() > deadline {
                // The main thread is stuck (reading stdin, say): take the links away.
                if let Ok(links) = LINKS.lock() {
                    for l in links.iter() {
                        if std::fs::symlink_metadata(l).is_ok_and(|m| m.file_type().is_symlink()) {
                            let _ = std::fs::remove_file(l);
                        }
                    }
                }
                std::process::exit(130);
            }
        }
    });
}

fn stopped() -> bool {
    STOP.load(Ordering::SeqCst)
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    watch_signals();
    match run(&cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dgt-sim: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}

fn run(cli: &Cli) -> Result<()> {
    if cli.list_profiles {
        for p in Profile::ALL {
            println!("{p}");
        }
        return Ok(());
    }
    let profile = Profile::parse(&cli.profile)?;
    let end = GameEnd::parse(&cli.end).with_context(|| format!("unknown --end {:?}", cli.end))?;
    let version = parse_version(&cli.firmware)?;
    if !(cli.speed.is_finite() && cli.speed > 0.0) {
        bail!("--speed must be a positive number");
    }
    if !(cli.hand_speed.is_finite() && cli.hand_speed > 0.0) {
        bail!("--hand-speed must be a positive number");
    }
    if cli.bus && cli.bursts.is_some() {
        bail!("--bursts holds back one board's own line; a chain's shared line has no such link");
    }
    if let Some(path) = &cli.script
        && !cli.interactive
        && dgt_hil_sim::script::looks_like_script(path)
    {
        return replay_scripts(cli, version, path);
    }
    if cli.interactive || cli.script.is_some() {
        if cli.bus {
            bail!(
                "--bus chains replays (--pgn) or hand scripts; --interactive and command files drive one board"
            );
        }
        return single_board(cli, version);
    }
    let Some(pgn) = &cli.pgn else {
        bail!(
            "nothing to do: give --pgn FILE to replay games, or --interactive / --script FILE for one board"
        );
    };
    let games = read_games(pgn)?;
    for g in games.iter().filter(|g| g.truncated.is_some()) {
        eprintln!(
            "note: game {} is cut short: {}",
            g.index + 1,
            g.truncated.as_deref().unwrap_or("unreadable move")
        );
    }
    replay(cli, profile, end, version, games)
}

fn parse_version(text: &str) -> Result<(u8, u8)> {
    let (a, b) =
        text.split_once('.').with_context(|| format!("firmware version {text:?} is not like 1.80"))?;
    let major: u8 = a.parse().with_context(|| format!("bad firmware version {text:?}"))?;
    let minor: u8 = b.parse().with_context(|| format!("bad firmware version {text:?}"))?;
    if major > 127 || minor > 127 {
        bail!("firmware version parts must be below 128");
    }
    Ok((major, minor))
}

fn board_config(cli: &Cli, i: usize, version: (u8, u8)) -> BoardConfig {
    let mut board = BoardConfig::with_serial(cli.serial + i as u32);
    board.version = version;
    board.scan_period_ms = cli.scan_ms;
    board
}

/// The boards of a run: each on a pty of its own, or all on one chain (`--bus`).
enum Boards {
    Own(Vec<SimBoard>),
    Chain(SimChain),
}

impl Boards {
    fn list(&self) -> &[SimBoard] {
        match self {
            Boards::Own(b) => b,
            Boards::Chain(c) => c.boards(),
        }
    }

    fn shutdown(self) -> Result<()> {
        match self {
            Boards::Own(boards) => {
                for b in boards {
                    b.shutdown()?;
                }
            }
            Boards::Chain(c) => c.shutdown()?,
        }
        Ok(())
    }
}

/// Starts `n` boards (`what` names board `i` in errors), on their own ptys behind
/// `--links DIR/board-NN` (or `--link` for one), or with `--bus` on one chain; prints where.
fn spawn_boards(cli: &Cli, n: usize, version: (u8, u8), what: impl Fn(usize) -> String) -> Result<Boards> {
    let template = |i: usize| SimConfig {
        board: board_config(cli, i, version),
        speed: cli.speed,
        hand_speed: cli.hand_speed,
        line_rate: cli.paced.then_some(960),
        bursts: cli.bursts,
        ..SimConfig::default()
    };
    if cli.bus {
        let link = match (&cli.links, &cli.link) {
            (_, Some(link)) => Some(link.clone()),
            (Some(dir), None) => Some(dir.join("bus")),
            (None, None) => None,
        };
        if let Some(dir) = link.as_ref().and_then(|l| l.parent()).filter(|d| !d.as_os_str().is_empty()) {
            ensure_dir(dir)?;
        }
        let chain = SimChain::spawn(n, &template(0), link.as_deref()).context("cannot start the chain")?;
        if let Some(l) = chain.link()
            && let Ok(mut links) = LINKS.lock()
        {
            links.push(l.to_path_buf());
        }
        match chain.link() {
            Some(l) => println!("bus of {n} boards: {} -> {}", chain.slave_path().display(), l.display()),
            None => println!("bus of {n} boards: {}", chain.slave_path().display()),
        }
        for (i, b) in chain.boards().iter().enumerate() {
            let serial = cli.serial + i as u32;
            println!("  {} serial {serial:05}, bus address {}  {}", b.name(), serial & 0x3FFF, what(i));
        }
        return Ok(Boards::Chain(chain));
    }
    let mut boards = Vec::with_capacity(n);
    for i in 0..n {
        let link = match (&cli.links, &cli.link) {
            (Some(dir), _) => Some(dir.join(format!("board-{:02}", i + 1))),
            (None, Some(link)) if n == 1 => Some(link.clone()),
            (None, Some(_)) => bail!("--link names one board; use --links DIR for several"),
            _ => None,
        };
        let board = SimBoard::spawn(SimConfig { link, ..template(i) })
            .with_context(|| format!("cannot start {}", what(i)))?;
        register_link(&board);
        let at = board.link().map_or(String::new(), |l| format!(" -> {}", l.display()));
        println!("{} {}{at}  {}", board.name(), board.slave_path().display(), what(i));
        boards.push(board);
    }
    Ok(Boards::Own(boards))
}

struct Lane {
    board: usize,
    games: Vec<usize>,
    next: usize,
    current: Option<(usize, ScenarioHandle)>,
    round: u64,
}

fn replay(
    cli: &Cli,
    profile: Profile,
    end: GameEnd,
    version: (u8, u8),
    games: Vec<SourceGame>,
) -> Result<()> {
    if cli.boards == 0 {
        bail!("--boards must be at least 1");
    }
    if let Some(dir) = &cli.links {
        ensure_dir(dir)?;
    }
    if let Some(dir) = &cli.truth {
        ensure_dir(dir)?;
    }
    let usable: Vec<usize> = (cli.first_game..games.len()).filter(|i| !games[*i].moves.is_empty()).collect();
    if usable.is_empty() {
        bail!("no game to replay from index {}", cli.first_game);
    }
    let assigned = |i: usize| -> Vec<usize> {
        let mut mine: Vec<usize> = usable.iter().copied().skip(i).step_by(cli.boards).collect();
        if mine.is_empty() {
            mine.push(usable[i % usable.len()]);
        }
        if let Some(n) = cli.games_per_board {
            mine.truncate(n.max(1));
        }
        mine
    };
    let boards = spawn_boards(cli, cli.boards, version, |i| {
        let games: Vec<String> = assigned(i).iter().map(|g| (g + 1).to_string()).collect();
        format!("games {}", games.join(","))
    })?;
    let mut lanes: Vec<Lane> = (0..cli.boards)
        .map(|i| Lane { board: i, games: assigned(i), next: 0, current: None, round: 0 })
        .collect();
    if !cli.no_wait {
        println!("each board starts its game when a host puts it in an update mode (--no-wait: at once)");
    }
    std::io::stdout().flush().ok();
    let policy = if cli.no_wait { StartPolicy::Immediately } else { StartPolicy::WhenHostListens };
    let started = Instant::now();
    let mut replays = 0u64;
    loop {
        let mut busy = false;
        for (b, lane) in lanes.iter_mut().enumerate() {
            let board = &boards.list()[lane.board];
            if let Some((g, handle)) = &lane.current {
                let Some(report) = handle.try_report() else {
                    busy = true;
                    continue;
                };
                replays += 1;
                if let (Some(dir), Some(truth)) = (&cli.truth, &report.truth) {
                    let path = dir.join(format!("board-{:02}-game-{:04}-r{}.json", b + 1, g + 1, lane.round));
                    std::fs::write(&path, truth.to_json())
                        .with_context(|| format!("cannot write {}", path.display()))?;
                }
                if let Some(t) = &report.truth {
                    println!(
                        "{}: game {} done ({} plies, {}, {})",
                        board.name(),
                        g + 1,
                        t.moves.len(),
                        t.result,
                        t.end
                    );
                }
                lane.current = None;
            }
            if lane.next >= lane.games.len() {
                if !cli.repeat {
                    continue;
                }
                lane.next = 0;
                lane.round += 1;
            }
            let g = lane.games[lane.next];
            lane.next += 1;
            let seed = cli.seed.wrapping_mul(1_000_003).wrapping_add(b as u64 * 7919 + lane.round);
            let opts =
                PlanOptions { profile, seed, scan_period_ms: cli.scan_ms, end, ..PlanOptions::default() };
            let scenario = plan_game(&games[g], &opts);
            lane.current = Some((g, board.start_scenario(scenario, policy)?));
            busy = true;
        }
        if !busy || stopped() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    println!("{replays} replays in {:.1} s", started.elapsed().as_secs_f64());
    if cli.keep && !stopped() {
        println!("boards stay up; stop with Ctrl-C");
        while !stopped() {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    boards.shutdown()
}

/// One board per hand script, each replaying its script (again with `--loop`); the truth
/// of each replay goes to `--truth DIR` as `board-NN-<script>-rR.json`.
fn replay_scripts(cli: &Cli, version: (u8, u8), path: &std::path::Path) -> Result<()> {
    let scripts = if path.is_dir() {
        dgt_hil_sim::script::load_dir(path)?
    } else {
        vec![dgt_hil_sim::script::load(path)?]
    };
    if scripts.is_empty() {
        bail!("no hand script (*.json) in {}", path.display());
    }
    for dir in [&cli.links, &cli.truth].into_iter().flatten() {
        ensure_dir(dir)?;
    }
    let policy = if cli.no_wait { StartPolicy::Immediately } else { StartPolicy::WhenHostListens };
    if cli.links.is_none() && cli.link.is_some() && scripts.len() > 1 && !cli.bus {
        bail!("--link names one board; use --links DIR for a folder of scripts");
    }
    let boards = spawn_boards(cli, scripts.len(), version, |i| scripts[i].to_string())?;
    let mut lanes = Vec::with_capacity(scripts.len());
    for (board, script) in boards.list().iter().zip(&scripts) {
        let handle = board.start_scenario(script.to_scenario(), policy)?;
        lanes.push((board, Some(handle), 0u64));
    }
    if !cli.no_wait {
        println!("each board starts its script when a host puts it in an update mode (--no-wait: at once)");
    }
    std::io::stdout().flush().ok();
    let started = Instant::now();
    let mut replays = 0u64;
    loop {
        let mut busy = false;
        for ((board, current, round), script) in lanes.iter_mut().zip(&scripts) {
            let Some(handle) = current.as_ref() else { continue };
            let Some(report) = handle.try_report() else {
                busy = true;
                continue;
            };
            replays += 1;
            if let Some(t) = &report.truth {
                if let Some(dir) = &cli.truth {
                    let file = dir.join(format!("{}-{}-r{round}.json", board.name(), script.name));
                    std::fs::write(&file, t.to_json())
                        .with_context(|| format!("cannot write {}", file.display()))?;
                }
                println!(
                    "{}: script {} done ({} plies, {}, {}){}",
                    board.name(),
                    script.name,
                    t.moves.len(),
                    t.result,
                    t.end,
                    if report.completed { "" } else { ", not completed" }
                );
            }
            *current = None;
            if cli.repeat && !stopped() {
                *round += 1;
                *current = Some(board.start_scenario(script.to_scenario(), policy)?);
                busy = true;
            }
        }
        if !busy || stopped() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    println!("{replays} replays in {:.1} s", started.elapsed().as_secs_f64());
    if cli.keep && !stopped() {
        println!("boards stay up; stop with Ctrl-C");
        while !stopped() {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    drop(lanes);
    boards.shutdown()
}

const HELP: &str = "commands: lift SQ | place SQ PIECE (FEN letter) | move FROM TO [PROMO] | press white|black \
                    | button back|minus|run|plus|ok | start | fen FEN | disconnect MS | garbage HEX.. | wait MS \
                    | status | help | quit";

fn single_board(cli: &Cli, version: (u8, u8)) -> Result<()> {
    let clock =
        if cli.clock == "none" { None } else { Some((TimeControl::parse(&cli.clock)?, ClockSide::Left)) };
    if let Some(link) = &cli.link
        && let Some(dir) = link.parent().filter(|d| !d.as_os_str().is_empty())
    {
        ensure_dir(dir)?;
    }
    let board = SimBoard::spawn(SimConfig {
        board: board_config(cli, 0, version),
        link: cli.link.clone(),
        speed: cli.speed,
        hand_speed: cli.hand_speed,
        clock,
        line_rate: cli.paced.then_some(960),
        bursts: cli.bursts,
        ..SimConfig::default()
    })?;
    register_link(&board);
    match board.link() {
        Some(l) => println!("{} -> {}", board.slave_path().display(), l.display()),
        None => println!("{}", board.slave_path().display()),
    }
    let input: Box<dyn BufRead> = match &cli.script {
        Some(path) => Box::new(std::io::BufReader::new(
            std::fs::File::open(path).with_context(|| format!("cannot read script {}", path.display()))?,
        )),
        None => {
            println!("{HELP}");
            Box::new(std::io::BufReader::new(std::io::stdin()))
        }
    };
    for (n, line) in input.lines().enumerate() {
        if stopped() {
            break;
        }
        let line = line?;
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        match command(&board, line, cli.speed) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) if cli.script.is_some() => bail!("script line {}: {e:#}", n + 1),
            Err(e) => println!("error: {e:#}"),
        }
        std::io::stdout().flush().ok();
    }
    while cli.keep && !stopped() {
        std::thread::sleep(Duration::from_millis(100));
    }
    board.shutdown()?;
    Ok(())
}

fn square(text: &str) -> Result<Square> {
    text.parse::<Square>().map_err(|_| anyhow::anyhow!("{text:?} is not a square"))
}

fn color(text: &str) -> Result<Color> {
    match text {
        "white" | "w" | "left" => Ok(Color::White),
        "black" | "b" | "right" => Ok(Color::Black),
        _ => bail!("{text:?} is not white or black"),
    }
}

fn piece(text: &str) -> Result<Piece> {
    let c = text.chars().next().with_context(|| "a piece letter is needed")?;
    Piece::from_char(c).with_context(|| format!("{text:?} is not a FEN piece letter"))
}

fn current_board(board: &SimBoard) -> Result<Board> {
    let fen = board.status()?.board_fen;
    fen.parse::<shakmaty::fen::Fen>().map(|f| f.as_setup().board.clone()).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Runs one command; false to stop.
fn command(board: &SimBoard, line: &str, speed: f64) -> Result<bool> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let arg =
        |i: usize| words.get(i).copied().with_context(|| format!("{:?} needs more arguments", words[0]));
    match words[0] {
        "quit" | "exit" => return Ok(false),
        "help" => println!("{HELP}"),
        "lift" => board.act(Action::Lift { square: square(arg(1)?)? })?,
        "place" => board.act(Action::Place { square: square(arg(1)?)?, piece: piece(arg(2)?)? })?,
        "move" => {
            let (from, to) = (square(arg(1)?)?, square(arg(2)?)?);
            let now = current_board(board)?;
            let mover = now.piece_at(from).with_context(|| format!("no piece on {from}"))?;
            let placed = match words.get(3) {
                Some(p) => piece(p)?,
                None => mover,
            };
            if now.piece_at(to).is_some() {
                board.act(Action::Lift { square: to })?;
            }
            board.act(Action::Lift { square: from })?;
            board.act(Action::Place { square: to, piece: placed })?;
        }
        "press" => board.act(Action::PressClock { color: color(arg(1)?)? })?,
        "button" => {
            let b = Button::parse(arg(1)?).with_context(|| "buttons: back, minus, run, plus, ok")?;
            board.act(Action::Button { button: b })?;
        }
        "start" => board.act(Action::StartClock)?,
        "fen" => {
            let fen = words[1..].join(" ");
            let setup = fen.parse::<shakmaty::fen::Fen>().map_err(|e| anyhow::anyhow!("bad FEN: {e}"))?;
            board.act(Action::SetPosition { board: setup.as_setup().board.clone() })?;
        }
        "disconnect" => {
            board.act(Action::Disconnect { down_ms: arg(1)?.parse().context("milliseconds")? })?
        }
        "garbage" => {
            let bytes = words[1..]
                .iter()
                .map(|h| u8::from_str_radix(h.trim_start_matches("0x"), 16).context("hex bytes"))
                .collect::<Result<Vec<u8>>>()?;
            board.act(Action::Garbage { bytes })?;
        }
        "wait" => {
            let ms: f64 = arg(1)?.parse().context("milliseconds")?;
            std::thread::sleep(Duration::from_secs_f64(ms / 1000.0 / speed));
        }
        "status" => print_status(board)?,
        other => bail!("unknown command {other:?}; {HELP}"),
    }
    Ok(true)
}

fn print_status(board: &SimBoard) -> Result<()> {
    let st = board.status()?;
    println!("port {}  host {}  mode {:?}", st.slave_path.display(), st.host_connected, st.mode);
    println!("board {}", st.board_fen);
    match &st.clock {
        Some(c) => println!(
            "clock L {} R {}  {}  lever {:?} up  text {:?}",
            hms(c.left.display_s),
            hms(c.right.display_s),
            if c.running { "running" } else { "stopped" },
            c.high_side,
            c.text
        ),
        None => println!("no clock"),
    }
    Ok(())
}

fn hms(s: u32) -> String {
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}
