//! Hand-made access sequences on the xeon-x7550-4s model: cores 0-7 sit on package 0
//! (node 0), cores 8-15 on package 1 (node 1). Line numbers are line addresses.

use super::*;
use crate::config::SimConfig;

fn xeon() -> MemSys {
    let t = tdmap_topo::preset("xeon-x7550-4s").unwrap();
    MemSys::new(&Machine::new(&t, &SimConfig::default()).unwrap(), 8)
}

const R: bool = false;
const W: bool = true;

#[test]
fn cold_miss_goes_to_local_memory_then_hits_in_l1() {
    let mut m = xeon();
    assert_eq!(m.access(0, 100, R, 0, 0), 200, "local memory latency");
    assert_eq!(m.outer.stats.mem_local, 1);
    assert_eq!(m.outer.stats.llc_misses, 1);
    assert_eq!(m.private_state(0, 100), Some(State::Exclusive));
    assert!(m.in_shared(0, 100));
    assert_eq!(m.access(0, 100, R, 0, 0), 4, "L1 hit");
    assert_eq!(m.outer.stats.l1_hits, 1);
    // A store to an Exclusive line needs no message.
    assert_eq!(m.access(0, 100, W, 0, 0), 4);
    assert_eq!(m.private_state(0, 100), Some(State::Modified));
    assert_eq!(
        (m.outer.stats.invalidations, m.outer.stats.upgrades),
        (0, 0)
    );
    assert_eq!(m.outer.stats.traffic_intra, 64);
    assert_eq!(m.outer.stats.traffic_inter, 0);
}

#[test]
fn remote_memory_follows_the_distance_matrix() {
    let mut m = xeon();
    // Core 0 (node 0) reads a line whose page lives on node 2: 200 x 20/10.
    assert_eq!(m.access(0, 7, R, 2, 0), 400);
    assert_eq!((m.outer.stats.mem_local, m.outer.stats.mem_remote), (0, 1));
    assert_eq!(m.outer.stats.traffic_inter, 64);
}

#[test]
fn a_second_reader_in_the_package_hits_the_shared_l3_and_demotes_the_first() {
    let mut m = xeon();
    m.access(0, 5, R, 0, 0);
    assert_eq!(m.access(1, 5, R, 0, 0), 40, "L3 hit");
    assert_eq!(m.outer.stats.llc_hits, 1);
    assert_eq!(m.private_state(0, 5), Some(State::Shared));
    assert_eq!(m.private_state(1, 5), Some(State::Shared));
    // Core 0 now writes: an upgrade that invalidates core 1's copy, on chip.
    let lat = m.access(0, 5, W, 0, 0);
    assert_eq!(lat, 4 + 40, "L1 hit plus the directory round trip");
    assert_eq!(
        (m.outer.stats.upgrades, m.outer.stats.invalidations),
        (1, 1)
    );
    assert_eq!(m.private_state(1, 5), None);
    assert_eq!(m.private_state(0, 5), Some(State::Modified));
}

#[test]
fn dirty_line_moves_cache_to_cache_within_and_between_packages() {
    let mut m = xeon();
    m.access(0, 9, W, 0, 0);
    assert_eq!(m.private_state(0, 9), Some(State::Modified));
    // Core 1, same package: the dirty owner supplies the line.
    assert_eq!(m.access(1, 9, R, 0, 0), 40);
    assert_eq!((m.outer.stats.c2c_intra, m.outer.stats.c2c_inter), (1, 0));
    assert_eq!(m.private_state(0, 9), Some(State::Shared));
    assert_eq!(m.outer.stats.writebacks, 1, "M -> S writes back");
    // Core 8 (package 1) writes: served by package 0 and invalidating cores 0, 1 and
    // package 0's L3 copy, all across the chip boundary.
    let inter_before = m.outer.stats.traffic_inter;
    let lat = m.access(8, 9, W, 0, 1);
    assert_eq!(m.outer.stats.c2c_inter, 1);
    assert_eq!(
        lat,
        (2 * 40 + 2 * 40) + 2 * 40,
        "transfer: both L3s and a link crossing each way; invalidation: a round trip"
    );
    assert_eq!(m.outer.stats.invalidations, 3);
    assert_eq!(m.private_state(0, 9), None);
    assert_eq!(m.private_state(1, 9), None);
    assert!(!m.in_shared(0, 9));
    assert!(m.in_shared(1, 9));
    assert_eq!(m.outer.stats.traffic_inter - inter_before, 64 + 3 * 8);
    // Core 16 (package 2) reads it: the Modified owner on package 1 forwards it.
    m.access(16, 9, R, 0, 2);
    assert_eq!(m.outer.stats.c2c_inter, 2);
    assert_eq!(m.private_state(8, 9), Some(State::Shared));
    assert_eq!(
        m.outer.stats.mem_local + m.outer.stats.mem_remote,
        1,
        "only core 0's first write-allocate read memory"
    );
}

