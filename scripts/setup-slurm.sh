#!/usr/bin/env bash
# Installs Slurm (slurmctld, slurmd, srun from Debian's slurm-wlm) and munge for
# `make slurm-check`, as root. Idempotent. Kept out of scripts/setup.sh: only that check
# needs them, and the daemons are never enabled here (slurm-check starts its own, with
# its own configuration, and stops them).
set -euo pipefail

PKGS=(slurm-wlm munge)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup-slurm: missing Debian packages: ${missing[*]}; run this script as root" >&2
    exit 2
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # policy-rc.d or no systemd: the packages' own services may fail to start, which is
  # fine, since slurm-check runs its own daemons.
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
echo "setup-slurm: ok"
