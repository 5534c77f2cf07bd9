//! Logging behind the `tracing` feature.
//!
//! The host builds the session with `tracing` (through `std`) and these macros are
//! `tracing`'s own, fields and all. The firmware builds it without: the macros expand to
//! nothing, so no logging code or format string reaches its flash. What the operator must
//! know never goes through a log: it is an [`crate::Effect`] (an alert, the link state).
//!
//! The macros take `tracing`'s syntax. Without the feature their arguments are not even
//! compiled, so a value computed only to be logged must be computed inside the call.

macro_rules! log_trace {
    ($($arg:tt)*) => {{
        #[cfg(feature = "tracing")]
        {
            ::tracing::trace!($($arg)*);
        }
    }};
}

macro_rules! log_debug {
    ($($arg:tt)*) => {{
        #[cfg(feature = "tracing")]
        {
            ::tracing::debug!($($arg)*);
        }
    }};
}

macro_rules! log_info {
    ($($arg:tt)*) => {{
        #[cfg(feature = "tracing")]
        {
            ::tracing::info!($($arg)*);
        }
    }};
}

macro_rules! log_warn {
    ($($arg:tt)*) => {{
        #[cfg(feature = "tracing")]
        {
            ::tracing::warn!($($arg)*);
        }
    }};
}

macro_rules! log_error {
    ($($arg:tt)*) => {{
        #[cfg(feature = "tracing")]
        {
            ::tracing::error!($($arg)*);
        }
    }};
}

pub(crate) use log_debug as debug;
pub(crate) use log_error as error;
pub(crate) use log_info as info;
pub(crate) use log_trace as trace;
pub(crate) use log_warn as warn;
