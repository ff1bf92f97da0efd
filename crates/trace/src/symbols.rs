//! The accesses frames of format version 6, as the writer builds them: a thread's
//! accesses split by the stride predictor (`tdmap_wire::predict`, the one rule) into
//! runs (a count of accesses it predicted) and literals (an access sent whole), and their
//! times as blocks that step evenly (`tdmap_wire::times`), not one entry per access.
//!
//! Why: on the traces of `make bench-trace` the predictor leaves a median of 0.002
//! symbols per access, and the runtime's times are already blocks (one clock read per
//! 512 records); V5 re-encoded every access into 4+ bytes of varint columns, a quarter of
//! the tracer's CPU time, and zstd compressed them again (docs/bench-trace.md "Next").
//!
//! Layout of a frame's two streams (varints are LEB128; zigzag as in V5), decoded by
//! `replay.rs`:
//! - **Symbols**: if the frame head's flag [`FROM_STATE`] is set, first the predictor's
//!   state that the frame starts from (`at`, `km1`, then the [`RING`] addresses as
//!   zigzag deltas each from the one before, then the [`RING`] metas as bytes); with the
//!   flag [`CONTINUES`], the frame starts from the state its thread's previous accesses
//!   frame (in file order) ended in; else from the initial state (so a frame decodes
//!   alone, which is what this crate's own encoder writes). Then symbols: a varint
//!   `n << 1` for a run of n ≥ 1 predicted accesses, or `meta << 1 | 1` for a literal,
//!   followed by a size byte when the meta is an escape ([`ESCAPE`]) and by the zigzag
//!   delta of its address from the frame's previous literal's (0 before the first).
//!   The varint 0 (a run of 0 accesses, which no writer makes) is a **reset**: the
//!   predictor goes back to its initial state ([`Symbols::reset`]), as the runtime's
//!   does at every chunk, so that a frame spanning several chunks can carry each
//!   chunk's own symbols. Added to V6 before V6 was released: no version of its own.
//! - **Times**: blocks, each the varints `n` (≥ 1 accesses), the zigzag delta of its
//!   first time from the previous block's last (0 before the first), `span`, `den` and
//!   the phase `rem` (`tdmap_wire::times::BlockTime::new`). The blocks' n add up to the
//!   frame's accesses.
//!
//! A literal's address is coded against the previous literal, not the predictor's
//! guess, so that a writer handed symbols (the runtime predicts in the program's thread)
//! can store them without replaying the runs.

use crate::columns::zigzag;
use crate::error::{Result, TraceError};
use tdmap_wire::predict::{Encoder, Predictor, Symbol, RING};
use tdmap_wire::times::BlockTime;

/// Frame flag (V6 accesses): the symbols start from a stored predictor state.
pub const FROM_STATE: u8 = 1;
/// Frame flag (V6 accesses): the symbols go on from the state the thread's previous
/// accesses frame ended in (the initial state if it has none): symbols handed over by
/// a predictor that runs on across frames, with no state to store.
pub const CONTINUES: u8 = 2;
/// Meta bit of a size that is not a power of two up to 128: the literal carries the
/// size in a byte, and such an access is always a literal (never in a run), so that a
/// run never stands for a size its meta cannot tell.
pub const ESCAPE: u8 = 0x80;
/// Most bytes one access can take in a frame's raw streams: a literal (tag 2, size 1,
/// address 10), a block of its own (5 varints) and a reset (a writer puts at most one
/// before each access: one per chunk handed over).
pub const MAX_ACCESS_BYTES: usize = 13 + 50 + 1;
/// Most bytes of a stored predictor state: two varints, the addresses, the metas.
pub const MAX_STATE_BYTES: usize = 2 * 5 + RING * 10 + RING;

/// The predictor's meta of an access: `log2(size) << 1 | write` (as the runtime's), or
/// [`ESCAPE`]` | write` for other sizes.
#[inline(always)]
pub fn meta_of(size: u8, write: bool) -> u8 {
    if size.is_power_of_two() {
        (size.trailing_zeros() as u8) << 1 | write as u8
    } else {
        ESCAPE | write as u8
    }
}

