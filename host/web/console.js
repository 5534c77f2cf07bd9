// The operator's console: every board with its device and game state, the actions on a
// board (result, flip, new game, start position, correction), the pairings (by hand or
// from a TRF report) and the alerts, which the operator acknowledges.
//
// Everything goes through the relay's admin API (host/API.md) with the admin token, which
// is kept in this tab's sessionStorage only: never in a URL, never in storage that outlives the tab. The
// answers are shown as the API gives them. The live state comes from the websocket feed
// (common.js); the ports and relay-wide alerts with paths from GET /api/admin/boards.
// The console plays no chess: the relay checks a correction (dry run) before it is sent.

import {
  $, BoardEl, FeedClient, FeedState, MARK_MISMATCH, MARK_SELECTED, START_FEN, UCI, asAlert, clockSeconds,
  clockTicks, el, formatClock, formatTime, getJson, moveMarks, parsePlacement, playerName, setText, sizeSquares,
  squareIndex, str, uint,
} from './common.js';

const TOKEN_KEY = 'dgt-relay-admin-token';
const ADMIN_POLL_MS = 5000;
const PUSH_POLL_MS = 10000;

// The feed shows spectators' state, which a broadcast delay holds back. The operator sees the
// truth: while a delay is set, the board table and actions read the live boards of
// GET /api/admin/boards (polled every second) instead.
const feedState = new FeedState();
const operatorState = new FeedState();
let state = feedState;
const LIVE_POLL_MS = 1000;
const ui = {
  ports: new Map(), // board -> port, from /api/admin/boards
  selected: null, // board number shown in the detail panel
  detail: null, // Detail
  event: null,
  checked: null, // { board, from_ply, moves: 'text' } of the last correction that passed the check
  rounds: null, // GET /api/admin/rounds: { live, rounds: [{ round, state, lichess_round, pairings }] }
  delay: 0, // the broadcast delay, seconds (GET /api/admin/delay)
};

// ---------------------------------------------------------------------------------------
// The token and the admin API.

function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

/** Calls an admin route; resolves to { ok, status, data, text } (never throws). A refused
 * token signs out. */
async function api(method, path, body, contentType = 'application/json') {
  const headers = { authorization: `Bearer ${token()}`, accept: 'application/json' };
  let payload;
  if (body !== undefined) {
    headers['content-type'] = contentType;
    payload = contentType === 'application/json' ? JSON.stringify(body) : body;
  }
  let r;
  try {
    r = await fetch(new URL(`../api/admin/${path}`, location.href), { method, headers, body: payload, cache: 'no-store' });
  } catch (e) {
    return { ok: false, status: 0, data: null, text: `the relay did not answer (${e})` };
  }
  const text = await r.text().catch(() => '');
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (r.status === 401) signOut('The relay refused the token.');
  const why = data && typeof data.error === 'string' ? data.error : text.slice(0, 300) || r.statusText;
  return { ok: r.ok, status: r.status, data, text: r.ok ? 'ok' : `${r.status}: ${why}` };
}

/** Shows an API answer in `node`: ok (green) or the error as the relay gave it (red). */
function showAnswer(node, answer, okText) {
  node.dataset.ok = String(answer.ok);
  setText(node, answer.ok ? okText || 'Done.' : `Refused — ${answer.text}`);
}

async function signIn(candidate) {
  sessionStorage.setItem(TOKEN_KEY, candidate);
  const r = await api('GET', 'boards');
  if (!r.ok) {
    sessionStorage.removeItem(TOKEN_KEY);
    setText($('login-error'), r.status === 401 ? 'Wrong token.' : r.text);
    return false;
  }
  setText($('login-error'), '');
  takeAdminBoards(r.data);
  document.body.dataset.auth = 'in';
  $('login').hidden = true;
  $('app').hidden = false;
  $('sign-out').hidden = false;
  $('delay-form').hidden = false;
  startLive();
  return true;
}

function signOut(why) {
  sessionStorage.removeItem(TOKEN_KEY);
  document.body.dataset.auth = 'out';
  $('login').hidden = false;
  $('app').hidden = true;
  $('sign-out').hidden = true;
  $('delay-form').hidden = true;
  setText($('login-error'), why || '');
  $('token').value = '';
}

// ---------------------------------------------------------------------------------------
// Data from the admin and read routes.

function takeAdminBoards(data) {
  if (!data || !Array.isArray(data.boards)) return;
  if (ui.delay > 0) {
    // The live boards, whole: the operator's view is never delayed.
    operatorState.applySnapshot({ seq: feedState.seq ?? 0, boards: data.boards, alerts: data.alerts });
    state = operatorState;
  } else {
    state = feedState;
  }
  for (const b of data.boards.slice(0, 1000)) {
    const n = uint(b && b.board);
    if (n !== null) ui.ports.set(n, str(b.port, 300));
  }
  renderPorts(Array.isArray(data.ports) ? data.ports : []);
  // Relay-wide alerts with their paths (the feed's copies have them redacted).
  if (Array.isArray(data.alerts) && state.seq !== null) {
    const full = new Map(data.alerts.map(asAlert).filter((a) => a && a.id !== null).map((a) => [a.id, a]));
    for (const a of state.relayAlerts) {
      const f = full.get(a.id);
      if (f) a.message = f.message;
    }
  }
  render();
}

