//! OS CPU numbers written as the kernel and numactl write them (`0-3,8`).

/// OS CPU numbers as a range list, `0-3,8`: runs of consecutive numbers in the order
/// given become ranges (sort first for a set).
pub fn cpu_list(cpus: &[usize]) -> String {
    tdmap_format::range_list(cpus, ",")
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
