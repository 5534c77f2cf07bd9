//! The tournament: the event, its rounds, and who plays on which board in each round.
//!
//! The bottom of the host's model. The configuration and the pairing files (TRF) are read
//! into it; the board tasks take a new game's players and round from it; the feed, the
//! journal records, the Lichess push, the data folder's index files and the edges read it.
//! None of them reach into each other for it.
//!
//! # Rounds
//! An event has numbered rounds. Each [`Round`] holds its own pairings and a
//! [`RoundState`]: exactly one round is live at a time (new games on the boards belong to
//! it), the rounds left for another are finished, and rounds known before they are
//! played are upcoming. Per-round settings (a round's Lichess broadcast id, its start and
//! finish by the operator) belong on [`Round`] too.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

use crate::invalid::Invalid;

/// The most boards one relay serves (board numbers 1 to this).
pub const MAX_BOARDS: usize = 1000;
/// The highest round number.
pub const MAX_ROUND: u32 = 999;
/// The longest name, event or site text accepted (characters).
pub const MAX_TEXT: usize = 200;

/// One player of a pairing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Player {
    /// "Last, First", as PGN wants it.
    #[serde(default)]
    pub name: String,
    /// FIDE id, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fide_id: Option<u64>,
    /// FIDE title (GM, IM, WGM...), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Rating (`WhiteElo`/`BlackElo`), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elo: Option<u32>,
    /// FIDE federation (`NOR`), if known: shown on the spectators' page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub federation: Option<String>,
    /// The player's team in a team event (`WhiteTeam`/`BlackTeam`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
}

impl Player {
    /// Checks the fields: a name that fits a PGN tag, a FIDE title, a rating, a federation.
    pub fn check(&self) -> Result<(), Invalid> {
        check_text("player name", &self.name)?;
        if let Some(t) = &self.title
            && (t.len() > 8 || !t.chars().all(|c| c.is_ascii_alphabetic()))
        {
            return Err(Invalid::Malformed { what: "title", value: t.clone(), form: "a FIDE title" });
        }
        if let Some(e) = self.elo {
            crate::invalid::in_range("rating", u64::from(e), 0, 4000)?;
        }
        if let Some(t) = &self.team {
            check_text("team name", t)?;
        }
        if let Some(f) = &self.federation
            && (f.is_empty() || f.len() > 3 || !f.chars().all(|c| c.is_ascii_alphabetic()))
        {
            return Err(Invalid::Malformed {
                what: "federation",
                value: f.clone(),
                form: "a FIDE federation (three letters, e.g. NOR)",
            });
        }
        Ok(())
    }
}

/// White and Black on one board.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pairing {
    /// The White player.
    #[serde(default)]
    pub white: Player,
    /// The Black player.
    #[serde(default)]
    pub black: Player,
}

impl Pairing {
    /// Checks both players.
    pub fn check(&self) -> Result<(), Invalid> {
        self.white.check()?;
        self.black.check()
    }
}

/// Checks a free text that ends up in a PGN tag: bounded, one line (quotes and backslashes
/// are escaped on output; control characters are refused), and shown as written: no
/// invisible format character ([`is_format_character`]).
pub fn check_text(what: &'static str, s: &str) -> Result<(), Invalid> {
    if s.chars().count() > MAX_TEXT {
        return Err(Invalid::TooLong { what, max: MAX_TEXT });
    }
    if s.chars().any(char::is_control) {
        return Err(Invalid::ControlCharacter { what });
    }
    if let Some(c) = s.chars().find(|c| is_format_character(*c)) {
        return Err(Invalid::FormatCharacter { what, code: u32::from(c) });
    }
    Ok(())
}

/// Unicode's format characters (general category Cf) that change how text around them
/// shows without showing themselves: bidirectional controls (a name with U+202E reads
/// backwards on every page and in every PGN viewer), zero-width characters, the soft
/// hyphen, invisible operators, interlinear annotations and tags.
pub fn is_format_character(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00AD
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    )
}

/// Event-wide PGN data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// `Event` tag.
    pub name: String,
    /// `Site` tag.
    pub site: String,
    /// `TimeControl` tag in the PGN standard's form (`5400+30`, `40/7200:3600`), if known.
    pub time_control: Option<String>,
    /// FIDE tie-break codes that break ties and that define the standings (a TRF-26
    /// report's `202` and `212`), for the round files.
    pub tie_breaks: [Vec<String>; 2],
}

impl Default for Event {
    fn default() -> Self {
        Event {
            name: "DGT live relay".to_owned(),
            site: "?".to_owned(),
            time_control: None,
            tie_breaks: Default::default(),
        }
    }
}

