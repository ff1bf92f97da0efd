//! The stride predictor that splits a thread's accesses into runs and literals (issue 17
//! item 2): the one rule that the runtime (which predicts in the program's thread and
//! sends only what it could not predict) and every reader of what it sent (which replays
//! the same predictor to get the accesses back) share.
//!
//! The rule: access i is *predicted* when its address is `a[i-k] + (a[i-k] - a[i-2k])`
//! and its meta (`size_log2 << 1 | write`) that of access i-k, for the current distance
//! k (1 to [`K_MAX`], a loop body's accesses). After an access that was not predicted,
//! k becomes the smallest distance that would have predicted it, if any. Before the
//! first access every remembered address and meta is 0 and k is 1.
//!
//! A sender calls [`Predictor::observe`] on every access and sends a *run* (a count) for
//! each stretch of predicted accesses and a *literal* for each other access; it may also
//! send a predicted access as a literal (a first touch, which carries more than the
//! access). A reader calls [`Predictor::observe`] on each literal and
//! [`Predictor::replay`] for each run; both then hold the same state as the sender.
//! Why it pays: on the traces of `make bench-trace` this leaves a median of 0.002
//! symbols per access (`crates/trace/examples/predict.rs`; docs/bench-trace.md "Next").

/// The longest distance, in accesses, that the predictor looks back over.
pub const K_MAX: usize = 32;
/// Accesses remembered: two bodies of the longest distance.
pub const RING: usize = 2 * K_MAX;

/// One thread's predictor state. All zeros is the state before the first access, so a
/// runtime may keep it in zeroed memory.
#[derive(Debug, Clone, PartialEq, Eq)]
#[repr(C)]
pub struct Predictor {
    /// The last [`RING`] addresses, access i at `i % RING`.
    addrs: [u64; RING],
    /// Their metas.
    metas: [u8; RING],
    /// Accesses seen, modulo [`RING`].
    at: u32,
    /// The current distance minus 1 (so that zeros mean k = 1).
    km1: u32,
}

impl Default for Predictor {
    fn default() -> Self {
        Self::new()
    }
}

impl Predictor {
    /// The state before the first access.
    pub const fn new() -> Predictor {
        Predictor {
            addrs: [0; RING],
            metas: [0; RING],
            at: 0,
            km1: 0,
        }
    }

    /// The whole state, for a trace frame that starts from it (trace format 6): the
    /// last [`RING`] addresses and metas, accesses seen modulo [`RING`], distance - 1.
    pub fn state(&self) -> (&[u64; RING], &[u8; RING], u32, u32) {
        (&self.addrs, &self.metas, self.at, self.km1)
    }

    /// The predictor in the state [`Predictor::state`] gave; None when `at` or `km1` is
    /// out of range (a damaged file).
    pub fn from_state(
        addrs: [u64; RING],
        metas: [u8; RING],
        at: u32,
        km1: u32,
    ) -> Option<Predictor> {
        let ok = (at as usize) < RING && (km1 as usize) < K_MAX;
        ok.then_some(Predictor {
            addrs,
            metas,
            at,
            km1,
        })
    }

    /// Puts the predictor back in its state before the first access. With stores that a
    /// compiler keeps as stores: a `memset` call (what clearing a whole struct becomes)
    /// would reach the interceptor of a runtime linked into a traced program, which
    /// records it as the program's accesses.
    pub fn reset(&mut self) {
        for a in &mut self.addrs {
            *a = std::hint::black_box(0);
        }
        for m in &mut self.metas {
            *m = std::hint::black_box(0);
        }
        self.at = 0;
        self.km1 = 0;
    }

    /// The current distance k.
    #[inline(always)]
    pub fn distance(&self) -> usize {
        self.km1 as usize + 1
    }

    /// The access that distance `k` (1 to [`K_MAX`]) predicts next: (address, meta).
    #[inline(always)]
    fn guess_at(&self, k: usize) -> (u64, u8) {
        let (a, m, _) = self.guess_step_at(k);
        (a, m)
    }

    /// [`Predictor::guess_at`] and the address it steps from, access i-k.
    #[inline(always)]
    fn guess_step_at(&self, k: usize) -> (u64, u8, u64) {
        self.step_from(self.at as usize, k)
    }

    /// [`Predictor::guess_step_at`] after `at` accesses (modulo [`RING`]).
    #[inline(always)]
    fn step_from(&self, at: usize, k: usize) -> (u64, u8, u64) {
        let i1 = at.wrapping_sub(k) % RING;
        let i2 = at.wrapping_sub(2 * k) % RING;
        let a1 = self.addrs[i1];
        (
            a1.wrapping_add(a1.wrapping_sub(self.addrs[i2])),
            self.metas[i1],
            a1,
        )
    }

    /// [`Predictor::guess`] and the address it steps from, access i-k (k the current
    /// distance), in one look: (address, meta, that address). A predicted access on that
    /// access's page tells a sender the page is touched.
    #[inline(always)]
    pub fn guess_step(&self) -> (u64, u8, u64) {
        self.guess_step_at(self.distance())
    }

