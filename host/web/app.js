// The spectators' live page: the event, its rounds, a grid of the round's games and one game
// with its moves, which the viewer can step through (buttons, arrow keys) and turn round.
// It shows what a broadcast shows and nothing of the operator's: no device data, no
// operator notices (those are in the console, ../console/).
//
// Data: the websocket feed for the games being played (common.js keeps the state), and the
// read routes for the rest: /api/event (name, rounds), /api/rounds/R (a round's games from
// the relay's records) and /api/games/R/N (one game with the position after every move).
// The page plays no chess: every position it draws is a FEN the relay sent.

import {
  $, BoardEl, FeedClient, FeedState, MARK_PROVISIONAL, START_FEN, asMoves, asPairing, clockSeconds,
  clockTicks, el, federationFlag, formatClock, getJson, moveMarks, parsePlacement, playerName, setText, sizeSquares, str, uint,
} from './common.js';

const state = new FeedState();
const page = {
  event: null, // { name, site, round, rounds }
  route: { round: null, board: null },
  stored: new Map(), // round -> Map(board -> game summary) from /api/rounds/R
  storedAt: new Map(), // round -> when fetched (ms)
  tiles: new Map(), // board -> Tile (for the round shown)
  game: null, // the single-game view
};

// ---------------------------------------------------------------------------------------
// What is shown for a round: live games from the feed, finished ones from the records.

/** The round shown: the route's, else the event's current round, else the feed's latest. */
function shownRound() {
  if (page.route.round !== null) return page.route.round;
  if (page.event && uint(page.event.round) !== null) return page.event.round;
  let r = 0;
  for (const e of state.boards.values()) r = Math.max(r, e.view.round);
  return r || 1;
}

/** The games of round `r`, by board: { board, live (feed entry) | null, stored | null }. */
function gamesOf(r) {
  const out = new Map();
  const stored = page.stored.get(r);
  if (stored) for (const [n, g] of stored) out.set(n, { board: n, live: null, stored: g });
  for (const [n, e] of state.boards) {
    if (e.view.round !== r) continue;
    const prev = out.get(n);
    out.set(n, { board: n, live: e, stored: prev ? prev.stored : null });
  }
  return new Map([...out.entries()].sort((a, b) => a[0] - b[0]));
}

async function loadRound(r, force = false) {
  const at = page.storedAt.get(r) || 0;
  if (!force && Date.now() - at < 15000) return;
  page.storedAt.set(r, Date.now());
  const data = await getJson(`../api/rounds/${r}`);
  const games = new Map();
  if (data && Array.isArray(data.games)) {
    for (const g of data.games.slice(0, 1000)) {
      const n = uint(g.board);
      if (n === null) continue;
      games.set(n, {
        board: n,
        pairing: asPairing(g.pairing),
        fen: str(g.fen, 200),
        result: str(g.result, 16),
        termination: str(g.termination, 64),
        plies: uint(g.plies) ?? 0,
        last: g.last_move && typeof g.last_move === 'object' ? { ply: uint(g.last_move.ply), san: str(g.last_move.san, 16), uci: str(g.last_move.uci, 8) } : null,
      });
    }
  }
  page.stored.set(r, games);
  render();
}

async function loadEvent() {
  const data = await getJson('../api/event');
  if (!data) return;
  page.event = {
    name: str(data.name, 200) || 'Live games',
    site: str(data.site, 200) || '',
    round: uint(data.round),
    rounds: Array.isArray(data.rounds) ? data.rounds.map(uint).filter((r) => r !== null).slice(0, 999) : [],
  };
  render();
}

// ---------------------------------------------------------------------------------------
// Players and badges.

function playerLine(container, p, fallback) {
  const name = el('span', 'pname', playerName(p, fallback));
  name.title = name.textContent;
  const extra = [p.elo !== null ? String(p.elo) : null, p.federation].filter(Boolean).join(' ');
  const flag = federationFlag(p.federation);
  const flagEl = flag ? [el('span', 'flag', flag)] : [];
  if (flag) {
    flagEl[0].dataset.fed = p.federation;
    flagEl[0].setAttribute('aria-hidden', 'true');
  }
  container.replaceChildren(...flagEl, name, ...(extra ? [el('span', 'pextra', extra)] : []));
}

