#!/bin/sh
# The checks of bin/stats.sh. Exits 1 when one fails.
cd "$(dirname "$0")/.." || exit 2
pass=0
fail=0

check() {
  name=$1
  expected=$2
  shift 2
  got=$(sh bin/stats.sh "$@" 2>&1) || true
  if [ "$got" = "$expected" ]; then
    printf '\033[32mPASS\033[0m %s\n' "$name"
    pass=$((pass + 1))
  else
    printf '\033[31mFAIL\033[0m %s: expected %s, got %s\n' "$name" "$expected" "$got"
    fail=$((fail + 1))
  fi
  # Slow enough to watch the output stream in.
  sleep 0.2
}

echo "running 4 checks"
check "count" 4 count data/numbers.txt
check "max" 4 max data/numbers.txt
check "mean" 2.5 mean data/numbers.txt
check "mean of one number" 7 mean data/one.txt
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
