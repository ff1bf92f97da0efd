//! A fast, deterministic hasher (folded multiply) for tables keyed by page, page-group or
//! line numbers: the affinity table here, and the simulator's page table, directory and
//! per-page policy tables. A multiplicative hash suffices for such keys, and iteration
//! order stays the same from run to run (determinism).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Fibonacci hashing of integer keys.
#[derive(Debug, Default, Clone, Copy)]
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }

    fn write_u64(&mut self, v: u64) {
        // Folded multiply: the high half of the product is folded into the low half,
        // because hashbrown picks buckets by the low bits, and keys that differ only in
        // high bits (the same offset in different buffers) must not collide.
        let x = (self.0 ^ v) as u128 * 0x9E37_79B9_7F4A_7C15u128;
        self.0 = (x as u64) ^ ((x >> 64) as u64);
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }

    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

/// A HashMap keyed by integers with [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;