async function pollAdmin() {
  if (document.body.dataset.auth !== 'in') return;
  const r = await api('GET', 'boards');
  if (r.ok) takeAdminBoards(r.data);
  loadRounds();
}

/** Polls the live boards: every second while a delay holds the feed back, else every 5 s. */
async function pollLoop() {
  await loadDelay();
  await pollAdmin();
  setTimeout(pollLoop, ui.delay > 0 ? LIVE_POLL_MS : ADMIN_POLL_MS);
}

async function loadDelay() {
  const r = await api('GET', 'delay');
  if (!r.ok || !r.data) return;
  ui.delay = uint(r.data.delay_s) ?? 0;
  showDelay();
}

function showDelay() {
  const input = $('delay-s');
  if (document.activeElement !== input) input.value = String(ui.delay);
  document.body.dataset.delay = String(ui.delay);
  setText($('delay-note'), ui.delay > 0 ? `spectators see the games ${ui.delay} s late; this console is live` : 'no delay');
}

async function setDelay(ev) {
  ev.preventDefault();
  const seconds = Number($('delay-s').value);
  const r = await api('PUT', 'delay', { delay_s: seconds });
  showAnswer($('delay-answer'), r, `Delay set to ${seconds} s.`);
  if (r.ok) {
    ui.delay = uint(r.data && r.data.delay_s) ?? seconds;
    showDelay();
    pollAdmin();
  }
}

async function pollPush() {
  const p = await getJson('../api/push');
  const pill = $('push');
  if (!p || !p.enabled) {
    setText(pill, 'push: off');
    pill.dataset.state = 'off';
    return;
  }
  const failing = uint(p.failures_in_a_row) > 0;
  pill.dataset.state = failing ? 'error' : 'ok';
  setText(pill, failing ? `push: failing (${str(p.last_error, 120) || '?'})` : `push: ok · ${uint(p.games_accepted) ?? 0} games`);
}

async function loadEvent() {
  const e = await getJson('../api/event');
  if (!e) return;
  ui.event = { name: str(e.name, 200) || '', round: uint(e.round) };
  setText($('event-name'), ui.event.name);
  const round = $('pairings-round');
  if (!round.value && ui.event.round) round.value = String(ui.event.round);
  const trf = $('trf-round');
  if (!trf.value && ui.event.round) trf.value = String(ui.event.round);
}

const PORT_STATES = {
  opening: 'opening…',
  not_found: 'not found',
  permission_denied: 'permission denied: add the relay’s user to the dialout group',
  unopenable: 'cannot be opened',
  active: 'active',
  not_responding: 'not responding',
};

/** Every port the relay opens, with its state (GET /api/admin/boards). */
function renderPorts(ports) {
  const items = ports.slice(0, 1000).map((p) => {
    const li = el('li', 'port');
    li.dataset.state = str(p.state, 40) || '';
    li.append(el('code', null, str(p.path, 300) || '?'), el('span', 'port-state', ` ${PORT_STATES[p.state] || p.state}`));
    if (p.detail) li.append(el('span', 'muted', ` (${str(p.detail, 300)})`));
    return li;
  });
  $('ports').replaceChildren(...items);
  if (!items.length) $('ports').append(el('li', 'muted', 'No port is configured (boards come by discovery or the demo).'));
}

// ---------------------------------------------------------------------------------------
// Rounds.

async function loadRounds() {
  const r = await api('GET', 'rounds');
  if (!r.ok || !r.data || !Array.isArray(r.data.rounds)) return null;
  ui.rounds = r.data;
  renderRounds();
  return r.data;
}

function roundOf(n) {
  return ui.rounds ? ui.rounds.rounds.find((r) => r.round === n) || null : null;
}

function renderRounds() {
  const data = ui.rounds;
  if (!data) return;
  // Not while the operator types a Lichess round id: the row would be redrawn under them.
  const typing = document.activeElement;
  if (typing && typing.tagName === 'INPUT' && $('rounds-body').contains(typing)) return;
  const live = roundOf(data.live);
  setText($('rounds-summary'), live ? `round ${live.round} ${live.state === 'live' ? 'is live' : 'is finished'}` : '');
  const rowsOut = data.rounds.slice(0, 999).map((r) => {
    const tr = el('tr');
    tr.dataset.round = String(r.round);
    tr.dataset.state = r.state;
    const id = el('input');
    id.className = 'lichess-round';
    id.size = 10;
    id.maxLength = 8;
    id.spellcheck = false;
    id.placeholder = data.default_lichess_round || 'none';
    id.value = r.lichess_round || '';
    const save = el('button', 'btn small save-lichess', 'Save');
    save.type = 'button';
    save.addEventListener('click', () => saveLichessRound(r.round, id.value.trim()));
    const idCell = el('td');
    idCell.append(id, save);
    const act = el('td');
    if (r.state === 'live') {
      const b = el('button', 'btn small finish-round', `Finish round ${r.round}`);
      b.type = 'button';
      b.addEventListener('click', () => finishRound(r.round, false));
      act.append(b);
    } else if (r.round !== data.live || r.state === 'finished') {
      const b = el('button', 'btn small start-round', `Start round ${r.round}`);
      b.type = 'button';
      b.addEventListener('click', () => startRound(r.round));
      act.append(b);
    }
    const named = r.pairings.filter((p) => p.white.name || p.black.name).length;
    tr.append(el('td', 'num', String(r.round)), el('td', 'state', r.state), el('td', 'boards', String(named)), idCell, act);
    return tr;
  });
  $('rounds-body').replaceChildren(...rowsOut);
  const next = $('round-number');
  if (!next.value) next.value = String(Math.max(...data.rounds.map((r) => r.round)) + (live && live.state === 'finished' ? 1 : 0));
}

