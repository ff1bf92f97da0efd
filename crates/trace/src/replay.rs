//! Reading the accesses frames of format version 6 (layout: `symbols.rs`): the frame's
//! runs replayed through the stride predictor (`tdmap_wire::predict`, one per frame,
//! from the initial state or the one the frame stores, back to the initial state at
//! each reset), its literals taken whole, its
//! time blocks stepped with the conversion's own arithmetic (`tdmap_wire::times`).
//! Every count is checked against the frame head, so a damaged frame is refused, never
//! misread and never a panic.

use crate::chunk::AccessChunk;
use crate::columns::{get_varint, unzigzag};
use crate::symbols::{CONTINUES, ESCAPE, FROM_STATE};
use tdmap_wire::predict::{Predictor, RING};
use tdmap_wire::times::BlockTime;

/// The size an unescaped meta stands for (its low bit is the write flag); None for a
/// meta no writer makes.
#[inline(always)]
fn unmeta(meta: u8) -> Option<u8> {
    match meta >> 1 {
        k @ 0..=7 => Some(1 << k),
        _ => None,
    }
}

/// The state a frame with [`FROM_STATE`] starts from.
fn get_state(raw: &[u8], at: &mut usize) -> Option<Predictor> {
    let ring_at = u32::try_from(get_varint(raw, at)?).ok()?;
    let km1 = u32::try_from(get_varint(raw, at)?).ok()?;
    let mut addrs = [0u64; RING];
    let mut prev = 0u64;
    for a in addrs.iter_mut() {
        prev = prev.wrapping_add(unzigzag(get_varint(raw, at)?));
        *a = prev;
    }
    let metas: [u8; RING] = raw.get(*at..*at + RING)?.try_into().ok()?;
    *at += RING;
    Predictor::from_state(addrs, metas, ring_at, km1)
}

/// Decodes the symbols of `n` accesses into `c.addrs` and, unless `addrs_only`, its
/// sizes and writes; None if malformed or not `n` accesses ending with `raw`. `state`
/// holds the thread's predictor where its previous accesses frame ended, and then
/// where this one ends.
fn get_symbols(
    c: &mut AccessChunk,
    raw: &[u8],
    (n, flags): (usize, u8),
    state: &mut Predictor,
    addrs_only: bool,
) -> Option<()> {
    let mut at = 0;
    let mut p = if flags & FROM_STATE != 0 {
        get_state(raw, &mut at)?
    } else if flags & CONTINUES != 0 {
        state.clone()
    } else {
        Predictor::new()
    };
    let mut last = 0u64;
    // `c.sizes` holds each access's meta until the end; escaped literals' sizes wait
    // aside with their index.
    let (metas, addrs) = (&mut c.sizes, &mut c.addrs);
    let mut escaped: Vec<(usize, u8)> = Vec::new();
    while at < raw.len() {
        let tag = get_varint(raw, &mut at)?;
        if tag == 0 {
            // A reset (`symbols.rs`): the sender's predictor restarted here.
            p.reset();
            continue;
        }
        if tag & 1 == 0 {
            let k = tag >> 1;
            if k > (n - addrs.len()) as u64 {
                return None;
            }
            if addrs_only {
                p.replay(k, |a, _| addrs.push(a));
            } else {
                p.replay(k, |a, m| {
                    addrs.push(a);
                    metas.push(m);
                });
            }
            continue;
        }
        let meta = u8::try_from(tag >> 1).ok()?;
        if addrs.len() == n {
            return None;
        }
        if meta & ESCAPE != 0 {
            if meta & !1 != ESCAPE {
                return None;
            }
            escaped.push((addrs.len(), *raw.get(at)?));
            at += 1;
        }
        last = last.wrapping_add(unzigzag(get_varint(raw, &mut at)?));
        p.observe(last, meta);
        addrs.push(last);
        if !addrs_only {
            metas.push(meta);
        }
    }
    if addrs.len() != n {
        return None;
    }
    *state = p;
    if addrs_only {
        return Some(());
    }
    c.writes.reserve(n);
    let mut esc = escaped.into_iter().peekable();
    for (i, m) in metas.iter_mut().enumerate() {
        c.writes.push(*m & 1 == 1);
        *m = if *m & ESCAPE != 0 {
            // Only a literal carries an escaped size: a run that replays one is damage.
            match esc.next() {
                Some((j, size)) if j == i => size,
                _ => return None,
            }
        } else {
            unmeta(*m)?
        };
    }
    Some(())
}

/// Decodes `n` accesses of a V6 frame into `c`, reusing its buffers: `syms` must hold
/// exactly the symbol stream and `times`, unless skipped, exactly the time blocks.
/// `state` is the thread's predictor as its previous accesses frame left it (for a
/// frame that continues it), and is left as this one ends. False when either stream
/// is malformed or does not stand for exactly `n` accesses.
pub fn decode(
    c: &mut AccessChunk,
    (thread, n, flags): (u32, usize, u8),
    state: &mut Predictor,
    syms: &[u8],
    times: Option<&[u8]>,
) -> bool {
    c.thread = thread;
    c.addrs.clear();
    c.times.clear();
    c.sizes.clear();
    c.writes.clear();
    c.addrs.reserve(n);
    if get_symbols(c, syms, (n, flags), state, times.is_none()).is_none() {
        c.addrs.clear();
        return false;
    }
    let Some(times) = times else { return true };
    get_times(&mut c.times, times, n).is_some()
}

/// Decodes time blocks into `dst` (cleared first); None if malformed or not `n` times
/// ending with `raw`.
fn get_times(dst: &mut Vec<u64>, raw: &[u8], n: usize) -> Option<()> {
    dst.clear();
    dst.reserve(n);
    let (mut at, mut last) = (0, 0u64);
    while at < raw.len() {
        let k = get_varint(raw, &mut at)?;
        if k == 0 || k > (n - dst.len()) as u64 {
            return None;
        }
        let t0 = last.wrapping_add(unzigzag(get_varint(raw, &mut at)?));
        let span = get_varint(raw, &mut at)?;
        let den = get_varint(raw, &mut at)?;
        let rem = get_varint(raw, &mut at)?;
        let mut time = BlockTime::new(t0, span, den, rem)?;
        last = time.after(k - 1)?;
        dst.extend((0..k).map(|_| time.step()));
    }
    (dst.len() == n).then_some(())
}
