//! SAMMU's operating-system half for data mapping: the list of pages to migrate that the
//! hardware fills (§2.6.2) and the OS empties once per period, and the NUMA threshold NT,
//! which the OS raises when too many migrations occur (§2.4).
//!
//! "Too many" is not quantified in the paper; here it is migrations that do not last: a
//! page moved again within the sharing matrix's memory (the periods after which aging
//! leaves a quarter of a count, 1 / (1 − [`AGING`]) = 4) was moved for a burst of one
//! node's accesses, not for where the page is used. With 4-bit counters NT only matters
//! between Table 1's 10 and 16 (no migration): a burst that saturates one node's counter
//! (15 against 0) passes any NT up to 15. The rule does not fire on the streams of
//! `tests/sammu_alltoall.rs` and fires in one period of 10 `alltoall` traces (a page's
//! moves there are mostly more than 4 periods apart), so their figures come from the
//! list and the thread mapping, not from NT: a single run traced on 2 cores moves the
//! read matrix in the batches of its bursts (838 migrations of 256 pages, 257 back to a
//! node the page had left) that no NT below 16, where data mapping stops, holds back.

use crate::hash::FastMap;
use tdmap_sharing::AGING;

/// Periods within which a second move of the same page counts as churn: the SM's memory.
fn churn_periods() -> u64 {
    (1.0 / (1.0 - AGING)).round() as u64
}

/// The OS's side of SAMMU's data mapping.
#[derive(Debug, Clone)]
pub(super) struct PageMover {
    /// The NUMA threshold in force.
    pub(super) nt: u8,
    /// Table 1's NT, the lowest the OS sets.
    base: u8,
    /// The highest NT: one above the largest NUMA counter, where Eq. 6 never holds and no
    /// page moves.
    max: u8,
    /// §2.6.2: page → (node it was on, node to move it to), the latest notification.
    list: FastMap<u64, (u16, u16)>,
    /// The period of each page's last migration.
    moved_at: FastMap<u64, u64>,
    period: u64,
}

/// What one period's migrations were.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Period {
    /// Pages moved.
    pub(super) moves: usize,
    /// Of those, pages moved before within [`churn_periods`].
    pub(super) repeats: usize,
}

impl PageMover {
    /// Starts at Table 1's `nt`; counters reach `nc_max`.
    pub(super) fn new(nt: u8, nc_max: u8) -> Self {
        PageMover {
            nt,
            base: nt,
            max: nc_max.saturating_add(1).max(nt),
            list: FastMap::default(),
            moved_at: FastMap::default(),
            period: 0,
        }
    }

    /// Eq. 6 notified the OS: `page`, on node `from`, should move to `to` (Fig. 2-G).
    pub(super) fn notify(&mut self, page: u64, from: usize, to: usize) {
        self.list.insert(page, (from as u16, to as u16));
    }

    /// §2.6.2: the OS reads the list once per period and migrates the pages (Fig. 2-H),
    /// in page order; then it sets NT for the next period by [`next_nt`].
    pub(super) fn drain(&mut self, moves: &mut Vec<(u64, usize)>) -> Period {
        self.period += 1;
        let mut list: Vec<(u64, (u16, u16))> = self.list.drain().collect();
        list.sort_unstable_by_key(|&(page, _)| page);
        let mut p = Period::default();
        for (page, (from, to)) in list {
            if from == to {
                continue;
            }
            moves.push((page, to as usize));
            p.moves += 1;
            let last = self.moved_at.insert(page, self.period);
            if last.is_some_and(|l| self.period - l <= churn_periods()) {
                p.repeats += 1;
            }
        }
        self.nt = next_nt(self.nt, p, self.base, self.max);
        p
    }
}

/// SAMMU §2.4 (after Eq. 6): "If too many migrations are occurring, the operating system
/// must increase NT". NT rises by one after a period in which at least half the
/// migrations moved a page that had moved within [`churn_periods`], up to `max` (no
/// migration at all); it falls back by one, not below Table 1's `base`, after a period
/// whose migrations all lasted, so that a phase change that needs pages moved once more
/// gets them moved.
pub(super) fn next_nt(nt: u8, p: Period, base: u8, max: u8) -> u8 {
    if p.moves > 0 && 2 * p.repeats >= p.moves {
        nt.saturating_add(1).min(max)
    } else if p.moves > 0 && p.repeats == 0 {
        nt.saturating_sub(1).max(base)
    } else {
        nt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nt_rises_on_churn_up_to_no_migration_and_falls_back_when_moves_last() {
        let churn = Period {
            moves: 4,
            repeats: 2,
        };
        assert_eq!(next_nt(10, churn, 10, 16), 11);
        assert_eq!(
            next_nt(16, churn, 10, 16),
            16,
            "capped where Eq. 6 never holds"
        );
        let lasting = Period {
            moves: 4,
            repeats: 0,
        };
        assert_eq!(next_nt(12, lasting, 10, 16), 11);
        assert_eq!(next_nt(10, lasting, 10, 16), 10, "never below Table 1's");
        let some = Period {
            moves: 4,
            repeats: 1,
        };
        assert_eq!(next_nt(12, some, 10, 16), 12, "a few repeats: no change");
        assert_eq!(next_nt(12, Period::default(), 10, 16), 12, "no evidence");
    }

    #[test]
    fn a_page_moved_back_and_forth_raises_nt_and_the_list_keeps_its_latest_entry() {
        let mut m = PageMover::new(10, 15);
        let mut out = Vec::new();
        m.notify(7, 0, 1);
        m.notify(7, 0, 2); // the latest notification wins
        m.notify(8, 3, 3); // already there
        assert_eq!(
            m.drain(&mut out),
            Period {
                moves: 1,
                repeats: 0
            }
        );
        assert_eq!(out, vec![(7, 2)]);
        m.notify(7, 2, 0);
        assert_eq!(
            m.drain(&mut out),
            Period {
                moves: 1,
                repeats: 1
            }
        );
        assert_eq!(m.nt, 11);
        // Four periods later a move of page 7 is no longer churn.
        for _ in 0..churn_periods() {
            m.drain(&mut out);
        }
        m.notify(7, 0, 1);
        assert_eq!(
            m.drain(&mut out),
            Period {
                moves: 1,
                repeats: 0
            }
        );
        assert_eq!(m.nt, 10);
    }
}
