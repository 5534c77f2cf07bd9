// The DGT live relay page: a grid of every board, a single-board view (#board=N) and an
// operator alert panel, driven by the relay's websocket feed (version 1, see host/src/feed.rs).
//
// Feed handling: the server sends a snapshot on connect (seq n), then deltas numbered
// n+1, n+2, ... Deltas are applied in order; a duplicate is ignored and a gap makes the page
// ask for a fresh snapshot ({"type":"resync"}) and ignore deltas until it arrives. A closed
// or silent socket is reopened with backoff, and the new connection's snapshot replaces the
// state. Rendering is batched into one requestAnimationFrame per frame and touches only the
// boards that changed (and, within a board, only the squares that changed).
//
// Everything from the feed is treated as untrusted: shapes are checked, lengths bounded, and
// text is only ever written with textContent.

const FEED_VERSION = 1;
const START_FEN = 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1';
const FILES = 'abcdefgh';
// Filled glyphs for both colours (coloured by CSS); U+FE0E asks for text, not emoji.
const GLYPHS = { k: '\u265A', q: '\u265B', r: '\u265C', b: '\u265D', n: '\u265E', p: '\u265F\uFE0E' };
const MAX_PANEL_ALERTS = 300;
const MAX_MOVES = 1200;
const MAX_BOARD_ALERTS = 50;
const PING_EVERY_MS = 15000;
const SILENCE_LIMIT_MS = 40000;
const RESYNC_TIMEOUT_MS = 5000;
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 10000;

// Marks on squares (bit flags).
const MARK_LAST = 1;
const MARK_PROVISIONAL = 2;
const MARK_MISMATCH = 4;

// ---------------------------------------------------------------------------------------
// Chess helpers: just enough to draw a position from a FEN plus UCI moves.

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

const UCI = /^([a-h][1-8])([a-h][1-8])([qrbn])?$/;

