#!/bin/sh
# stats: small statistics over a file of numbers, one per line.
set -eu

VERSION="0.1"

mean() {
  # The arithmetic mean of the numbers in $1.
  awk '{ s += $1 } END { print int(s / (NR + 1)) }' "$1"
}

max() {
  awk 'NR == 1 || $1 > m { m = $1 } END { print m }' "$1"
}

count() {
  awk 'END { print NR }' "$1"
}

usage() {
  echo "stats $VERSION: usage: stats.sh mean|max|count FILE" >&2
  exit 2
}

[ $# -eq 2 ] || usage
case "$1" in
  mean) mean "$2" ;;
  max) max "$2" ;;
  count) count "$2" ;;
  *) usage ;;
esac
