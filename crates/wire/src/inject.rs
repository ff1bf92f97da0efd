//! The contract between `tdmap run --sampler inject` and the injector it preloads (the
//! runtime's `inject` module): one environment variable,
//! `TDMAP_INJECT=PERIOD_MS,FRACTION,PAGES,MONITOR_PID[,ANNOUNCE_FD]`.
//!
//! History of the value (no version field: the runtime and the tool ship together, and
//! an older runtime refuses a value with more fields, so it just does not inject):
//! - four fields: the first version;
//! - an optional fifth field, `ANNOUNCE_FD`: the write end of a pipe `tdmap run` made,
//!   left open across its `exec` of the program. The runtime writes one
//!   [`crate::Announcement`] to it before `main` and closes it (see [`crate::announce`]).
//!   Without it the runtime announces nothing.

use crate::WireError;

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
    /// The descriptor, in the program, of the pipe on which the runtime announces its
    /// handler thread ([`crate::announce`]); None: no announcement.
    pub announce_fd: Option<i32>,
}

impl Settings {
    /// The variable's value.
    pub fn encode(&self) -> String {
        let mut s = format!(
            "{},{},{},{}",
            self.period_ms, self.fraction, self.pages, self.monitor
        );
        if let Some(fd) = self.announce_fd {
            s.push_str(&format!(",{fd}"));
        }
        s
    }

    /// Parses a value made by [`Settings::encode`]; an error when malformed or out of range.
    pub fn decode(s: &str) -> Result<Settings, WireError> {
        let fields: Vec<&str> = s.split(',').collect();
        if !(4..=5).contains(&fields.len()) {
            return Err(malformed(format!(
                "{} fields, expected 4 or 5",
                fields.len()
            )));
        }
        let period_ms: u64 = parse(fields[0], "period_ms")?;
        let fraction: f64 = parse(fields[1], "fraction")?;
        let pages: u64 = parse(fields[2], "pages")?;
        let monitor: i32 = parse(fields[3], "monitor")?;
        let announce_fd: Option<i32> = match fields.get(4) {
            Some(f) => Some(parse(f, "announce_fd")?),
            None => None,
        };
        let check = |ok: bool, field: &'static str, value: String| {
            if ok {
                Ok(())
            } else {
                Err(WireError::OutOfRange { field, value })
            }
        };
        check(period_ms > 0, "period_ms", period_ms.to_string())?;
        check(
            fraction > 0.0 && fraction <= 1.0,
            "fraction",
            fraction.to_string(),
        )?;
        check(pages > 0, "pages", pages.to_string())?;
        check(
            announce_fd.is_none_or(|fd| fd >= 0),
            "announce_fd",
            format!("{announce_fd:?}"),
        )?;
        Ok(Settings {
            period_ms,
            fraction,
            pages,
            monitor,
            announce_fd,
        })
    }
}

fn malformed(why: String) -> WireError {
    WireError::Malformed {
        what: "inject settings",
        why,
    }
}

fn parse<T: std::str::FromStr>(field: &str, name: &str) -> Result<T, WireError> {
    field
        .parse()
        .map_err(|_| malformed(format!("{name} {field:?} is not a number")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn settings(announce_fd: Option<i32>) -> Settings {
        Settings {
            period_ms: 100,
            fraction: 0.02,
            pages: 64,
            monitor: 4242,
            announce_fd,
        }
    }

    #[test]
    fn settings_round_trip_and_bad_values_are_refused() {
        let s = settings(None);
        assert_eq!(s.encode(), "100,0.02,64,4242", "the first version's value");
        assert_eq!(Settings::decode(&s.encode()), Ok(s));
        let s = settings(Some(7));
        assert_eq!(s.encode(), "100,0.02,64,4242,7");
        assert_eq!(Settings::decode(&s.encode()), Ok(s));
        for bad in [
            "",
            "100",
            "100,0.5,64",
            "0,0.5,64,1",
            "100,0,64,1",
            "100,1.5,64,1",
            "100,NaN,64,1",
            "100,0.5,0,1",
            "100,0.5,64,1,-1",
            "100,0.5,64,1,x",
            "1,0.5,64,1,2,3",
        ] {
            assert!(Settings::decode(bad).is_err(), "{bad}");
        }
    }

    /// Found by `make fuzz`: the field was quoted as it came, so a newline in it split
    /// the message over two lines.
    #[test]
    fn a_field_with_a_newline_is_named_on_one_line() {
        let err = Settings::decode("1\n0,0.5,64,1").unwrap_err().to_string();
        assert!(!err.contains('\n') && err.contains(r#""1\n0""#), "{err}");
    }

    fn valid() -> impl Strategy<Value = Settings> {
        (
            1..u64::MAX,
            (1..=1000u32).prop_map(|k| k as f64 / 1000.0),
            1..u64::MAX,
            any::<i32>(),
            proptest::option::of(0..i32::MAX),
        )
            .prop_map(
                |(period_ms, fraction, pages, monitor, announce_fd)| Settings {
                    period_ms,
                    fraction,
                    pages,
                    monitor,
                    announce_fd,
                },
            )
    }

    proptest! {
        #[test]
        fn any_string_decodes_or_errs(s in "\\PC*") {
            if let Ok(d) = Settings::decode(&s) {
                prop_assert!(d.fraction > 0.0 && d.fraction <= 1.0);
                prop_assert!(d.period_ms > 0 && d.pages > 0);
            }
        }

        #[test]
        fn number_like_strings_decode_or_err(s in "[0-9.,eE+-]{0,40}") {
            let _ = Settings::decode(&s);
        }

        #[test]
        fn valid_settings_round_trip(s in valid()) {
            prop_assert_eq!(Settings::decode(&s.encode()), Ok(s));
        }

        #[test]
        fn damaged_settings_never_panic(s in valid(), cut in 0..60usize, flip in 0..480usize) {
            let text = s.encode();
            let _ = Settings::decode(&text[..cut.min(text.len())]);
            let mut b = text.into_bytes();
            let i = flip / 8 % b.len();
            b[i] ^= 1 << (flip % 8);
            if let Ok(t) = String::from_utf8(b) {
                let _ = Settings::decode(&t);
            }
        }
    }
}
