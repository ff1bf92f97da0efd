//! Issue 20 must-show 2: a 2-D halo of 256 ranks (16 × 16, 4 neighbours, non-periodic)
//! mapped onto a cluster of 4 hosts × 64 PUs. tdmap's mapping keeps neighbouring ranks on
//! one host, and its cost is at most Scotch's on the same graph and target: `scotch_gmap`
//! maps the graph onto the `tleaf` that matches the cluster (4 hosts crossed at cost 2,
//! 64 PUs at cost 1, tdmap's hop distances), its mapping is read back, and both are
//! scored by tdmap's own cost function (Σ matrix × tree distance). Both the default
//! algorithm (greedy, whose breadth-first ties cut the grid in quadrants as Scotch does;
//! it cut 4 strips, 3 % above Scotch, before) and matching are held to it, on the two
//! spellings of the cluster. Skipped, with a message, without `scotch_gmap` (Debian's
//! `scotch`, installed by scripts/setup.sh).

mod common;

use std::path::Path;
use std::process::Command;

const SIDE: usize = 16;
const N: usize = SIDE * SIDE;
/// The same 4 × 64 cluster, spelled with and without a package level (one package per
/// host adds no distance: tdmap's hops stay 2 within a host and 4 across).
const MACHINES: [&str; 2] = ["cluster:4x(core:64)", "cluster:4x(package:1 core:64)"];

/// The halo's neighbour pairs (i < j).
fn halo() -> Vec<(usize, usize)> {
    let mut e = Vec::new();
    for r in 0..SIDE {
        for c in 0..SIDE {
            let i = r * SIDE + c;
            if c + 1 < SIDE {
                e.push((i, i + 1));
            }
            if r + 1 < SIDE {
                e.push((i, i + SIDE));
            }
        }
    }
    e
}

/// Scotch's graph format: version, vertex and arc counts, base 0 and no weights, then
/// each vertex's degree and neighbours.
fn scotch_graph(edges: &[(usize, usize)]) -> String {
    let mut adj = vec![Vec::new(); N];
    for &(i, j) in edges {
        adj[i].push(j);
        adj[j].push(i);
    }
    let mut out = format!("0\n{N} {}\n0 000\n", 2 * edges.len());
    for a in adj {
        let cells: Vec<String> = std::iter::once(a.len())
            .chain(a)
            .map(|x| x.to_string())
            .collect();
        out.push_str(&cells.join(" "));
        out.push('\n');
    }
    out
}

/// tdmap's mapping (thread → logical PU) with `algorithm`, or the default one.
fn tdmap_mapping(edges_file: &Path, machine: &str, algorithm: Option<&str>) -> Vec<usize> {
    let out = Command::new(env!("CARGO_BIN_EXE_tdmap"))
        .args([
            "map",
            "--matrix",
            edges_file.to_str().unwrap(),
            "-m",
            machine,
            "--json",
        ])
        .args(algorithm.map(|a| ["-a", a]).into_iter().flatten())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut pu = vec![usize::MAX; N];
    for p in json["mapping"].as_array().unwrap() {
        pu[p["thread"].as_u64().unwrap() as usize] = p["pu"].as_u64().unwrap() as usize;
    }
    pu
}

#[test]
fn a_256_rank_halo_on_4_hosts_costs_no_more_than_scotch() {
    let have = Command::new("sh")
        .args(["-c", "command -v scotch_gmap"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        eprintln!(
            "skipped: scotch_gmap not found (Debian package scotch; scripts/setup.sh installs it)"
        );
        return;
    }
    let dir = common::TempDir::new("tdmap-scotch-halo");
    let edges = halo();
    let el: String = edges.iter().map(|(i, j)| format!("{i} {j} 1\n")).collect();
    let edges_file = dir.join("halo.edges");
    std::fs::write(&edges_file, el).unwrap();
    let (grf, tgt, map) = (dir.join("halo.grf"), dir.join("c.tgt"), dir.join("s.map"));
    std::fs::write(&grf, scotch_graph(&edges)).unwrap();
    // tleaf: 2 levels, 4 hosts (crossing costs 2), 64 PUs each (crossing costs 1).
    std::fs::write(&tgt, "tleaf\n2 4 2 64 1\n").unwrap();
    let st = Command::new("scotch_gmap")
        .args([&grf, &tgt, &map])
        .status()
        .unwrap();
    assert!(st.success());
    // Scotch's mapping file: a count, then "vertex part" lines; part p of the tleaf is
    // host p / 64, PU p % 64, which is tdmap's logical PU p on this cluster.
    let text = std::fs::read_to_string(&map).unwrap();
    let mut scotch = vec![usize::MAX; N];
    for line in text.lines().skip(1) {
        let mut w = line.split_whitespace().map(|x| x.parse::<usize>().unwrap());
        if let (Some(v), Some(p)) = (w.next(), w.next()) {
            scotch[v] = p;
        }
    }
    assert!(scotch.iter().all(|&p| p < N), "{text}");

    let matrix = tdmap_map::parse_edges(&std::fs::read_to_string(&edges_file).unwrap()).unwrap();
    for machine in MACHINES {
        let topo = tdmap_topo::MachineSpec::parse(machine).load(None).unwrap();
        let dist = tdmap_map::PuDistance::new(&topo, tdmap_map::Distance::Hops).unwrap();
        let score = |m: &[usize]| tdmap_map::cost_sparse(&dist, &matrix, m);
        let scotch_cost = score(&scotch);
        let host = |pu: usize| topo.pus[pu].host;
        for algorithm in [None, Some("matching")] {
            let name = algorithm.unwrap_or("default (greedy)");
            let ours = tdmap_mapping(&edges_file, machine, algorithm);
            let cost = score(&ours);
            let shared = edges
                .iter()
                .filter(|&&(i, j)| host(ours[i]) == host(ours[j]))
                .count();
            eprintln!(
                "{machine}, {name}: cost {cost}, Scotch {scotch_cost}; {shared} of {} neighbour pairs on one host",
                edges.len()
            );
            // At least 90 % of neighbours share a host (quadrants: 448 of 480; 4 strips:
            // 432; a random mapping: about a quarter).
            assert!(
                shared * 10 >= edges.len() * 9,
                "{machine}, {name}: {shared}"
            );
            assert!(
                cost <= scotch_cost,
                "{machine}, {name}: cost {cost} > Scotch {scotch_cost}"
            );
        }
    }
}
