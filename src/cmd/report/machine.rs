//! The machine section: the machine as nested boxes, as lstopo draws it (host, package,
//! NUMA node, core, PU, with logical and OS indexes apart), and each thread in the PU it
//! is placed on.

use super::page::esc;
use std::collections::BTreeMap;
use std::fmt::Write;
use tdmap_topo::Topology;

/// Above this many PUs, nodes are drawn without their cores and PUs, so that the page
/// stays readable and small; threads are then listed in their node.
const MAX_PUS_DRAWN: usize = 512;

/// The machine `topo` as nested boxes, with thread `t` drawn in PU `pu` for each
/// `(t, pu)` of `threads` (logical PU indexes).
pub fn boxes(topo: &Topology, threads: &[(usize, usize)]) -> String {
    let mut on: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &(t, pu) in threads {
        on.entry(pu).or_default().push(t);
    }
    // (host, package, node) → core → PUs, in logical order.
    let mut tree: BTreeMap<(usize, usize, usize), BTreeMap<usize, Vec<usize>>> = BTreeMap::new();
    for (i, p) in topo.pus.iter().enumerate() {
        let key = (p.host, p.package, p.node);
        tree.entry(key)
            .or_default()
            .entry(p.core)
            .or_default()
            .push(i);
    }
    let compact = topo.num_pus() > MAX_PUS_DRAWN;
    let many_hosts = topo.num_hosts() > 1;
    let mut s = format!(
        "<div id=\"machine-boxes\" class=\"box machine\"><div class=\"label\">Machine {} ({} PUs, {} NUMA nodes)</div><div class=\"kids\">",
        esc(&topo.name),
        topo.num_pus(),
        topo.num_nodes()
    );
    let mut open: Option<(usize, usize)> = None;
    for (&(host, package, node), cores) in &tree {
        if open.map(|o| o.0) != Some(host) || open.map(|o| o.1) != Some(package) {
            if open.is_some() {
                s += "</div></div>"; // the package
                if many_hosts && open.map(|o| o.0) != Some(host) {
                    s += "</div></div>";
                }
            }
            if many_hosts && open.map(|o| o.0) != Some(host) {
                let name = topo.hosts.get(host).map_or("", String::as_str);
                let _ = write!(
                    s,
                    "<div class=\"box host\"><div class=\"label\">Host {}</div><div class=\"kids\">",
                    esc(name)
                );
            }
            let _ = write!(
                s,
                "<div class=\"box package\"><div class=\"label\">Package L#{package}</div><div class=\"kids\">"
            );
            open = Some((host, package));
        }
        let _ = write!(
            s,
            "<div class=\"box numa\" data-node=\"{node}\"><div class=\"label\">NUMA node L#{node}</div><div class=\"kids\">"
        );
        if compact {
            let pus = cores.values().map(Vec::len).sum::<usize>();
            let _ = write!(s, "<span class=\"note\">{pus} PUs</span>");
            for pu in cores.values().flatten() {
                for &t in on.get(pu).into_iter().flatten() {
                    s += &chip(t);
                }
            }
        } else {
            for (core, pus) in cores {
                let _ = write!(s, "<div class=\"core\" title=\"Core L#{core}\">");
                for &pu in pus {
                    s += &pu_cell(topo, pu, on.get(&pu).map_or(&[], Vec::as_slice));
                }
                s += "</div>";
            }
        }
        s += "</div></div>";
    }
    if open.is_some() {
        s += "</div></div>";
        if many_hosts {
            s += "</div></div>";
        }
    }
    s + "</div></div>"
}

/// One PU, with the threads placed on it.
fn pu_cell(topo: &Topology, pu: usize, threads: &[usize]) -> String {
    let busy = if threads.is_empty() { "" } else { " busy" };
    let mut s = format!(
        "<div class=\"pu{busy}\" data-pu=\"{pu}\">PU L#{pu} (P#{})<br>",
        topo.pus[pu].os
    );
    for &t in threads {
        s += &chip(t);
    }
    s + "</div>"
}

/// A thread's mark; hovering it marks the same thread elsewhere on the page.
pub fn chip(t: usize) -> String {
    format!("<span class=\"thread\" data-thread=\"{t}\">T{t}</span>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pu_is_drawn_once_and_threads_sit_in_their_pu() {
        let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
        let html = boxes(&topo, &[(0, 0), (1, 9), (2, 9)]);
        assert_eq!(html.matches("class=\"pu").count(), topo.num_pus());
        assert_eq!(html.matches("class=\"box package\"").count(), 4);
        assert_eq!(html.matches("class=\"box numa\"").count(), 4);
        let pu9 = html.split("data-pu=\"9\"").nth(1).unwrap();
        let pu9 = &pu9[..pu9.find("</div>").unwrap()];
        assert!(pu9.contains("T1") && pu9.contains("T2"), "{pu9}");
        assert_eq!(html.matches("<div").count(), html.matches("</div>").count());
    }
}