/// Where a round stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoundState {
    /// Known, not played yet.
    Upcoming,
    /// Being played: new games on the boards belong to it.
    Live,
    /// Over: the relay moved on to another round.
    Finished,
}

/// One round of the event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Round {
    /// Its number, from 1.
    pub number: u32,
    /// Upcoming, live or finished.
    pub state: RoundState,
    /// Who plays on which board, by board number.
    pub pairings: BTreeMap<u32, Pairing>,
    /// The Lichess broadcast round its games are pushed to (else the `[lichess]` section's).
    pub lichess_round: Option<String>,
}

impl Round {
    /// A round with no pairings yet.
    pub fn new(number: u32, state: RoundState) -> Round {
        Round { number, state, pairings: BTreeMap::new(), lichess_round: None }
    }
}

/// Checks a Lichess broadcast round id: 8 letters and digits.
pub fn check_lichess_round(id: &str) -> Result<(), Invalid> {
    if id.len() != 8 || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(Invalid::Malformed {
            what: "lichess round",
            value: id.chars().take(40).collect(),
            form: "an 8-character round id",
        });
    }
    Ok(())
}

/// The event and its rounds; exactly one round is live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tournament {
    /// Event, site, time control.
    pub event: Event,
    rounds: BTreeMap<u32, Round>,
    /// The live round's number.
    live: u32,
}

impl Default for Tournament {
    fn default() -> Self {
        Tournament::new(Event::default(), 1)
    }
}

impl Tournament {
    /// An event whose round `live` is being played, with no pairings yet.
    pub fn new(event: Event, live: u32) -> Tournament {
        let rounds = BTreeMap::from([(live, Round::new(live, RoundState::Live))]);
        Tournament { event, rounds, live }
    }

    /// The live round's number.
    pub fn live_round(&self) -> u32 {
        self.live
    }

    /// A round, if the tournament knows it.
    pub fn round(&self, number: u32) -> Option<&Round> {
        self.rounds.get(&number)
    }

    /// Every known round, by number.
    pub fn rounds(&self) -> impl Iterator<Item = &Round> {
        self.rounds.values()
    }

    /// A round, created when missing: finished if before the live round, else upcoming.
    pub fn round_mut(&mut self, number: u32) -> &mut Round {
        let live = self.live;
        self.rounds.entry(number).or_insert_with(|| {
            Round::new(number, if number < live { RoundState::Finished } else { RoundState::Upcoming })
        })
    }

    /// Who plays on `board` in the live round (nobody named when unpaired).
    pub fn pairing(&self, board: u32) -> Pairing {
        self.rounds.get(&self.live).and_then(|r| r.pairings.get(&board)).cloned().unwrap_or_default()
    }

    /// The boards paired in the live round, with their players.
    pub fn live_pairings(&self) -> BTreeMap<u32, Pairing> {
        self.rounds.get(&self.live).map(|r| r.pairings.clone()).unwrap_or_default()
    }

    /// Pairs `board` in the live round.
    pub fn set_pairing(&mut self, board: u32, pairing: Pairing) {
        let live = self.live;
        self.round_mut(live).pairings.insert(board, pairing);
    }

    /// Marks the live round finished: it stays the current round (late games and results
    /// still belong to it) until another starts.
    pub fn finish_round(&mut self) {
        let live = self.live;
        self.round_mut(live).state = RoundState::Finished;
    }

    /// Whether the current round was finished by the operator.
    pub fn live_round_finished(&self) -> bool {
        self.rounds.get(&self.live).is_some_and(|r| r.state == RoundState::Finished)
    }

    /// Makes round `number` the live one; the round that was live is finished. A round
    /// that has no pairings yet starts with the live round's: until the operator pairs it,
    /// the boards keep their players.
    pub fn start_round(&mut self, number: u32) {
        if number == self.live {
            self.round_mut(number).state = RoundState::Live;
            return;
        }
        let carried = self.live_pairings();
        if let Some(old) = self.rounds.get_mut(&self.live) {
            old.state = RoundState::Finished;
        }
        self.live = number;
        let round = self.round_mut(number);
        round.state = RoundState::Live;
        if round.pairings.is_empty() {
            round.pairings = carried;
        }
    }

