#!/usr/bin/env bash
# Stops the one-node cluster .ci/slurm/start.sh started: cancels queued jobs, then stops slurmd,
# slurmctld and munged by pid (never by name). --purge also removes Slurm's state, spool and logs
# (the next start gives fresh job ids).
set -uo pipefail
log() { echo "[slurm stop] $*"; }
running() {  # pid name -> process exists, is not a zombie, and is the expected daemon
  local st; st=$(cat /proc/"$1"/stat 2>/dev/null) || return 1
  set -- $st "$2"; [ "$2" = "(${!#})" ] && [ "$3" != Z ]
}
alive() { local pid; pid=$(cat "$1" 2>/dev/null) && [ -n "$pid" ] && running "$pid" "$(basename "$1" .pid)"; }
stop() {  # pidfile name
  alive "$1" || return 0
  local pid; pid=$(cat "$1"); log "stopping $2 (pid $pid)"; kill "$pid"
  for _ in $(seq 100); do running "$pid" "$2" || return 0; sleep 0.1; done
  log "$2 did not exit, sending KILL"; kill -9 "$pid" 2>/dev/null || true
}

if alive /run/slurmctld.pid; then
  jobs=$(squeue -h -o %i 2>/dev/null || true)
  if [ -n "$jobs" ]; then
    log "cancelling jobs: $(echo $jobs)"; scancel $jobs || true
    for _ in $(seq 100); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.2; done
  fi
fi
stop /run/slurmd.pid slurmd
stop /run/slurmctld.pid slurmctld
stop /run/munge/munged.pid munged
if [ "${1:-}" = --purge ]; then
  log "removing state and logs"
  rm -rf /var/spool/slurmctld /var/spool/slurmd /var/log/slurm/*.log
fi
exit 0
