//! The OpenMP runtimes' own spin-waiting, capped under `tdmap trace` (issue 17 item 6).
//!
//! After each parallel region, libomp's workers spin for `KMP_BLOCKTIME` (200 ms by
//! default) and libgomp's for `GOMP_SPINCOUNT` iterations before they sleep. Traced, every
//! spin is recorded, and with more threads than cores the spinners also steal the CPU
//! from the threads doing the work: a clang+libomp build with 8 threads on 2 cores ran
//! 2-18x slower than the gcc build before any tracing (measured on a 2-core machine).
//! So the traced program gets both set to 0 (sleep at once), unless the user chose a
//! wait policy.

use std::ffi::OsString;

/// The variables that set a wait policy: any of them in tdmap's environment means the
/// user chose one, and the program gets theirs untouched.
const POLICY: [&str; 3] = ["KMP_BLOCKTIME", "GOMP_SPINCOUNT", "OMP_WAIT_POLICY"];

/// The environment entries that cap the OpenMP runtimes' spin-waiting, given tdmap's own
/// environment (`var`): none when the user set a wait policy, else `KMP_BLOCKTIME=0` and
/// `GOMP_SPINCOUNT=0`.
pub(super) fn spin_caps(var: impl Fn(&str) -> Option<OsString>) -> Vec<(OsString, OsString)> {
    if POLICY.iter().any(|v| var(v).is_some()) {
        return Vec::new();
    }
    ["KMP_BLOCKTIME", "GOMP_SPINCOUNT"]
        .iter()
        .map(|v| (OsString::from(v), OsString::from("0")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_both_runtimes_unless_the_user_chose_a_wait_policy() {
        let none = spin_caps(|_| None);
        assert_eq!(
            none,
            [
                ("KMP_BLOCKTIME".into(), "0".into()),
                ("GOMP_SPINCOUNT".into(), "0".into())
            ]
        );
        for set in POLICY {
            let caps = spin_caps(|v| (v == set).then(|| "200".into()));
            assert!(caps.is_empty(), "{set}");
        }
    }
}
