//! A batch's accesses page by page ([`Pages`]), the shape the model's batched path takes
//! them in (`SharingModel::accesses_paged`): from slices of addresses, or straight from
//! a source's own encoding (`tdmap trace --model-only` reads the runtime's counted
//! chunks, whose blocks are pages, with no copy into slices).

/// One thread's batch of accesses, page after page. A page may come more than once.
pub trait Pages {
    /// The number (address >> `shift`) of the next page with accesses, None at the end.
    fn next_page(&mut self, shift: u32) -> Option<u64>;

    /// Gives `f` (address, accesses) for each access of the page that
    /// [`Pages::next_page`] just gave: every address on that page.
    fn each(&mut self, shift: u32, f: impl FnMut(u64, u64));

    /// When the page [`Pages::next_page`] just gave had one run of accesses on each of
    /// its 64-byte lines (every line of a 4 KiB page: a loop streaming through memory),
    /// their accesses in all, which the caller may take instead of calling
    /// [`Pages::each`] (the next `next_page` then moves on); else None.
    fn full(&mut self) -> Option<u64> {
        None
    }
}

/// `weight(i)` accesses at `addrs[i]`, in order: a run of addresses on one page is a page.
pub(crate) struct Slices<'a, W> {
    addrs: &'a [u64],
    weight: W,
    at: usize,
}

impl<'a, W: Fn(usize) -> u64> Slices<'a, W> {
    /// The accesses of `addrs`, each weighing `weight(i)`.
    pub(crate) fn new(addrs: &'a [u64], weight: W) -> Self {
        Slices {
            addrs,
            weight,
            at: 0,
        }
    }
}

impl<W: Fn(usize) -> u64> Pages for Slices<'_, W> {
    #[inline(always)]
    fn next_page(&mut self, shift: u32) -> Option<u64> {
        self.addrs.get(self.at).map(|a| a >> shift)
    }

    #[inline(always)]
    fn each(&mut self, shift: u32, mut f: impl FnMut(u64, u64)) {
        let Some(page) = self.next_page(shift) else {
            return;
        };
        while let Some(&a) = self.addrs.get(self.at).filter(|&&a| a >> shift == page) {
            f(a, (self.weight)(self.at));
            self.at += 1;
        }
    }
}
