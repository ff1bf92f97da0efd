//! The sim report: what `tdmap sim --json` writes, one row per policy with its figures
//! normalised to the `os` baseline. Format `tdmap-sim`, described in `docs/formats.md`.
//! Every figure is SIMULATED (this crate's model), never a measurement.

use crate::energy::{Energy, EnergyModel};
use crate::{SimConfig, SimReport};
use serde::{Deserialize, Deserializer, Serialize};
use std::path::Path;
use tdmap_format::{FormatError, Versioned};

/// Every policy's replay of one trace, normalised to the first (`os`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Always `tdmap-sim`.
    pub format: String,
    /// [`Comparison::VERSION`].
    pub version: u32,
    /// Always true: the figures come from the model.
    pub simulated: bool,
    /// The trace replayed, as given.
    pub trace: String,
    /// The machine modelled.
    pub machine: String,
    /// Threads of the trace.
    pub threads: usize,
    /// Accesses replayed per policy.
    pub accesses: u64,
    /// False when the trace is not whole (no end marker, or totals that disagree): the
    /// figures cover what was read. Absent in files of older builds: true.
    #[serde(default = "complete_by_default")]
    pub complete: bool,
    /// Seed of every random choice.
    pub seed: u64,
    /// The policy period in cycles.
    pub period_cycles: u64,
    /// The policy the figures are normalised to.
    pub baseline: String,
    /// The simulator's full configuration, so that the run can be reproduced.
    pub config: SimConfig,
    /// The per-operation energies behind each row's `energy` (version 2).
    pub energy_model: EnergyModel,
    /// One row per policy, the baseline first.
    pub results: Vec<PolicyRow>,
}

/// One policy's replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyRow {
    /// The policy's name.
    pub policy: String,
    /// Its figures relative to the baseline's.
    pub normalised: Normalised,
    /// Share of memory reads served by another node.
    pub remote_ratio: f64,
    /// The estimated energy in joules, by part (version 2).
    pub energy: Energy,
    /// The raw counters.
    pub report: SimReport,
}

/// One policy's figures relative to `os` (1.0 = same as os, lower is better). Where os
/// has none of something and the policy some, the ratio is infinite: `null` in JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Normalised {
    /// Modelled execution time (slowest thread).
    #[serde(deserialize_with = "null_is_infinite")]
    pub time: f64,
    /// Last-level cache misses.
    #[serde(deserialize_with = "null_is_infinite")]
    pub l3_misses: f64,
    /// Bytes on inter-chip links.
    #[serde(deserialize_with = "null_is_infinite")]
    pub interchip: f64,
    /// Estimated energy, all parts (version 2).
    #[serde(deserialize_with = "null_is_infinite")]
    pub energy: f64,
}

/// What a comparison was run on, besides the reports.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparisonSetup {
    /// The trace, as given.
    pub trace: String,
    /// The machine's name.
    pub machine: String,
    /// Threads of the trace.
    pub threads: usize,
    /// Accesses replayed.
    pub accesses: u64,
    /// Whether the trace was whole.
    pub complete: bool,
    /// The policy period in cycles.
    pub period_cycles: u64,
    /// The machine's per-operation energies.
    pub energy: EnergyModel,
}

fn complete_by_default() -> bool {
    true
}

impl Versioned for Comparison {
    const FORMAT: &'static str = "tdmap-sim";
    /// 2 added the energy estimate (`energy_model`, `results[].energy`,
    /// `normalised.energy`); every version-1 field is unchanged.
    const VERSION: u32 = 2;
    const WRITER: &'static str = "tdmap sim --json TRACE > FILE";

    fn check(&self) -> Result<(), String> {
        match self.results.first() {
            Some(r) if r.policy == self.baseline => Ok(()),
            _ => Err(format!(
                "the first row is not the baseline {:?}",
                self.baseline
            )),
        }
    }
}

