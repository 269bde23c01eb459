#!/bin/sh
# Prints how many numbers data/numbers.txt holds, every second, until stopped: a stand-in for a
# dev server or a file watcher.
cd "$(dirname "$0")/.." || exit 2
i=0
while :; do
  i=$((i + 1))
  printf '\033[36m[watch]\033[0m tick %d: %s numbers\n' "$i" "$(awk 'END { print NR }' data/numbers.txt)"
  sleep 1
done
