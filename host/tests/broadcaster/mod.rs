//! What the Lichess Broadcaster app does with a folder (lichess-org/broadcaster,
//! `src/upload.ts` and `src/components/FolderWatcher.vue`), redone here to check the
//! relay's data folder against it:
//!
//! - choosing a folder: refused when, listed recursively, more than one file name ends with
//!   `games.pgn` ("select the Round folder and not the Tournament folder");
//! - choosing the files to upload: of the `.pgn` files (recursively), the ones other than
//!   `games.pgn`, sorted by the last number in their path, when there are any; else the
//!   `games.pgn` alone;
//! - the upload: those files' texts joined with an empty line, pushed as one PGN.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

pub fn file_list(folder: &Path, recursive: bool) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(folder).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            if recursive {
                files.extend(file_list(&p, true));
            }
        } else {
            files.push(p);
        }
    }
    files
}

fn name(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

pub fn is_multi_game_pgn(p: &Path) -> bool {
    let n = name(p);
    n == "games.pgn" || n.ends_with("/games.pgn")
}

/// The folder check of `selectPgnFolder`.
pub fn folder_accepted(folder: &Path) -> bool {
    file_list(folder, true).iter().filter(|f| name(f).ends_with("games.pgn")).count() <= 1
}

/// The last number of a path (`/(\d+)\D*$/`), 0 without one.
fn game_number(p: &Path) -> u64 {
    let n = name(p);
    let end = n.rfind(|c: char| c.is_ascii_digit()).map_or(0, |i| i + 1);
    let start = n[..end].rfind(|c: char| !c.is_ascii_digit()).map_or(0, |i| i + 1);
    n[start..end].parse().unwrap_or(0)
}

/// `filesToUpload`.
pub fn files_to_upload(files: &[PathBuf]) -> Vec<PathBuf> {
    let pgn: Vec<PathBuf> = files.iter().filter(|f| name(f).ends_with(".pgn")).cloned().collect();
    let mut others: Vec<PathBuf> = pgn.iter().filter(|f| !is_multi_game_pgn(f)).cloned().collect();
    if others.is_empty() {
        return pgn;
    }
    others.sort_by_key(|f| game_number(f));
    others
}

/// `uploadFolderToRound`'s body.
pub fn upload_text(folder: &Path) -> String {
    let files = files_to_upload(&file_list(folder, true));
    files.iter().map(|f| std::fs::read_to_string(f).unwrap()).collect::<Vec<_>>().join("\n\n")
}
