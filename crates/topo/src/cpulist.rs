//! OS CPU numbers written as the kernel and numactl write them (`0-3,8`).

/// OS CPU numbers as a range list, `0-3,8`: runs of consecutive numbers in the order
/// given become ranges (sort first for a set).
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", cpus[i], cpus[j])
        } else {
            cpus[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    #[test]
    fn runs_become_ranges() {
        assert_eq!(super::cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(super::cpu_list(&[5]), "5");
        assert_eq!(super::cpu_list(&[]), "");
    }
}