    /// Pairs `boards` in round `round` (the live one when `None`), which becomes the live
    /// round; boards not named keep their players. Returns the live round's pairings, every
    /// board that a connected board task should now hear of.
    pub fn merge_pairings(
        &mut self,
        round: Option<u32>,
        boards: impl IntoIterator<Item = (u32, Pairing)>,
    ) -> BTreeMap<u32, Pairing> {
        if let Some(r) = round {
            self.start_round(r);
        }
        for (board, pairing) in boards {
            self.set_pairing(board, pairing);
        }
        self.live_pairings()
    }

    /// Makes `boards` the whole pairing of round `round`, which becomes the live round (a
    /// pairing file's round). Returns every board paired before or now with its new players
    /// (none named for a board the new pairing leaves out), for the board tasks to hear of.
    pub fn replace_pairings(
        &mut self,
        round: u32,
        boards: impl IntoIterator<Item = (u32, Pairing)>,
    ) -> BTreeMap<u32, Pairing> {
        let before: Vec<u32> = self.live_pairings().into_keys().collect();
        self.start_round(round);
        let live = self.round_mut(round);
        live.pairings = boards.into_iter().collect();
        let mut changed = live.pairings.clone();
        for board in before {
            changed.entry(board).or_default();
        }
        changed
    }
}

/// The tournament, shared by the board tasks, the admin API and the services that read it.
#[derive(Clone, Debug, Default)]
pub struct SharedTournament(Arc<Mutex<Tournament>>);

impl SharedTournament {
    /// Shares a tournament.
    pub fn new(t: Tournament) -> Self {
        SharedTournament(Arc::new(Mutex::new(t)))
    }

    /// Locks it.
    pub fn lock(&self) -> MutexGuard<'_, Tournament> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str) -> Pairing {
        Pairing { white: Player { name: name.into(), ..Player::default() }, ..Pairing::default() }
    }

    #[test]
    fn one_round_is_live_and_a_new_one_starts_with_its_players() {
        let mut t = Tournament::new(Event::default(), 1);
        t.set_pairing(1, named("A"));
        t.set_pairing(2, named("B"));
        let live = t.merge_pairings(Some(2), [(1, named("C"))]);
        assert_eq!(t.live_round(), 2);
        assert_eq!(live.keys().copied().collect::<Vec<_>>(), [1, 2]);
        assert_eq!((t.pairing(1), t.pairing(2)), (named("C"), named("B")));
        assert_eq!(t.round(1).map(|r| r.state), Some(RoundState::Finished));
        assert_eq!(t.round(1).map(|r| r.pairings[&1].clone()), Some(named("A")));
        assert_eq!(t.round_mut(5).state, RoundState::Upcoming);
        t.start_round(1);
        assert_eq!((t.pairing(1), t.round(2).map(|r| r.state)), (named("A"), Some(RoundState::Finished)));
    }

    #[test]
    fn a_replaced_pairing_unpairs_the_boards_it_leaves_out() {
        let mut t = Tournament::new(Event::default(), 1);
        t.set_pairing(2, named("Old"));
        t.set_pairing(5, named("Old"));
        let changed = t.replace_pairings(2, [(1, named("Roe")), (2, named("Doe"))]);
        assert_eq!(t.live_round(), 2);
        assert_eq!(changed.keys().copied().collect::<Vec<_>>(), [1, 2, 5]);
        assert_eq!((changed[&2].clone(), changed[&5].clone()), (named("Doe"), Pairing::default()));
        assert_eq!(t.pairing(5), Pairing::default());
        assert_eq!(t.round(1).map(|r| r.pairings.len()), Some(2), "round 1 keeps its pairing");
    }

    #[test]
    fn a_finished_round_stays_current_until_the_next_starts_with_its_own_lichess_round() {
        let mut t = Tournament::new(Event::default(), 1);
        t.set_pairing(1, named("A"));
        t.round_mut(2).pairings.insert(1, named("B"));
        t.round_mut(2).lichess_round = Some("EfGh5678".into());
        assert_eq!(t.round(2).map(|r| r.state), Some(RoundState::Upcoming));
        t.finish_round();
        assert!(t.live_round_finished());
        assert_eq!((t.live_round(), t.pairing(1)), (1, named("A")), "round 1 stays current");
        t.start_round(2);
        assert_eq!((t.live_round(), t.pairing(1)), (2, named("B")), "round 2 keeps its own pairings");
        assert!(!t.live_round_finished());
        assert_eq!(t.round(2).and_then(|r| r.lichess_round.as_deref()), Some("EfGh5678"));
        assert!(check_lichess_round("EfGh5678").is_ok());
        assert!(check_lichess_round("EfGh567").is_err() && check_lichess_round("EfGh567!").is_err());
    }
}