    /// [`Predictor::guess_step`] for a sender that counts its accesses itself, `at`
    /// modulo [`RING`], and takes foreseen ones by [`Predictor::foreseen_at`]: so that
    /// its hot path stores no count (the runtime's chunk position gives it).
    #[inline(always)]
    pub fn guess_step_from(&self, at: usize) -> (u64, u8, u64) {
        self.step_from(at, self.distance())
    }

    /// Takes access `at` (modulo [`RING`]) that [`Predictor::guess_step_from`]`(at)`
    /// gave, as the caller checked: what [`Predictor::observe`] does on a hit, without the
    /// miss path, for a runtime whose fast path must make no call. The predictor's own
    /// count stays behind until [`Predictor::seek`], which must come before any other
    /// call.
    #[inline(always)]
    pub fn foreseen_at(&mut self, at: usize, addr: u64, meta: u8) {
        debug_assert_eq!(self.step_from(at, self.distance()).0, addr);
        let at = at % RING;
        self.addrs[at] = addr;
        self.metas[at] = meta;
    }

    /// Sets the count of accesses seen to `at` (modulo [`RING`]): for a sender that
    /// took accesses by [`Predictor::foreseen_at`], before any other call.
    #[inline(always)]
    pub fn seek(&mut self, at: usize) {
        self.at = (at % RING) as u32;
    }

    /// The access predicted next: (address, meta).
    #[inline(always)]
    pub fn guess(&self) -> (u64, u8) {
        self.guess_at(self.distance())
    }

    #[inline(always)]
    fn remember(&mut self, addr: u64, meta: u8) {
        let at = self.at as usize % RING;
        self.addrs[at] = addr;
        self.metas[at] = meta;
        self.at = ((at + 1) % RING) as u32;
    }

    /// Takes the next access; true when it was predicted. Every sender and reader calls
    /// this (or [`Predictor::replay`]) once per access, in order.
    #[inline(always)]
    pub fn observe(&mut self, addr: u64, meta: u8) -> bool {
        let hit = self.guess() == (addr, meta);
        if !hit {
            self.retarget(addr, meta);
        }
        self.remember(addr, meta);
        hit
    }

    /// After a miss: the smallest distance that would have predicted the access, if any.
    #[cold]
    #[inline(never)]
    fn retarget(&mut self, addr: u64, meta: u8) {
        if let Some(k) = (1..=K_MAX).find(|&k| self.guess_at(k) == (addr, meta)) {
            self.km1 = (k - 1) as u32;
        }
    }

    /// Replays a run of `n` predicted accesses, giving each (address, meta) to `out`.
    #[inline]
    pub fn replay(&mut self, n: u64, mut out: impl FnMut(u64, u8)) {
        for _ in 0..n {
            let (a, m) = self.guess();
            self.remember(a, m);
            out(a, m);
        }
    }
}

/// One symbol of a thread's predicted stream, for senders and readers that want them as
/// values (the runtime writes its own words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Symbol {
    /// This many predicted accesses in a row (at least 1).
    Run(u64),
    /// An access sent whole: address and meta.
    Literal(u64, u8),
}

/// Splits accesses into [`Symbol`]s: a run is held until an access ends it or
/// [`Encoder::finish`] is called.
#[derive(Debug, Clone, Default)]
pub struct Encoder {
    predictor: Predictor,
    run: u64,
}

impl Encoder {
    /// The predictor's state: what a frame of symbols that starts here starts from.
    pub fn predictor(&self) -> &Predictor {
        &self.predictor
    }

    /// Takes the next access; `literal` sends it whole even when predicted. Gives `out`
    /// the symbols it completes: the run it ends, then the literal.
    #[inline]
    pub fn push(&mut self, addr: u64, meta: u8, literal: bool, mut out: impl FnMut(Symbol)) {
        let hit = self.predictor.observe(addr, meta);
        if hit && !literal {
            self.run += 1;
            return;
        }
        if self.run > 0 {
            out(Symbol::Run(std::mem::take(&mut self.run)));
        }
        out(Symbol::Literal(addr, meta));
    }

    /// Gives `out` the run still held, if any (the predictor keeps its state).
    pub fn finish(&mut self, mut out: impl FnMut(Symbol)) {
        if self.run > 0 {
            out(Symbol::Run(std::mem::take(&mut self.run)));
        }
    }
}

/// Gets accesses back from [`Symbol`]s.
#[derive(Debug, Clone, Default)]
pub struct Expander {
    predictor: Predictor,
}

