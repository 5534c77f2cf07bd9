//! The data folder as the Lichess Broadcaster app and LiveChess readers expect it: beside
//! the store's `round-N/game-M.pgn` and `round-N/games.pgn`, a `round-N/index.json` (the
//! round's pairings and results, by board) and a top `tournament.json` (the rounds, with how
//! many games each has and how many are live), with LiveChess's field names.
//!
//! ```text
//! DATA/tournament.json        {"id","name","location","rounds":[{"count","live"}],"tiebreaks","standings"}
//! DATA/round-N/index.json     {"pairings":[{"white":{fname,mname,lname,title,federation,gender,fideid,team},
//!                               "black":{..},"result","live"}]}
//! ```
//!
//! The app watches the folder of one round: it refuses a folder holding more than one
//! `games.pgn` (a tournament folder), uploads the `game-M.pgn` files in the order of their
//! number when there are any, else `games.pgn`. Point it at `DATA/round-N`.
//!
//! Both files are derived from the round's PGN (the store's text, written from the
//! journal), rewritten atomically a second after a change at most.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::shutdown::Listener;
use crate::store::{Store, StoreError, write_atomic};
use crate::tournament::{Event, Pairing, Player, SharedTournament};

/// The tags of each game of a round's PGN (a game starts at a tag line after an empty line).
pub fn game_tags(round_pgn: &str) -> Vec<BTreeMap<String, String>> {
    let mut games: Vec<BTreeMap<String, String>> = Vec::new();
    let mut in_tags = false;
    for line in round_pgn.lines() {
        let Some(inner) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) else {
            in_tags = false;
            continue;
        };
        if !in_tags {
            games.push(BTreeMap::new());
            in_tags = true;
        }
        let Some((name, value)) = inner.split_once(' ') else { continue };
        let value = value
            .trim()
            .trim_start_matches('"')
            .trim_end_matches('"')
            .replace("\\\"", "\"")
            .replace("\\\\", "\\");
        if let Some(g) = games.last_mut() {
            g.insert(name.to_owned(), value);
        }
    }
    games
}

/// A player in LiveChess's form: "Last, First" split into `lname` and `fname`.
fn player(tags: &BTreeMap<String, String>, side: &str, paired: Option<&Player>) -> Value {
    let name = tags.get(side).map_or("", String::as_str);
    let (lname, fname) = match name.split_once(',') {
        Some((l, f)) => (l.trim(), Some(f.trim())),
        None => (name.trim(), None),
    };
    let tag = |suffix: &str| tags.get(&format!("{side}{suffix}")).cloned();
    json!({
        "fname": fname.filter(|f| !f.is_empty()),
        "mname": null,
        "lname": lname,
        "title": tag("Title"),
        // PGN has no federation tag: the round's pairing gives it.
        "federation": tag("Fed").or_else(|| paired.and_then(|p| p.federation.clone())),
        "gender": null,
        "fideid": tag("FideId").and_then(|id| id.parse::<u64>().ok()),
        "team": tag("Team"),
    })
}

/// A game being played and relayed: no result, some moves, and a relay running (after it
/// stops, nothing is live).
fn is_live(tags: &BTreeMap<String, String>, relaying: bool) -> bool {
    relaying && tags.get("Result").is_none_or(|r| r == "*") && tags.get("PlyCount").is_some_and(|p| p != "0")
}

/// What the data folder's JSON files are written from, besides the PGN.
#[derive(Clone, Debug, Default)]
pub struct ExportContext {
    /// `name`, `id`, `location`, and a TRF-26 report's tie-breaks.
    pub event: Event,
    /// Each round's pairings by board: what PGN does not carry (federations).
    pub pairings: BTreeMap<u32, BTreeMap<u32, Pairing>>,
    /// The relay runs: false for the last writing at a stop, so that no game stays "live".
    pub relaying: bool,
}

/// `round-N/index.json` of a round's PGN, with the round's pairings by board.
pub fn index_json(round_pgn: &str, pairings: Option<&BTreeMap<u32, Pairing>>, relaying: bool) -> Value {
    let pairings: Vec<Value> = game_tags(round_pgn)
        .iter()
        .map(|t| {
            let paired = t.get("Board").and_then(|b| b.parse::<u32>().ok()).and_then(|b| pairings?.get(&b));
            json!({
                "white": player(t, "White", paired.map(|p| &p.white)),
                "black": player(t, "Black", paired.map(|p| &p.black)),
                "result": t.get("Result").map_or("*", String::as_str),
                "live": is_live(t, relaying),
            })
        })
        .collect();
    json!({ "pairings": pairings })
}

/// `tournament.json`: the event and, for rounds 1 to the last, their game and live counts;
/// with a TRF-26 report's tie-breaks, `tiebreaks` (`202`) and `standings` (`212`).
pub fn tournament_json(event: &Event, rounds: &BTreeMap<u32, String>, relaying: bool) -> Value {
    let last = rounds.keys().next_back().copied().unwrap_or(0);
    let list: Vec<Value> = (1..=last)
        .map(|r| {
            let tags = rounds.get(&r).map(|t| game_tags(t)).unwrap_or_default();
            json!({ "count": tags.len(), "live": tags.iter().filter(|t| is_live(t, relaying)).count() })
        })
        .collect();
    let mut out = json!({ "id": event.name, "name": event.name, "location": event.site, "rounds": list });
    for (key, codes) in ["tiebreaks", "standings"].into_iter().zip(&event.tie_breaks) {
        if !codes.is_empty() {
            out[key] = json!(codes);
        }
    }
    out
}

