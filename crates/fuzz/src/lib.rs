//! Fuzzing on stable Rust (cargo-fuzz needs nightly): a small mutation harness that the
//! targets in `tests/targets.rs` drive, one per parser a user can feed (traces, the
//! runtime's wire messages, every JSON format, the matrix CSV, synthetic machines and
//! distance specs).
//!
//! Each target gives valid inputs made from real values; the harness mutates them (bit
//! flips, interesting bytes and numbers, dictionary tokens, cuts, splices, repeats) or
//! makes random bytes, and runs the target on each. A panic fails the run with the input
//! saved under `target/fuzz-failures/`; so does a case slower than [`CASE_LIMIT`], and a
//! watchdog aborts the process on a case that never returns. Inputs are kept small, so
//! each case's time is bounded by construction.
//!
//! The budget per target comes from the environment: `TDMAP_FUZZ_SECONDS` (a duration),
//! else `TDMAP_FUZZ_CASES` (a count), else [`DEFAULT_CASES`], so that `cargo test`
//! runs a short pass. `TDMAP_FUZZ_SEED` repeats a run.

#![forbid(unsafe_code)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Cases per target when the environment sets no budget: seconds in total under
/// `cargo test`.
pub const DEFAULT_CASES: u64 = 300;

/// A case slower than this is reported as a hang (generous, for debug builds on a loaded
/// machine; the slowest targets take milliseconds).
pub const CASE_LIMIT: Duration = Duration::from_secs(10);

/// After this long inside one case the watchdog aborts the whole process, naming it.
const WATCHDOG: Duration = Duration::from_secs(60);

/// What to fuzz and how.
pub struct Target<'a> {
    /// The target's name, in messages and saved inputs.
    pub name: &'a str,
    /// Valid inputs, made from real values.
    pub seeds: Vec<Vec<u8>>,
    /// Tokens worth inserting (JSON keys, separators, magic numbers).
    pub dict: Vec<Vec<u8>>,
    /// Inputs are cut to this many bytes, which bounds each case's time.
    pub max_len: usize,
}

/// What a run did.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    /// Inputs run.
    pub execs: u64,
    /// Inputs the target accepted (returned true for).
    pub accepted: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// The slowest case.
    pub slowest: Duration,
}

/// The budget from the environment.
#[derive(Debug, Clone, Copy)]
enum Budget {
    Seconds(f64),
    Cases(u64),
}

fn budget() -> Budget {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    if let Some(s) = var("TDMAP_FUZZ_SECONDS") {
        let secs = s
            .trim()
            .parse::<f64>()
            .unwrap_or_else(|_| panic!("TDMAP_FUZZ_SECONDS={s:?}: give a number of seconds"));
        return Budget::Seconds(secs);
    }
    if let Some(s) = var("TDMAP_FUZZ_CASES") {
        let n = s
            .trim()
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("TDMAP_FUZZ_CASES={s:?}: give a whole number"));
        return Budget::Cases(n);
    }
    Budget::Cases(DEFAULT_CASES)
}

/// xorshift64*: fast, and repeatable from a seed.
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn bits(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.bits() % n as u64) as usize
        }
    }

    /// True with probability 1/`n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }
}

/// Bytes that often break parsers.
const INTERESTING_BYTES: &[u8] = &[0, 1, 0x7f, 0x80, 0xff, b'0', b'9', b'-', b'"', b'\\', b'\n'];

/// Numbers that often break parsers, as text: limits, signs, exponents, other bases.
const INTERESTING_NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "255",
    "256",
    "65535",
    "65536",
    "1024",
    "16384",
    "4294967295",
    "4294967296",
    "2147483647",
    "-2147483648",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "-9223372036854775808",
    "1e308",
    "-1e308",
    "1e309",
    "5e-324",
    "1.7976931348623157e308",
    "NaN",
    "inf",
    "-inf",
    "-0",
    "0.5",
    "0x10",
    "0x10000",
    "010",
    "+1",
    "99999999999999999999999",
    "1e5",
    "",
];