function resultText(r) {
  return r ? r.replaceAll('1/2', '½') : r;
}

/** A forfeit: Lichess's `Termination "Unplayed"`; its moves (if any) do not count. */
const UNPLAYED = 'Unplayed';

/** The result line of a game: `1-0`, `½-0`, `0-1 (time forfeit)`, `1-0 · not played`. */
function resultLine(result, termination) {
  if (!result) return '';
  if (termination === UNPLAYED) return `${resultText(result)} · not played (forfeit)`;
  return `${resultText(result)}${termination && termination !== 'normal' ? ` (${termination})` : ''}`;
}

function badgeFor(game) {
  const v = game.live ? game.live.view : null;
  const result = v ? v.result : game.stored && game.stored.result;
  if (result) return ['result', resultText(result)];
  if (v && v.status === 'active') return ['live', 'live'];
  if (v && (v.moves.length || v.provisional.length)) return ['paused', 'in progress'];
  if (game.stored && game.stored.plies) return ['paused', 'in progress'];
  return ['waiting', 'not started'];
}

// ---------------------------------------------------------------------------------------
// The grid.

class Tile {
  constructor(n) {
    this.root = el('a', 'tile');
    this.root.dataset.board = String(n);
    const top = el('div', 'bar');
    this.num = el('span', 'num', String(n));
    this.black = el('span', 'player');
    this.blackClock = el('span', 'clk');
    top.append(this.num, el('span', 'dot b'), this.black, this.blackClock);
    this.board = new BoardEl(false);
    const bottom = el('div', 'bar');
    this.white = el('span', 'player');
    this.whiteClock = el('span', 'clk');
    this.badge = el('span', 'badge');
    bottom.append(this.badge, el('span', 'dot w'), this.white, this.whiteClock);
    this.info = el('div', 'info');
    this.root.append(top, this.board.root, bottom, this.info);
    this.key = '';
  }

  render(game, round) {
    this.root.href = `#round=${round}&board=${game.board}`;
    const e = game.live;
    const v = e ? e.view : null;
    const pairing = v ? v.pairing : game.stored.pairing;
    const key = JSON.stringify([pairing, v && v.moves.length, v && v.provisional.length, v && v.result, v && v.status, game.stored && game.stored.fen, game.stored && game.stored.result, v && v.fen, v && v.live_fen]);
    if (key !== this.key) {
      this.key = key;
      playerLine(this.white, pairing.white, 'White');
      playerLine(this.black, pairing.black, 'Black');
      let pos;
      let marks;
      let last;
      if (e) {
        const prov = v.provisional.length > 0;
        last = prov ? v.provisional[v.provisional.length - 1] : v.moves[v.moves.length - 1];
        pos = e.live || e.confirmed;
        marks = moveMarks(last && last.uci, prov ? MARK_PROVISIONAL : undefined);
      } else {
        last = game.stored.last;
        pos = parsePlacement(game.stored.fen) || parsePlacement(START_FEN);
        marks = moveMarks(last && last.uci);
      }
      this.board.update(pos, marks, `Board ${game.board}`);
      const [cls, text] = badgeFor(game);
      this.badge.className = `badge ${cls}`;
      setText(this.badge, text);
      const no = last && last.ply ? `${Math.ceil(last.ply / 2)}${last.ply % 2 ? '.' : '…'} ${last.san}` : '';
      setText(this.info, no);
      this.root.dataset.ply = String(v ? (v.moves.length ? v.moves[v.moves.length - 1].ply : 0) : game.stored.plies);
      this.root.dataset.provisional = String(v ? v.provisional.length : 0);
      this.root.dataset.result = (v ? v.result : game.stored.result) || '';
    }
    this.renderClocks(game);
  }

