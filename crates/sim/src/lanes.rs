//! The private levels of a lockstep group (`lockstep`): one copy of the tags and LRU
//! order for all its replays, and each replay's MESI state beside them.
//!
//! In a static replay whose threads each have a core to themselves, what a core's
//! private levels hold, and in which order, follows from its thread's accesses and the
//! other threads' writes alone: every private miss fills, evictions follow the bank's own
//! LRU, a write drops every other private copy whatever the placement, and the shared
//! level is not inclusive. Only the states differ between placements (a fill is Shared
//! rather than Exclusive when another domain's shared cache holds the line), so a slot
//! holds a 2-bit state per replay (a lane), 0 for a line the lane has dropped while
//! others still hold it, within one access.
//!
//! The coherence rules (`outer`) run once per lane and see their lane through
//! [`LaneView`]: a state change is the lane's bits; a drop clears them, and the last
//! lane's drop removes the tag; the first lane's fill inserts the tag (all lanes fill
//! the same line, as all missed it) and each lane takes its own state of the victim.

use crate::cache::{State, Word};
use crate::private::{Levels, Private};

/// Replays a group can hold: 2 bits each in a 64-bit word.
pub(crate) const MAX_LANES: usize = 32;

/// A slot of a lockstep group's private cache: a line's tag and every lane's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lanes {
    /// The line number plus one (0 when empty).
    tag: u64,
    /// Lane `l`'s state in bits `2l..2l + 2` (`State as u64`; 0: not held).
    pub(crate) states: u64,
}

impl Word for Lanes {
    const EMPTY: Lanes = Lanes { tag: 0, states: 0 };
    #[inline(always)]
    fn tag(self) -> u64 {
        self.tag
    }
}

impl Lanes {
    /// Lane `lane`'s state, if it holds the line.
    #[inline(always)]
    pub(crate) fn state(self, lane: usize) -> Option<State> {
        let bits = (self.states >> (2 * lane)) & 3;
        (bits != 0).then(|| State::from_bits(bits))
    }

    fn set(&mut self, lane: usize, st: Option<State>) {
        let shift = 2 * lane;
        let bits = st.map_or(0, |s| s as u64);
        self.states = (self.states & !(3 << shift)) | bits << shift;
    }
}

/// The states word of `lanes` lanes all in state `st`.
pub(crate) fn all(lanes: usize, st: State) -> u64 {
    (0..lanes).fold(0, |w, l| w | (st as u64) << (2 * l))
}

/// A lockstep group's private caches, a bank per thread.
#[derive(Debug, Clone)]
pub(crate) struct LaneCaches {
    pub(crate) levels: Levels<Lanes>,
    /// The victim of the fill under way (the first lane's fill made it), for the others.
    victim: Option<Lanes>,
}

impl LaneCaches {
    /// Empty caches of `banks` banks with the geometry of the machine's private levels.
    pub(crate) fn new(m: &crate::Machine, banks: usize) -> Self {
        LaneCaches {
            levels: Levels::new(m, banks),
            victim: None,
        }
    }

    /// Lane `lane`'s view, for the coherence rules.
    pub(crate) fn lane(&mut self, lane: usize) -> LaneView<'_> {
        LaneView { c: self, lane }
    }

    /// Lane `lane`'s private levels as a replay of its own has them, thread `t`'s bank
    /// on core `core_of_bank[t]`: the same lines in the same places, with the lane's
    /// states.
    pub(crate) fn levels(&self, lane: usize, m: &crate::Machine, core_of_bank: &[usize]) -> Levels {
        let mut out = Levels::new(m, m.cores());
        let word = |w: Lanes| {
            let st = w.state(lane).expect("a lane holds every line of its group");
            crate::cache::slot(w.tag - 1, st)
        };
        for (t, &core) in core_of_bank.iter().enumerate() {
            out.l1.copy_bank(core, &self.levels.l1, t, word);
            if !out.l2.is_empty() {
                out.l2.copy_bank(core, &self.levels.l2, t, word);
            }
        }
        out
    }

    /// Lane `lane` leaves: the lanes after it take the place before.
    pub(crate) fn remove_lane(&mut self, lane: usize) {
        let low = (1u64 << (2 * lane)) - 1;
        let drop = |w: Lanes| Lanes {
            tag: w.tag,
            states: (w.states & low) | (w.states >> 2 & !low),
        };
        self.levels.l1.map_words(drop);
        self.levels.l2.map_words(drop);
    }

    /// Applies `f` to a line's slot in every private level of a bank that holds it.
    fn each_level(&mut self, core: usize, line: u64, mut f: impl FnMut(&mut Lanes)) {
        if let Some(w) = self.levels.l1.word_mut(core, line) {
            f(w);
        }
        if !self.levels.l2.is_empty() {
            if let Some(w) = self.levels.l2.word_mut(core, line) {
                f(w);
            }
        }
    }
}

/// One lane of a [`LaneCaches`], as [`Private`] levels of its own.
pub(crate) struct LaneView<'a> {
    c: &'a mut LaneCaches,
    lane: usize,
}

impl Private for LaneView<'_> {
    fn state(&self, core: usize, line: u64) -> Option<State> {
        self.c
            .levels
            .outer()
            .peek_word(core, line)?
            .state(self.lane)
    }

    fn set_state(&mut self, core: usize, line: u64, st: State) {
        let lane = self.lane;
        self.c.each_level(core, line, |w| w.set(lane, Some(st)));
    }

    fn drop_line(&mut self, core: usize, line: u64) {
        let lane = self.lane;
        let mut gone = false;
        self.c.each_level(core, line, |w| {
            w.set(lane, None);
            gone = w.states == 0;
        });
        if gone {
            self.c.levels.remove_word(core, line);
        }
    }

    fn fill(&mut self, core: usize, line: u64, st: State) -> Option<(u64, State)> {
        if self.c.levels.outer().peek_word(core, line).is_none() {
            // All lanes fill the same line (all missed it): the first inserts its tag,
            // no lane holding it yet, and keeps the victim for the others.
            let w = Lanes {
                tag: line + 1,
                states: 0,
            };
            self.c.victim = self.c.levels.fill_word(core, line, w);
        }
        self.set_state(core, line, st);
        let v = self.c.victim?;
        Some((v.tag - 1, v.state(self.lane)?))
    }
}
