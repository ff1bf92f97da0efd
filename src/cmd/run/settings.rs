//! The run's options, checked before the program starts: bad ones are input errors
//! (exit 2), and nothing has run yet.

use super::sampler::Sampler;
use super::Args;
use crate::exit::input;
use anyhow::Result;
use std::path::PathBuf;
use std::time::Duration;
use tdmap_map::Algorithm;
use tdmap_monitor::{Config, Preset};
use tdmap_topo::Topology;

/// The run's settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The decision period.
    pub period: Duration,
    /// The kMAF rules chosen (`--kmaf`).
    pub rules: Preset,
    /// What the loop decides.
    pub cfg: Config,
    /// Apply nothing.
    pub dry_run: bool,
    /// A static mapping (`--mapping`): the logical PU of thread k.
    pub fixed: Option<crate::cmd::mapping::Fixed>,
    /// Where samples come from.
    pub sampler: Sampler,
    /// libmai.so, preloaded with its automatic mode on (`--mai-auto`).
    pub mai: Option<PathBuf>,
    /// The matrix to compare the detection with (`--reference`).
    pub reference: Option<super::reference::Reference>,
    /// Data pages of each per-CPU perf ring.
    pub ring_pages: usize,
}

impl Settings {
    /// Checks every option against the machine `topo`, seen through `allowed` (the CPUs
    /// this process may use, None with --whole-machine).
    pub fn from_args(args: &Args, topo: &Topology, allowed: Option<&[usize]>) -> Result<Settings> {
        if args.period == 0 {
            return Err(input("--period must be at least 1 ms"));
        }
        let mut cfg = Config::preset(args.kmaf);
        if let Some(a) = &args.algorithm {
            cfg.algorithm = a.parse::<Algorithm>().map_err(input)?;
        }
        if let Some(m) = args.margin {
            if !(0.0..1.0).contains(&m) {
                return Err(input("--margin must be in [0, 1)"));
            }
            cfg.margin = m;
        }
        if !(args.ring_pages.is_power_of_two() && (1..=1 << 16).contains(&args.ring_pages)) {
            return Err(input("--ring-pages must be a power of two from 1 to 65536"));
        }
        if !(args.sub_block.is_power_of_two() && (64..=4096).contains(&args.sub_block)) {
            return Err(input("--sub-block must be a power of two from 64 to 4096"));
        }
        if let Some(h) = &args.heatmap {
            crate::cmd::heatmap::check_heatmap_path(h)?;
        }
        let how = tdmap_map::Leniency {
            force: args.force,
            best_effort: false,
        };
        let fixed = match args.mapping.as_deref() {
            Some(p) => {
                let file = crate::cmd::mapping::read(p)?;
                let cpus = crate::cmd::mapping::check(p, &file, allowed, how)?;
                Some(crate::cmd::mapping::fixed(p, &file, &cpus, topo)?)
            }
            None => None,
        };
        cfg.threads = !args.data_only && fixed.is_none();
        cfg.data = !args.threads_only;
        cfg.sub_block = args.sub_block;
        cfg.sharers = args.sharers;
        let sampler = Sampler::choose(args)?;
        let mai = args.mai_auto.then(super::preload::mai).transpose()?;
        let reference = args
            .reference
            .as_deref()
            .map(super::reference::read)
            .transpose()?;
        Ok(Settings {
            period: Duration::from_millis(args.period),
            rules: args.kmaf,
            cfg,
            dry_run: args.dry_run,
            fixed,
            sampler,
            mai,
            reference,
            ring_pages: args.ring_pages,
        })
    }
}
