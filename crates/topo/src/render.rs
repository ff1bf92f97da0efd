//! Text output in the style of `lstopo-no-graphics`, and JSON output with the same content.

use crate::model::{Obj, ObjId, ObjKind, Topology};
use serde_json::{json, Value};
use std::fmt::Write;

/// Formats a size in bytes as lstopo does: binary units, at most four digits.
fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 10240.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{}{}", v.round(), UNITS[u])
}

fn label(o: &Obj) -> String {
    let mut s = format!("{} L#{}", o.kind.name(), o.logical);
    let mut attrs = Vec::new();
    if let Some(os) = o.os.filter(|_| {
        matches!(
            o.kind,
            ObjKind::Pu | ObjKind::NumaNode | ObjKind::Package | ObjKind::Core
        )
    }) {
        attrs.push(format!("P#{os}"));
    }
    if let Some(m) = o.memory {
        attrs.push(size(m));
    }
    if let Some(c) = o.cache {
        attrs.push(size(c.size));
    }
    if !attrs.is_empty() {
        let _ = write!(s, " ({})", attrs.join(" "));
    }
    s
}

fn tree(t: &Topology, id: ObjId, depth: usize, out: &mut String) {
    let mut o = &t.objects[id];
    let mut line = label(o);
    // lstopo folds a chain of single children into one line joined by " + ".
    while o.children.len() == 1 {
        o = &t.objects[o.children[0]];
        line.push_str(" + ");
        line.push_str(&label(o));
    }
    let _ = writeln!(out, "{}{}", "  ".repeat(depth), line);
    for &c in &o.children {
        tree(t, c, depth + 1, out);
    }
}

/// The human-readable report: tree, summary, levels, distances and NUMA factor.
pub fn render_text(t: &Topology) -> String {
    let mut out = String::new();
    let root = &t.objects[0];
    let _ = writeln!(out, "Machine {} ({} total)", t.name, size(t.total_memory()));
    for &c in &root.children {
        tree(t, c, 1, &mut out);
    }
    let _ = writeln!(
        out,
        "\nSummary: {} packages, {} NUMA nodes, {} cores, {} PUs; L3 {}, L2 {}, L1d {}",
        t.count(ObjKind::Package),
        t.num_nodes(),
        t.count(ObjKind::Core),
        t.num_pus(),
        t.count(ObjKind::L3),
        t.count(ObjKind::L2),
        t.count(ObjKind::L1),
    );
    if t.is_cluster() {
        let shown: Vec<&str> = t.hosts.iter().take(8).map(String::as_str).collect();
        let more = if t.hosts.len() > 8 { ", ..." } else { "" };
        let _ = writeln!(
            out,
            "Hosts: {} ({}{more}); network distance {}",
            t.num_hosts(),
            shown.join(", "),
            if t.num_hosts() > 1 {
                t.distances.values.iter().max().unwrap_or(&0).to_string()
            } else {
                "none (one host)".to_string()
            }
        );
    }
    if let Some(r) = &t.restricted {
        let _ = writeln!(
            out,
            "Restricted: {} of {} PUs, the CPUs this process may use (--whole-machine shows all)",
            r.allowed.len(),
            r.of
        );
    }
    let names: Vec<String> = t.levels.iter().map(|l| l.name()).collect();
    let arities: Vec<String> = t.arities().iter().map(|a| a.to_string()).collect();
    let _ = writeln!(
        out,
        "Levels: {} (arities {})",
        names.join(" > "),
        arities.join(", ")
    );
    let src = serde_json::to_value(t.distances.source).unwrap_or(Value::Null);
    let _ = writeln!(out, "\nDistances ({}):", src.as_str().unwrap_or("?"));
    let _ = write!(out, "{:>6}", "");
    for j in 0..t.num_nodes() {
        let _ = write!(out, "{:>6}", format!("N#{j}"));
    }
    out.push('\n');
    for (i, row) in t.distances.rows().iter().enumerate() {
        let _ = write!(out, "{:>6}", format!("N#{i}"));
        for v in row {
            let _ = write!(out, "{v:>6}");
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "NUMA factor: {:.2} (smallest remote/local: {:.2})",
        t.numa_factor(),
        t.distances.numa_factor_min()
    );
    if let Some(l) = t.latencies {
        let _ = writeln!(
            out,
            "Latencies (cycles at {} GHz): L1 {}, L2 {}, L3 {}, local memory {}, interchip {}",
            l.ghz, l.l1, l.l2, l.l3, l.mem_local, l.interchip
        );
    }
    out
}

fn tree_json(t: &Topology, id: ObjId) -> Value {
    let o = &t.objects[id];
    let mut v = json!({"type": o.kind.name(), "logical": o.logical});
    if let Some(os) = o.os {
        v["os"] = json!(os);
    }
    if let Some(m) = o.memory {
        v["memory"] = json!(m);
    }
    if let Some(c) = o.cache {
        v["cache"] = json!(c);
    }
    if !o.children.is_empty() {
        v["children"] = o.children.iter().map(|&c| tree_json(t, c)).collect();
    }
    v
}

/// The same content as [`render_text`], as JSON for scripts.
pub fn render_json(t: &Topology) -> Value {
    let nodes: Vec<Value> = (0..t.num_nodes())
        .map(|n| {
            json!({
                "logical": n,
                "os": t.node_os_index(n),
                "memory": t.objects[t.nodes[n]].memory,
                "pus": t.pus_of_node(n),
            })
        })
        .collect();
    let mut v = json!({
        "name": t.name,
        "summary": {
            "packages": t.count(ObjKind::Package),
            "numa_nodes": t.num_nodes(),
            "cores": t.count(ObjKind::Core),
            "pus": t.num_pus(),
            "l3": t.count(ObjKind::L3),
            "l2": t.count(ObjKind::L2),
            "l1d": t.count(ObjKind::L1),
            "total_memory": t.total_memory(),
        },
        "tree": tree_json(t, 0),
        "pus": t.pus.iter().enumerate().map(|(l, p)| json!({
            "logical": l, "os": p.os, "node": p.node, "core": p.core, "package": p.package,
        })).collect::<Vec<_>>(),
        "nodes": nodes,
        "levels": t.levels.iter().map(|l| json!({"name": l.name(), "groups": l.groups})).collect::<Vec<_>>(),
        "arities": t.arities(),
        "distances": {"source": t.distances.source, "matrix": t.distances.rows()},
        "numa_factor": t.numa_factor(),
        "numa_factor_min": t.distances.numa_factor_min(),
        "latencies": t.latencies,
    });
    if t.is_cluster() {
        v["hosts"] = json!(t.hosts);
        for (p, pu) in t.pus.iter().enumerate() {
            v["pus"][p]["host"] = json!(pu.host);
        }
    }
    if let Some(r) = &t.restricted {
        v["restricted"] = json!(r);
    }
    v
}
