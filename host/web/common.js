// Shared by the spectators' live page (app.js) and the operator's console (console.js): the
// websocket feed client, the board state it keeps, and the drawing of boards.
//
// Feed handling (host/API.md, "Websocket feed"): the server sends a snapshot on connect
// (seq n), then deltas numbered n+1, n+2, ... Deltas are applied in order; a duplicate is
// ignored and a gap makes the client ask for a fresh snapshot ({"type":"resync"}) and ignore
// deltas until it arrives. A closed or silent socket is reopened with backoff, and the new
// connection's snapshot replaces the state.
//
// Everything from the relay is treated as untrusted: shapes are checked, lengths bounded,
// and text is only ever written with textContent.

export const FEED_VERSION = 1;
export const START_FEN = 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1';
const FILES = 'abcdefgh';
// Filled glyphs (coloured by CSS) and outline glyphs (drawn over white pieces, so that they
// have a dark outline on every square colour). U+FE0E asks for text, not emoji.
const FILLED = { k: '\u265A', q: '\u265B', r: '\u265C', b: '\u265D', n: '\u265E', p: '\u265F\uFE0E' };
const OUTLINE = { k: '\u2654', q: '\u2655', r: '\u2656', b: '\u2657', n: '\u2658', p: '\u2659\uFE0E' };
export const MAX_MOVES = 1200;
const MAX_ALERTS = 100;
const PING_EVERY_MS = 15000;
const SILENCE_LIMIT_MS = 40000;
const RESYNC_TIMEOUT_MS = 5000;
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 10000;

// Marks on squares (bit flags).
export const MARK_LAST = 1;
export const MARK_PROVISIONAL = 2;
export const MARK_MISMATCH = 4;
export const MARK_SELECTED = 8;

// ---------------------------------------------------------------------------------------
// Chess helpers: just enough to draw a position from a FEN.

/** Index 0..63 (a1 = 0, h8 = 63) of a square name, or -1. */
export function squareIndex(name) {
  if (typeof name !== 'string' || !/^[a-h][1-8]$/.test(name)) return -1;
  return (name.charCodeAt(1) - 49) * 8 + (name.charCodeAt(0) - 97);
}

/** The name of square index i. */
export function squareName(i) {
  return FILES[i & 7] + String((i >> 3) + 1);
}

/** The piece placement of a FEN as 64 entries ('' or a FEN piece letter), or null. */
export function parsePlacement(fen) {
  if (typeof fen !== 'string' || fen.length > 200) return null;
  const ranks = fen.trim().split(/\s+/)[0].split('/');
  if (ranks.length !== 8) return null;
  const pos = new Array(64).fill('');
  for (let r = 0; r < 8; r++) {
    let file = 0;
    for (const ch of ranks[r]) {
      if (ch >= '1' && ch <= '8') {
        file += Number(ch);
      } else if ('pnbrqkPNBRQK'.includes(ch)) {
        if (file > 7) return null;
        pos[(7 - r) * 8 + file] = ch;
        file += 1;
      } else {
        return null;
      }
      if (file > 8) return null;
    }
    if (file !== 8) return null;
  }
  return pos;
}

export const UCI = /^([a-h][1-8])([a-h][1-8])([qrbn])?$/;