async function saveLichessRound(n, id) {
  const r = await api('PUT', `rounds/${n}`, { lichess_round: id || null });
  showAnswer($('rounds-answer'), r, id ? `Round ${n} is pushed to Lichess round ${id}.` : `Round ${n} is pushed to the default Lichess round.`);
  loadRounds();
}

async function startRound(n) {
  const live = ui.rounds && roundOf(ui.rounds.live);
  if (live && live.state === 'live' && live.round !== n) {
    const open = unfinishedGames(live.round);
    const warn = open.length ? `\n\n${open.length} game(s) of round ${live.round} have no result: ${open.join('; ')}.` : '';
    if (!confirm(`Start round ${n}? Round ${live.round} is finished and the boards' next games belong to round ${n}.${warn}`)) return;
  }
  const r = await api('POST', `rounds/${n}/start`, {});
  showAnswer($('rounds-answer'), r, `Round ${n} started: its pairings are on the boards.`);
  $('round-number').value = '';
  await loadRounds();
  loadEvent();
  if (r.ok) showRoundPairings(n);
}

async function finishRound(n, force) {
  const r = await api('POST', `rounds/${n}/finish`, { force });
  if (r.status === 409 && !force) {
    if (confirm(`Round ${n} cannot be finished yet: ${r.data && r.data.error}.\n\nFinish it anyway?`)) return finishRound(n, true);
    showAnswer($('rounds-answer'), r);
    return;
  }
  showAnswer($('rounds-answer'), r, `Round ${n} finished.`);
  $('round-number').value = String(n + 1);
  loadRounds();
}

/** The live boards of round `n` whose game has moves and no result, described for a question. */
function unfinishedGames(n) {
  const out = [];
  for (const [b, e] of state.boards) {
    const v = e.view;
    if (v.round === n && !v.result && v.moves.length) out.push(describeGame(b, v));
  }
  return out;
}

/** "board 2 (White – Black, 34 moves)": how a question names a game. */
function describeGame(n, v) {
  return `board ${n} (${playerName(v.pairing.white, 'White')} – ${playerName(v.pairing.black, 'Black')}, ${v.moves.length} move${v.moves.length === 1 ? '' : 's'})`;
}

/** Fills the pairings form with round `n`'s pairings as the relay keeps them. */
function showRoundPairings(n) {
  const r = roundOf(n);
  if (!r) return;
  $('pairings-round').value = String(n);
  fillPairings(r.pairings);
}

// ---------------------------------------------------------------------------------------
// Alerts.

/** Every kept alert, newest first, with its board (null: relay-wide). */
function allAlerts() {
  const out = [];
  for (const a of state.relayAlerts) out.push({ board: null, a });
  for (const [n, e] of state.boards) for (const a of e.view.alerts) out.push({ board: n, a });
  out.sort((x, y) => (y.a.at || 0) - (x.a.at || 0) || (y.a.id || 0) - (x.a.id || 0));
  return out;
}

function isOpen(a) {
  return a.level !== 'info' && a.cleared_by === null && a.acked_at === null;
}

function alertState(a) {
  if (a.cleared_by !== null) return 'resolved';
  if (a.acked_at !== null) return 'acknowledged';
  return a.level === 'info' ? 'info' : 'open';
}

async function ack(id) {
  const r = await api('POST', `alerts/${id}/ack`, {});
  if (!r.ok) setText($('alerts-answer'), `Refused — ${r.text}`);
  else setText($('alerts-answer'), '');
}

function renderAlerts() {
  const openOnly = $('open-only').checked;
  const list = allAlerts();
  const open = list.filter((x) => isOpen(x.a));
  const pill = $('open-count');
  pill.dataset.count = String(open.length);
  setText(pill, `${open.length} open alert${open.length === 1 ? '' : 's'}`);
  const shown = openOnly ? open : list;
  const items = shown.slice(0, 200).map(({ board, a }) => {
    const li = el('li', `alert ${a.level}`);
    li.dataset.id = String(a.id);
    li.dataset.state = alertState(a);
    li.dataset.code = a.code;
    if (board !== null) li.dataset.board = String(board);
    const head = el('div', 'alert-head');
    const time = el('time', 'when', formatTime(a.at) || 'time unknown');
    if (a.at) time.dateTime = new Date(a.at).toISOString();
    head.append(time, el('span', 'where', board === null ? 'relay' : `board ${board}`), el('span', `level ${a.level}`, a.level), el('code', 'code', a.code));
    const stateText = alertState(a);
    if (stateText !== 'open') head.append(el('span', 'state', stateText));
    li.append(head, el('p', 'message', a.message));
    if (isOpen(a) && a.id !== null) {
      const b = el('button', 'btn small ack', 'Acknowledge');
      b.type = 'button';
      b.addEventListener('click', () => ack(a.id));
      li.append(b);
    }
    return li;
  });
  $('alert-list').replaceChildren(...items);
  $('no-alerts').hidden = items.length > 0;
  setText($('no-alerts'), openOnly ? 'No open alerts.' : 'No alerts.');
}