/** Seconds as h:mm:ss (or m:ss under an hour). */
export function formatClock(seconds) {
  if (!Number.isFinite(seconds)) return '–';
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

// ---------------------------------------------------------------------------------------
// Validation of feed data.

const str = (v, max = 500) => (typeof v === 'string' ? v.slice(0, max) : null);
const uint = (v) => (Number.isInteger(v) && v >= 0 ? v : null);

function asPlayer(raw) {
  if (!raw || typeof raw !== 'object') return { name: '', title: null };
  return { name: str(raw.name, 200) || '', title: str(raw.title, 8) };
}

function asMove(raw) {
  if (!raw || typeof raw !== 'object') return null;
  const ply = uint(raw.ply);
  if (ply === null) return null;
  return { ply, san: str(raw.san, 16) || '?', uci: str(raw.uci, 8) || '', clk: uint(raw.clk), emt: uint(raw.emt) };
}

function asMoves(raw) {
  if (!Array.isArray(raw)) return [];
  return raw.slice(0, MAX_MOVES).map(asMove).filter(Boolean);
}

function asClock(raw) {
  if (!raw || typeof raw !== 'object') return null;
  const running = raw.running === 'white' || raw.running === 'black' ? raw.running : null;
  return { white: uint(raw.white), black: uint(raw.black), running };
}

function asAlert(raw) {
  if (!raw || typeof raw !== 'object') return null;
  const level = ['info', 'warning', 'error'].includes(raw.level) ? raw.level : 'warning';
  const squares = Array.isArray(raw.squares) ? raw.squares.filter((s) => squareIndex(s) >= 0).slice(0, 64) : [];
  return { code: str(raw.code, 64) || 'alert', level, message: str(raw.message, 1000) || '', squares };
}

function asAlerts(raw) {
  if (!Array.isArray(raw)) return [];
  return raw.slice(-MAX_BOARD_ALERTS).map(asAlert).filter(Boolean);
}

function asView(raw) {
  if (!raw || typeof raw !== 'object' || uint(raw.board) === null) return null;
  const pairing = raw.pairing && typeof raw.pairing === 'object' ? raw.pairing : {};
  return {
    board: raw.board,
    serial: str(raw.serial, 64),
    port: str(raw.port, 300),
    status: str(raw.status, 32) || 'offline',
    round: uint(raw.round) ?? 0,
    pairing: { white: asPlayer(pairing.white), black: asPlayer(pairing.black) },
    start_fen: str(raw.start_fen, 200),
    fen: str(raw.fen, 200),
    live_fen: str(raw.live_fen, 200),
    moves: asMoves(raw.moves),
    provisional: asMoves(raw.provisional),
    clock: asClock(raw.clock),
    result: str(raw.result, 16),
    termination: str(raw.termination, 64),
    flipped: raw.flipped === true,
    alerts: asAlerts(raw.alerts),
  };
}

// ---------------------------------------------------------------------------------------
// State.

const state = {
  seq: null, // sequence number of the last applied frame; null before the first snapshot
  awaitingSnapshot: true,
  boards: new Map(), // number -> Entry
  panel: [], // operator alerts, newest first: { id, board, alert, time }
  panelSeen: 0,
  structureDirty: true,
  panelDirty: true,
  dirty: new Set(),
};

let nextAlertId = 1;

function newEntry(view) {
  const entry = { view, confirmed: null, live: null, clock: null, tile: null, detailKey: '' };
  setView(entry, view);
  return entry;
}

function setClock(entry, clock) {
  entry.clock = clock ? { ...clock, at: performance.now() } : null;
}

function setView(entry, view) {
  entry.view = view;
  // The relay sends the position with every move: the page replays no chess.
  entry.confirmed = parsePlacement(view.fen) || parsePlacement(view.start_fen || START_FEN);
  entry.live = parsePlacement(view.live_fen) || entry.confirmed;
  setClock(entry, view.clock);
}

function boardEntry(n) {
  let e = state.boards.get(n);
  if (!e) {
    const view = asView({ board: n, round: 0 });
    e = newEntry(view);
    state.boards.set(n, e);
    state.structureDirty = true;
  }
  return e;
}

function pushPanel(board, alert, time) {
  state.panel.unshift({ id: nextAlertId++, board, alert, time });
  if (state.panel.length > MAX_PANEL_ALERTS) state.panel.length = MAX_PANEL_ALERTS;
  state.panelDirty = true;
}

const alertKey = (a) => `${a.code}\u0000${a.message}`;

/** Alerts in `now` beyond those already in `before` (as multisets), in order. */
function newAlerts(before, now) {
  const counts = new Map();
  for (const a of before) counts.set(alertKey(a), (counts.get(alertKey(a)) || 0) + 1);
  const out = [];
  for (const a of now) {
    const k = alertKey(a);
    const c = counts.get(k) || 0;
    if (c > 0) counts.set(k, c - 1);
    else out.push(a);
  }
  return out;
}

let relayAlerts = [];

function applySnapshot(msg) {
  const first = state.seq === null;
  const boards = Array.isArray(msg.boards) ? msg.boards.map(asView).filter(Boolean) : [];
  const alerts = asAlerts(msg.alerts);
  const seen = new Set();
  for (const view of boards) {
    seen.add(view.board);
    const old = state.boards.get(view.board);
    const added = newAlerts(old ? old.view.alerts : [], view.alerts);
    for (const a of added) pushPanel(view.board, a, first ? null : new Date());
    if (old) {
      setView(old, view);
    } else {
      state.boards.set(view.board, newEntry(view));
      state.structureDirty = true;
    }
    state.dirty.add(view.board);
  }
  for (const n of [...state.boards.keys()]) {
    if (!seen.has(n)) {
      state.boards.delete(n);
      state.structureDirty = true;
    }
  }
  for (const a of newAlerts(relayAlerts, alerts)) pushPanel(null, a, first ? null : new Date());
  relayAlerts = alerts;
  state.seq = uint(msg.seq) ?? 0;
  state.awaitingSnapshot = false;
  scheduleRender();
}

/** Applies one delta exactly as the host's `Delta::apply` does. */
function applyDelta(msg) {
  const type = msg.type;
  if (type === 'alert') {
    const alert = asAlert(msg.alert);
    if (!alert) return;
    const n = uint(msg.board);
    if (n === null) {
      relayAlerts.push(alert);
      if (relayAlerts.length > MAX_BOARD_ALERTS) relayAlerts.shift();
    } else {
      const e = boardEntry(n);
      e.view.alerts.push(alert);
      if (e.view.alerts.length > MAX_BOARD_ALERTS) e.view.alerts.shift();
      state.dirty.add(n);
    }
    pushPanel(n, alert, new Date());
    return;
  }
  if (type === 'board') {
    const view = asView(msg.view);
    if (!view) return;
    const old = state.boards.get(view.board);
    if (old) setView(old, view);
    else {
      state.boards.set(view.board, newEntry(view));
      state.structureDirty = true;
    }
    state.dirty.add(view.board);
    return;
  }
  const n = uint(msg.board);
  if (n === null) return;
  if (!['move', 'retract', 'clock', 'status', 'result'].includes(type)) return;
  const e = boardEntry(n);
  const v = e.view;
  state.dirty.add(n);
  switch (type) {
    case 'move': {
      const mv = asMove(msg.move);
      if (!mv) return;
      if (msg.state === 'confirmed') {
        v.moves = v.moves.filter((m) => m.ply < mv.ply);
        if (v.moves.length < MAX_MOVES) v.moves.push(mv);
        v.provisional = v.provisional.filter((m) => m.ply > mv.ply);
        const fen = str(msg.fen, 200);
        if (fen) v.fen = fen;
        e.confirmed = parsePlacement(fen) || e.confirmed;
        if (!v.provisional.length) e.live = e.confirmed;
      } else if (msg.state === 'provisional') {
        v.provisional = v.provisional.filter((m) => m.ply < mv.ply);
        if (v.provisional.length < MAX_MOVES) v.provisional.push(mv);
        e.live = parsePlacement(str(msg.fen, 200)) || e.live;
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
      if (typeof msg.serial === 'string') v.serial = str(msg.serial, 64);
      if (typeof msg.port === 'string') v.port = str(msg.port, 300);
      return;
    case 'result':
      v.result = str(msg.result, 16);
      v.termination = str(msg.termination, 64);
      return;
    default:
  }
}

// ---------------------------------------------------------------------------------------
// Derived display data.

/** The latest alert among `codes`, or null. */
function latest(alerts, codes) {
  for (let i = alerts.length - 1; i >= 0; i--) if (codes.includes(alerts[i].code)) return alerts[i];
  return null;
}

function derive(entry) {
  const v = entry.view;
  const pos = entry.live || entry.confirmed;
  const provisional = v.provisional.length > 0;
  const last = provisional ? v.provisional[v.provisional.length - 1] : v.moves[v.moves.length - 1];
  const mm = latest(v.alerts, ['position_mismatch', 'position_recovered']);
  const mismatch = mm && mm.code === 'position_mismatch' ? mm : null;
  const battery = latest(v.alerts, ['battery_low', 'battery_ok']);
  const marks = new Array(64).fill(0);
  if (last && UCI.test(last.uci)) {
    const bit = provisional ? MARK_PROVISIONAL : MARK_LAST;
    marks[squareIndex(last.uci.slice(0, 2))] |= bit;
    marks[squareIndex(last.uci.slice(2, 4))] |= bit;
  }
  if (mismatch) for (const s of mismatch.squares) marks[squareIndex(s)] |= MARK_MISMATCH;
  const badges = [];
  if (v.result) badges.push(['finished', `finished ${v.result}`]);
  if (v.status === 'not_responding') badges.push(['down', 'not responding']);
  else if (v.status === 'offline') badges.push(['offline', 'offline']);
  else if (v.status === 'connecting') badges.push(['connecting', 'connecting']);
  else if (v.status === 'active' && !v.result) badges.push(['live', 'live']);
  if (provisional) badges.push(['provisional', 'provisional move']);
  if (mismatch) badges.push(['mismatch', `position mismatch${mismatch.squares.length ? ': ' + mismatch.squares.join(' ') : ''}`]);
  if (battery && battery.code === 'battery_low') badges.push(['battery', 'battery low']);
  return { pos: pos || new Array(64).fill(''), marks, badges, mismatch, last, provisional };
}

function clockSeconds(entry, side) {
  const c = entry.clock;
  if (!c) return null;
  const base = c[side];
  if (base === null || base === undefined) return null;
  if (c.running !== side || !clockTicks(entry)) return base;
  return Math.max(0, base - Math.floor((performance.now() - c.at) / 1000));
}

function clockTicks(entry) {
  const v = entry.view;
  return !!entry.clock && entry.clock.running !== null && v.status === 'active' && !v.result;
}

function playerName(p, fallback) {
  const name = p.name && p.name !== '?' ? p.name : fallback;
  return p.title ? `${p.title} ${name}` : name;
}

// ---------------------------------------------------------------------------------------
// DOM.

const $ = (id) => document.getElementById(id);

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

/** A rendered chessboard; updates only the squares that change. */
class BoardEl {
  constructor(big) {
    this.root = el('div', big ? 'board big' : 'board');
    this.root.setAttribute('role', 'img');
    this.cells = new Array(64);
    this.pieces = new Array(64).fill(null);
    this.marks = new Array(64).fill(-1);
    for (let i = 0; i < 64; i++) {
      const sq = (7 - (i >> 3)) * 8 + (i & 7); // white at the bottom
      const cell = el('div', ((sq >> 3) + (sq & 7)) % 2 === 0 ? 'sq dark' : 'sq light');
      cell.dataset.sq = squareName(sq);
      if (big && (sq & 7) === 0) cell.dataset.rank = String((sq >> 3) + 1);
      if (big && sq >> 3 === 0) cell.dataset.file = FILES[sq & 7];
      this.cells[sq] = cell;
      this.root.append(cell);
    }
  }

  update(pos, marks, label) {
    for (let sq = 0; sq < 64; sq++) {
      const cell = this.cells[sq];
      const p = pos[sq] || '';
      if (this.pieces[sq] !== p) {
        this.pieces[sq] = p;
        cell.textContent = p ? GLYPHS[p.toLowerCase()] : '';
        cell.dataset.piece = p;
        cell.classList.toggle('pw', p !== '' && p === p.toUpperCase());
        cell.classList.toggle('pb', p !== '' && p !== p.toUpperCase());
      }
      const m = marks[sq];
      if (this.marks[sq] !== m) {
        this.marks[sq] = m;
        cell.classList.toggle('last', (m & MARK_LAST) !== 0);
        cell.classList.toggle('prov', (m & MARK_PROVISIONAL) !== 0);
        cell.classList.toggle('mismatch', (m & MARK_MISMATCH) !== 0);
      }
    }
    if (this.root.getAttribute('aria-label') !== label) this.root.setAttribute('aria-label', label);
  }
}

function renderBadges(container, badges, prevKeyHolder) {
  const key = badges.map((b) => b.join(':')).join('|');
  if (prevKeyHolder.badgeKey === key) return;
  prevKeyHolder.badgeKey = key;
  container.replaceChildren(...badges.map(([cls, text]) => el('span', `badge ${cls}`, text)));
}

/** One board in the grid. */
class Tile {
  constructor(n) {
    this.root = el('a', 'tile');
    this.root.href = `#board=${n}`;
    this.root.dataset.board = String(n);
    const top = el('div', 'bar');
    this.num = el('span', 'num', String(n));
    this.black = el('span', 'name');
    this.blackClock = el('span', 'clk');
    top.append(this.num, el('span', 'dot b'), this.black, this.blackClock);
    this.board = new BoardEl(false);
    const bottom = el('div', 'bar');
    this.white = el('span', 'name');
    this.whiteClock = el('span', 'clk');
    this.info = el('span', 'info');
    bottom.append(this.info, el('span', 'dot w'), this.white, this.whiteClock);
    this.badges = el('div', 'badges');
    this.root.append(top, this.board.root, bottom, this.badges);
    this.badgeKey = null;
  }

  render(entry) {
    const v = entry.view;
    const d = derive(entry);
    setText(this.white, playerName(v.pairing.white, 'White'));
    setText(this.black, playerName(v.pairing.black, 'Black'));
    this.white.title = this.white.textContent;
    this.black.title = this.black.textContent;
    const last = d.last;
    const no = last ? `${Math.ceil(last.ply / 2)}${last.ply % 2 ? '.' : '...'}` : '';
    setText(this.info, last ? `${no} ${last.san}${d.provisional ? '?' : ''}` : '');
    this.board.update(d.pos, d.marks, `Board ${v.board}`);
    renderBadges(this.badges, d.badges, this);
    const data = this.root.dataset;
    const ply = String(v.moves.length ? v.moves[v.moves.length - 1].ply : 0);
    if (data.provisional !== String(v.provisional.length)) data.provisional = String(v.provisional.length);
    if (data.status !== v.status) data.status = v.status;
    if (data.ply !== ply) data.ply = ply; // last: observers of data-ply see the finished tile
    this.root.classList.toggle('is-mismatch', !!d.mismatch);
    this.root.classList.toggle('is-down', v.status === 'not_responding');
    this.root.classList.toggle('is-finished', !!v.result);
    this.renderClocks(entry);
  }

  renderClocks(entry) {
    const running = entry.clock && clockTicks(entry) ? entry.clock.running : null;
    setText(this.whiteClock, entry.clock ? formatClock(clockSeconds(entry, 'white') ?? NaN) : '');
    setText(this.blackClock, entry.clock ? formatClock(clockSeconds(entry, 'black') ?? NaN) : '');
    this.whiteClock.classList.toggle('running', running === 'white');
    this.blackClock.classList.toggle('running', running === 'black');
  }
}

/** The single-board view. */
class Detail {
  constructor(container) {
    this.container = container;
    this.board = null;
    this.n = null;
  }

  show(n) {
    this.n = n;
    this.board = null;
    this.movesKey = null;
    this.badgeKey = null;
    this.alertsKey = null;
    this.container.replaceChildren();
    const entry = state.boards.get(n);
    if (!entry) {
      this.container.append(el('p', 'empty', `Board ${n} is not in the feed (yet).`));
      return;
    }
    this.build(entry);
    this.render(entry);
  }

  build(entry) {
    const v = entry.view;
    this.title = el('h2', 'detail-title');
    this.badges = el('div', 'badges');
    const wrap = el('div', 'detail');
    const left = el('div', 'detail-board');
    const black = el('div', 'bar big-bar');
    this.blackName = el('span', 'name');
    this.blackClock = el('span', 'clk');
    black.append(el('span', 'dot b'), this.blackName, this.blackClock);
    this.board = new BoardEl(true);
    const white = el('div', 'bar big-bar');
    this.whiteName = el('span', 'name');
    this.whiteClock = el('span', 'clk');
    white.append(el('span', 'dot w'), this.whiteName, this.whiteClock);
    this.mismatchNote = el('p', 'mismatch-note');
    left.append(black, this.board.root, white, this.mismatchNote);
    const right = el('div', 'detail-side');
    this.links = el('p', 'links');
    this.pgn = el('a', 'pgn-link', 'Download PGN');
    this.roundPgn = el('a', 'round-pgn-link', 'round PGN');
    this.links.append(this.pgn, ' · ', this.roundPgn);
    this.meta = el('p', 'meta muted');
    const table = el('table', 'moves');
    const head = el('thead');
    const hr = el('tr');
    hr.append(el('th', null, '#'), el('th', null, 'White'), el('th', null, 'Black'));
    head.append(hr);
    this.tbody = el('tbody');
    table.append(head, this.tbody);
    this.moveBox = el('div', 'move-box');
    this.moveBox.append(table);
    this.alertBox = el('ol', 'alert-list small');
    right.append(this.links, this.meta, this.moveBox, el('h3', null, 'Alerts on this board'), this.alertBox);
    wrap.append(left, right);
    this.container.append(this.title, this.badges, wrap);
    sizeSquares(this.container, this.board.root);
    this.container.dataset.board = String(v.board);
  }

  render(entry) {
    if (!this.board) return;
    const v = entry.view;
    const d = derive(entry);
    setText(this.title, `Board ${v.board} · round ${v.round}`);
    setText(this.whiteName, playerName(v.pairing.white, 'White'));
    setText(this.blackName, playerName(v.pairing.black, 'Black'));
    this.board.update(d.pos, d.marks, `Board ${v.board}`);
    renderBadges(this.badges, d.badges, this);
    setText(this.mismatchNote, d.mismatch ? d.mismatch.message || `Check squares ${d.mismatch.squares.join(', ')}.` : '');
    const pgnUrl = new URL(`../pgn/${v.round}/${v.board}`, location.href).pathname;
    if (this.pgn.getAttribute('href') !== pgnUrl) {
      this.pgn.href = pgnUrl;
      this.pgn.download = `round-${v.round}-board-${v.board}.pgn`;
      this.roundPgn.href = new URL(`../pgn/${v.round}`, location.href).pathname;
      this.roundPgn.download = `round-${v.round}.pgn`;
    }
    const meta = [v.serial ? `serial ${v.serial}` : null, v.port, v.flipped ? 'rotated board' : null,
      v.termination ? `termination: ${v.termination}` : null].filter(Boolean).join(' · ');
    setText(this.meta, meta);
    this.renderMoves(v);
    this.renderAlerts(v);
    this.renderClocks(entry);
  }

  renderMoves(v) {
    const lastOf = (list) => (list.length ? list[list.length - 1].uci + list[list.length - 1].clk : '');
    const key = `${v.moves.length}/${lastOf(v.moves)}/${v.provisional.length}/${lastOf(v.provisional)}`;
    if (key === this.movesKey) return;
    this.movesKey = key;
    const rows = new Map();
    const all = v.moves.map((m) => [m, false]).concat(v.provisional.map((m) => [m, true]));
    for (const [m, prov] of all) {
      const no = Math.ceil(m.ply / 2);
      let row = rows.get(no);
      if (!row) {
        row = { tr: el('tr'), cells: [el('td', 'no', `${no}.`), el('td', 'mv'), el('td', 'mv')] };
        row.tr.append(...row.cells);
        row.tr.dataset.move = String(no);
        rows.set(no, row);
      }
      const cell = row.cells[m.ply % 2 === 1 ? 1 : 2];
      cell.replaceChildren(el('span', 'san', m.san), el('span', 'mclk', m.clk !== null ? formatClock(m.clk) : ''));
      cell.dataset.ply = String(m.ply);
      cell.classList.toggle('prov', prov);
      cell.title = (prov ? 'provisional; ' : '') + (m.emt !== null ? `used ${formatClock(m.emt)}` : '');
    }
    this.tbody.replaceChildren(...[...rows.values()].map((r) => r.tr));
    this.moveBox.scrollTop = this.moveBox.scrollHeight;
  }

  renderAlerts(v) {
    const key = v.alerts.map(alertKey).join('\n');
    if (key === this.alertsKey) return;
    this.alertsKey = key;
    const items = v.alerts.slice().reverse().map((a) => {
      const li = el('li', `alert ${a.level}`);
      li.append(el('span', 'code', a.code.replace(/_/g, ' ')), el('span', 'msg', a.message));
      return li;
    });
    this.alertBox.replaceChildren(...(items.length ? items : [el('li', 'muted', 'none')]));
  }

  renderClocks(entry) {
    if (!this.board) return;
    const running = entry.clock && clockTicks(entry) ? entry.clock.running : null;
    setText(this.whiteClock, entry.clock ? formatClock(clockSeconds(entry, 'white') ?? NaN) : '');
    setText(this.blackClock, entry.clock ? formatClock(clockSeconds(entry, 'black') ?? NaN) : '');
    this.whiteClock.classList.toggle('running', running === 'white');
    this.blackClock.classList.toggle('running', running === 'black');
  }
}

let detail = null;
let route = { board: null };
let rafPending = false;
let clocksDue = false;

function scheduleRender() {
  if (rafPending) return;
  rafPending = true;
  requestAnimationFrame(renderFrame);
}

function renderStructure() {
  const grid = $('grid');
  const numbers = [...state.boards.keys()].sort((a, b) => a - b);
  const wanted = numbers.map((n) => {
    const e = state.boards.get(n);
    if (!e.tile) {
      e.tile = new Tile(n);
      state.dirty.add(n);
    }
    return e.tile.root;
  });
  const current = [...grid.children];
  const same = current.length === wanted.length && current.every((c, i) => c === wanted[i]);
  if (!same) grid.replaceChildren(...wanted);
  sizeSquares(grid, wanted.length ? wanted[0].querySelector('.board') : null); // all tiles are as wide
  $('empty').hidden = numbers.length > 0;
  setText($('empty'), state.seq === null ? 'Waiting for the feed…' : 'The relay has no boards yet.');
}

function renderPanel() {
  const list = $('alert-list');
  const have = new Map([...list.children].map((li) => [li.dataset.id, li]));
  const items = state.panel.map((p) => {
    const existing = have.get(String(p.id));
    if (existing) return existing;
    const li = el('li', `alert ${p.alert.level}`);
    li.dataset.id = String(p.id);
    li.dataset.code = p.alert.code;
    if (p.board !== null) li.dataset.board = String(p.board);
    const time = el('time', 'when', p.time ? p.time.toLocaleTimeString() : 'earlier');
    if (p.time) time.dateTime = p.time.toISOString();
    const where = p.board !== null ? el('a', 'where', `Board ${p.board}`) : el('span', 'where', 'Relay');
    if (p.board !== null) where.href = `#board=${p.board}`;
    li.append(time, where, el('span', 'code', p.alert.code.replace(/_/g, ' ')), el('span', 'msg', p.alert.message));
    return li;
  });
  list.replaceChildren(...items);
  $('no-alerts').hidden = items.length > 0;
  const fresh = state.panel.filter((p) => p.alert.level !== 'info').length;
  setText($('alert-count'), String(fresh));
}

function renderSummary() {
  let live = 0;
  let finished = 0;
  let problems = 0;
  for (const e of state.boards.values()) {
    const v = e.view;
    if (v.result) finished++;
    else if (v.status === 'active') live++;
    const mm = latest(v.alerts, ['position_mismatch', 'position_recovered']);
    if (v.status === 'not_responding' || (mm && mm.code === 'position_mismatch')) problems++;
  }
  const parts = [`${state.boards.size} boards`, `${live} live`, `${finished} finished`];
  if (problems) parts.push(`${problems} need attention`);
  setText($('summary'), parts.join(' · '));
}

function renderFrame() {
  rafPending = false;
  if (state.structureDirty) {
    state.structureDirty = false;
    renderStructure();
  }
  const detailN = route.board;
  let detailDirty = false;
  for (const n of state.dirty) {
    const e = state.boards.get(n);
    if (!e) continue;
    if (e.tile) e.tile.render(e);
    if (n === detailN) detailDirty = true;
  }
  if (detailN !== null) {
    const e = state.boards.get(detailN);
    if (detail.n !== detailN || (e && !detail.board)) detail.show(detailN);
    else if (e && detailDirty) detail.render(e);
    else if (!e && detail.board) detail.show(detailN);
  }
  if (state.dirty.size) renderSummary();
  state.dirty.clear();
  if (clocksDue) {
    clocksDue = false;
    for (const e of state.boards.values()) {
      if (e.tile && e.clock && clockTicks(e)) e.tile.renderClocks(e);
    }
    if (detailN !== null) {
      const e = state.boards.get(detailN);
      if (e) detail.renderClocks(e);
    }
  }
  if (state.panelDirty) {
    state.panelDirty = false;
    renderPanel();
  }
  document.body.dataset.seq = state.seq === null ? '' : String(state.seq);
}

function onRoute() {
  const m = /^#board=(\d{1,6})$/.exec(location.hash);
  route = { board: m ? Number(m[1]) : null };
  document.body.dataset.view = route.board === null ? 'board-grid' : 'board';
  $('grid-view').hidden = route.board !== null;
  $('board-view').hidden = route.board === null;
  if (route.board !== null) detail.show(route.board);
  else detail.n = null;
  document.title = route.board === null ? 'DGT live relay' : `Board ${route.board} · DGT live relay`;
  scheduleRender();
}

// ---------------------------------------------------------------------------------------
// The websocket connection.

function feedUrl() {
  const url = new URL('../ws', location.href);
  url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  url.hash = '';
  url.search = '';
  return url.href;
}

const conn = {
  ws: null,
  attempt: 0,
  lastMessage: 0,
  retryTimer: null,
  resyncTimer: null,
  pingTimer: null,
};

function setConn(status, text) {
  document.body.dataset.conn = status;
  const node = $('conn');
  node.dataset.state = status;
  setText(node, text);
}

function connect() {
  clearTimeout(conn.retryTimer);
  conn.retryTimer = null;
  state.awaitingSnapshot = true;
  setConn('connecting', 'connecting…');
  let ws;
  try {
    ws = new WebSocket(feedUrl());
  } catch (e) {
    scheduleReconnect(`cannot open the feed: ${e}`);
    return;
  }
  conn.ws = ws;
  conn.lastMessage = performance.now();
  ws.addEventListener('message', (ev) => {
    if (conn.ws !== ws) return;
    conn.lastMessage = performance.now();
    if (typeof ev.data === 'string') onMessage(ev.data);
  });
  ws.addEventListener('close', () => {
    if (conn.ws !== ws) return;
    conn.ws = null;
    scheduleReconnect('connection lost');
  });
  ws.addEventListener('error', () => {
    // A close event follows; nothing to do here.
  });
}

function scheduleReconnect(why) {
  clearTimeout(conn.resyncTimer);
  if (conn.retryTimer) return;
  const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** conn.attempt);
  const delay = Math.round(base * (0.5 + Math.random() * 0.5));
  conn.attempt = Math.min(conn.attempt + 1, 10);
  setConn('offline', `${why}; reconnecting in ${Math.ceil(delay / 1000)} s`);
  conn.retryTimer = setTimeout(connect, delay);
}

function dropConnection(why) {
  const ws = conn.ws;
  conn.ws = null;
  if (ws) {
    try {
      ws.close(4000, why.slice(0, 100));
    } catch {
      // already closing
    }
  }
  scheduleReconnect(why);
}

function send(obj) {
  if (conn.ws && conn.ws.readyState === WebSocket.OPEN) conn.ws.send(JSON.stringify(obj));
}

function requestResync(why) {
  if (state.awaitingSnapshot) return;
  state.awaitingSnapshot = true;
  setConn('resyncing', `resynchronising (${why})`);
  send({ type: 'resync' });
  clearTimeout(conn.resyncTimer);
  conn.resyncTimer = setTimeout(() => {
    if (state.awaitingSnapshot) dropConnection('no snapshot after a resync request');
  }, RESYNC_TIMEOUT_MS);
}

function onMessage(text) {
  let msg;
  try {
    msg = JSON.parse(text);
  } catch {
    return;
  }
  if (!msg || typeof msg !== 'object' || typeof msg.type !== 'string') return;
  if (msg.v !== FEED_VERSION) {
    const w = $('version-warning');
    w.hidden = false;
    setText(w, `feed version ${String(msg.v).slice(0, 10)}; this page knows ${FEED_VERSION}`);
  }
  if (msg.type === 'snapshot') {
    clearTimeout(conn.resyncTimer);
    applySnapshot(msg);
    conn.attempt = 0;
    setConn('live', 'live');
    return;
  }
  if (msg.type === 'pong') return;
  if (msg.type === 'error') {
    setConn(document.body.dataset.conn, `feed error: ${str(msg.message, 200) || str(msg.code, 50) || '?'}`);
    return;
  }
  const seq = uint(msg.seq);
  if (seq === null || state.awaitingSnapshot || state.seq === null) return;
  if (seq <= state.seq) return; // already applied
  if (seq !== state.seq + 1) {
    requestResync(`missed ${seq - state.seq - 1} update(s)`);
    return;
  }
  state.seq = seq;
  applyDelta(msg);
  scheduleRender();
}

function heartbeat() {
  if (!conn.ws || conn.ws.readyState !== WebSocket.OPEN) return;
  if (performance.now() - conn.lastMessage > SILENCE_LIMIT_MS) {
    dropConnection('the feed went silent');
    return;
  }
  send({ type: 'ping' });
}

// ---------------------------------------------------------------------------------------
// Start.

/** Keeps `--cell` (a square's size in px) on `scope` equal to the size of `board`'s squares. */
const sizers = new Map();
function sizeSquares(scope, board) {
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

function start() {
  detail = new Detail($('detail'));
  window.addEventListener('hashchange', onRoute);
  $('toggle-alerts').addEventListener('click', () => {
    const hidden = document.body.classList.toggle('alerts-hidden');
    $('toggle-alerts').setAttribute('aria-expanded', String(!hidden));
  });
  onRoute();
  connect();
  conn.pingTimer = setInterval(heartbeat, PING_EVERY_MS);
  setInterval(() => {
    clocksDue = true;
    scheduleRender();
  }, 250);
  window.addEventListener('online', () => {
    if (!conn.ws) connect();
  });
}

if (typeof document !== 'undefined') start();
