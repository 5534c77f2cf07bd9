//! A report's fixed columns, read the same way by the TRF-16 reader and TRF-26's records.

use super::error::{TrfError, TrfErrorKind};

/// Characters `from..=to` (1-based) of a line, trimmed; empty when the line is shorter.
pub(super) fn field(chars: &[char], from: usize, to: usize) -> String {
    let end = to.min(chars.len());
    if from > end {
        return String::new();
    }
    chars[from - 1..end].iter().collect::<String>().trim().to_owned()
}

/// A number field; `None` when blank, an error naming the line and column when not a number.
pub(super) fn number<T: std::str::FromStr>(
    chars: &[char],
    line: usize,
    (from, to): (usize, usize),
    name: &'static str,
) -> Result<Option<T>, TrfError> {
    let text = field(chars, from, to);
    if text.is_empty() {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|_| TrfError {
        line,
        column: from,
        kind: TrfErrorKind::NotANumber { field: name, value: text },
    })
}