// ---------------------------------------------------------------------------------------
// The board table.

/** The squares of the board's latest unresolved position mismatch. */
function mismatchSquares(view) {
  for (let i = view.alerts.length - 1; i >= 0; i--) {
    const a = view.alerts[i];
    if (a.code === 'position_mismatch') return a.cleared_by === null ? a.squares : [];
    if (a.code === 'position_recovered') return [];
  }
  return [];
}

function pushState(view) {
  for (let i = view.alerts.length - 1; i >= 0; i--) {
    const a = view.alerts[i];
    if (a.code === 'push') return a.level === 'info' || a.cleared_by !== null ? 'ok' : a.level;
  }
  return '';
}

function clockText(e) {
  const c = e.clock;
  if (!c) return '–';
  const w = formatClock(clockSeconds(e, 'white') ?? NaN);
  const b = formatClock(clockSeconds(e, 'black') ?? NaN);
  const run = clockTicks(e) ? (c.running === 'white' ? ' ◀ W' : ' ◀ B') : c.running ? '' : ' (stopped)';
  return `${w} / ${b}${run}`;
}

const COLUMNS = ['num', 'round', 'serial', 'port', 'state', 'battery', 'clock', 'white', 'black', 'moves', 'last', 'mismatch', 'push', 'result'];
const rows = new Map(); // board -> { tr, cells }

/** The texts of a board's row, in the order of COLUMNS. */
function rowTexts(n, e) {
  const v = e.view;
  const last = v.moves[v.moves.length - 1];
  const mismatch = mismatchSquares(v);
  return [
    String(n),
    v.round ? String(v.round) : '–',
    v.serial || '–',
    ui.ports.get(n) || '–',
    v.status.replace('_', ' '),
    v.battery !== null ? `${v.battery} %` : '–',
    clockText(e),
    playerName(v.pairing.white, '–'),
    playerName(v.pairing.black, '–'),
    `${v.moves.length}${v.provisional.length ? ` +${v.provisional.length}` : ''}`,
    last ? `${last.san} ${formatTime(last.at)}`.trim() : '–',
    mismatch.length ? mismatch.join(' ') : '',
    pushState(v) || '–',
    v.result || '',
  ];
}

/** Updates the table in place (rows are kept, so a click is never lost to a redraw). */
function renderTable() {
  const body = $('boards-body');
  const order = [...state.boards.keys()].sort((a, b) => a - b);
  for (const n of [...rows.keys()]) if (!state.boards.has(n)) rows.delete(n);
  for (const n of order) {
    let row = rows.get(n);
    if (!row) {
      const tr = el('tr');
      tr.dataset.board = String(n);
      tr.tabIndex = 0;
      const cells = COLUMNS.map((c) => el('td', c));
      tr.append(...cells);
      row = { tr, cells };
      rows.set(n, row);
    }
    const e = state.boards.get(n);
    row.tr.dataset.status = e.view.status;
    row.tr.classList.toggle('selected', ui.selected === n);
    rowTexts(n, e).forEach((text, i) => setText(row.cells[i], text));
  }
  const trs = order.map((n) => rows.get(n).tr);
  const current = [...body.children];
  if (current.length !== trs.length || current.some((c, i) => c !== trs[i])) body.replaceChildren(...trs);
  $('no-boards').hidden = trs.length > 0;
  const active = [...state.boards.values()].filter((e) => e.view.status === 'active').length;
  setText($('boards-summary'), trs.length ? `${trs.length} boards · ${active} active` : '');
}

function select(n) {
  ui.selected = n;
  if (!ui.detail || ui.detail.n !== n) ui.detail = new Detail(n);
  $('detail').hidden = false;
  render();
  $('detail').scrollIntoView({ block: 'nearest' });
}

// ---------------------------------------------------------------------------------------
// One board: its position, moves and the actions on it.

