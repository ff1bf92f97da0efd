//! Access times as blocks: the runtime reads the clock once per [`TICK_EVERY`] records
//! (`raw`), and the records between two clock reads take times spread evenly between
//! them. One place for that arithmetic, which both the conversion of raw chunks (`tdmap
//! trace`) and the trace format (version 6 stores these blocks, not a time per access)
//! use, so that a trace's reader steps through exactly the times the conversion gave.
//!
//! A block's record j (from 0) has time `t0 + floor(span · (phase + j) / den) -
//! floor(span · phase / den)`, stepped without a division per record ([`BlockTime`]).
//! A chunk's blocks have `den` = their length and phase 0; a block cut short at a side
//! word (a CPU or repeat word, which takes a time but is no access) goes on at a phase.
//! Times that step by a constant `d` are the block `span = d`, `den = 1`.

use crate::raw::TICK_EVERY;

/// The records of a chunk between two clock ticks, and how their times step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// Position of its first record in the chunk.
    pub first: usize,
    /// Records in it.
    pub len: usize,
    start: BlockTime,
}

impl Block {
    /// Its records' times, in order.
    pub fn times(self) -> impl Iterator<Item = u64> {
        let mut at = self.start();
        (0..self.len).map(move |_| at.step())
    }

    /// The time of its first record, to step through the others.
    #[inline]
    pub fn start(&self) -> BlockTime {
        self.start
    }
}

/// The next time of a [`Block`]'s records: the state of the even spread, which a trace
/// stores as it is ([`BlockTime::parts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockTime {
    at: u64,
    rem: u64,
    q: u64,
    r: u64,
    den: u64,
}

impl BlockTime {
    /// Times from `t0` spread over `span` per `den` records (den ≥ 1), at phase `rem`
    /// (below `den`): None when out of range (so a damaged file cannot make one).
    pub fn new(t0: u64, span: u64, den: u64, rem: u64) -> Option<BlockTime> {
        // rem + r stays below 2·den: den up to 2^63 cannot overflow.
        if den == 0 || den > 1 << 63 || rem >= den {
            return None;
        }
        Some(BlockTime {
            at: t0,
            rem,
            q: span / den,
            r: span % den,
            den,
        })
    }

    /// Times stepping by `d` from `t0`.
    pub fn every(t0: u64, d: u64) -> BlockTime {
        BlockTime {
            at: t0,
            rem: 0,
            q: d,
            r: 0,
            den: 1,
        }
    }

    /// What [`BlockTime::new`] takes back: (next time, span, den, phase).
    pub fn parts(&self) -> (u64, u64, u64, u64) {
        (self.at, self.q * self.den + self.r, self.den, self.rem)
    }

    /// The time `n` steps on, without stepping (no division per record when stepping;
    /// two here), or None if it passes `u64::MAX`.
    pub fn after(&self, n: u64) -> Option<u64> {
        let (n, den) = (n as u128, self.den as u128);
        let t =
            self.at as u128 + n * self.q as u128 + (self.rem as u128 + n * self.r as u128) / den;
        u64::try_from(t).ok()
    }

    /// The state `n` steps on, without stepping (what `n` calls of [`BlockTime::step`]
    /// leave): where a block cut at a side word goes on, found in O(1), so that a run
    /// of foreseen accesses (wire version 7) costs no step per access.
    pub fn skip(&self, n: u64) -> BlockTime {
        let (den, total) = (
            self.den as u128,
            self.rem as u128 + n as u128 * self.r as u128,
        );
        BlockTime {
            at: self
                .at
                .wrapping_add(n.wrapping_mul(self.q))
                .wrapping_add((total / den) as u64),
            rem: (total % den) as u64,
            ..*self
        }
    }

    /// This record's time; moves to the next record's.
    #[inline(always)]
    pub fn step(&mut self) -> u64 {
        let t = self.at;
        // Wrapping: a block's last step may pass u64::MAX; that time is never read.
        self.at = self.at.wrapping_add(self.q);
        self.rem += self.r;
        if self.rem >= self.den {
            self.rem -= self.den;
            self.at = self.at.wrapping_add(1);
        }
        t
    }
}

/// The blocks of a chunk of `n` records, one per clock tick: their times spread evenly
/// between the tick and the next one (the flush time `t1` for the last).
pub fn blocks(ticks: &[u64], t1: u64, n: usize) -> impl Iterator<Item = Block> + '_ {
    (0..n.div_ceil(TICK_EVERY)).map(move |k| {
        let first = k * TICK_EVERY;
        let next = first + TICK_EVERY;
        let end = if next < n { ticks[k + 1] } else { t1 };
        let t0 = ticks[k];
        let len = next.min(n) - first;
        let span = end
            .max(t0)
            .saturating_sub(t0)
            .min(u64::MAX / TICK_EVERY as u64);
        // floor(span·i/len) = i·(span/len) + floor(i·(span%len)/len), the last carried.
        let start = BlockTime::new(t0, span, len as u64, 0).expect("1 <= len <= TICK_EVERY");
        Block { first, len, start }
    })
}

