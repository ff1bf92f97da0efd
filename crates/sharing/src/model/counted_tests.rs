//! Counted batches (`SharingModel::accesses_counted`, what `--model-only` feeds from the
//! runtime's aggregated records) give exactly what the accesses one by one give.

use super::*;
use proptest::prelude::*;

proptest! {
    /// Each batch fed counted, with its (address, count) pairs in reverse, equals the
    /// same batch fed one access at a time in order: the model's result does not depend
    /// on the order of a thread's accesses within a batch, nor on their grouping.
    #[test]
    fn a_counted_batch_in_any_order_equals_its_accesses_one_by_one(
        batches in prop::collection::vec(
            (0u32..4, prop::collection::vec((0u64..(1 << 14), 1u32..6), 1..40)),
            1..20,
        ),
        all in any::<bool>(),
        narrow in any::<bool>(),
    ) {
        let mut cfg = if all { TableConfig::all_sharers(2, 4) } else { TableConfig::exact(2) };
        cfg.wide_counters = !narrow;
        let nodes = [0, 1, 1, 0];
        let mut counted = SharingModel::new(cfg, 4, &nodes).unwrap();
        let mut single = SharingModel::new(cfg, 4, &nodes).unwrap();
        for (t, pairs) in &batches {
            let (addrs, counts): (Vec<u64>, Vec<u32>) = pairs.iter().rev().copied().unzip();
            counted.accesses_counted(*t, &addrs, &counts).unwrap();
            let each: Vec<u64> = pairs
                .iter()
                .flat_map(|&(a, n)| std::iter::repeat_n(a, n as usize))
                .collect();
            single.accesses(*t, &each).unwrap();
        }
        prop_assert_eq!(counted.matrix(Metric::Accesses), single.matrix(Metric::Accesses));
        prop_assert_eq!(counted.matrix(Metric::Amount), single.matrix(Metric::Amount));
        prop_assert_eq!(counted.events(), single.events());
        let mut a: Vec<_> = counted.table().pages().collect();
        let mut b: Vec<_> = single.table().pages().collect();
        a.sort();
        b.sort();
        prop_assert_eq!(a, b);
    }
}

#[test]
fn a_count_weighs_its_address_that_many_times() {
    let mut m = SharingModel::new(TableConfig::all_sharers(1, 2), 2, &[]).unwrap();
    m.accesses_counted(0, &[0, 4096], &[3, 1]).unwrap();
    m.accesses_counted(1, &[8], &[5]).unwrap();
    // Thread 1's 5 accesses each share line 0 with thread 0; its 64 bytes joined once.
    assert_eq!(m.matrix(Metric::Accesses).get(0, 1), 5);
    assert_eq!(m.matrix(Metric::Amount).get(0, 1), 64);
    assert_eq!(
        m.matrix(Metric::Accesses).get(0, 0),
        4,
        "3 + 1 private accesses"
    );
    assert_eq!(m.events(), 9);
    assert_eq!(m.table().nv(0), Some(vec![8]));
    // A longer slice is cut to the shorter one.
    m.accesses_counted(0, &[4096, 8192], &[2]).unwrap();
    assert_eq!(m.events(), 11);
}

/// A batch's pages, each all of its 64 lines with a count each, given as `tdmap trace`'s
/// counted blocks give them: [`Pages::full`] says so, and `each` gives the lines.
struct FullPages<'a> {
    pages: &'a [(u64, Vec<u32>)],
    at: usize,
    taken: bool,
}

impl crate::Pages for FullPages<'_> {
    fn next_page(&mut self, shift: u32) -> Option<u64> {
        self.at += self.taken as usize;
        self.taken = true;
        assert_eq!(shift, 12);
        self.pages.get(self.at).map(|p| p.0)
    }

    fn each(&mut self, _shift: u32, mut f: impl FnMut(u64, u64)) {
        let (page, counts) = &self.pages[self.at];
        for (k, &c) in counts.iter().enumerate() {
            f((page << 12) + 64 * k as u64, c as u64);
        }
    }

    fn full(&mut self) -> Option<u64> {
        Some(self.pages[self.at].1.iter().map(|&c| c as u64).sum())
    }
}

proptest! {
    /// Whole pages taken at once (`Pages::full`) give what their lines one by one give,
    /// whether the page's lines share with the same threads or not: each batch, a thread
    /// streams over some pages and touches single lines of others.
    #[test]
    fn whole_pages_at_once_equal_their_lines_one_by_one(
        batches in prop::collection::vec(
            (0u32..4, prop::collection::vec(0u64..4, 1..4), prop::collection::vec((0u64..4, 0u64..64), 0..4), any::<bool>()),
            1..16,
        ),
    ) {
        let cfg = TableConfig::all_sharers(2, 4);
        let nodes = [0, 1, 1, 0];
        let mut whole = SharingModel::new(cfg, 4, &nodes).unwrap();
        let mut lines = SharingModel::new(cfg, 4, &nodes).unwrap();
        for (t, full, single, by_one) in &batches {
            let pages: Vec<(u64, Vec<u32>)> = full
                .iter()
                .map(|&p| (p, (0..64).map(|k| 1 + (k + p as u32 + t) % 5).collect()))
                .collect();
            whole.accesses_paged(*t, &mut FullPages { pages: &pages, at: 0, taken: false }).unwrap();
            let (mut addrs, mut counts) = (Vec::new(), Vec::new());
            for (p, c) in &pages {
                for (k, &n) in c.iter().enumerate() {
                    addrs.push((p << 12) + 64 * k as u64);
                    counts.push(n);
                }
            }
            lines.accesses_counted(*t, &addrs, &counts).unwrap();
            // Single lines, so that a page's lines come to share with different threads:
            // batched, or as page-fault samples (the table's own update,
            // `AffinityTable::touch`), both of which must leave the whole-page words true.
            let one: Vec<u64> = single.iter().map(|&(p, k)| (p << 12) + 64 * k).collect();
            for m in [&mut whole, &mut lines] {
                if *by_one {
                    one.iter().try_for_each(|&a| m.fault(*t, a, *t % 2)).unwrap();
                } else {
                    m.accesses(*t, &one).unwrap();
                }
            }
        }
        prop_assert_eq!(whole.matrix(Metric::Accesses), lines.matrix(Metric::Accesses));
        prop_assert_eq!(whole.matrix(Metric::Amount), lines.matrix(Metric::Amount));
        prop_assert_eq!(whole.events(), lines.events());
        let mut a: Vec<_> = whole.table().pages().collect();
        let mut b: Vec<_> = lines.table().pages().collect();
        a.sort();
        b.sort();
        prop_assert_eq!(a, b);
    }
}
