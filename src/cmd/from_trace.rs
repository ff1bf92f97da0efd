//! A trace's sharing model for `tdmap analyze` and `tdmap map --trace`: open the trace,
//! pick the machine (`--machine`, else the recorded one), place the threads and feed the
//! model ([`SharingModel::from_trace`]), with a spinner on stderr when it takes long.

use super::MachineArgs;
use anyhow::Result;
use std::path::Path;
use tdmap_sharing::{Grain, SharingModel};
use tdmap_topo::Topology;
use tdmap_trace::{Header, Reader};

/// A trace's model and what it was built on.
pub struct Traced {
    /// The model, fed with the whole trace.
    pub model: SharingModel,
    /// The machine.
    pub topo: Topology,
    /// The node each thread was placed on.
    pub nodes: Vec<u32>,
    /// The trace's header, its status as read (Incomplete without a valid end marker).
    pub header: Header,
    /// Whether the trace was whole ([`tdmap_trace::Ending`]'s rule); when not, a line on
    /// stderr said where it ends.
    pub complete: bool,
}

/// Builds the model of the trace at `path` at `grain`; a bad trace is bad input.
pub fn model(path: &Path, machine: &MachineArgs, grain: Grain) -> Result<Traced> {
    let mut reader = Reader::open(path).map_err(|e| super::input_about(path, e))?;
    reader.set_addresses_only(true);
    let header = reader.header().clone();
    let topo = machine.load_or_recorded(&header.machine, path)?;
    let threads = header.threads as usize;
    let nodes = tdmap_sharing::thread_nodes(reader.threads(), threads, topo.num_nodes(), |c| {
        topo.pu_by_os(c).map(|pu| topo.node_of_pu(pu))
    });
    let mut progress = Progress::new();
    let mut prefetch = reader.prefetch();
    let model = SharingModel::from_trace(&mut prefetch, topo.num_nodes(), &nodes, grain, |n| {
        progress.add(n)
    })
    .map_err(|e| super::input_about(path, e))?;
    let ending = prefetch.ending();
    let complete = super::say_ending(&path.display().to_string(), ending);
    let header = Header {
        status: ending.map_or(header.status, |e| e.status),
        ..header
    };
    Ok(Traced {
        model,
        topo,
        nodes,
        header,
        complete,
    })
}

/// A spinner counting events on stderr, shown only once reading has taken 2 s (indicatif
/// draws nothing when stderr is not a terminal).
pub(crate) struct Progress {
    start: std::time::Instant,
    events: u64,
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    pub(crate) fn new() -> Progress {
        Progress {
            start: std::time::Instant::now(),
            events: 0,
            bar: None,
        }
    }

    pub(crate) fn add(&mut self, n: u64) {
        self.events += n;
        if self.bar.is_none() && self.start.elapsed().as_secs() >= 2 {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {msg}").expect("valid template"),
            );
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{} M events read", self.events / 1_000_000));
            bar.tick();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