/** Seconds as h:mm:ss (or m:ss under an hour). */
export function formatClock(seconds) {
  if (!Number.isFinite(seconds)) return '–';
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

/** A wall-clock time (milliseconds since 1970) in the viewer's time zone: the time of day,
 * with the date when it is not today. */
export function formatTime(ms) {
  if (!Number.isFinite(ms) || ms <= 0) return '';
  const d = new Date(ms);
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  const today = new Date();
  if (d.toDateString() === today.toDateString()) return time;
  return `${d.toLocaleDateString([], { month: 'short', day: 'numeric' })} ${time}`;
}

// ---------------------------------------------------------------------------------------
// Validation of relay data.

export const str = (v, max = 500) => (typeof v === 'string' ? v.slice(0, max) : null);
export const uint = (v) => (Number.isInteger(v) && v >= 0 ? v : null);

export function asPlayer(raw) {
  if (!raw || typeof raw !== 'object') return { name: '', title: null, elo: null, federation: null, fide_id: null, team: null };
  return {
    name: str(raw.name, 200) || '',
    title: str(raw.title, 8),
    elo: uint(raw.elo),
    federation: str(raw.federation, 3),
    fide_id: uint(raw.fide_id),
    team: str(raw.team, 200),
  };
}

export function asPairing(raw) {
  const p = raw && typeof raw === 'object' ? raw : {};
  return { white: asPlayer(p.white), black: asPlayer(p.black) };
}

export function asMove(raw) {
  if (!raw || typeof raw !== 'object') return null;
  const ply = uint(raw.ply);
  if (ply === null) return null;
  return {
    ply,
    san: str(raw.san, 16) || '?',
    uci: str(raw.uci, 8) || '',
    clk: uint(raw.clk),
    emt: uint(raw.emt),
    at: uint(raw.at),
    fen: str(raw.fen, 200),
  };
}

export function asMoves(raw) {
  if (!Array.isArray(raw)) return [];
  return raw.slice(0, MAX_MOVES).map(asMove).filter(Boolean);
}

function asClock(raw) {
  if (!raw || typeof raw !== 'object') return null;
  const running = raw.running === 'white' || raw.running === 'black' ? raw.running : null;
  return { white: uint(raw.white), black: uint(raw.black), running };
}

export function asAlert(raw) {
  if (!raw || typeof raw !== 'object') return null;
  const level = ['info', 'warning', 'error'].includes(raw.level) ? raw.level : 'warning';
  const squares = Array.isArray(raw.squares) ? raw.squares.filter((s) => squareIndex(s) >= 0).slice(0, 64) : [];
  const clears = Array.isArray(raw.clears) ? raw.clears.filter((i) => uint(i) !== null).slice(0, 100) : [];
  return {
    id: uint(raw.id),
    at: uint(raw.at),
    code: str(raw.code, 64) || 'alert',
    level,
    message: str(raw.message, 1000) || '',
    squares,
    clears,
    cleared_by: uint(raw.cleared_by),
    acked_at: uint(raw.acked_at),
  };
}

function asAlerts(raw) {
  if (!Array.isArray(raw)) return [];
  return raw.slice(-MAX_ALERTS).map(asAlert).filter(Boolean);
}

export function asView(raw) {
  if (!raw || typeof raw !== 'object' || uint(raw.board) === null) return null;
  return {
    board: raw.board,
    serial: str(raw.serial, 64),
    port: str(raw.port, 300),
    status: str(raw.status, 32) || 'offline',
    round: uint(raw.round) ?? 0,
    pairing: asPairing(raw.pairing),
    start_fen: str(raw.start_fen, 200),
    fen: str(raw.fen, 200),
    live_fen: str(raw.live_fen, 200),
    moves: asMoves(raw.moves),
    provisional: asMoves(raw.provisional),
    clock: asClock(raw.clock),
    result: str(raw.result, 16),
    termination: str(raw.termination, 64),
    flipped: raw.flipped === true,
    battery: uint(raw.battery),
    alerts: asAlerts(raw.alerts),
  };
}

// ---------------------------------------------------------------------------------------
// The board state the feed builds.

/** Every board of the feed: views, parsed positions, clocks and the relay-wide alerts. */
export class FeedState {
  constructor() {
    this.seq = null; // sequence number of the last applied frame; null before the first snapshot
    this.boards = new Map(); // number -> Entry { view, confirmed, live, clock, fens }
    this.relayAlerts = [];
    this.serverSkew = 0; // the relay's wall clock minus ours, ms (from the snapshot's time)
    this.dirty = new Set();
    this.structureDirty = true;
    this.alertsDirty = true;
  }

  entry(n) {
    let e = this.boards.get(n);
    if (!e) {
      e = { view: asView({ board: n, round: 0 }), confirmed: null, live: null, clock: null, fens: new Map() };
      setView(e, e.view);
      this.boards.set(n, e);
      this.structureDirty = true;
    }
    return e;
  }

  applySnapshot(msg) {
    const boards = Array.isArray(msg.boards) ? msg.boards.map(asView).filter(Boolean) : [];
    const seen = new Set();
    for (const view of boards) {
      seen.add(view.board);
      const old = this.boards.get(view.board);
      if (old) setView(old, view);
      else {
        const e = { view, confirmed: null, live: null, clock: null, fens: new Map() };
        setView(e, view);
        this.boards.set(view.board, e);
        this.structureDirty = true;
      }
      this.dirty.add(view.board);
    }
    for (const n of [...this.boards.keys()]) {
      if (!seen.has(n)) {
        this.boards.delete(n);
        this.structureDirty = true;
      }
    }
    this.relayAlerts = asAlerts(msg.alerts);
    if (uint(msg.time) !== null) this.serverSkew = msg.time - Date.now();
    this.seq = uint(msg.seq) ?? 0;
    this.alertsDirty = true;
  }

  /** Applies one delta exactly as the host's `Delta::apply` does. */
  applyDelta(msg) {
    const type = msg.type;
    if (type === 'alert') {
      const alert = asAlert(msg.alert);
      if (!alert) return;
      const n = uint(msg.board);
      const list = n === null ? this.relayAlerts : this.entry(n).view.alerts;
      for (const a of list) if (alert.clears.includes(a.id)) a.cleared_by = alert.id;
      list.push(alert);
      if (list.length > MAX_ALERTS) list.shift();
      if (n !== null) this.dirty.add(n);
      this.alertsDirty = true;
      return;
    }
    if (type === 'alert_ack') {
      const n = uint(msg.board);
      const list = n === null ? this.relayAlerts : this.boards.get(n)?.view.alerts || [];
      for (const a of list) if (a.id === msg.id && a.acked_at === null) a.acked_at = uint(msg.acked_at);
      if (n !== null) this.dirty.add(n);
      this.alertsDirty = true;
      return;
    }
    if (type === 'board') {
      const view = asView(msg.view);
      if (!view) return;
      setView(this.entry(view.board), view);
      this.dirty.add(view.board);
      this.alertsDirty = true;
      return;
    }
    const n = uint(msg.board);
    if (n === null) return;
    if (!['move', 'retract', 'clock', 'status', 'result'].includes(type)) return; // unknown types: ignored
    const e = this.entry(n);
    const v = e.view;
    this.dirty.add(n);
    switch (type) {
      case 'move': {
        const mv = asMove(msg.move);
        if (!mv) return;
        const fen = str(msg.fen, 200);
        if (msg.state === 'confirmed') {
          v.moves = v.moves.filter((m) => m.ply < mv.ply);
          if (v.moves.length < MAX_MOVES) v.moves.push(mv);
          v.provisional = v.provisional.filter((m) => m.ply > mv.ply);
          for (const p of [...e.fens.keys()]) if (p >= mv.ply) e.fens.delete(p);
          if (fen) {
            v.fen = fen;
            e.fens.set(mv.ply, fen);
          }
          e.confirmed = parsePlacement(fen) || e.confirmed;
          if (!v.provisional.length) e.live = e.confirmed;
        } else if (msg.state === 'provisional') {
          v.provisional = v.provisional.filter((m) => m.ply < mv.ply);
          if (v.provisional.length < MAX_MOVES) v.provisional.push(mv);
          e.live = parsePlacement(fen) || e.live;
        }
        return;
      }
      case 'retract': {
        const from = uint(msg.from_ply);
        if (from === null) return;
        if (msg.state === 'provisional') {
          v.provisional = v.provisional.filter((m) => m.ply < from);
          e.live = parsePlacement(str(msg.fen, 200)) || (v.provisional.length ? e.live : e.confirmed);
        } else if (msg.state === 'confirmed') {
          v.moves = v.moves.filter((m) => m.ply < from);
          v.provisional = [];
          for (const p of [...e.fens.keys()]) if (p >= from) e.fens.delete(p);
          const fen = str(msg.fen, 200);
          if (fen) v.fen = fen;
          e.confirmed = parsePlacement(fen) || e.confirmed;
          e.live = e.confirmed;
        }
        return;
      }
      case 'clock':
        v.clock = asClock(msg.clock);
        setClock(e, v.clock);
        return;
      case 'status':
        v.status = str(msg.status, 32) || v.status;
        return;
      case 'result':
        v.result = str(msg.result, 16);
        v.termination = str(msg.termination, 64);
        return;
      default:
    }
  }
}

function setClock(entry, clock) {
  entry.clock = clock ? { ...clock, at: performance.now() } : null;
}

function setView(entry, view) {
  const oldStart = entry.view ? entry.view.start_fen : undefined;
  const oldFirst = entry.view && entry.view.moves[0] ? entry.view.moves[0].uci : '';
  entry.view = view;
  // The relay sends the position with every move: the page replays no chess.
  entry.confirmed = parsePlacement(view.fen) || parsePlacement(view.start_fen || START_FEN);
  entry.live = parsePlacement(view.live_fen) || entry.confirmed;
  setClock(entry, view.clock);
  // Positions after each ply, known from move deltas; a whole new board keeps those of
  // moves it still has (same ply and move), unless the game changed.
  const first = view.moves[0] ? view.moves[0].uci : '';
  if (oldStart !== view.start_fen || (oldFirst && first !== oldFirst)) entry.fens = new Map();
  if (entry.fens) {
    const keep = new Map(view.moves.map((m) => [m.ply, m.uci]));
    for (const p of [...entry.fens.keys()]) if (!keep.has(p)) entry.fens.delete(p);
    if (view.moves.length && view.fen) entry.fens.set(view.moves[view.moves.length - 1].ply, view.fen);
  }
}

/** The running side's time now: the last reading, less the whole seconds since. */
export function clockSeconds(entry, side) {
  const c = entry.clock;
  if (!c) return null;
  const base = c[side];
  if (base === null || base === undefined) return null;
  if (c.running !== side || !clockTicks(entry)) return base;
  return Math.max(0, base - Math.floor((performance.now() - c.at) / 1000));
}

export function clockTicks(entry) {
  const v = entry.view;
  return !!entry.clock && entry.clock.running !== null && v.status === 'active' && !v.result;
}

/** The latest alert among `codes`, or null. */
export function latest(alerts, codes) {
  for (let i = alerts.length - 1; i >= 0; i--) if (codes.includes(alerts[i].code)) return alerts[i];
  return null;
}

// ---------------------------------------------------------------------------------------
// The websocket connection.

/**
 * A feed connection. `handlers.onChange()` is called after every applied frame,
 * `handlers.onStatus(state, text)` when the connection's state changes ('connecting',
 * 'live', 'resyncing', 'offline'). `subscribe` (optional) is a list of board numbers.
 */
export class FeedClient {
  constructor(state, handlers, options = {}) {
    this.state = state;
    this.handlers = handlers;
    this.path = options.path || '../ws';
    this.ws = null;
    this.attempt = 0;
    this.lastMessage = 0;
    this.retryTimer = null;
    this.resyncTimer = null;
    this.awaitingSnapshot = true;
  }

  url() {
    const url = new URL(this.path, location.href);
    url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    url.hash = '';
    url.search = '';
    return url.href;
  }

  start() {
    this.connect();
    setInterval(() => this.heartbeat(), PING_EVERY_MS);
    window.addEventListener('online', () => {
      if (!this.ws) this.connect();
    });
  }

  status(state, text) {
    if (this.handlers.onStatus) this.handlers.onStatus(state, text);
  }

  connect() {
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.awaitingSnapshot = true;
    this.status('connecting', 'connecting…');
    let ws;
    try {
      ws = new WebSocket(this.url());
    } catch (e) {
      this.scheduleReconnect(`cannot open the feed: ${e}`);
      return;
    }
    this.ws = ws;
    this.lastMessage = performance.now();
    ws.addEventListener('message', (ev) => {
      if (this.ws !== ws) return;
      this.lastMessage = performance.now();
      if (typeof ev.data === 'string') this.onMessage(ev.data);
    });
    ws.addEventListener('close', () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.scheduleReconnect('connection lost');
    });
    ws.addEventListener('error', () => {
      // A close event follows; nothing to do here.
    });
  }

  scheduleReconnect(why) {
    clearTimeout(this.resyncTimer);
    if (this.retryTimer) return;
    const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** this.attempt);
    const delay = Math.round(base * (0.5 + Math.random() * 0.5));
    this.attempt = Math.min(this.attempt + 1, 10);
    this.status('offline', `${why}; reconnecting in ${Math.ceil(delay / 1000)} s`);
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }

  drop(why) {
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      try {
        ws.close(4000, why.slice(0, 100));
      } catch {
        // already closing
      }
    }
    this.scheduleReconnect(why);
  }

  send(obj) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(obj));
  }

  requestResync(why) {
    if (this.awaitingSnapshot) return;
    this.awaitingSnapshot = true;
    this.status('resyncing', `resynchronising (${why})`);
    this.send({ type: 'resync' });
    clearTimeout(this.resyncTimer);
    this.resyncTimer = setTimeout(() => {
      if (this.awaitingSnapshot) this.drop('no snapshot after a resync request');
    }, RESYNC_TIMEOUT_MS);
  }

  onMessage(text) {
    let msg;
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    if (!msg || typeof msg !== 'object' || typeof msg.type !== 'string') return;
    if (msg.v !== FEED_VERSION && this.handlers.onVersion) this.handlers.onVersion(msg.v);
    const st = this.state;
    if (msg.type === 'snapshot') {
      clearTimeout(this.resyncTimer);
      st.applySnapshot(msg);
      this.awaitingSnapshot = false;
      this.attempt = 0;
      this.status('live', 'live');
      this.handlers.onChange();
      return;
    }
    if (msg.type === 'pong') return;
    if (msg.type === 'error') {
      this.status('live', `feed error: ${str(msg.message, 200) || str(msg.code, 50) || '?'}`);
      return;
    }
    const seq = uint(msg.seq);
    if (seq === null || this.awaitingSnapshot || st.seq === null) return;
    if (seq <= st.seq) return; // already applied
    if (seq !== st.seq + 1) {
      this.requestResync(`missed ${seq - st.seq - 1} update(s)`);
      return;
    }
    st.seq = seq;
    st.applyDelta(msg);
    this.handlers.onChange();
  }

  heartbeat() {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    if (performance.now() - this.lastMessage > SILENCE_LIMIT_MS) {
      this.drop('the feed went silent');
      return;
    }
    this.send({ type: 'ping' });
  }
}