class Detail {
  constructor(n) {
    this.n = n;
    this.fromPly = null; // the ply picked for a correction
    this.movesKey = '';
    const c = $('detail');
    c.replaceChildren();
    c.dataset.board = String(n);
    this.title = el('h2', null, `Board ${n}`);
    this.board = new BoardEl(true);
    const left = el('div', 'detail-board');
    this.players = el('p', 'muted');
    left.append(this.players, this.board.root);
    const right = el('div', 'detail-actions');

    // Result.
    const resultForm = el('form', 'row action');
    resultForm.id = 'result-form';
    this.result = el('select');
    this.result.id = 'result-select';
    for (const [value, text] of [['', 'choose a result…'], ['1-0', '1-0'], ['0-1', '0-1'], ['1/2-1/2', '½-½'], ['*', 'no result (clear)']]) {
      const o = el('option', null, text);
      o.value = value;
      this.result.append(o);
    }
    this.result.required = true;
    this.result.value = '';
    resultForm.append(el('label', null, 'Result '), this.result, this.button('Set result', 'submit', 'set-result'));
    resultForm.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const chosen = this.result.value;
      if (!chosen) {
        showAnswer(this.answer, { ok: false, text: 'choose a result first' });
        return;
      }
      const value = chosen === '*' ? null : chosen;
      const what = value ? `set the result ${value}` : 'clear the result';
      if (!this.confirmAction(`${what} of`)) return;
      this.act('result', { result: value }, value ? `Result ${value} set.` : 'Result cleared.');
      this.result.value = '';
    });

    // Flip and new game.
    const simple = el('div', 'row action');
    const flip = this.button('Flip board', 'button', 'flip');
    flip.addEventListener('click', () => {
      if (this.confirmAction('flip (tracking restarts from the current position)')) this.act('flip', {}, 'Flipped: tracking restarts from the current position.');
    });
    const fresh = this.button('New game', 'button', 'new-game');
    fresh.addEventListener('click', () => {
      if (this.needsResult()) return;
      if (this.confirmAction('end and start a new game from the standard position on')) this.act('new-game', {}, 'New game from the standard position.');
    });
    simple.append(flip, fresh);

    // Start position.
    const fenForm = el('form', 'row action');
    fenForm.id = 'fen-form';
    this.fen = el('input');
    this.fen.id = 'start-fen';
    this.fen.placeholder = START_FEN;
    this.fen.spellcheck = false;
    this.fen.required = true;
    fenForm.append(el('label', null, 'Start FEN '), this.fen, this.button('New game from this position', 'submit', 'set-fen'));
    fenForm.addEventListener('submit', (ev) => {
      ev.preventDefault();
      if (this.needsResult()) return;
      if (this.confirmAction('end and start a new game from the given position on')) this.act('start-fen', { fen: this.fen.value.trim() }, 'New game from the given position.');
    });

    // Correction.
    const corr = el('form', 'correction action');
    corr.id = 'correct-form';
    corr.append(el('h3', null, 'Correct the moves'));
    corr.append(el('p', 'muted', 'Pick the first wrong move in the list, type the right moves (UCI, e.g. g1f3 b8c6), check, then send.'));
    this.moveList = el('ol', 'pick-moves');
    this.moveList.id = 'pick-moves';
    this.moveList.addEventListener('click', (ev) => {
      const li = ev.target.closest('li[data-ply]');
      if (li) this.pick(Number(li.dataset.ply));
    });
    this.fromLabel = el('p', 'from-ply', 'No move picked.');
    this.corrMoves = el('input');
    this.corrMoves.id = 'correct-moves';
    this.corrMoves.spellcheck = false;
    this.corrMoves.placeholder = 'g1f3 b8c6';
    this.corrMoves.addEventListener('input', () => this.uncheck());
    const check = this.button('Check', 'button', 'check-correction');
    check.addEventListener('click', () => this.check());
    this.send = this.button('Send correction', 'submit', 'send-correction');
    this.send.disabled = true;
    this.checkOut = el('div', 'check-out');
    this.checkOut.id = 'check-out';
    const line = el('div', 'row');
    line.append(this.corrMoves, check, this.send);
    corr.append(this.moveList, this.fromLabel, line, this.checkOut);
    corr.addEventListener('submit', (ev) => {
      ev.preventDefault();
      this.sendCorrection();
    });

    this.answer = el('p', 'answer');
    this.answer.id = 'action-answer';
    this.answer.setAttribute('role', 'status');
    right.append(resultForm, simple, fenForm, corr, this.answer);
    const wrap = el('div', 'detail-wrap');
    wrap.append(left, right);
    const close = this.button('Close', 'button', 'close-detail');
    close.classList.add('small');
    close.addEventListener('click', () => {
      ui.selected = null;
      ui.detail = null;
      $('detail').hidden = true;
      render();
    });
    const head = el('div', 'row');
    head.append(this.title, close);
    c.append(head, wrap);
    sizeSquares(c, this.board.root);
  }

  /** Asks before an action that changes a game, naming the board, its players and moves. */
  confirmAction(what) {
    const e = state.boards.get(this.n);
    const v = e ? e.view : null;
    const game = v ? describeGame(this.n, v) : `board ${this.n}`;
    return confirm(`${what[0].toUpperCase()}${what.slice(1)} ${game}?`);
  }

  /** A game with moves and no result is not ended by a new game: its result comes first. */
  needsResult() {
    const e = state.boards.get(this.n);
    const v = e ? e.view : null;
    if (!v || v.result || !v.moves.length) return false;
    showAnswer(this.answer, { ok: false, text: `${describeGame(this.n, v)} has no result: set its result first, then start the new game` });
    this.result.focus();
    return true;
  }

  button(text, type, id) {
    const b = el('button', 'btn', text);
    b.type = type;
    b.id = id;
    return b;
  }

  async act(path, body, okText) {
    setText(this.answer, '…');
    const r = await api('POST', `boards/${this.n}/${path}`, body);
    showAnswer(this.answer, r, okText);
    pollAdmin();
  }

  pick(ply) {
    const e = state.boards.get(this.n);
    if (!e) return;
    this.fromPly = ply;
    const rest = e.view.moves.filter((m) => m.ply >= ply).map((m) => m.uci);
    this.corrMoves.value = rest.join(' ');
    this.uncheck();
    this.renderMoves(e.view, true);
  }

  uncheck() {
    ui.checked = null;
    this.send.disabled = true;
    this.checkOut.replaceChildren();
    delete this.checkOut.dataset.ok;
  }

  /** The correction typed: from_ply and the UCI moves, or an error text. */
  correction() {
    if (this.fromPly === null) return { error: 'Pick the first move to replace in the list.' };
    const moves = this.corrMoves.value.trim().split(/[\s,]+/).filter(Boolean);
    const bad = moves.find((m) => !UCI.test(m));
    if (bad) return { error: `"${bad}" is not a UCI move (like e2e4, or e7e8q).` };
    return { from_ply: this.fromPly, moves };
  }

  async check() {
    this.uncheck();
    const c = this.correction();
    if (c.error) {
      this.checkOut.dataset.ok = 'false';
      this.checkOut.append(el('p', null, c.error));
      return;
    }
    const r = await api('POST', `boards/${this.n}/correct?dry_run=1`, c);
    this.checkOut.dataset.ok = String(r.ok);
    if (!r.ok) {
      this.checkOut.replaceChildren(el('p', null, `Not accepted — ${r.text}`));
      return;
    }
    const moves = Array.isArray(r.data && r.data.moves) ? r.data.moves : [];
    const text = moves.slice(0, 600).map((m) => `${Math.ceil(m.ply / 2)}${m.ply % 2 ? '.' : '…'} ${str(m.san, 16)}`).join(' ');
    const e = state.boards.get(this.n);
    const last = e && e.view.moves.length ? e.view.moves[e.view.moves.length - 1].ply : 0;
    const removed = this.removal(c, last);
    this.checkOut.replaceChildren(
      el('p', null, moves.length ? `Legal. The game will read, from ply ${c.from_ply}: ${text}` : `Legal. The moves from ply ${c.from_ply} on will be removed.`),
      el('p', 'removes', removed),
    );
    this.checkOut.dataset.removes = removed;
    ui.checked = { board: this.n, key: JSON.stringify(c) };
    this.send.disabled = false;
  }

  /** What a correction takes away from the game: the confirmed plies it replaces. */
  removal(c, last) {
    const replaced = last >= c.from_ply ? last - c.from_ply + 1 : 0;
    if (!replaced) return 'It removes no move: the moves are added after the last one.';
    const plies = replaced === 1 ? `ply ${c.from_ply}` : `plies ${c.from_ply}-${last}`;
    const lost = replaced - c.moves.length;
    return `It replaces ${plies} (${replaced} confirmed move${replaced === 1 ? '' : 's'}) with ${c.moves.length}${lost > 0 ? `: ${lost} move${lost === 1 ? '' : 's'} fewer than now` : ''}.`;
  }

  async sendCorrection() {
    const c = this.correction();
    if (c.error || !ui.checked || ui.checked.board !== this.n || ui.checked.key !== JSON.stringify(c)) {
      showAnswer(this.answer, { ok: false, text: 'check the correction first' });
      return;
    }
    if (!this.confirmAction(`correct (${this.checkOut.dataset.removes || ''})`)) return;
    setText(this.answer, '…');
    // The line it replaces, for an undo (the journal keeps it too: it only appends).
    const e = state.boards.get(this.n);
    const replaced = e ? e.view.moves.filter((m) => m.ply >= c.from_ply).map((m) => m.uci) : [];
    const r = await api('POST', `boards/${this.n}/correct`, c);
    showAnswer(this.answer, r, `Corrected from ply ${c.from_ply}.`);
    if (r.ok) {
      this.fromPly = null;
      this.corrMoves.value = '';
      this.uncheck();
      this.movesKey = '';
      this.offerUndo({ from_ply: c.from_ply, moves: replaced });
    }
    pollAdmin();
  }

  /** After a correction: a button that puts back the line it replaced (moves, not their clock times). */
  offerUndo(line) {
    if (this.undoButton) this.undoButton.remove();
    const b = this.button(`Undo: put back the ${line.moves.length} move${line.moves.length === 1 ? '' : 's'} it replaced`, 'button', 'undo-correction');
    b.addEventListener('click', async () => {
      if (!this.confirmAction(`undo the correction (the moves from ply ${line.from_ply} on are replaced by the ${line.moves.length} it removed) of`)) return;
      setText(this.answer, '…');
      const r = await api('POST', `boards/${this.n}/correct`, line);
      showAnswer(this.answer, r, `Correction undone: the ${line.moves.length} moves from ply ${line.from_ply} are back.`);
      if (r.ok) {
        b.remove();
        this.undoButton = null;
        this.movesKey = '';
      }
      pollAdmin();
    });
    this.undoButton = b;
    this.answer.after(b);
  }

  renderMoves(v, force) {
    const key = v.moves.map((m) => m.uci).join() + '/' + this.fromPly;
    if (!force && key === this.movesKey) return;
    this.movesKey = key;
    const items = v.moves.map((m) => {
      const li = el('li', m.ply === this.fromPly ? 'picked' : null, `${Math.ceil(m.ply / 2)}${m.ply % 2 ? '.' : '…'} ${m.san}`);
      li.dataset.ply = String(m.ply);
      li.dataset.uci = m.uci;
      li.tabIndex = 0;
      li.title = `ply ${m.ply} (${m.uci})${m.at ? `, ${formatTime(m.at)}` : ''}`;
      return li;
    });
    const next = el('li', this.fromPly === v.moves.length + 1 ? 'picked add' : 'add', '+ add after the last move');
    next.dataset.ply = String((v.moves.length ? v.moves[v.moves.length - 1].ply : 0) + 1);
    items.push(next);
    this.moveList.replaceChildren(...items);
    setText(this.fromLabel, this.fromPly === null ? 'No move picked.' : `Replacing the moves from ply ${this.fromPly} on.`);
  }

  render() {
    const e = state.boards.get(this.n);
    if (!e) return;
    const v = e.view;
    setText(this.title, `Board ${this.n}${v.serial ? ` · serial ${v.serial}` : ''}${ui.ports.get(this.n) ? ` · ${ui.ports.get(this.n)}` : ''}`);
    setText(this.players, `${playerName(v.pairing.white, 'White')} – ${playerName(v.pairing.black, 'Black')} · round ${v.round} · ${v.status.replace('_', ' ')}${v.result ? ` · ${v.result}` : ''}${v.flipped ? ' · flipped' : ''}`);
    const prov = v.provisional[v.provisional.length - 1];
    const last = prov || v.moves[v.moves.length - 1];
    const marks = moveMarks(last && last.uci);
    for (const s of mismatchSquares(v)) {
      const i = squareIndex(s);
      if (i >= 0) marks[i] |= MARK_MISMATCH;
    }
    if (this.fromPly !== null) {
      const picked = v.moves.find((m) => m.ply === this.fromPly);
      const u = picked ? UCI.exec(picked.uci) : null;
      if (u) {
        marks[squareIndex(u[1])] |= MARK_SELECTED;
        marks[squareIndex(u[2])] |= MARK_SELECTED;
      }
    }
    this.board.update(e.live || e.confirmed || parsePlacement(START_FEN), marks, `Board ${this.n}`);
    this.renderMoves(v, false);
  }
}

