#!/usr/bin/env bash
# duptree.sh REPO REV DIR: the tree of REV with every extensionless script renamed by its #! line (.sh / .py), so duplicates reads it
set -euo pipefail
repo=$1 rev=$2 dir=$3
rm -rf "$dir"; mkdir -p "$dir"
git -C "$repo" archive "$rev" | tar -x -C "$dir"
cd "$dir"
while IFS= read -r -d '' f; do
  base=$(basename "$f")
  [[ $base == *.* ]] && continue
  first=$(head -c 200 "$f" | head -n 1)
  if [[ $first =~ ^#!.*python ]]; then mv "$f" "$f.py"
  elif [[ $first =~ ^#!.*(bash|/sh) ]]; then mv "$f" "$f.sh"; fi
done < <(find . -type f -print0)