/// Appends `v` as LEB128.
#[inline]
pub(crate) fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Times given one per access, gathered into a block while they step by one amount.
#[derive(Debug, Default, Clone, Copy)]
struct Steps {
    n: u64,
    t0: u64,
    d: u64,
    last: u64,
}

/// One accesses frame of V6 being built, as accesses (which it predicts) or symbols
/// come. Buffers are kept from frame to frame (the writer pools them).
#[derive(Debug, Default)]
pub struct Symbols {
    /// Accesses in the frame.
    n: usize,
    /// Accesses whose times are in `times` or `steps`.
    timed: usize,
    syms: Vec<u8>,
    times: Vec<u8>,
    enc: Encoder,
    flags: u8,
    last_literal: u64,
    /// The last time of the last block written.
    last_time: u64,
    steps: Steps,
    /// Accesses that came as symbols from a caller (then no access may come).
    handed: usize,
}

impl Symbols {
    /// Accesses in the frame.
    #[inline]
    pub fn len(&self) -> usize {
        self.n
    }

    /// True when the frame holds no access.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Empties the frame (keeping the buffers); the predictor starts over.
    pub fn clear(&mut self) {
        self.n = 0;
        self.timed = 0;
        self.syms.clear();
        self.times.clear();
        self.enc = Encoder::default();
        self.flags = 0;
        self.last_literal = 0;
        self.last_time = 0;
        self.steps = Steps::default();
        self.handed = 0;
    }

    /// The frame head's flags.
    pub fn flags(&self) -> u8 {
        self.flags
    }

    /// Appends one access, whose time comes from [`Symbols::times`].
    #[inline(always)]
    pub fn access(&mut self, addr: u64, size: u8, write: bool) {
        let meta = meta_of(size, write);
        let (syms, last) = (&mut self.syms, &mut self.last_literal);
        self.enc.push(addr, meta, meta & ESCAPE != 0, |s| {
            put_symbol(syms, last, s, size)
        });
        self.n += 1;
    }

    /// Appends a reset: the reader's predictor goes back to its initial state here, as
    /// a sender's that restarts (the runtime's, at every chunk) does, and so does this
    /// frame's own encoder. On an empty frame that starts from the initial state it adds
    /// nothing: the frame starts there anyway.
    pub fn reset(&mut self) {
        if self.n == 0 && self.flags == 0 {
            return;
        }
        let (syms, last) = (&mut self.syms, &mut self.last_literal);
        self.enc.finish(|s| put_symbol(syms, last, s, 0));
        self.enc = Encoder::default();
        push_varint(&mut self.syms, 0);
    }

    /// Gives the next `n` accesses (appended before or after) the times stepping from
    /// `start`.
    pub fn times(&mut self, n: usize, start: BlockTime) {
        if n == 0 {
            return;
        }
        self.flush_steps();
        self.put_block(n as u64, start);
        self.timed += n;
    }

    /// Appends one access at `time` (any time: consecutive accesses whose times step by
    /// one amount share a block).
    pub fn push(&mut self, addr: u64, size: u8, write: bool, time: u64) {
        self.access(addr, size, write);
        let s = &mut self.steps;
        match s.n {
            0 => (s.n, s.t0, s.d) = (1, time, 0),
            1 if time >= s.last => (s.n, s.d) = (2, time - s.last),
            _ if time >= s.last && time - s.last == s.d => s.n += 1,
            _ => {
                self.flush_steps();
                self.steps = Steps {
                    n: 1,
                    t0: time,
                    d: 0,
                    last: time,
                };
            }
        }
        self.steps.last = time;
        self.timed += 1;
    }

