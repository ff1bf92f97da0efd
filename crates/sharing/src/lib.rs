//! The sharing model: kMAF's affinity table, the thread sharing matrix with aging,
//! and the sharing and exclusivity metrics. Pure: no I/O.
