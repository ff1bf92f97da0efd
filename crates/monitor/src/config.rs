//! The options of the one kMAF loop. Every rule where `tdmap run` and the paper (or an
//! earlier simulator policy) differ is a named option here, with its reason; the default
//! is `tdmap run`'s behaviour and [`Config::kmaf_paper`] is the paper's.

use tdmap_map::Algorithm;
use tdmap_sharing::Sharers;

/// The decision period: kMAF maps threads every 100 ms (kMAF §3.4), and SAMMU checks
/// for thread migrations as often (SAMMU §2.7.1). `tdmap run`'s default and the period
/// `tdmap sim` replays its online policies at.
pub const PERIOD: std::time::Duration = std::time::Duration::from_millis(100);

/// Periods the first thread mapping waits for sharing to show before it places threads
/// that share nothing (`tdmap run`'s default for [`Config::first_mapping_wait`]).
pub const FIRST_MAPPING_WAIT: u64 = 3;

/// When kMAF Eq. 6 is tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eq6When {
    /// Once per period, over the pages touched in it: `tdmap run` moves pages with
    /// batched move_pages calls, whose fixed cost is high (it drains every CPU's LRU
    /// caches), so one batch per period is far cheaper than one call per fault.
    PerPeriod,
    /// At every fault, on the faulting page (kMAF §3.3: "on every page fault kMAF
    /// evaluates the NUMA vector of the page that caused the fault"). In `tdmap run` a
    /// drain of the rings is one batch of faults.
    PerFault,
}

/// What the loop decides and how.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// The thread-mapping algorithm. Greedy by default: fast and deterministic; kMAF
    /// used Scotch's dual recursive bipartitioning (§3.4.1).
    pub algorithm: Algorithm,
    /// A new mapping replaces the current one only if it lowers the cost by more than
    /// this fraction: SAMMU notes that needless thread migrations hurt CG-like programs,
    /// and a matrix that changes a little every period would otherwise permute equivalent
    /// threads for nothing. The paper has none (0).
    pub margin: f64,
    /// Periods the first mapping waits for sharing to show before it places threads that
    /// share nothing (spread), so that their pages can follow them. 0: map at the first
    /// period whatever the matrix holds (the paper).
    pub first_mapping_wait: u64,
    /// Clear the NUMA vectors at the first mapping: until then threads ran wherever the
    /// scheduler put them, and counts taken then would send pages towards nodes their
    /// threads are about to leave. The paper keeps them.
    pub reset_nvs_at_first_mapping: bool,
    /// When Eq. 6 is tested.
    pub eq6: Eq6When,
    /// A remap needs at least this many sharing events (pairs counted once) per thread in
    /// the aged matrix ([`tdmap_sharing::enough_sharing`] at 1): a pointer array every
    /// thread reads once makes any mapping look better than one chosen without sharing.
    /// 0 turns the gate off (the paper).
    pub min_events_per_thread: f64,
    /// A remap needs sharing events (off the diagonal) to be at least this share of all
    /// events in the aged matrix: below it threads work on private data, where any
    /// mapping is as good as another (the private-only class of kMAF §2). 0: off.
    pub min_sharing_share: f64,
    /// Price the data a remap leaves behind: a new mapping must lower the sharing cost
    /// plus each thread's recent faults on pages of nodes other than its new one. Needs
    /// fault sources that know each page's node (the simulator); the perf sampler does
    /// not, and then the term is zero. Off by default and in the paper.
    pub data_cost: bool,
    /// Threads tracked; samples of later threads are counted as ignored.
    pub max_threads: usize,
    /// Map threads (off: kMAF Fig. 11's data-only variant, `--data-only`).
    pub threads: bool,
    /// Move pages (off: kMAF Fig. 11's thread-only variant, `--threads-only`).
    pub data: bool,
    /// Bytes per sub-block of the sharer vectors (kMAF §3.5.1 uses 1 KiB).
    pub sub_block: u32,
    /// Sharers kept per sub-block (kMAF §3.5.1 keeps the last 2).
    pub sharers: Sharers,
    /// Seed of the mapping algorithm (random tie-breaks, drb).
    pub seed: u64,
}

impl Default for Config {
    /// `tdmap run`'s behaviour.
    fn default() -> Self {
        Config {
            algorithm: Algorithm::Greedy,
            margin: 0.10,
            first_mapping_wait: FIRST_MAPPING_WAIT,
            reset_nvs_at_first_mapping: true,
            eq6: Eq6When::PerPeriod,
            min_events_per_thread: 1.0,
            min_sharing_share: 0.0,
            data_cost: false,
            max_threads: 256,
            threads: true,
            data: true,
            sub_block: 1024,
            sharers: Sharers::Last(2),
            seed: 0,
        }
    }
}

/// The named configurations, as `tdmap run --kmaf` and `tdmap sim --policies` take them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// `tdmap run`'s rules ([`Config::default`]).
    Run,
    /// The paper's rules ([`Config::kmaf_paper`]).
    Paper,
}

impl Config {
    /// The paper's rules (kMAF §3.3–3.4): Scotch's dual recursive bipartitioning, Eq. 6
    /// at every fault, no margin, no wait, no gate, no NUMA-vector reset.
    pub fn kmaf_paper() -> Config {
        Config {
            algorithm: Algorithm::Drb,
            margin: 0.0,
            first_mapping_wait: 0,
            reset_nvs_at_first_mapping: false,
            eq6: Eq6When::PerFault,
            min_events_per_thread: 0.0,
            min_sharing_share: 0.0,
            data_cost: false,
            ..Config::default()
        }
    }

    /// The configuration of `preset`.
    pub fn preset(preset: Preset) -> Config {
        match preset {
            Preset::Run => Config::default(),
            Preset::Paper => Config::kmaf_paper(),
        }
    }

    /// kMAF Fig. 11's thread-only variant: threads are mapped, no page moves.
    pub fn threads_only(self) -> Config {
        Config {
            data: false,
            ..self
        }
    }

    /// kMAF Fig. 11's data-only variant: pages move, threads stay where the OS put them.
    pub fn data_only(self) -> Config {
        Config {
            threads: false,
            ..self
        }
    }
}

impl std::str::FromStr for Preset {
    type Err = String;

    fn from_str(s: &str) -> Result<Preset, String> {
        match s {
            "run" | "default" => Ok(Preset::Run),
            "paper" | "kmaf-paper" => Ok(Preset::Paper),
            _ => Err(format!("unknown kMAF rules '{s}'; use run or paper")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paper_differs_from_run_in_every_named_rule() {
        let (run, paper) = (Config::default(), Config::kmaf_paper());
        assert_eq!(paper.algorithm, Algorithm::Drb);
        assert_eq!((run.margin, paper.margin), (0.10, 0.0));
        assert_eq!((run.first_mapping_wait, paper.first_mapping_wait), (3, 0));
        assert!(run.reset_nvs_at_first_mapping && !paper.reset_nvs_at_first_mapping);
        assert_eq!(
            (run.eq6, paper.eq6),
            (Eq6When::PerPeriod, Eq6When::PerFault)
        );
        assert_eq!(paper.min_events_per_thread, 0.0);
        assert_eq!("kmaf-paper".parse::<Preset>(), Ok(Preset::Paper));
        assert!("kmaf-papr".parse::<Preset>().is_err());
    }
}