/// One mutation of `data` in place.
fn mutate_once(data: &mut Vec<u8>, rng: &mut Rng, dict: &[Vec<u8>], seeds: &[Vec<u8>]) {
    let len = data.len();
    match rng.below(12) {
        0 if len > 0 => {
            let i = rng.below(len);
            data[i] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let i = rng.below(len);
            data[i] = rng.bits() as u8;
        }
        2 if len > 0 => {
            let i = rng.below(len);
            data[i] = INTERESTING_BYTES[rng.below(INTERESTING_BYTES.len())];
        }
        3 => {
            let at = rng.below(len + 1);
            let n = 1 + rng.below(8);
            let bytes: Vec<u8> = (0..n).map(|_| rng.bits() as u8).collect();
            data.splice(at..at, bytes);
        }
        4 if len > 0 => {
            let at = rng.below(len);
            let n = 1 + rng.below((len - at).min(64));
            data.drain(at..at + n);
        }
        5 if len > 0 => {
            // Repeat a span: long runs, deep nesting, many rows.
            let at = rng.below(len);
            let n = 1 + rng.below((len - at).min(64));
            let span = data[at..at + n].to_vec();
            let times = 1 + rng.below(16);
            let to = rng.below(len + 1);
            data.splice(to..to, span.repeat(times));
        }
        6 if !dict.is_empty() => {
            let tok = &dict[rng.below(dict.len())];
            let at = rng.below(len + 1);
            data.splice(at..at, tok.iter().copied());
        }
        7 if !dict.is_empty() && len > 0 => {
            let tok = &dict[rng.below(dict.len())];
            let at = rng.below(len);
            let end = (at + tok.len()).min(len);
            data.splice(at..end, tok.iter().copied());
        }
        8 => replace_number(data, rng),
        9 if len > 0 => data.truncate(rng.below(len)),
        10 if !seeds.is_empty() => {
            // Splice: our head, another input's tail.
            let other = &seeds[rng.below(seeds.len())];
            let at = rng.below(len + 1);
            let from = rng.below(other.len() + 1);
            data.truncate(at);
            data.extend_from_slice(&other[from..]);
        }
        11 if len >= 8 => {
            // An interesting binary word at any offset, either width.
            let at = rng.below(len - 3);
            let words: [u64; 6] = [0, 1, u64::MAX, u32::MAX as u64, 1 << 31, rng.bits()];
            let w = words[rng.below(words.len())].to_ne_bytes();
            let n = if rng.one_in(2) { 4 } else { 8 }.min(len - at);
            data[at..at + n].copy_from_slice(&w[..n]);
        }
        _ => {
            if len > 0 {
                let i = rng.below(len);
                data[i] = data[i].wrapping_add(1);
            }
        }
    }
}

/// Replaces a run of digits (or inserts at random) with an interesting number.
fn replace_number(data: &mut Vec<u8>, rng: &mut Rng) {
    let num = INTERESTING_NUMBERS[rng.below(INTERESTING_NUMBERS.len())].as_bytes();
    let starts: Vec<usize> = (0..data.len())
        .filter(|&i| data[i].is_ascii_digit() && (i == 0 || !data[i - 1].is_ascii_digit()))
        .collect();
    if starts.is_empty() {
        let at = rng.below(data.len() + 1);
        data.splice(at..at, num.iter().copied());
        return;
    }
    let at = starts[rng.below(starts.len())];
    let end = at + data[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    data.splice(at..end, num.iter().copied());
}

/// The next input: random bytes, a seed, or a seed with 1 to 8 mutations.
fn next_input(t: &Target<'_>, rng: &mut Rng) -> Vec<u8> {
    let mut data = if t.seeds.is_empty() || rng.one_in(16) {
        let n = rng.below(t.max_len.min(512) + 1);
        (0..n).map(|_| rng.bits() as u8).collect()
    } else {
        t.seeds[rng.below(t.seeds.len())].clone()
    };
    if !rng.one_in(32) {
        for _ in 0..1 + rng.below(8) {
            mutate_once(&mut data, rng, &t.dict, &t.seeds);
        }
    }
    data.truncate(t.max_len);
    data
}

/// Saves a failing input and returns where.
fn save(name: &str, input: &[u8]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz-failures");
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!(
        "{name}-{:016x}.bin",
        Rng::new(input.len() as u64).bits() ^ hash(input)
    ));
    let _ = std::fs::write(&path, input);
    path
}

fn hash(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3)
    })
}

/// A short printable form of an input for messages.
pub fn show(input: &[u8]) -> String {
    let s = String::from_utf8_lossy(&input[..input.len().min(200)]);
    format!("{s:?}{}", if input.len() > 200 { "..." } else { "" })
}

/// The watchdog: aborts the process if one case runs past [`WATCHDOG`].
struct Watchdog {
    /// Milliseconds since `epoch` when the current case started; 0 between cases.
    started: Arc<AtomicU64>,
    current: Arc<Mutex<Vec<u8>>>,
    epoch: Instant,
}

