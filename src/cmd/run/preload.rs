//! The environment of the program `tdmap run` starts: the libraries it preloads (the
//! inject sampler's runtime, crates/rt, see run/sampler.rs; libmai, crates/mai, with
//! `--mai-auto`) and their settings. tdmap's libraries come first in `LD_PRELOAD`, then
//! any the user preloaded, so that the user's still interpose whatever tdmap's do not.
//! Everything else (`MAI_AUTO_LOG`, `MAI_AUTO_THRESHOLD`, ...) is inherited untouched.

use super::sampler::Announce;
use super::settings::Settings;
use crate::exit::input;
use anyhow::Result;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// libmai's switch for its automatic mode (crates/mai, `auto`).
const MAI_AUTO: &str = "MAI_AUTO";

/// A library to preload: `$var`, else `name` beside the tdmap binary, built from crate
/// `package`. `LD_PRELOAD` splits at spaces and colons, so a path holding one is refused.
pub fn library(var: &str, name: &str, package: &str) -> Result<PathBuf> {
    let so = crate::cmd::cc::runtime_file(var, name, package)?;
    let text = so.to_string_lossy();
    if text.contains([':', ' ']) {
        return Err(input(format!(
            "the library path {text} holds ':' or ' ', which LD_PRELOAD cannot carry; set {var} to a copy elsewhere"
        )));
    }
    Ok(so)
}

/// libtdmap_rt.so (the inject sampler, `tdmap exec`'s pinning): `$TDMAP_RT_SO`, else
/// beside the tdmap binary.
pub fn runtime() -> Result<PathBuf> {
    library("TDMAP_RT_SO", "libtdmap_rt.so", "tdmap-rt")
}

/// libmai.so for `--mai-auto`: `$TDMAP_MAI_SO`, else beside the tdmap binary.
pub fn mai() -> Result<PathBuf> {
    library("TDMAP_MAI_SO", "libmai.so", "tdmap-mai")
}

/// Variables to set in the program's environment for this run.
pub fn env(s: &Settings, period_ms: u64, announce: Option<&Announce>) -> Vec<(OsString, OsString)> {
    let libs: Vec<&Path> = s
        .sampler
        .preload()
        .into_iter()
        .chain(s.mai.as_deref())
        .collect();
    let mut env = s.sampler.env(period_ms, announce.map(Announce::fd));
    if let Some(p) = ld_preload(&libs, std::env::var_os("LD_PRELOAD")) {
        env.push(("LD_PRELOAD".into(), p));
    }
    if s.mai.is_some() {
        env.push((MAI_AUTO.into(), "1".into()));
    }
    env
}

/// `LD_PRELOAD` holding `libs`, then the user's `user` if not empty; None when tdmap
/// preloads nothing (the user's, if any, is inherited).
pub fn ld_preload(libs: &[&Path], user: Option<OsString>) -> Option<OsString> {
    if libs.is_empty() {
        return None;
    }
    let user = user.filter(|u| !u.is_empty());
    let mut all = OsString::new();
    for part in libs.iter().map(|l| l.as_os_str()).chain(user.as_deref()) {
        if !all.is_empty() {
            all.push(":");
        }
        all.push(part);
    }
    Some(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tdmap_libraries_come_before_the_users() {
        let (rt, mai) = (Path::new("/t/libtdmap_rt.so"), Path::new("/t/libmai.so"));
        let user = || Some(OsString::from("/u/a.so /u/b.so"));
        assert_eq!(ld_preload(&[], user()), None);
        assert_eq!(
            ld_preload(&[rt, mai], user()).unwrap(),
            "/t/libtdmap_rt.so:/t/libmai.so:/u/a.so /u/b.so"
        );
        assert_eq!(ld_preload(&[mai], None).unwrap(), "/t/libmai.so");
        assert_eq!(
            ld_preload(&[mai], Some(OsString::new())).unwrap(),
            "/t/libmai.so"
        );
    }
}
