//! Version 7's predicted chunks ([`super::KIND_PREDICTED`]) read back: the one place
//! that turns a recording thread's runs and missed records into the words of a version-6
//! access chunk, so that every reader after it (`tdmap trace`'s conversion, the model)
//! sees the chunk as before. The runtime's side is `tdmap-rt`'s `state.rs`.

use super::{
    meta, pack, pack_repeat, unpack_count, unpack_cpu, unpack_repeat, unpack_run, ADDR_MASK,
    CHUNK_RECORDS, SIZE_SHIFT, WRITE_BIT,
};
use crate::predict::{Expander, Symbol};
use crate::WireError;

/// One word of a predicted chunk, as [`walk`] gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Word {
    /// A run word: this many foreseen accesses (at least 1).
    Run(u32),
    /// A record: an access the predictor missed, or a first touch, as packed.
    Record(u64),
    /// A CPU word, as packed.
    Cpu(u64),
    /// A repeat word: the access index of the read it names, and its extra reads.
    Repeat(u32, u32),
}

/// Where a word of a predicted chunk falls in the version-6 chunk it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    /// Its first position (version-6 word): accesses and side words before it.
    pub pos: usize,
    /// Its first access's index: accesses before it.
    pub access: usize,
}

/// The symbol a record stands for: its address and the predictor's meta.
#[inline]
pub fn literal(record: u64) -> Symbol {
    let m = meta(((record >> SIZE_SHIFT) & 7) as u32, record & WRITE_BIT != 0);
    Symbol::Literal(record & ADDR_MASK, m)
}

/// Gives `f` each word of a predicted chunk (`body`, its clock ticks left out) with
/// where it falls among the `words` positions of the version-6 chunk it stands for:
/// the one reading of version 7's words, which [`expand`] and `tdmap trace`'s
/// conversion (which takes the runs as they are) both build on. Damaged words (more
/// than `words` or [`CHUNK_RECORDS`] positions, an empty run, a count word, a repeat
/// naming no earlier access, fewer than `words` positions) are an error, never a panic;
/// `f` may have seen the words before the damage.
pub fn walk(body: &[u64], words: u64, mut f: impl FnMut(At, Word)) -> Result<(), WireError> {
    let limit = (words as usize).min(CHUNK_RECORDS);
    let (mut pos, mut access) = (0usize, 0usize);
    for &w in body {
        let at = At { pos, access };
        if let Some(n) = unpack_run(w) {
            if n == 0 || n as usize > limit - pos {
                return Err(bad("run word", n));
            }
            f(at, Word::Run(n));
            pos += n as usize;
            access += n as usize;
            continue;
        }
        if pos == limit {
            return Err(bad("predicted chunk's length", words));
        }
        if let Some((a, n)) = unpack_repeat(w) {
            if a as usize >= access {
                return Err(bad("repeat word's access index", a));
            }
            f(at, Word::Repeat(a, n));
        } else if unpack_cpu(w).is_some() {
            f(at, Word::Cpu(w));
        } else if let Some(n) = unpack_count(w) {
            return Err(bad("count word in a predicted chunk", n));
        } else {
            f(at, Word::Record(w));
            access += 1;
        }
        pos += 1;
    }
    if pos as u64 != words {
        return Err(bad("predicted chunk's length", words));
    }
    Ok(())
}

/// Expands the words of a predicted chunk (`body`, its clock ticks left out) into `out`:
/// the `words` words that an access chunk of version 6 holds for the same accesses.
/// Each run word becomes its accesses' records (none a first touch), a record the
/// predictor missed and a CPU word stay as they are, and a repeat word, which names its
/// read by access index, names it by word position again. The predictor starts afresh
/// in every chunk, as the runtime's does, so a chunk expands alone. Damaged words are
/// an error ([`walk`]), never a panic.
pub fn expand(body: &[u64], words: u64, out: &mut Vec<u64>) -> Result<(), WireError> {
    out.clear();
    let mut x = Expander::default();
    // Accesses before each side word (CPU or repeat), in order: a repeat's access index
    // plus the side words before that access is its word position.
    let mut before: Vec<u32> = Vec::new();
    walk(body, words, |at, word| match word {
        Word::Run(n) => x.push(Symbol::Run(n as u64), |a, m| {
            out.push(pack(a, (m >> 1) as u32, m & 1 != 0, false))
        }),
        Word::Record(w) => {
            x.push(literal(w), |_, _| {});
            out.push(w);
        }
        Word::Cpu(w) => {
            before.push(at.access as u32);
            out.push(w);
        }
        Word::Repeat(a, n) => {
            let pos = a as usize + before.partition_point(|&b| b <= a);
            before.push(at.access as u32);
            out.push(pack_repeat(pos as u32, n));
        }
    })
}

fn bad(field: &'static str, value: impl ToString) -> WireError {
    WireError::OutOfRange {
        field,
        value: value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{pack_cpu, pack_run};
    use super::*;
    use proptest::prelude::*;

    /// A strided loop over three arrays, with a first touch (and its CPU word) and a
    /// repeat word naming a read by access index: the run words stand for the rest.
    #[test]
    fn runs_literals_and_repeats_expand_to_the_access_chunks_words() {
        let rec = |i: u64, first| pack(0x10_0000 + 8 * i, 3, false, first);
        // Accesses 0-1 (literals: the predictor learns the stride), 2-9 predicted.
        let body = [
            rec(0, false),
            rec(1, false),
            pack_run(8),
            rec(10, true),
            pack_cpu(3),
            pack_run(2),
            pack_repeat(12, 40),
            pack_run(1),
        ];
        let mut out = Vec::new();
        expand(&body, 16, &mut out).unwrap();
        let mut want: Vec<u64> = (0..11).map(|i| rec(i, i == 10)).collect();
        want.push(pack_cpu(3));
        want.extend([rec(11, false), rec(12, false)]);
        // Access 12 sits at word 13, after the CPU word.
        want.push(pack_repeat(13, 40));
        want.push(rec(13, false));
        assert_eq!(out, want);
        assert!(expand(&body, 15, &mut out).is_err(), "one word too many");
        assert!(expand(&body, 17, &mut out).is_err(), "one word short");
    }

    #[test]
    fn damaged_words_are_errors() {
        let rec = pack(0x1000, 3, false, false);
        let cases: [&[u64]; 5] = [
            &[rec, pack_run(0)],
            &[rec, pack_run(CHUNK_RECORDS as u32)],
            &[rec, pack_repeat(1, 2)],
            &[pack_repeat(0, 2)],
            &[rec, super::super::pack_count(3)],
        ];
        let mut out = Vec::new();
        for body in cases {
            assert!(
                expand(body, CHUNK_RECORDS as u64, &mut out).is_err(),
                "{body:x?}"
            );
        }
    }

    proptest! {
        #[test]
        fn any_words_expand_or_err_without_panicking(
            body in prop::collection::vec(
                prop_oneof![
                    any::<u64>(),
                    (0u32..20).prop_map(pack_run),
                    (0u32..20, any::<u32>()).prop_map(|(a, n)| pack_repeat(a, n)),
                    (0u64..1 << 20).prop_map(|a| pack(a, 3, false, false)),
                ],
                0..200,
            ),
            words in prop_oneof![0u64..300, any::<u64>()],
        ) {
            let mut out = Vec::new();
            if expand(&body, words, &mut out).is_ok() {
                prop_assert_eq!(out.len() as u64, words);
                prop_assert!(out.len() <= CHUNK_RECORDS);
                prop_assert!(out.iter().all(|&w| unpack_run(w).is_none()));
            }
        }
    }
}