/// Writes `tournament.json` and every round's `index.json` under `root`.
pub fn write_export(store: &Store, ctx: &ExportContext, root: &Path) -> Result<(), StoreError> {
    let mut rounds = BTreeMap::new();
    for r in store.rounds() {
        if let Some(text) = store.round_pgn(r) {
            let dir = root.join(format!("round-{r}"));
            std::fs::create_dir_all(&dir).map_err(|source| StoreError::Io { path: dir.clone(), source })?;
            let index = serde_json::to_string_pretty(&index_json(&text, ctx.pairings.get(&r), ctx.relaying))?;
            write_atomic(&dir.join("index.json"), &(index + "\n"))?;
            rounds.insert(r, text);
        }
    }
    let t = serde_json::to_string_pretty(&tournament_json(&ctx.event, &rounds, ctx.relaying))?;
    write_atomic(&root.join("tournament.json"), &(t + "\n"))
}

/// Rewrites the JSON files after changes (a second apart at most) until `stop`, and once more
/// then. Failures are logged; the PGN writer reports the data folder's troubles.
pub async fn run_export(store: Arc<Store>, tournament: SharedTournament, mut stop: Listener) {
    let mut changes = store.subscribe();
    loop {
        let stopping = tokio::select! {
            biased;
            r = changes.changed() => r.is_err(),
            _ = stop.wait() => true,
        };
        if !stopping {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = stop.wait() => {}
            }
        }
        changes.borrow_and_update();
        let ctx = {
            let t = tournament.lock();
            ExportContext {
                event: t.event.clone(),
                pairings: t.rounds().map(|r| (r.number, r.pairings.clone())).collect(),
                relaying: !stopping,
            }
        };
        let s = Arc::clone(&store);
        let result = tokio::task::spawn_blocking(move || write_export(&s, &ctx, s.root())).await;
        match result {
            Ok(Err(e)) => tracing::warn!(error = %e, "cannot write tournament.json / index.json"),
            Err(e) => tracing::warn!(error = %e, "export task failed"),
            Ok(Ok(())) => {}
        }
        if stopping {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn livechess_fields_from_the_pgn() {
        let pgn = "[Event \"E\"]\n[White \"Carlsen, Magnus\"]\n[Black \"Board 2 Black\"]\n[Result \"*\"]\n\
                   [PlyCount \"3\"]\n[WhiteFed \"NOR\"]\n[WhiteFideId \"1503014\"]\n[WhiteTeam \"Norway\"]\n\
                   [WhiteTitle \"GM\"]\n\n1. e4 e5 2. Nf3 *\n\n\
                   [Event \"E\"]\n[White \"A\"]\n[Black \"B\"]\n[Result \"1-0\"]\n[PlyCount \"1\"]\n\n1. e4 1-0\n\n";
        let fed = Pairing {
            white: Player { federation: Some("NOR".into()), ..Player::default() },
            ..Pairing::default()
        };
        let index = index_json(
            pgn.replace("[White \"Carlsen", "[Board \"1\"]\n[White \"Carlsen").as_str(),
            Some(&BTreeMap::from([(1, fed)])),
            true,
        );
        let p = &index["pairings"];
        assert_eq!(p[0]["white"]["lname"], "Carlsen");
        assert_eq!(p[0]["white"]["fname"], "Magnus");
        assert_eq!(p[0]["white"]["fideid"], 1503014);
        assert_eq!(p[0]["white"]["title"], "GM");
        assert_eq!(
            (p[0]["white"]["federation"].as_str(), p[0]["white"]["team"].as_str()),
            (Some("NOR"), Some("Norway"))
        );
        assert!(p[0]["black"]["federation"].is_null());
        assert_eq!(p[0]["black"]["lname"], "Board 2 Black");
        assert_eq!((p[0]["result"].as_str(), p[0]["live"].as_bool()), (Some("*"), Some(true)));
        assert_eq!((p[1]["result"].as_str(), p[1]["live"].as_bool()), (Some("1-0"), Some(false)));
        let rounds = BTreeMap::from([(2, pgn.to_owned())]);
        let mut event = Event { name: "E".into(), site: "S".into(), ..Event::default() };
        let t = tournament_json(&event, &rounds, true);
        assert_eq!(t["rounds"], json!([{"count": 0, "live": 0}, {"count": 2, "live": 1}]));
        let stopped = tournament_json(&event, &rounds, false);
        assert_eq!(
            stopped["rounds"],
            json!([{"count": 0, "live": 0}, {"count": 2, "live": 0}]),
            "after a stop"
        );
        assert_eq!(index_json(pgn, None, false)["pairings"][0]["live"], false);
        assert_eq!((t["id"].as_str(), t["name"].as_str()), (Some("E"), Some("E")));
        assert!(t.get("tiebreaks").is_none());
        event.tie_breaks = [vec!["BH/C1".into(), "SB".into()], vec!["PTS".into(), "BH/C1".into()]];
        let t = tournament_json(&event, &rounds, true);
        assert_eq!((&t["tiebreaks"], &t["standings"]), (&json!(["BH/C1", "SB"]), &json!(["PTS", "BH/C1"])));
    }
}
