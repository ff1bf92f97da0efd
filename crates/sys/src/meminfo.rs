//! Memory per NUMA node from `/sys/devices/system/node/nodeN/meminfo` (numarch's "free
//! memory of each node", Minas §3.3), read through an [`FsRoot`].

use crate::{FsRoot, SysError};

/// Total and free memory of one node, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeMemory {
    /// `MemTotal`.
    pub total: u64,
    /// `MemFree`.
    pub free: u64,
}

/// Reads the memory of node `node` (OS index).
pub fn node_memory(fs: &FsRoot, node: usize) -> Result<NodeMemory, SysError> {
    let abs = format!("/sys/devices/system/node/node{node}/meminfo");
    let text = fs.read(&abs)?;
    parse_meminfo(&text).ok_or_else(|| SysError::Parse {
        path: fs.path(&abs),
        what: "no 'Node N MemTotal:' and 'MemFree:' lines in kB".into(),
    })
}

/// Parses lines such as `Node 0 MemFree:  1234 kB`.
fn parse_meminfo(text: &str) -> Option<NodeMemory> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let mut w = l.split_whitespace();
            let _ = (w.next()?, w.next()?);
            (w.next()? == name).then_some(())?;
            let kb: u64 = w.next()?.parse().ok()?;
            (w.next()? == "kB").then_some(kb * 1024)
        })
    };
    Some(NodeMemory {
        total: field("MemTotal:")?,
        free: field("MemFree:")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_captured_node() {
        let dir = std::env::temp_dir().join(format!("tdmap-meminfo-{}", std::process::id()));
        let node = dir.join("sys/devices/system/node/node1");
        std::fs::create_dir_all(&node).unwrap();
        std::fs::write(
            node.join("meminfo"),
            "Node 1 MemTotal:       2048 kB\nNode 1 MemFree:        1024 kB\nNode 1 MemUsed: 1024 kB\n",
        )
        .unwrap();
        std::fs::write(dir.join("sys/devices/system/node/node1/bad"), "").unwrap();
        let fs = FsRoot::new(&dir);
        let m = node_memory(&fs, 1).unwrap();
        assert_eq!(
            m,
            NodeMemory {
                total: 2 << 20,
                free: 1 << 20
            }
        );
        let err = node_memory(&fs, 7).unwrap_err();
        assert!(err.to_string().contains("node7/meminfo"), "{err}");
        std::fs::write(node.join("meminfo"), "Node 1 MemTotal: x kB\n").unwrap();
        assert!(matches!(node_memory(&fs, 1), Err(SysError::Parse { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_live_machine_has_node_0() {
        let fs = FsRoot::default();
        if fs.path("/sys/devices/system/node/node0/meminfo").exists() {
            let m = node_memory(&fs, 0).unwrap();
            assert!(m.free > 0 && m.free <= m.total, "{m:?}");
        }
    }
}
