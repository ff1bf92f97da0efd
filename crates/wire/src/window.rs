//! `tdmap trace --window N:M`: trace N ms of every M ms (issue 17 item 6, as drmemtrace's
//! burst tracing does). The tracer hands the spec to the runtime in [`ENV_WINDOW`]; both
//! parse it here, so a spec the tracer accepts is one the runtime reads the same way.

use crate::WireError;
use std::fmt;
use std::str::FromStr;

/// Environment variable: the window spec `N:M` (ms); unset: record the whole run.
pub const ENV_WINDOW: &str = "TDMAP_RT_WINDOW";

/// Record `on_ms` milliseconds at the start of every `every_ms` milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Milliseconds recorded per period (N), 1 or more.
    pub on_ms: u64,
    /// Length of a period in milliseconds (M), at least `on_ms`.
    pub every_ms: u64,
}

impl Window {
    /// The share of the run that is recorded, N/M.
    pub fn share(&self) -> f64 {
        self.on_ms as f64 / self.every_ms as f64
    }
}

impl FromStr for Window {
    type Err = WireError;

    fn from_str(s: &str) -> Result<Window, WireError> {
        let bad = |why: &str| WireError::Malformed {
            what: "window",
            why: format!("'{s}': {why}"),
        };
        let (n, m) = s
            .split_once(':')
            .ok_or_else(|| bad("expected N:M, whole milliseconds (e.g. 5:20)"))?;
        let ms = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| bad("N and M must be whole milliseconds (e.g. 5:20)"))
        };
        let (on_ms, every_ms) = (ms(n)?, ms(m)?);
        if on_ms == 0 {
            return Err(bad("N must be at least 1 ms"));
        }
        if on_ms > every_ms {
            return Err(bad("N must not exceed M (N ms are traced of every M ms)"));
        }
        Ok(Window { on_ms, every_ms })
    }
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.on_ms, self.every_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_n_of_m_whole_milliseconds_with_n_at_most_m() {
        let w: Window = "5:20".parse().unwrap();
        assert_eq!((w.on_ms, w.every_ms), (5, 20));
        assert_eq!(w.to_string(), "5:20");
        assert_eq!("7:7".parse::<Window>().unwrap().share(), 1.0);
        for bad in [
            "", "5", "0:20", "21:20", "5:", ":20", "1.5:20", "-1:20", "5:20:1", "a:b",
        ] {
            assert!(bad.parse::<Window>().is_err(), "{bad} accepted");
        }
    }
}