  renderClocks(game) {
    const e = game.live;
    const running = e && e.clock && clockTicks(e) ? e.clock.running : null;
    setText(this.whiteClock, e && e.clock ? formatClock(clockSeconds(e, 'white') ?? NaN) : '');
    setText(this.blackClock, e && e.clock ? formatClock(clockSeconds(e, 'black') ?? NaN) : '');
    this.whiteClock.classList.toggle('running', running === 'white');
    this.blackClock.classList.toggle('running', running === 'black');
  }
}

function renderGrid() {
  const r = shownRound();
  const games = gamesOf(r);
  const grid = $('grid');
  for (const n of [...page.tiles.keys()]) if (!games.has(n)) page.tiles.delete(n);
  const nodes = [];
  let live = 0;
  let finished = 0;
  for (const [n, g] of games) {
    let t = page.tiles.get(n);
    if (!t) {
      t = new Tile(n);
      page.tiles.set(n, t);
    }
    t.render(g, r);
    nodes.push(t.root);
    const [cls] = badgeFor(g);
    if (cls === 'result') finished++;
    else if (cls === 'live') live++;
  }
  const current = [...grid.children];
  if (current.length !== nodes.length || current.some((c, i) => c !== nodes[i])) grid.replaceChildren(...nodes);
  sizeSquares(grid, nodes.length ? nodes[0].querySelector('.board') : null);
  $('empty').hidden = nodes.length > 0;
  setText($('empty'), state.seq === null ? 'Waiting for the games…' : unknownRound(r) ? `No such round: round ${r} is not one of this event's (${knownRounds().join(', ') || 'none yet'}).` : `No games in round ${r} yet.`);
  setText($('summary'), nodes.length ? `Round ${r} · ${nodes.length} games · ${live} live · ${finished} finished` : '');
  renderMatches(games);
}

/** Each side's points of a result, in half points: [White, Black]; null while open. */
const HALF_POINTS = { '1-0': [2, 0], '0-1': [0, 2], '1/2-1/2': [1, 1], '0-0': [0, 0], '1/2-0': [1, 0], '0-1/2': [0, 1] };

/** Half points as a score: 0, ½, 1, 1½... */
function score(half) {
  const whole = Math.floor(half / 2);
  return half % 2 ? `${whole || ''}½` : String(whole);
}

/** The team matches of the round shown (games whose players have different teams): each
 * match's score from its finished games, the team with the alphabetically first name first. */
function renderMatches(games) {
  const matches = new Map();
  for (const g of games.values()) {
    const v = g.live ? g.live.view : null;
    const pairing = v ? v.pairing : g.stored && g.stored.pairing;
    const [wt, bt] = pairing ? [pairing.white.team, pairing.black.team] : [null, null];
    if (!wt || !bt || wt === bt) continue;
    const [a, b] = wt < bt ? [wt, bt] : [bt, wt];
    const key = `${a}\n${b}`;
    const m = matches.get(key) || { a, b, pa: 0, pb: 0 };
    const pts = HALF_POINTS[v ? v.result : g.stored && g.stored.result];
    if (pts) {
      m.pa += wt === a ? pts[0] : pts[1];
      m.pb += wt === a ? pts[1] : pts[0];
    }
    matches.set(key, m);
  }
  const node = $('matches');
  const key = JSON.stringify([...matches.values()]);
  if (node.dataset.key === key) return;
  node.dataset.key = key;
  node.replaceChildren(...[...matches.values()].map((m) => {
    const span = el('span', 'match');
    span.append(el('span', 'team', m.a), el('span', 'score', `${score(m.pa)} – ${score(m.pb)}`), el('span', 'team', m.b));
    return span;
  }));
}

/** The rounds the event and the feed know. */
function knownRounds() {
  const rounds = new Set(page.event ? page.event.rounds : []);
  for (const e of state.boards.values()) if (e.view.round) rounds.add(e.view.round);
  return [...rounds].sort((a, b) => a - b);
}

/** A round asked for in the address that neither the event nor the feed has. */
function unknownRound(r) {
  return page.event !== null && page.route.round === r && !knownRounds().includes(r) && !page.stored.get(r)?.size;
}

