// Reads a PGN file with chess.js and prints, as JSON, what it understood: per game its
// tags, moves in UCI, and the [%clk]/[%emt] values found in each move's comment (seconds).
// chess.js reads one game at a time, so the file is split at each "[Event " tag line that
// follows a blank line. Exit status 1 if chess.js rejected any game.
import { readFileSync } from 'node:fs';
import { Chess } from 'chess.js';

const seconds = (text, command) => {
  const m = new RegExp(`\\[%${command}\\s+(\\d+):(\\d{2}):(\\d{2}(?:\\.\\d+)?)\\]`).exec(text ?? '');
  return m ? Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]) : null;
};

const text = readFileSync(process.argv[2], 'utf8');
const chunks = text.split(/\n\s*\n(?=\[Event )/).filter((c) => c.trim().length > 0);
const games = [];
let failed = false;
for (const chunk of chunks) {
  const chess = new Chess();
  try {
    chess.loadPgn(chunk);
  } catch (err) {
    failed = true;
    games.push({ error: String(err && err.message ? err.message : err) });
    continue;
  }
  const comments = new Map(chess.getComments().map((c) => [c.fen, c.comment]));
  const moves = [];
  const clk = [];
  const emt = [];
  // Replay to find each move's resulting FEN, which is how chess.js keys comments.
  const replay = new Chess(chess.getHeaders().FEN ?? undefined);
  for (const move of chess.history({ verbose: true })) {
    replay.move(move.san);
    moves.push(move.from + move.to + (move.promotion ?? ''));
    const comment = comments.get(replay.fen());
    clk.push(seconds(comment, 'clk'));
    emt.push(seconds(comment, 'emt'));
  }
  games.push({ tags: chess.getHeaders(), moves, clk, emt });
}
process.stdout.write(JSON.stringify({ reader: 'chess.js', games }));
process.exit(failed ? 1 : 0);