#[test]
fn a_clean_copy_in_another_package_is_forwarded_not_read_from_memory() {
    let mut m = xeon();
    m.access(0, 3, R, 0, 0);
    m.access(8, 3, R, 0, 1);
    assert_eq!(m.outer.stats.c2c_inter, 1);
    assert_eq!(m.outer.stats.mem_local + m.outer.stats.mem_remote, 1);
    assert_eq!(
        m.private_state(0, 3),
        Some(State::Shared),
        "E demoted on a remote read"
    );
}

#[test]
fn l1_conflicts_fall_back_to_the_l2_and_dirty_evictions_write_back() {
    let mut m = xeon();
    // Nine lines in one L1 set (64 sets, 8 ways): the first leaves the L1 only.
    for k in 0..9 {
        m.access(0, k * 64, W, 0, 0);
    }
    assert_eq!(m.access(0, 0, R, 0, 0), 10, "L2 hit");
    assert_eq!(m.outer.stats.l2_hits, 1);
    // Seventeen lines in one L2 set (512 sets, 8 ways) push dirty lines out of the core.
    for k in 0..17 {
        m.access(0, 1 + k * 512, W, 0, 0);
    }
    assert!(
        m.outer.stats.writebacks >= 9,
        "writebacks: {}",
        m.outer.stats.writebacks
    );
    assert_eq!(m.private_state(0, 1), None);
    assert!(m.in_shared(0, 1), "written back to the package's L3");
}

#[test]
fn directory_stays_bounded_by_cache_capacity() {
    let mut m = xeon();
    for line in 0..400_000u64 {
        m.access((line % 4) as usize, line, line % 3 == 0, 0, 0);
    }
    // One package: 4 x (256 KiB) private + 18 MiB L3 = 1 + 288 Ki lines at most.
    let cap = (4 * 4096 + 294_912) as usize;
    assert!(m.dir_len() <= cap, "{} entries", m.dir_len());
}

#[test]
fn flushing_a_page_drops_every_copy() {
    let mut m = xeon();
    m.access(0, 64, R, 0, 0);
    m.access(8, 65, W, 0, 1);
    m.flush_lines(64, 64);
    assert_eq!(m.private_state(0, 64), None);
    assert_eq!(m.private_state(8, 65), None);
    assert!(!m.in_shared(0, 64) && !m.in_shared(1, 65));
    assert_eq!(m.dir_len(), 0);
}

#[test]
fn directory_and_caches_stay_consistent_under_random_traffic() {
    // Tiny caches so that every kind of eviction happens often: 2 packages x 2 cores,
    // 512 B L1, 1 KiB L2, 4 KiB L3 per package.
    let t = tdmap_topo::from_synthetic(
        "pack:2 [numa(memory=1GiB)] l3:1(size=4KiB) l2:2(size=1KiB) l1d:1(size=512) core:1 pu:1",
    )
    .unwrap();
    let m = Machine::new(&t, &SimConfig::default()).unwrap();
    assert_eq!(
        (m.cores(), m.private.len(), m.shared.is_some()),
        (4, 2, true)
    );
    let mut ms = MemSys::new(&m, 8);
    let mut rng = crate::rng::SplitMix64::new(42);
    for step in 0..20_000 {
        let core = rng.below(4);
        let line = rng.below(200) as u64;
        let home = (line % 2) as usize;
        ms.access(core, line, rng.unit() < 0.4, home, core / 2);
        if step % 97 == 0 {
            ms.check()
                .unwrap_or_else(|e| panic!("after step {step}: {e}"));
        }
    }
    ms.check().unwrap();
    let s = *ms.stats();
    assert!(s.c2c_intra > 0 && s.c2c_inter > 0 && s.invalidations > 0 && s.writebacks > 0);
}

#[test]
fn without_a_shared_cache_the_private_l2_is_the_last_level() {
    let t = tdmap_topo::preset("opteron-8n").unwrap();
    let mut m = MemSys::new(&Machine::new(&t, &SimConfig::default()).unwrap(), 8);
    m.access(0, 1, R, 0, 0);
    m.access(0, 1, R, 0, 0);
    // Core 2 sits on the next node: the copy in core 0 is forwarded between packages.
    m.access(2, 1, R, 0, 1);
    assert_eq!((m.outer.stats.llc_misses, m.outer.stats.llc_hits), (2, 0));
    assert_eq!((m.outer.stats.mem_local, m.outer.stats.c2c_inter), (1, 1));
}
