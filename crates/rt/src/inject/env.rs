//! The contract between `tdmap run --sampler inject` and the injector it preloads: one
//! environment variable, `TDMAP_INJECT=PERIOD_MS,FRACTION,PAGES,MONITOR_PID`.
//!
//! This file has no dependencies and no `unsafe`, so the `tdmap` binary includes it with
//! `#[path]` and both sides share one definition.

/// The environment variable that turns the injector on.
pub const ENV: &str = "TDMAP_INJECT";
/// The name (`/proc/PID/task/TID/comm`) of the injector's thread, so that the monitor
/// can leave the thread out of the program's threads.
pub const THREAD_NAME: &str = "tdmap-inject";
/// The beacon: the handler thread reads one page mapped here as it starts, and the page
/// fault tells the monitor its tid even when the program ends before the monitor can
/// read thread names. An address programs do not use (32 TiB, far below the mmap area
/// and far above PIE programs and their heap); if it is taken, there is no beacon.
pub const BEACON: u64 = 0x2000_0000_0000;

/// What the injector does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Milliseconds between two write-protection passes.
    pub period_ms: u64,
    /// Share of the registered memory write-protected per pass, in (0, 1].
    pub fraction: f64,
    /// At most this many pages protected per pass: each write to one costs a round trip
    /// through the handler (FACTS.md: 4.5 to 70 µs), so this bounds the overhead.
    pub pages: u64,
    /// pid of the monitor: only its direct child injects, so that the program's own
    /// children (which inherit the environment) stay untouched.
    pub monitor: i32,
}

impl Settings {
    /// The variable's value.
    pub fn encode(&self) -> String {
        format!(
            "{},{},{},{}",
            self.period_ms, self.fraction, self.pages, self.monitor
        )
    }

    /// Parses a value made by [`Settings::encode`]; None when malformed or out of range.
    pub fn decode(s: &str) -> Option<Settings> {
        let mut it = s.split(',');
        let period_ms = it.next()?.parse().ok()?;
        let fraction: f64 = it.next()?.parse().ok()?;
        let pages = it.next()?.parse().ok()?;
        let monitor = it.next()?.parse().ok()?;
        let ok =
            it.next().is_none() && period_ms > 0 && fraction > 0.0 && fraction <= 1.0 && pages > 0;
        ok.then_some(Settings {
            period_ms,
            fraction,
            pages,
            monitor,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_bad_values_are_refused() {
        let s = Settings {
            period_ms: 100,
            fraction: 0.02,
            pages: 64,
            monitor: 4242,
        };
        assert_eq!(Settings::decode(&s.encode()), Some(s));
        for bad in [
            "",
            "100",
            "100,0.5,64",
            "0,0.5,64,1",
            "100,0,64,1",
            "100,1.5,64,1",
            "100,0.5,0,1",
            "1,0.5,64,1,2",
        ] {
            assert_eq!(Settings::decode(bad), None, "{bad}");
        }
    }
}
