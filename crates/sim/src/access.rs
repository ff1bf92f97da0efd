//! The simulator's input: plain memory accesses, one per load or store, in trace order.
//!
//! The trace crate's record format is adapted to this type outside the simulator, so the
//! model does not depend on how traces are stored.

/// One memory access of one thread, as the simulator replays it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SimAccess {
    /// The thread that makes it: an index below the simulator's thread count.
    pub thread: u32,
    /// The (virtual) byte address.
    pub addr: u64,
    /// Access size in bytes; an access that crosses a line boundary touches two lines.
    pub size: u8,
    /// Whether it is a store.
    pub write: bool,
}

impl SimAccess {
    /// A load of `size` bytes.
    pub fn read(thread: u32, addr: u64, size: u8) -> Self {
        SimAccess {
            thread,
            addr,
            size,
            write: false,
        }
    }

    /// A store of `size` bytes.
    pub fn write(thread: u32, addr: u64, size: u8) -> Self {
        SimAccess {
            thread,
            addr,
            size,
            write: true,
        }
    }
}