// ---------------------------------------------------------------------------------------
// Pairings.

const PLAYER_FIELDS = ['name', 'title', 'elo', 'federation', 'fide_id'];

function pairingRow(board, pairing) {
  const tr = el('tr');
  tr.dataset.board = String(board);
  const num = el('input');
  num.type = 'number';
  num.min = '1';
  num.max = '1000';
  num.value = String(board);
  num.className = 'p-board';
  const td = el('td');
  td.append(num);
  tr.append(td);
  for (const side of ['white', 'black']) {
    for (const f of PLAYER_FIELDS) {
      const input = el('input');
      input.className = `p-${side}-${f}`;
      input.dataset.side = side;
      input.dataset.field = f;
      if (f === 'elo' || f === 'fide_id') input.inputMode = 'numeric';
      if (f === 'title' || f === 'federation') input.size = 4;
      const v = pairing && pairing[side] ? pairing[side][f] : null;
      input.value = v === null || v === undefined ? '' : String(v);
      const cell = el('td');
      cell.append(input);
      tr.append(cell);
    }
  }
  return tr;
}

/** The form's rows: every connected board, with `given` pairings where it has them, else the board's own. */
function fillPairings(given) {
  const byBoard = new Map([...state.boards.entries()].map(([n, e]) => [n, e.view.pairing]));
  if (Array.isArray(given)) {
    for (const n of byBoard.keys()) byBoard.set(n, null);
    for (const p of given) byBoard.set(p.board, { white: p.white, black: p.black });
  }
  const rows = [...byBoard.entries()].sort((a, b) => a[0] - b[0]).map(([n, p]) => pairingRow(n, p));
  $('pairings-body').replaceChildren(...rows);
}