impl Watchdog {
    fn start(name: &str) -> Watchdog {
        let started = Arc::new(AtomicU64::new(0));
        let current = Arc::new(Mutex::new(Vec::new()));
        let epoch = Instant::now();
        let (s, c, n) = (started.clone(), current.clone(), name.to_string());
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_secs(1));
            let at = s.load(Ordering::Relaxed);
            if at == 0 {
                continue;
            }
            let now = epoch.elapsed().as_millis() as u64;
            if now.saturating_sub(at) > WATCHDOG.as_millis() as u64 {
                let input = c.lock().map(|g| g.clone()).unwrap_or_default();
                let path = save(&n, &input);
                eprintln!(
                    "fuzz {n}: HANG: one case ran past {} s; input saved to {} ({})",
                    WATCHDOG.as_secs(),
                    path.display(),
                    show(&input)
                );
                std::process::abort();
            }
        });
        Watchdog {
            started,
            current,
            epoch,
        }
    }

    fn enter(&self, input: &[u8]) {
        if let Ok(mut g) = self.current.lock() {
            g.clear();
            g.extend_from_slice(input);
        }
        let ms = self.epoch.elapsed().as_millis() as u64;
        self.started.store(ms.max(1), Ordering::Relaxed);
    }

    fn leave(&self) {
        self.started.store(0, Ordering::Relaxed);
    }
}

/// Runs `check` on seeds and mutated inputs within the environment's budget. `check`
/// returns whether the target accepted the input (for the statistics) and panics when
/// an invariant breaks; a panic or a slow case fails the run, naming the saved input.
/// Prints one line: executions, time and rate.
pub fn fuzz(t: Target<'_>, mut check: impl FnMut(&[u8]) -> bool) -> Stats {
    let seed = std::env::var("TDMAP_FUZZ_SEED")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    let mut rng = Rng::new(seed ^ hash(t.name.as_bytes()));
    let budget = budget();
    let dog = Watchdog::start(t.name);
    let start = Instant::now();
    let mut stats = Stats {
        execs: 0,
        accepted: 0,
        elapsed: Duration::ZERO,
        slowest: Duration::ZERO,
    };
    let mut failure = None;
    let mut i = 0usize;
    loop {
        let more = match budget {
            Budget::Cases(n) => stats.execs < n,
            Budget::Seconds(s) => {
                !stats.execs.is_multiple_of(64) || start.elapsed().as_secs_f64() < s
            }
        };
        if !more {
            break;
        }
        // Every seed once, unmutated, then mutations.
        let input = match t.seeds.get(i) {
            Some(s) => s.clone(),
            None => next_input(&t, &mut rng),
        };
        i += 1;
        dog.enter(&input);
        let t0 = Instant::now();
        let r = catch_unwind(AssertUnwindSafe(|| check(&input)));
        let took = t0.elapsed();
        dog.leave();
        stats.execs += 1;
        stats.slowest = stats.slowest.max(took);
        match r {
            Ok(ok) => stats.accepted += u64::from(ok),
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failure = Some(format!("PANIC: {msg}"));
            }
        }
        if failure.is_none() && took > CASE_LIMIT {
            failure = Some(format!("HANG: one case took {took:?}"));
        }
        if let Some(f) = failure.take() {
            let path = save(t.name, &input);
            panic!(
                "fuzz {}: {f}; input saved to {} ({}); seed {seed}",
                t.name,
                path.display(),
                show(&input)
            );
        }
    }
    stats.elapsed = start.elapsed();
    eprintln!(
        "fuzz {:<12} {:>10} executions in {:>7.1} s ({:>8.0}/s), {} accepted, slowest case {:.1} ms, seed {seed}, no panic, no hang",
        t.name,
        stats.execs,
        stats.elapsed.as_secs_f64(),
        stats.execs as f64 / stats.elapsed.as_secs_f64().max(1e-9),
        stats.accepted,
        stats.slowest.as_secs_f64() * 1e3,
    );
    stats
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_stay_within_the_length_cap() {
        let t = Target {
            name: "cap",
            seeds: vec![b"{\"a\": 12}".to_vec()],
            dict: vec![b"null".to_vec()],
            max_len: 16,
        };
        let mut rng = Rng::new(3);
        for _ in 0..10_000 {
            assert!(next_input(&t, &mut rng).len() <= 16);
        }
    }

    #[test]
    fn a_panicking_target_fails_naming_its_input() {
        let r = std::panic::catch_unwind(|| {
            let t = Target {
                name: "selftest",
                seeds: vec![b"ok".to_vec(), b"boom".to_vec()],
                dict: vec![],
                max_len: 8,
            };
            fuzz(t, |b| {
                assert!(b != b"boom", "boom");
                true
            })
        });
        let err = r.unwrap_err();
        let msg = err.downcast_ref::<String>().unwrap();
        assert!(
            msg.contains("PANIC: boom") && msg.contains("\"boom\""),
            "{msg}"
        );
    }
}