function renderRounds() {
  const nav = $('rounds');
  const rounds = new Set(knownRounds());
  const r = shownRound();
  if (!unknownRound(r)) rounds.add(r);
  const list = [...rounds].sort((a, b) => a - b);
  const key = list.join(',') + '/' + r;
  if (nav.dataset.key === key) return;
  nav.dataset.key = key;
  const label = el('span', 'muted', 'Round');
  const links = list.map((n) => {
    const a = el('a', n === r ? 'round current' : 'round', String(n));
    a.href = `#round=${n}`;
    a.dataset.round = String(n);
    if (n === r) a.setAttribute('aria-current', 'page');
    return a;
  });
  nav.replaceChildren(label, ...links);
}

// ---------------------------------------------------------------------------------------
// One game.

class GameView {
  constructor(container, round, board) {
    this.container = container;
    this.round = round;
    this.n = board;
    this.cursor = null; // the ply shown; null: the latest (follows the game)
    this.flipped = false;
    this.fetched = null; // /api/games/R/N
    this.fetchedAt = 0;
    this.build();
    this.fetch();
  }

  async fetch() {
    if (Date.now() - this.fetchedAt < 2000) return;
    this.fetchedAt = Date.now();
    const data = await getJson(`../api/games/${this.round}/${this.n}`);
    if (page.game !== this) return;
    this.answered = true;
    if (data && typeof data === 'object') {
      this.fetched = {
        pairing: asPairing(data.pairing),
        start_fen: str(data.start_fen, 200),
        moves: asMoves(data.moves),
        result: str(data.result, 16),
        termination: str(data.termination, 64),
      };
    }
    this.render();
  }

  /** The feed's entry, when this game is the board's current one. */
  live() {
    const e = state.boards.get(this.n);
    return e && e.view.round === this.round ? e : null;
  }

  /** Moves (confirmed, then provisional), the start position and the game's data. */
  model() {
    const m = this.record();
    // A forfeit shows no move: none of them was played for the result.
    if (m.result && m.termination === UNPLAYED) return { ...m, moves: [], provisional: [], entry: m.entry && { ...m.entry, live: null, confirmed: null, clock: null } };
    return m;
  }

  /** The game as the feed or the records have it. */
  record() {
    const e = this.live();
    const f = this.fetched;
    if (e) {
      const v = e.view;
      const fens = new Map(e.fens);
      if (f) for (const m of f.moves) if (m.fen && !fens.has(m.ply)) {
        const same = v.moves.find((x) => x.ply === m.ply);
        if (same && same.uci === m.uci) fens.set(m.ply, m.fen);
      }
      return { pairing: v.pairing, start: v.start_fen, moves: v.moves, provisional: v.provisional, fens, result: v.result, termination: v.termination, entry: e };
    }
    if (f) {
      return { pairing: f.pairing, start: f.start_fen, moves: f.moves, provisional: [], fens: new Map(f.moves.filter((m) => m.fen).map((m) => [m.ply, m.fen])), result: f.result, termination: f.termination, entry: null };
    }
    const s = page.stored.get(this.round)?.get(this.n);
    return { pairing: s ? s.pairing : asPairing(null), start: null, moves: [], provisional: [], fens: new Map(), result: s ? s.result : null, termination: null, entry: null };
  }

