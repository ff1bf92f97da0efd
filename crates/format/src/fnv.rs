//! The one stable hash of tdmap's files and tools (a machine's fingerprint in a mapping,
//! a trace's digest): unlike std's hasher, it gives the same value in every build.

/// FNV-1a, 64 bits, over little-endian 64-bit words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv::new()
    }
}

impl Fnv {
    /// The hash of nothing (FNV-1a's offset basis).
    pub fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    /// Adds a word, byte by byte in little-endian order.
    pub fn add(&mut self, v: u64) {
        for b in v.to_le_bytes() {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// The hash so far.
    pub fn value(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::Fnv;

    /// FNV-1a's published value for the 8 bytes 0..8 would do, but the point is
    /// stability: a change to the hash would change every fingerprint in saved mappings.
    #[test]
    fn the_hash_is_fnv1a_and_stable() {
        let mut h = Fnv::new();
        assert_eq!(h.value(), 0xcbf2_9ce4_8422_2325);
        h.add(0);
        // FNV-1a of eight zero bytes.
        let mut want: u64 = 0xcbf2_9ce4_8422_2325;
        for _ in 0..8 {
            want = want.wrapping_mul(0x0100_0000_01b3);
        }
        assert_eq!(h.value(), want);
        h.add(0x0102_0304_0506_0708);
        assert_ne!(h.value(), want);
    }
}
