//! Which entry of a rank mapping this process is: MPI launchers tell each process its
//! rank among the ranks of its host in a variable, which `tdmap exec` reads when it runs
//! as one rank (`mpirun -np N tdmap exec --mapping m.json -- ./prog`).

/// The local-rank variables, in the order they are tried: Open MPI's, MPICH (Hydra)'s,
/// Slurm's.
pub const LOCAL_RANK_VARS: [&str; 3] = [
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID",
    "SLURM_LOCALID",
];

/// This process's local rank and the variable that gave it, from the first variable of
/// [`LOCAL_RANK_VARS`] that `get` finds; None when none is set; an error (naming the
/// variable and its value) when the first set one is not a number.
pub fn local_rank(
    get: impl Fn(&str) -> Option<String>,
) -> Result<Option<(&'static str, usize)>, String> {
    for var in LOCAL_RANK_VARS {
        if let Some(v) = get(var) {
            return v
                .trim()
                .parse()
                .map(|r| Some((var, r)))
                .map_err(|_| format!("{var}={v:?} is not a rank number"));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_variable_set_wins() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|p| p.0 == k).map(|p| p.1.to_string())
        };
        assert_eq!(local_rank(env(&[])), Ok(None));
        assert_eq!(
            local_rank(env(&[("SLURM_LOCALID", "3"), ("MPI_LOCALRANKID", "1")])),
            Ok(Some(("MPI_LOCALRANKID", 1)))
        );
        assert_eq!(
            local_rank(env(&[("OMPI_COMM_WORLD_LOCAL_RANK", "2")])),
            Ok(Some(("OMPI_COMM_WORLD_LOCAL_RANK", 2)))
        );
        assert!(local_rank(env(&[("SLURM_LOCALID", "x")])).is_err());
    }
}