  build() {
    const c = this.container;
    this.title = $('game-title');
    this.notice = el('p', 'notice');
    this.notice.hidden = true;
    this.topPlayer = el('div', 'bar big-bar');
    this.bottomPlayer = el('div', 'bar big-bar');
    this.board = new BoardEl(true);
    this.controls = el('div', 'controls');
    const button = (cls, text, label, fn) => {
      const b = el('button', cls, text);
      b.type = 'button';
      b.title = label;
      b.setAttribute('aria-label', label);
      b.addEventListener('click', fn);
      return b;
    };
    this.first = button('nav first', '|◀', 'first position (Home)', () => this.go(0));
    this.prev = button('nav prev', '◀', 'previous move (←)', () => this.step(-1));
    this.next = button('nav next', '▶', 'next move (→)', () => this.step(1));
    this.last = button('nav last', '▶|', 'latest position (End)', () => this.go(null));
    this.flip = button('nav flip', '⇅ Flip', 'turn the board round (F)', () => {
      this.flipped = !this.flipped;
      this.render();
    });
    this.where = el('span', 'where muted');
    this.controls.append(this.first, this.prev, this.next, this.last, this.flip, this.where);
    this.resultLine = el('p', 'result-line');
    const left = el('div', 'game-board');
    left.append(this.topPlayer, this.board.root, this.bottomPlayer, this.controls, this.resultLine);
    const right = el('div', 'game-side');
    this.links = el('p', 'links');
    this.pgn = el('a', 'pgn-link', 'Download PGN');
    this.links.append(this.pgn);
    const table = el('table', 'moves');
    const head = el('thead');
    const hr = el('tr');
    hr.append(el('th', null, '#'), el('th', null, 'White'), el('th', null, 'Black'));
    head.append(hr);
    this.tbody = el('tbody');
    table.append(head, this.tbody);
    this.moveBox = el('div', 'move-box');
    this.moveBox.append(table);
    this.moveBox.addEventListener('click', (ev) => {
      const td = ev.target.closest('td[data-ply]');
      if (td) this.go(Number(td.dataset.ply));
    });
    right.append(this.links, this.moveBox);
    const wrap = el('div', 'game');
    wrap.append(left, right);
    this.wrap = wrap;
    c.replaceChildren(this.notice, wrap);
    c.dataset.board = String(this.n);
    c.dataset.round = String(this.round);
    sizeSquares(c, this.board.root);
    this.movesKey = '';
  }

  lastPly(m) {
    const all = m.moves.concat(m.provisional);
    return all.length ? all[all.length - 1].ply : this.firstPly(m) - 1;
  }

  firstPly(m) {
    const all = m.moves.concat(m.provisional);
    return all.length ? all[0].ply : 1;
  }

  step(d) {
    const m = this.model();
    const last = this.lastPly(m);
    const from = this.cursor === null ? last : this.cursor;
    const to = Math.max(this.firstPly(m) - 1, Math.min(last, from + d));
    this.go(to >= last ? null : to);
  }

  go(ply) {
    const m = this.model();
    const last = this.lastPly(m);
    this.cursor = ply === null || ply >= last ? null : Math.max(this.firstPly(m) - 1, ply);
    this.render();
  }

  /** No game on this board in this round, anywhere the page looks. */
  missing() {
    return this.answered && !this.fetched && !this.live() && !page.stored.get(this.round)?.get(this.n);
  }

  render() {
    const m = this.model();
    const v = m.entry ? m.entry.view : null;
    setText(this.title, `Round ${this.round} · Board ${this.n}`);
    const missing = this.missing();
    this.notice.hidden = !missing;
    this.wrap.hidden = missing;
    if (missing) {
      setText(this.notice, `No such game: round ${this.round} has no game on board ${this.n}.`);
      document.title = `No such game · Board ${this.n}`;
      return;
    }
    document.title = `${playerName(m.pairing.white, 'White')} – ${playerName(m.pairing.black, 'Black')} · Board ${this.n}`;
    const [top, bottom] = this.flipped ? [this.whiteRow(m), this.blackRow(m)] : [this.blackRow(m), this.whiteRow(m)];
    this.topPlayer.replaceChildren(...top);
    this.bottomPlayer.replaceChildren(...bottom);
    this.board.setFlipped(this.flipped);
    // The position at the cursor.
    const all = m.moves.concat(m.provisional);
    const last = this.lastPly(m);
    const ply = this.cursor === null ? last : this.cursor;
    let pos = null;
    let marks;
    const at = all.find((x) => x.ply === ply);
    if (this.cursor === null && m.entry && (m.entry.live || m.entry.confirmed)) {
      pos = m.entry.live || m.entry.confirmed;
      marks = moveMarks(at && at.uci, m.provisional.length ? MARK_PROVISIONAL : undefined);
    } else if (ply < this.firstPly(m)) {
      pos = parsePlacement(m.start || START_FEN);
    } else {
      pos = parsePlacement(m.fens.get(ply));
      marks = moveMarks(at && at.uci);
      if (!pos) this.fetch(); // a position the page has not been sent yet
    }
    this.board.update(pos || parsePlacement(START_FEN), marks, `Board ${this.n}, ${ply > 0 ? `after ${this.moveName(at)}` : 'start position'}`);
    this.container.dataset.ply = String(ply);
    this.container.dataset.following = String(this.cursor === null);
    const dot = ply >= this.firstPly(m) && at ? this.moveName(at) : 'start';
    setText(this.where, this.cursor === null ? `${dot} · latest` : `${dot} · ${ply} of ${last}`);
    this.first.disabled = ply < this.firstPly(m);
    this.prev.disabled = ply < this.firstPly(m);
    this.next.disabled = this.cursor === null;
    this.last.disabled = this.cursor === null;
    const result = m.result ? resultLine(m.result, m.termination) : v && v.status === 'active' ? 'Game in progress' : '';
    setText(this.resultLine, result);
    this.resultLine.dataset.result = m.result || '';
    const pgnUrl = new URL(`../pgn/${this.round}/${this.n}`, location.href).pathname;
    if (this.pgn.getAttribute('href') !== pgnUrl) {
      this.pgn.href = pgnUrl;
      this.pgn.download = `round-${this.round}-board-${this.n}.pgn`;
    }
    this.renderMoves(m, ply);
    this.renderClocks();
  }

