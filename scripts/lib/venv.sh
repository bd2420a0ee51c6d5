# shellcheck shell=bash
# kbench_venv: the venv of this checkout's scripts/requirements.txt, $KBENCH_VENV if set. One
# venv per requirements file, so that checkouts (or worktrees) with different requirements never
# rebuild a venv another is running in. scripts/setup makes it (scripts/kbench/commands/setup.py
# names it by the same rule).
kbench_venv() {
  local digest
  digest=$(sha256sum "$(dirname "${BASH_SOURCE[0]}")/../requirements.txt") || return
  echo "${KBENCH_VENV:-${KBENCH_CACHE:-${HOME:?HOME is not set; set KBENCH_CACHE}/.cache/kbench}/venv-${digest:0:12}}"
}