/** The pairings typed, as the API wants them, or an error text. */
function readPairings() {
  const boards = [];
  for (const tr of $('pairings-body').querySelectorAll('tr')) {
    const board = Number(tr.querySelector('.p-board').value);
    if (!Number.isInteger(board) || board < 1) return { error: `board number "${tr.querySelector('.p-board').value}" is not a number` };
    const entry = { board, white: { name: '' }, black: { name: '' } };
    for (const input of tr.querySelectorAll('input[data-side]')) {
      const value = input.value.trim();
      if (!value) continue;
      const f = input.dataset.field;
      if (f === 'elo' || f === 'fide_id') {
        if (!/^\d{1,12}$/.test(value)) return { error: `board ${board}: ${f === 'elo' ? 'rating' : 'FIDE id'} "${value}" is not a number` };
        entry[input.dataset.side][f] = Number(value);
      } else {
        entry[input.dataset.side][f] = f === 'federation' ? value.toUpperCase() : value;
      }
    }
    boards.push(entry);
  }
  return { boards };
}

/** The named players the relay has for round `round` that the form would drop. */
function droppedNames(round, boards) {
  const kept = roundOf(round);
  const before = kept ? kept.pairings : [];
  const form = new Map(boards.map((b) => [b.board, b]));
  const out = [];
  for (const p of before) {
    const now = form.get(p.board);
    for (const side of ['white', 'black']) {
      if (p[side].name && !(now && now[side].name)) out.push(`board ${p.board} ${side} ${p[side].name}`);
    }
  }
  return out;
}