  moveName(mv) {
    if (!mv) return '';
    return `${Math.ceil(mv.ply / 2)}${mv.ply % 2 ? '.' : '…'} ${mv.san}`;
  }

  whiteRow(m) {
    return this.playerRow(m.pairing.white, 'White', 'w');
  }

  blackRow(m) {
    return this.playerRow(m.pairing.black, 'Black', 'b');
  }

  playerRow(p, fallback, side) {
    const line = el('span', 'player');
    playerLine(line, p, fallback);
    const clock = el('span', 'clk');
    clock.dataset.side = side === 'w' ? 'white' : 'black';
    return [el('span', `dot ${side}`), line, clock];
  }

  renderMoves(m, ply) {
    const ending = resultLine(m.result, m.termination);
    const key = `${m.moves.length}/${m.moves.length ? m.moves[m.moves.length - 1].uci : ''}/${m.provisional.length}/${m.provisional.map((x) => x.uci).join()}/${ending}`;
    if (key !== this.movesKey) {
      this.movesKey = key;
      const rows = new Map();
      const list = m.moves.map((x) => [x, false]).concat(m.provisional.map((x) => [x, true]));
      for (const [mv, prov] of list) {
        const no = Math.ceil(mv.ply / 2);
        let row = rows.get(no);
        if (!row) {
          row = { tr: el('tr'), cells: [el('td', 'no', `${no}.`), el('td', 'mv'), el('td', 'mv')] };
          row.tr.append(...row.cells);
          rows.set(no, row);
        }
        const cell = row.cells[mv.ply % 2 === 1 ? 1 : 2];
        cell.replaceChildren(el('span', 'san', mv.san), el('span', 'mclk', mv.clk !== null ? formatClock(mv.clk) : ''));
        cell.dataset.ply = String(mv.ply);
        cell.classList.toggle('prov', prov);
        cell.tabIndex = -1;
        cell.title = prov ? 'not yet confirmed' : mv.emt !== null ? `${formatClock(mv.emt)} used` : '';
      }
      const trs = [...rows.values()].map((r) => r.tr);
      // The move list ends with the result, as a score sheet does.
      if (ending) {
        const tr = el('tr', 'result-row');
        const td = el('td', 'result', ending);
        td.colSpan = 3;
        tr.append(td);
        trs.push(tr);
      }
      this.tbody.replaceChildren(...trs);
      this.shownPly = null;
    }
    if (this.shownPly !== ply) {
      this.shownPly = ply;
      for (const td of this.tbody.querySelectorAll('td.current')) td.classList.remove('current');
      const td = this.tbody.querySelector(`td[data-ply="${ply}"]`);
      if (td) {
        td.classList.add('current');
        const box = this.moveBox;
        const top = td.offsetTop - box.clientHeight / 2;
        box.scrollTop = Math.max(0, top);
      }
    }
  }

