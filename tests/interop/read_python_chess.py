#!/usr/bin/env python3
"""Reads a PGN file with python-chess and prints, as JSON, what it understood.

One object per game: its tags, its moves in UCI, python-chess's own clock() and emt()
readings for each move (seconds, null when absent) and the errors python-chess recorded.
Exit status 1 if any game had an error, so a caller cannot miss one.
"""
import json
import sys

import chess.pgn


def main(path: str) -> int:
    games = []
    failed = False
    with open(path, encoding="utf-8") as handle:
        while True:
            game = chess.pgn.read_game(handle)
            if game is None:
                break
            moves, clocks, emts = [], [], []
            for node in game.mainline():
                moves.append(node.move.uci())
                clocks.append(node.clock())
                emts.append(node.emt())
            errors = [str(e) for e in game.errors]
            failed = failed or bool(errors)
            games.append(
                {
                    "tags": dict(game.headers),
                    "moves": moves,
                    "clk": clocks,
                    "emt": emts,
                    "errors": errors,
                }
            )
    json.dump({"reader": "python-chess " + chess.__version__, "games": games}, sys.stdout)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