impl Comparison {
    /// The comparison of `reports`, normalised to the first one (the baseline).
    pub fn new(setup: ComparisonSetup, config: &SimConfig, reports: Vec<SimReport>) -> Comparison {
        let base = reports.first().cloned();
        let base_energy = base.as_ref().map(|b| Energy::of(b, &setup.energy).total);
        let results = reports
            .into_iter()
            .map(|r| {
                let b = base.as_ref().unwrap_or(&r);
                let energy = Energy::of(&r, &setup.energy);
                PolicyRow {
                    policy: r.policy.clone(),
                    normalised: Normalised {
                        time: ratio(r.cycles_max, b.cycles_max),
                        l3_misses: ratio(r.l3_misses(), b.l3_misses()),
                        interchip: ratio(r.interchip_bytes(), b.interchip_bytes()),
                        energy: energy.total / base_energy.unwrap_or(energy.total),
                    },
                    remote_ratio: r.remote_ratio(),
                    energy,
                    report: r,
                }
            })
            .collect();
        let (format, version) = tdmap_format::header::<Comparison>();
        Comparison {
            format,
            version,
            simulated: true,
            trace: setup.trace,
            machine: setup.machine,
            threads: setup.threads,
            accesses: setup.accesses,
            complete: setup.complete,
            seed: config.seed,
            period_cycles: setup.period_cycles,
            baseline: base.map_or_else(|| "os".to_string(), |b| b.policy),
            config: config.clone(),
            energy_model: setup.energy,
            results,
        }
    }

    /// Reads and checks a sim report; errors name the file and the field.
    pub fn read(path: &Path) -> Result<Comparison, FormatError> {
        tdmap_format::read(path)
    }

    /// The report as pretty JSON, header first.
    pub fn to_json(&self) -> String {
        tdmap_format::to_string(self)
    }
}

fn ratio(x: u64, base: u64) -> f64 {
    if base == 0 {
        if x == 0 {
            1.0
        } else {
            f64::INFINITY
        }
    } else {
        x as f64 / base as f64
    }
}

fn null_is_infinite<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemStats;

    fn report(policy: &str, cycles: u64, remote: u64) -> SimReport {
        SimReport {
            policy: policy.into(),
            accesses: 100,
            cycles_max: cycles,
            cycles_total: 2 * cycles,
            thread_cycles: vec![cycles, cycles],
            mem: MemStats {
                mem_local: 10,
                mem_remote: remote,
                ..MemStats::default()
            },
            ..SimReport::default()
        }
    }

    fn sample() -> Comparison {
        let setup = ComparisonSetup {
            trace: "t.trace".into(),
            machine: "xeon-x7550-4s".into(),
            threads: 2,
            accesses: 100,
            complete: true,
            period_cycles: 1000,
            energy: EnergyModel::for_machine(
                &crate::Machine::new(
                    &tdmap_topo::preset("xeon-x7550-4s").unwrap(),
                    &SimConfig::default(),
                )
                .unwrap(),
                4096,
            ),
        };
        let reports = vec![report("os", 200, 10), report("kmaf", 150, 0)];
        Comparison::new(setup, &SimConfig::default(), reports)
    }

    #[test]
    fn a_sim_report_round_trips() {
        let c = sample();
        assert_eq!(c.results[1].normalised.time, 0.75);
        // Faster, same threads, less remote memory: less energy.
        assert!(c.results[1].normalised.energy < 0.75, "{:?}", c.results[1]);
        let text = c.to_json();
        assert!(
            text.starts_with("{\n  \"format\": \"tdmap-sim\",\n  \"version\": 2,"),
            "{text}"
        );
        assert_eq!(
            tdmap_format::from_str::<Comparison>(&text, Path::new("s.json")).unwrap(),
            c
        );
    }

    #[test]
    fn an_infinite_ratio_is_null_in_json_and_infinite_again_when_read() {
        let mut c = sample();
        c.results[1].normalised.interchip = f64::INFINITY;
        let text = c.to_json();
        assert!(text.contains("\"interchip\": null"), "{text}");
        let back = tdmap_format::from_str::<Comparison>(&text, Path::new("s.json")).unwrap();
        assert_eq!(back, c);
    }
}