    /// Appends `syms` as they are, standing for `accesses` accesses. When the frame is
    /// empty, `start` says where its predictor starts: `Some(state)`, the state before
    /// the first symbol, stored in the frame (which then decodes alone); `None`, where
    /// the thread's previous accesses frame ended ([`CONTINUES`]). The caller's
    /// predictor must have made the symbols from there; accesses may not be mixed with
    /// symbols in one frame.
    pub fn symbols(
        &mut self,
        start: Option<&Predictor>,
        syms: &[Symbol],
        accesses: usize,
    ) -> Result<()> {
        if self.handed != self.n {
            return Err(TraceError::Invalid(
                "symbols appended to a frame of accesses".into(),
            ));
        }
        let mut count = 0u64;
        for &s in syms {
            count += match s {
                Symbol::Run(0) => return Err(TraceError::Invalid("a run of 0 accesses".into())),
                Symbol::Run(k) => k,
                Symbol::Literal(_, m) if m & ESCAPE != 0 => {
                    return Err(TraceError::Invalid("a literal of an escaped size".into()))
                }
                Symbol::Literal(..) => 1,
            };
        }
        if count != accesses as u64 {
            return Err(TraceError::Invalid(format!(
                "symbols stand for {count} accesses, not {accesses}"
            )));
        }
        if self.n == 0 && self.flags == 0 {
            match start {
                None => self.flags = CONTINUES,
                Some(p) if *p != Predictor::new() => {
                    self.flags = FROM_STATE;
                    put_state(&mut self.syms, p);
                }
                Some(_) => {}
            }
        }
        self.handed += accesses;
        for &s in syms {
            put_symbol(&mut self.syms, &mut self.last_literal, s, 0);
        }
        self.n += accesses;
        Ok(())
    }

    /// Ends the frame: the run still held and the last block go into the streams.
    /// Fails when the times given do not cover exactly the accesses.
    pub fn finish(&mut self) -> Result<()> {
        let (syms, last) = (&mut self.syms, &mut self.last_literal);
        self.enc.finish(|s| put_symbol(syms, last, s, 0));
        self.flush_steps();
        if self.handed > 0 && self.handed != self.n {
            return Err(TraceError::Invalid(
                "accesses appended to a frame of symbols".into(),
            ));
        }
        if self.timed != self.n {
            return Err(TraceError::Invalid(format!(
                "{} accesses given times, {} accesses",
                self.timed, self.n
            )));
        }
        Ok(())
    }

    /// The frame's two streams, once finished: symbols, then times.
    pub fn streams(&self) -> (&[u8], &[u8]) {
        (&self.syms, &self.times)
    }

    fn flush_steps(&mut self) {
        let s = std::mem::take(&mut self.steps);
        if s.n > 0 {
            self.put_block(s.n, BlockTime::every(s.t0, s.d));
        }
    }

    fn put_block(&mut self, n: u64, start: BlockTime) {
        let (t0, span, den, rem) = start.parts();
        let out = &mut self.times;
        push_varint(out, n);
        push_varint(out, zigzag(t0.wrapping_sub(self.last_time)));
        push_varint(out, span);
        push_varint(out, den);
        push_varint(out, rem);
        self.last_time = start.after(n - 1).unwrap_or(t0);
    }
}

/// Appends one symbol; `size` is a literal's size, written when its meta escapes.
#[inline]
fn put_symbol(out: &mut Vec<u8>, last: &mut u64, s: Symbol, size: u8) {
    match s {
        Symbol::Run(n) => push_varint(out, n << 1),
        Symbol::Literal(addr, meta) => {
            push_varint(out, (meta as u64) << 1 | 1);
            if meta & ESCAPE != 0 {
                out.push(size);
            }
            push_varint(out, zigzag(addr.wrapping_sub(*last)));
            *last = addr;
        }
    }
}

/// Appends a predictor state (a frame's start, [`FROM_STATE`]).
fn put_state(out: &mut Vec<u8>, p: &Predictor) {
    let (addrs, metas, at, km1) = p.state();
    push_varint(out, at as u64);
    push_varint(out, km1 as u64);
    let mut prev = 0u64;
    for &a in addrs {
        push_varint(out, zigzag(a.wrapping_sub(prev)));
        prev = a;
    }
    out.extend_from_slice(metas);
}