async function savePairings(ev) {
  ev.preventDefault();
  const answer = $('pairings-answer');
  // At once: the last save's answer must not stand while this one is checked and sent.
  setText(answer, '…');
  const round = Number($('pairings-round').value);
  const p = readPairings();
  if (p.error) {
    showAnswer(answer, { ok: false, text: p.error });
    return;
  }
  await loadRounds();
  const dropped = droppedNames(round, p.boards);
  if (dropped.length && !confirm(`Saving drops ${dropped.length} named player${dropped.length === 1 ? '' : 's'} of round ${round}: ${dropped.slice(0, 20).join('; ')}. Save anyway?`)) {
    showAnswer(answer, { ok: false, text: `not saved: it would drop ${dropped.join('; ')}` });
    return;
  }
  const r = await api('POST', 'pairings', { round, boards: p.boards });
  showAnswer(answer, r, `Pairings of round ${round} saved (${p.boards.length} boards).`);
  if (r.ok) {
    loadEvent();
    loadRounds();
  }
}

async function loadTrf(ev) {
  ev.preventDefault();
  const answer = $('trf-answer');
  const file = $('trf-file').files[0];
  const round = Number($('trf-round').value);
  if (!file) {
    showAnswer(answer, { ok: false, text: 'choose a TRF file' });
    return;
  }
  setText(answer, '…');
  // The file's bytes as they are: the relay reads UTF-8 and Windows-1252 (file.text() would
  // turn Windows-1252 letters into U+FFFD).
  const bytes = await file.arrayBuffer();
  // A round that is not the live one keeps its pairings until it is started.
  const live = ui.rounds ? ui.rounds.live : null;
  const start = live === null || live === round;
  const r = await api('POST', `pairings/trf?round=${round}${start ? '' : '&start=false'}`, bytes, 'text/plain');
  const n = r.ok && r.data && Array.isArray(r.data.boards) ? r.data.boards.length : 0;
  const kept = r.ok && r.data && r.data.started === false;
  const d = r.ok && r.data ? r.data : {};
  const about = [str(d.event, 200), [str(d.start_date, 20), str(d.end_date, 20)].filter(Boolean).join(' to ')].filter(Boolean).join(', ');
  showAnswer(answer, r, `Round ${round} loaded from ${file.name}${about ? ` (${about})` : ''}: ${n} boards paired${kept ? `; start round ${round} in Rounds to put them on the boards` : ''}.`);
  if (r.ok) {
    loadEvent();
    await loadRounds();
    showRoundPairings(round);
  }
}

// ---------------------------------------------------------------------------------------
// Rendering and start.

let rafPending = false;
function render() {
  if (rafPending) return;
  rafPending = true;
  requestAnimationFrame(() => {
    rafPending = false;
    renderTable();
    if (ui.detail) ui.detail.render();
    if (state.alertsDirty) {
      state.alertsDirty = false;
      renderAlerts();
    }
    state.dirty.clear();
    document.body.dataset.seq = state.seq === null ? '' : String(state.seq);
  });
}

let live = false;
function startLive() {
  if (live) return;
  live = true;
  const feed = new FeedClient(feedState, {
    onChange: () => {
      if (!$('pairings-body').children.length) fillPairings();
      render();
    },
    onStatus: (s, text) => {
      document.body.dataset.conn = s;
      const node = $('conn');
      node.dataset.state = s;
      setText(node, s === 'live' ? 'live' : text);
    },
  });
  feed.start();
  loadEvent();
  loadRounds();
  pollPush();
  pollLoop();
  setInterval(pollPush, PUSH_POLL_MS);
  // Clocks and the open alerts' times.
  setInterval(() => {
    renderTable();
  }, 1000);
}

function start() {
  $('login-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const t = $('token').value.trim();
    if (t) signIn(t);
  });
  $('sign-out').addEventListener('click', () => signOut('Signed out.'));
  $('boards-body').addEventListener('click', (ev) => {
    const tr = ev.target.closest('tr[data-board]');
    if (tr) select(Number(tr.dataset.board));
  });
  $('boards-body').addEventListener('keydown', (ev) => {
    const tr = ev.target.closest('tr[data-board]');
    if (tr && ev.key === 'Enter') select(Number(tr.dataset.board));
  });
  $('open-only').addEventListener('change', renderAlerts);
  $('ack-all').addEventListener('click', async () => {
    for (const { a } of allAlerts()) if (isOpen(a) && a.id !== null) await ack(a.id);
  });
  $('pairings-form').addEventListener('submit', savePairings);
  $('pairings-reload').addEventListener('click', () => fillPairings());
  $('pairings-add').addEventListener('click', () => {
    const used = [...$('pairings-body').querySelectorAll('.p-board')].map((i) => Number(i.value) || 0);
    $('pairings-body').append(pairingRow(Math.max(0, ...used) + 1, null));
  });
  $('trf-form').addEventListener('submit', loadTrf);
  $('delay-form').addEventListener('submit', setDelay);
  $('round-add').addEventListener('submit', (ev) => {
    ev.preventDefault();
    startRound(Number($('round-number').value));
  });
  const saved = token();
  if (saved) signIn(saved);
  else signOut('');
}

if (typeof document !== 'undefined') start();
