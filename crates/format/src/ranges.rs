//! Number lists as ranges (`0-3,8`), the text form both CPU lists (Linux's cpulist
//! format) and rank lists in messages use.

/// `nums` as ranges joined by `sep`: runs of consecutive numbers in the order given become
/// `a-b` (sort first for a set).
pub fn range_list(nums: &[usize], sep: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < nums.len() {
        let mut j = i;
        while j + 1 < nums.len() && nums[j + 1] == nums[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", nums[i], nums[j])
        } else {
            nums[i].to_string()
        });
        i = j + 1;
    }
    out.join(sep)
}

#[cfg(test)]
mod tests {
    #[test]
    fn runs_become_ranges() {
        assert_eq!(
            super::range_list(&[0, 1, 2, 3, 8, 10, 11], ","),
            "0-3,8,10-11"
        );
        assert_eq!(super::range_list(&[0, 1, 2, 4, 6, 7], ", "), "0-2, 4, 6-7");
        assert_eq!(super::range_list(&[5], ","), "5");
        assert_eq!(super::range_list(&[], ","), "");
    }
}
