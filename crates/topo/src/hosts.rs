//! Host names of a cluster (`--hosts FILE`): one name per line or Slurm nodelists such
//! as `node[01-64]`, expanded as Slurm does; blank lines and names given twice are
//! errors naming the line. Pure text processing, tested on embedded text.

use crate::MAX_HOSTS;

/// What is wrong with a list of host names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostsError {
    /// A blank line.
    #[error(
        "line {line} is blank; give one host name or Slurm nodelist per line (# starts a comment)"
    )]
    Blank {
        /// 1-based line.
        line: usize,
    },
    /// A host named twice.
    #[error("host {name:?} on line {line} is already on line {first}; each host once (a host's ranks come from the machine's PUs)")]
    Duplicate {
        /// The name.
        name: String,
        /// Where it is again (1-based).
        line: usize,
        /// Where it was first (1-based).
        first: usize,
    },
    /// A nodelist that does not parse.
    #[error("line {line}: {why} in {text:?}; expected names such as node[01-64],gpu1")]
    Nodelist {
        /// 1-based line.
        line: usize,
        /// The text.
        text: String,
        /// Why.
        why: String,
    },
    /// As many names as hosts were needed.
    #[error("{names} host names for a cluster of {hosts} hosts; give as many names as hosts")]
    Count {
        /// Names given.
        names: usize,
        /// Hosts.
        hosts: usize,
    },
    /// No name at all.
    #[error("no host name; give one host name or Slurm nodelist per line")]
    Empty,
}

/// Host names from a file's text: one name or Slurm nodelist (`node[01-04,07],gpu1`)
/// per line, `#` starting a comment line. Blank lines and a name given twice are errors
/// naming the line; names keep the order given (rank placement follows it).
pub fn parse_hosts(text: &str) -> Result<Vec<String>, HostsError> {
    let mut out: Vec<String> = Vec::new();
    let mut first_line: std::collections::HashMap<String, usize> = Default::default();
    let lines: Vec<&str> = text.lines().collect();
    // A final newline is no blank line, nor is a trailing empty line of the file.
    let last = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .unwrap_or(0);
    for (i, raw) in lines.iter().enumerate().take(last + 1) {
        let line = i + 1;
        let l = raw.trim();
        if l.starts_with('#') {
            continue;
        }
        if l.is_empty() {
            return Err(HostsError::Blank { line });
        }
        for name in expand_nodelist(l).map_err(|why| HostsError::Nodelist {
            line,
            text: l.to_string(),
            why,
        })? {
            if let Some(&first) = first_line.get(&name) {
                return Err(HostsError::Duplicate { name, line, first });
            }
            first_line.insert(name.clone(), line);
            out.push(name);
        }
    }
    if out.is_empty() {
        return Err(HostsError::Empty);
    }
    Ok(out)
}

/// Expands a Slurm nodelist: comma-separated names, each with bracketed ranges and
/// numbers (`node[01-03,7]` is node01 node02 node03 node7; the width of a range's first
/// bound is kept, as Slurm does). One bracket per name.
pub fn expand_nodelist(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in split_top(text)? {
        let item = item.trim();
        if item.is_empty() {
            return Err("an empty name".into());
        }
        if item.chars().any(char::is_whitespace) {
            return Err(format!("a blank inside {item:?}"));
        }
        let Some(open) = item.find('[') else {
            if item.contains(']') {
                return Err("a ']' without '['".into());
            }
            out.push(item.to_string());
            continue;
        };
        let close = item[open..]
            .find(']')
            .map(|c| open + c)
            .ok_or("a '[' without ']'")?;
        let (prefix, inner, suffix) = (&item[..open], &item[open + 1..close], &item[close + 1..]);
        if suffix.contains(['[', ']']) {
            return Err("more than one bracket in a name".into());
        }
        for part in inner.split(',') {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let num = |s: &str| -> Result<u64, String> {
                if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) || s.len() > 9 {
                    return Err(format!("{s:?} is not a number of at most 9 digits"));
                }
                s.parse().map_err(|_| format!("{s:?} is not a number"))
            };
            let (lo, hi) = (num(a)?, num(b)?);
            if hi < lo {
                return Err(format!("the range {part} runs backwards"));
            }
            if hi - lo >= MAX_HOSTS as u64 {
                return Err(format!("the range {part} has over {MAX_HOSTS} hosts"));
            }
            for v in lo..=hi {
                out.push(format!("{prefix}{v:0w$}{suffix}", w = a.len()));
            }
        }
        if out.len() > MAX_HOSTS {
            return Err(format!("over {MAX_HOSTS} hosts"));
        }
    }
    Ok(out)
}

/// Splits at commas outside brackets.
fn split_top(text: &str) -> Result<Vec<&str>, String> {
    let (mut depth, mut start, mut out) = (0i32, 0, Vec::new());
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err("unbalanced or nested brackets".into());
        }
    }
    out.push(&text[start..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn nodelists_expand_as_slurm_does() {
        assert_eq!(
            expand_nodelist("node[01-03,7],gpu1").unwrap(),
            ["node01", "node02", "node03", "node7", "gpu1"]
        );
        assert_eq!(expand_nodelist("n[8-10]x").unwrap(), ["n8x", "n9x", "n10x"]);
        for bad in ["node[3-1]", "node[01", "node]", "a,,b", "n[1-2][3]", "n[a]"] {
            assert!(expand_nodelist(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn host_files_name_the_bad_line() {
        assert_eq!(
            parse_hosts("# hosts\nnode[1-2]\nlocalhost\n").unwrap(),
            ["node1", "node2", "localhost"]
        );
        let dup = parse_hosts("a\nnode[1-3]\nnode2\n")
            .unwrap_err()
            .to_string();
        assert!(
            dup.contains("\"node2\" on line 3 is already on line 2"),
            "{dup}"
        );
        let blank = parse_hosts("a\n\nb\n").unwrap_err().to_string();
        assert!(blank.starts_with("line 2 is blank"), "{blank}");
        assert_eq!(parse_hosts("\n# x\n"), Err(HostsError::Blank { line: 1 }));
    }

    proptest! {
        #[test]
        fn nodelists_and_host_files_never_panic(s in "[a-z0-9\\[\\],\\- #\n]{0,40}") {
            let _ = expand_nodelist(&s);
            let _ = parse_hosts(&s);
        }
    }
}