  renderClocks() {
    const m = this.model();
    const e = m.entry;
    const clocks = this.container.querySelectorAll('.clk[data-side]');
    for (const c of clocks) {
      const side = c.dataset.side;
      let text = '';
      let running = false;
      if (this.cursor === null && e && e.clock) {
        text = formatClock(clockSeconds(e, side) ?? NaN);
        running = clockTicks(e) && e.clock.running === side;
      } else {
        // Stepping back: each side's clock after its last move up to the cursor.
        const upto = this.cursor === null ? Infinity : this.cursor;
        const parity = side === 'white' ? 1 : 0;
        const mv = m.moves.filter((x) => x.ply <= upto && x.ply % 2 === parity && x.clk !== null).pop();
        if (mv) text = formatClock(mv.clk);
      }
      setText(c, text);
      c.classList.toggle('running', running);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Routing and rendering.

function parseRoute() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ''));
  const num = (k) => {
    const v = params.get(k);
    return v && /^\d{1,6}$/.test(v) ? Number(v) : null;
  };
  let board = num('board');
  let round = num('round');
  return { round, board };
}

function onRoute() {
  page.route = parseRoute();
  const r = shownRound();
  const single = page.route.board !== null;
  document.body.dataset.view = single ? 'game' : 'grid';
  $('grid-view').hidden = single;
  $('game-view').hidden = !single;
  loadRound(r);
  if (single) {
    if (!page.game || page.game.n !== page.route.board || page.game.round !== r) {
      page.game = new GameView($('game'), r, page.route.board);
    }
    $('back').href = `#round=${r}`;
  } else {
    page.game = null;
    $('game').replaceChildren();
    document.title = page.event ? page.event.name : 'Live games';
  }
  render();
}

let rafPending = false;
function render() {
  if (rafPending) return;
  rafPending = true;
  requestAnimationFrame(() => {
    rafPending = false;
    if (page.event) {
      setText($('event-name'), page.event.name);
      setText($('event-site'), page.event.site && page.event.site !== '?' ? page.event.site : '');
    }
    renderRounds();
    if (page.game) page.game.render();
    else renderGrid();
    state.dirty.clear();
    document.body.dataset.seq = state.seq === null ? '' : String(state.seq);
  });
}

function tickClocks() {
  if (page.game) {
    page.game.renderClocks();
    return;
  }
  const r = shownRound();
  for (const [n, t] of page.tiles) {
    const e = state.boards.get(n);
    if (e && e.view.round === r) t.renderClocks({ live: e });
  }
}

function onKey(ev) {
  if (!page.game || ev.altKey || ev.ctrlKey || ev.metaKey) return;
  if (ev.target instanceof HTMLElement && ev.target.closest('input, textarea, select')) return;
  const keys = { ArrowLeft: () => page.game.step(-1), ArrowRight: () => page.game.step(1), Home: () => page.game.go(0), End: () => page.game.go(null), f: () => page.game.flip.click() };
  const fn = keys[ev.key];
  if (fn) {
    ev.preventDefault();
    fn();
  }
}

function start() {
  const feed = new FeedClient(state, {
    onChange: () => {
      // A board that moved to another round changes the rounds shown.
      render();
    },
    onStatus: (s, text) => {
      document.body.dataset.conn = s;
      const node = $('conn');
      node.dataset.state = s;
      setText(node, s === 'live' ? 'live' : text);
    },
  });
  window.addEventListener('hashchange', onRoute);
  document.addEventListener('keydown', onKey);
  onRoute();
  loadEvent();
  feed.start();
  setInterval(tickClocks, 250);
  // Rounds and finished games change rarely: looked at again now and then.
  setInterval(() => {
    loadEvent();
    loadRound(shownRound(), true);
  }, 30000);
}

if (typeof document !== 'undefined') start();