/// The times of all `n` records of a chunk, as the blocks give them.
pub fn times(ticks: &[u64], t1: u64, n: usize) -> impl Iterator<Item = u64> + '_ {
    blocks(ticks, t1, n).flat_map(Block::times)
}

/// The time of record `i` of `n` in a chunk, computed alone: the reference that
/// [`times`] and the conversion's tests are checked against.
pub fn time_of(ticks: &[u64], t1: u64, i: usize, n: usize) -> u64 {
    let k = i / TICK_EVERY;
    let first = k * TICK_EVERY;
    let next = first + TICK_EVERY;
    let end = if next < n { ticks[k + 1] } else { t1 };
    let (t0, len) = (ticks[k], next.min(n) - first);
    // Spans are nanoseconds within one tick and i < TICK_EVERY, so u64 cannot overflow.
    let span = end
        .max(t0)
        .saturating_sub(t0)
        .min(u64::MAX / TICK_EVERY as u64);
    t0 + span * (i - first) as u64 / len as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn times_in_one_pass_equal_time_of_each_record() {
        let e = TICK_EVERY;
        for (ticks, t1, n) in [
            (vec![1000u64, 2000, 2999, 0], 5000u64, 2 * e + 7),
            (vec![7, 7, 9, 1 << 40], 1 << 41, 4 * e),
            (vec![500, 400, 0, 0], 450, e + 1),
            (vec![3, 0, 0, 0], 1_000_003, 5),
        ] {
            let fast: Vec<u64> = times(&ticks, t1, n).collect();
            let slow: Vec<u64> = (0..n).map(|i| time_of(&ticks, t1, i, n)).collect();
            assert_eq!(fast, slow, "ticks {ticks:?} t1 {t1} n {n}");
        }
    }

    #[test]
    fn record_times_follow_the_ticks() {
        let e = TICK_EVERY;
        let ticks = [1000, 2000, 0, 0];
        assert_eq!(time_of(&ticks, 5000, 0, e + 10), 1000);
        assert_eq!(time_of(&ticks, 5000, e / 2, e + 10), 1500);
        assert_eq!(time_of(&ticks, 5000, e, e + 10), 2000);
        assert!(time_of(&ticks, 5000, e + 9, e + 10) < 5000);
    }

    #[test]
    fn out_of_range_states_are_refused() {
        assert!(BlockTime::new(0, 5, 0, 0).is_none());
        assert!(BlockTime::new(0, 5, 4, 4).is_none());
        assert!(BlockTime::new(0, 5, (1 << 63) + 1, 0).is_none());
        assert_eq!(BlockTime::every(u64::MAX, 1).after(1), None);
        assert_eq!(BlockTime::every(u64::MAX, 1).after(0), Some(u64::MAX));
    }

    proptest! {
        /// Skipping n steps leaves the state that stepping n times leaves.
        #[test]
        fn skip_is_n_steps(
            t0 in any::<u64>(), span in any::<u64>(), den in 1u64..600, rem in 0u64..600,
            n in 0u64..1300,
        ) {
            let mut a = BlockTime::new(t0, span, den, rem % den).unwrap();
            let b = a.skip(n);
            (0..n).for_each(|_| { a.step(); });
            prop_assert_eq!(a, b);
        }

        /// A block cut anywhere goes on from its state as stored (`parts`), and `after`
        /// tells the time `n` steps on without stepping.
        #[test]
        fn a_stored_state_steps_as_the_block_did(
            t0 in any::<u32>(), span in 0u64..1 << 40, len in 1u64..600, cut in 0u64..600,
        ) {
            let mut a = BlockTime::new(t0 as u64, span, len, 0).unwrap();
            let cut = cut % len;
            for _ in 0..cut {
                a.step();
            }
            let (at, sp, den, rem) = a.parts();
            let mut b = BlockTime::new(at, sp, den, rem).unwrap();
            prop_assert_eq!(a.after(len - cut - 1), Some({
                let mut c = a;
                (0..len - cut - 1).for_each(|_| { c.step(); });
                c.step()
            }));
            for _ in cut..len {
                prop_assert_eq!(a.step(), b.step());
            }
        }
    }
}