// ---------------------------------------------------------------------------------------
// DOM.

export const $ = (id) => document.getElementById(id);

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

export function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

/** A player as the pages show them: title, name; `fallback` for an unpaired side. */
/** FIDE federation codes and the ISO 3166 country codes their flags are drawn from. FIDE's
 * own flag (FID) and federations without a country code of their own have none. */
const FEDERATION_COUNTRY = {
  AFG: 'AF', ALB: 'AL', ALG: 'DZ', AND: 'AD', ANG: 'AO', ANT: 'AG', ARG: 'AR', ARM: 'AM', ARU: 'AW',
  AUS: 'AU', AUT: 'AT', AZE: 'AZ', BAH: 'BS', BRN: 'BH', BAN: 'BD', BAR: 'BB', BLR: 'BY', BEL: 'BE',
  BIZ: 'BZ', BEN: 'BJ', BER: 'BM', BHU: 'BT', BOL: 'BO', BIH: 'BA', BOT: 'BW', BRA: 'BR', IVB: 'VG',
  BRU: 'BN', BUL: 'BG', BUR: 'BF', BDI: 'BI', CAM: 'KH', CMR: 'CM', CAN: 'CA', CPV: 'CV', CAY: 'KY',
  CAF: 'CF', CHA: 'TD', CHI: 'CL', CHN: 'CN', COL: 'CO', COM: 'KM', CGO: 'CG', COD: 'CD', CRC: 'CR',
  CIV: 'CI', CRO: 'HR', CUB: 'CU', CYP: 'CY', CZE: 'CZ', DEN: 'DK', DJI: 'DJ', DMA: 'DM', DOM: 'DO',
  ECU: 'EC', EGY: 'EG', ESA: 'SV', GEQ: 'GQ', ERI: 'ER', EST: 'EE', SWZ: 'SZ', ETH: 'ET', FAI: 'FO',
  FIJ: 'FJ', FIN: 'FI', FRA: 'FR', GAB: 'GA', GAM: 'GM', GEO: 'GE', GER: 'DE', GHA: 'GH', GRE: 'GR',
  GRN: 'GD', GUM: 'GU', GUA: 'GT', GCI: 'GG', GUI: 'GN', GUY: 'GY', HAI: 'HT', HON: 'HN', HKG: 'HK',
  HUN: 'HU', ISL: 'IS', IND: 'IN', INA: 'ID', IRI: 'IR', IRQ: 'IQ', IRL: 'IE', IOM: 'IM', ISR: 'IL',
  ITA: 'IT', JAM: 'JM', JPN: 'JP', JCI: 'JE', JOR: 'JO', KAZ: 'KZ', KEN: 'KE', KOS: 'XK', KUW: 'KW',
  KGZ: 'KG', LAO: 'LA', LAT: 'LV', LBN: 'LB', LES: 'LS', LBR: 'LR', LBA: 'LY', LIE: 'LI', LTU: 'LT',
  LUX: 'LU', MAC: 'MO', MAD: 'MG', MAW: 'MW', MAS: 'MY', MDV: 'MV', MLI: 'ML', MLT: 'MT', MTN: 'MR',
  MRI: 'MU', MEX: 'MX', MDA: 'MD', MNC: 'MC', MGL: 'MN', MNE: 'ME', MAR: 'MA', MOZ: 'MZ', MYA: 'MM',
  NAM: 'NA', NRU: 'NR', NEP: 'NP', NED: 'NL', NZL: 'NZ', NCA: 'NI', NIG: 'NE', NGR: 'NG',
  MKD: 'MK', NOR: 'NO', OMA: 'OM', PAK: 'PK', PLW: 'PW', PLE: 'PS', PAN: 'PA', PNG: 'PG', PAR: 'PY',
  PER: 'PE', PHI: 'PH', POL: 'PL', POR: 'PT', PUR: 'PR', QAT: 'QA', ROU: 'RO', RUS: 'RU', RWA: 'RW',
  SKN: 'KN', LCA: 'LC', VIN: 'VC', SMR: 'SM', STP: 'ST', KSA: 'SA', SEN: 'SN', SRB: 'RS', SEY: 'SC',
  SLE: 'SL', SGP: 'SG', SVK: 'SK', SLO: 'SI', SOL: 'SB', SOM: 'SO', RSA: 'ZA', KOR: 'KR', SSD: 'SS',
  ESP: 'ES', SRI: 'LK', SUD: 'SD', SUR: 'SR', SWE: 'SE', SUI: 'CH', SYR: 'SY', TPE: 'TW', TJK: 'TJ',
  TAN: 'TZ', THA: 'TH', TLS: 'TL', TOG: 'TG', TGA: 'TO', TTO: 'TT', TUN: 'TN', TUR: 'TR', TKM: 'TM',
  UGA: 'UG', UKR: 'UA', UAE: 'AE', USA: 'US', URU: 'UY', ISV: 'VI', UZB: 'UZ', VAN: 'VU', VEN: 'VE',
  VIE: 'VN', YEM: 'YE', ZAM: 'ZM', ZIM: 'ZW',
};

