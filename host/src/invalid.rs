//! Why the relay refuses a value: a setting, a player's field, an operator's request.
//!
//! One type for every check, so a caller maps all of them alike (the configuration to its
//! line, the HTTP layer to a 422) and the text always names the value and says what it
//! should be.

/// A value the relay refuses, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    /// A number outside its range.
    #[error("{what} must be between {min} and {max}")]
    OutOfRange {
        /// The value's name.
        what: &'static str,
        /// The least allowed.
        min: u64,
        /// The most allowed.
        max: u64,
    },
    /// More items than allowed.
    #[error("more than {max} {what}")]
    TooMany {
        /// What is counted.
        what: &'static str,
        /// The most allowed.
        max: usize,
    },
    /// A value not in the form it must have (shown quoted).
    #[error("{what} {value:?} is not {form}")]
    Malformed {
        /// The value's name.
        what: &'static str,
        /// The value as given.
        value: String,
        /// What it should be.
        form: &'static str,
    },
    /// A value not shown (a secret) that is not in the form it must have.
    #[error("{what} must be {form}")]
    Secret {
        /// The value's name.
        what: &'static str,
        /// What it should be.
        form: &'static str,
    },
    /// A text over its length.
    #[error("{what} longer than {max} characters")]
    TooLong {
        /// The text's name.
        what: &'static str,
        /// The most characters allowed.
        max: usize,
    },
    /// A text holding a control character.
    #[error("{what} contains a control character")]
    ControlCharacter {
        /// The text's name.
        what: &'static str,
    },
    /// A text holding an invisible format character: a bidirectional control (U+202E
    /// turns the rest of a line around), a zero-width character.
    #[error("{what} contains an invisible format character (U+{code:04X})")]
    FormatCharacter {
        /// The text's name.
        what: &'static str,
        /// The character's code point.
        code: u32,
    },
    /// A value given twice where each must be unique.
    #[error("{what} {value} is listed twice")]
    Twice {
        /// The value's name.
        what: &'static str,
        /// The value.
        value: String,
    },
    /// A value that names something the relay cannot use: a file it cannot read, a host
    /// that does not resolve.
    #[error("{what} {value:?}: {why}")]
    Unusable {
        /// The value's name.
        what: &'static str,
        /// The value as given.
        value: String,
        /// Why it cannot be used.
        why: String,
    },
    /// Settings that break a rule between them (a missing one, two that exclude each other).
    #[error("{0}")]
    Rule(&'static str),
}

/// Checks that `value` is within `min..=max`.
pub fn in_range(what: &'static str, value: u64, min: u64, max: u64) -> Result<(), Invalid> {
    if (min..=max).contains(&value) { Ok(()) } else { Err(Invalid::OutOfRange { what, min, max }) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_says_which_value_and_what_it_should_be() {
        assert_eq!(
            in_range("silence_ms", 100, 500, 60_000).unwrap_err().to_string(),
            "silence_ms must be between 500 and 60000"
        );
        assert!(in_range("round", 999, 1, 999).is_ok());
        let e = Invalid::Malformed { what: "title", value: "Grand master".into(), form: "a FIDE title" };
        assert_eq!(e.to_string(), r#"title "Grand master" is not a FIDE title"#);
        let secret = Invalid::Secret { what: "token", form: "16 to 200 printable ASCII characters" };
        assert_eq!(secret.to_string(), "token must be 16 to 200 printable ASCII characters");
        assert_eq!(
            Invalid::Twice { what: "board", value: "3".into() }.to_string(),
            "board 3 is listed twice"
        );
    }
}