impl Expander {
    /// Gives `out` the accesses `sym` stands for, in order: (address, meta).
    #[inline]
    pub fn push(&mut self, sym: Symbol, mut out: impl FnMut(u64, u8)) {
        match sym {
            Symbol::Run(n) => self.predictor.replay(n, out),
            Symbol::Literal(a, m) => {
                self.predictor.observe(a, m);
                out(a, m);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn encode(accesses: &[(u64, u8, bool)]) -> Vec<Symbol> {
        let mut e = Encoder::default();
        let mut syms = Vec::new();
        for &(a, m, lit) in accesses {
            e.push(a, m, lit, |s| syms.push(s));
        }
        e.finish(|s| syms.push(s));
        syms
    }

    fn expand(syms: &[Symbol]) -> Vec<(u64, u8)> {
        let mut x = Expander::default();
        let mut out = Vec::new();
        for &s in syms {
            x.push(s, |a, m| out.push((a, m)));
        }
        out
    }

    /// A loop body over `arrays` interleaved arrays (stride 8, the last written), `iters`
    /// times; the arrays lie at irregular distances, so that no array's address steps
    /// from the one before it.
    fn stencil(arrays: u64, iters: u64) -> Vec<(u64, u8, bool)> {
        let mut v = Vec::new();
        for i in 0..iters {
            for j in 0..arrays {
                let write = j + 1 == arrays;
                v.push((
                    (((j + 1) * (j + 3)) << 30) | (i * 8),
                    3 << 1 | write as u8,
                    false,
                ));
            }
        }
        v
    }

    #[test]
    fn an_interleaved_strided_loop_costs_a_few_symbols() {
        for arrays in [1, 3, 7, 16, 32] {
            let acc = stencil(arrays, 10_000);
            let syms = encode(&acc);
            assert!(
                syms.len() as u64 <= 3 * arrays + 2,
                "{arrays} arrays: {} symbols",
                syms.len()
            );
            let want: Vec<_> = acc.iter().map(|&(a, m, _)| (a, m)).collect();
            assert_eq!(expand(&syms), want);
        }
    }

    #[test]
    fn a_body_longer_than_the_distance_is_never_predicted() {
        let acc = stencil(K_MAX as u64 + 1, 200);
        let syms = encode(&acc);
        let runs = syms.iter().filter(|s| matches!(s, Symbol::Run(_))).count();
        assert_eq!(runs, 0, "33 interleaved arrays are beyond distance 32");
        assert_eq!(syms.len(), acc.len());
    }

    /// A sender that counts its accesses itself (`guess_step_from`, `foreseen_at`, then
    /// `seek` before `observe`) ends in the state `observe` alone gives.
    #[test]
    fn a_sender_that_counts_its_accesses_keeps_the_same_state() {
        let mut acc = stencil(3, 500);
        acc.extend(stencil(5, 300));
        let (mut alone, mut counting) = (Predictor::new(), Predictor::new());
        for (i, &(a, m, _)) in acc.iter().enumerate() {
            alone.observe(a, m);
            let (guess, guess_meta, _) = counting.guess_step_from(i);
            if (guess, guess_meta) == (a, m) {
                counting.foreseen_at(i, a, m);
            } else {
                counting.seek(i);
                counting.observe(a, m);
            }
        }
        counting.seek(acc.len());
        assert_eq!(counting, alone);
    }

    #[test]
    fn a_forced_literal_keeps_both_sides_in_step() {
        let mut acc = stencil(3, 1000);
        for i in (0..acc.len()).step_by(97) {
            acc[i].2 = true;
        }
        let syms = encode(&acc);
        let lits = syms
            .iter()
            .filter(|s| matches!(s, Symbol::Literal(..)))
            .count();
        assert!(lits >= acc.len() / 97, "every forced access is a literal");
        let want: Vec<_> = acc.iter().map(|&(a, m, _)| (a, m)).collect();
        assert_eq!(expand(&syms), want);
    }

    #[test]
    fn zeroed_memory_is_the_initial_state() {
        assert_eq!(Predictor::default().distance(), 1);
        assert_eq!(Predictor::default().guess(), (0, 0));
    }

    #[test]
    fn reset_gives_the_initial_state() {
        let mut p = Predictor::new();
        for (a, m, _) in stencil(5, 100) {
            p.observe(a, m);
        }
        assert_ne!(p, Predictor::new());
        p.reset();
        assert_eq!(p, Predictor::new());
    }

    proptest! {
        #[test]
        fn expanding_gives_back_every_access(
            acc in prop::collection::vec(
                (prop_oneof![0u64..64, any::<u64>(), Just(u64::MAX)], 0u8..10, any::<bool>()),
                0..400,
            ),
            period in 1usize..40,
            reps in 0usize..20,
        ) {
            // Random accesses, then a repeated body with strides, so both paths run.
            let mut all = acc.clone();
            for r in 0..reps {
                for (j, &(a, m, _)) in acc.iter().take(period).enumerate() {
                    all.push((a.wrapping_add((r as u64) * (j as u64)), m, false));
                }
            }
            let syms = encode(&all);
            for s in &syms {
                prop_assert_ne!(*s, Symbol::Run(0));
            }
            let want: Vec<_> = all.iter().map(|&(a, m, _)| (a, m)).collect();
            prop_assert_eq!(expand(&syms), want);
        }
    }
}