/** England, Scotland and Wales: the emoji tag sequences of their flags. */
const FEDERATION_FLAG_TAGS = { ENG: 'gbeng', SCO: 'gbsct', WLS: 'gbwls' };

/** A federation's flag as an emoji, drawn by the viewer's own fonts (nothing is fetched);
 * '' when it has none. */
export function federationFlag(code) {
  if (!code) return '';
  const tags = FEDERATION_FLAG_TAGS[code];
  if (tags) return String.fromCodePoint(0x1f3f4, ...[...tags].map((c) => 0xe0000 + c.charCodeAt(0)), 0xe007f);
  const iso = FEDERATION_COUNTRY[code];
  if (!iso) return '';
  return String.fromCodePoint(...[...iso].map((c) => 0x1f1e6 + c.charCodeAt(0) - 65));
}

export function playerName(p, fallback) {
  const name = p.name && p.name !== '?' ? p.name : fallback;
  return p.title ? `${p.title} ${name}` : name;
}

/** A rendered chessboard; updates only the squares that change. `flipped` puts Black at
 * the bottom. */
export class BoardEl {
  constructor(big) {
    this.big = big;
    this.root = el('div', big ? 'board big' : 'board');
    this.root.setAttribute('role', 'img');
    this.cells = new Array(64);
    this.pieces = new Array(64).fill(null);
    this.marks = new Array(64).fill(-1);
    this.flipped = null;
    for (let sq = 0; sq < 64; sq++) {
      const cell = el('div', ((sq >> 3) + (sq & 7)) % 2 === 0 ? 'sq dark' : 'sq light');
      cell.dataset.sq = squareName(sq);
      this.cells[sq] = cell;
    }
    this.setFlipped(false);
  }

  /** Orders the squares: White at the bottom, or Black when flipped. */
  setFlipped(flipped) {
    if (this.flipped === flipped) return;
    this.flipped = flipped;
    const order = [];
    for (let i = 0; i < 64; i++) {
      const row = i >> 3;
      const col = i & 7;
      const sq = flipped ? row * 8 + (7 - col) : (7 - row) * 8 + col;
      const cell = this.cells[sq];
      delete cell.dataset.rank;
      delete cell.dataset.file;
      if (this.big && col === 0) cell.dataset.rank = String((sq >> 3) + 1);
      if (this.big && row === 7) cell.dataset.file = FILES[sq & 7];
      order.push(cell);
    }
    this.root.replaceChildren(...order);
    this.root.dataset.flipped = String(flipped);
  }

  update(pos, marks, label) {
    for (let sq = 0; sq < 64; sq++) {
      const cell = this.cells[sq];
      const p = pos[sq] || '';
      if (this.pieces[sq] !== p) {
        this.pieces[sq] = p;
        const white = p !== '' && p === p.toUpperCase();
        cell.textContent = p ? FILLED[p.toLowerCase()] : '';
        cell.dataset.piece = p;
        if (white) cell.dataset.outline = OUTLINE[p.toLowerCase()];
        else delete cell.dataset.outline;
        cell.classList.toggle('pw', white);
        cell.classList.toggle('pb', p !== '' && !white);
      }
      const m = marks ? marks[sq] : 0;
      if (this.marks[sq] !== m) {
        this.marks[sq] = m;
        cell.classList.toggle('last', (m & MARK_LAST) !== 0);
        cell.classList.toggle('prov', (m & MARK_PROVISIONAL) !== 0);
        cell.classList.toggle('mismatch', (m & MARK_MISMATCH) !== 0);
        cell.classList.toggle('selected', (m & MARK_SELECTED) !== 0);
      }
    }
    if (this.root.getAttribute('aria-label') !== label) this.root.setAttribute('aria-label', label);
  }
}

/** Marks for the last move `uci` (bit `bit`), as an array of 64. */
export function moveMarks(uci, bit = MARK_LAST) {
  const marks = new Array(64).fill(0);
  const m = typeof uci === 'string' ? UCI.exec(uci) : null;
  if (m) {
    marks[squareIndex(m[1])] |= bit;
    marks[squareIndex(m[2])] |= bit;
  }
  return marks;
}

/** Keeps `--cell` (a square's size in px) on `scope` equal to the size of `board`'s squares. */
const sizers = new Map();
export function sizeSquares(scope, board) {
  if (typeof ResizeObserver !== 'function') return;
  let s = sizers.get(scope);
  if (!s) {
    s = {
      board: null,
      cell: 0,
      observer: new ResizeObserver((entries) => {
        const width = entries[entries.length - 1].contentRect.width;
        const cell = Math.max(4, Math.floor((width / 8) * 10) / 10);
        if (cell !== s.cell) {
          s.cell = cell;
          scope.style.setProperty('--cell', `${cell}px`);
        }
      }),
    };
    sizers.set(scope, s);
  }
  if (s.board === board) return;
  if (s.board) s.observer.unobserve(s.board);
  s.board = board;
  if (board) s.observer.observe(board);
}

/** GET a JSON read route; resolves to the parsed body, or null on any failure. */
export async function getJson(path) {
  try {
    const r = await fetch(new URL(path, location.href), { headers: { accept: 'application/json' } });
    if (!r.ok) return null;
    return await r.json();
  } catch {
    return null;
  }
}
