#!/usr/bin/env bash
# What each module contributes to the agnogo binary: the sizes of its
# symbols (go tool nm -size) in a build like the release's but not
# stripped, grouped by module (the first three elements of a package path;
# the standard library and the runtime as "std"). Usage: scripts/binsize.sh [TOP]
set -euo pipefail
cd "$(dirname "$0")/.."
top="${1:-25}"
bin="$(mktemp)"
trap 'rm -f "$bin"' EXIT
CGO_ENABLED=0 go build -trimpath -o "$bin" ./cmd/agnogo
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$bin.stripped" ./cmd/agnogo
printf 'release binary (-s -w): %.1f MiB\n' "$(awk -v b="$(stat -c %s "$bin.stripped")" 'BEGIN { print b / 1048576 }')"
rm -f "$bin.stripped"
go tool nm -size "$bin" | awk '
  NF >= 4 {
    size = $2; name = $4
    for (i = 5; i <= NF; i++) name = name " " $i
    sub(/^type:\.?/, "", name); sub(/^go:(itab|link)\.?/, "", name)
    sub(/^\*/, "", name); sub(/^\(\*?/, "", name)
    # The package path: up to the first dot after the last slash.
    pkg = name
    slash = 0
    for (i = 1; i <= length(pkg); i++) if (substr(pkg, i, 1) == "/") slash = i
    rest = substr(pkg, slash + 1); dot = index(rest, ".")
    if (dot > 0) pkg = substr(pkg, 1, slash + dot - 1)
    n = split(pkg, parts, "/")
    if (index(parts[1], ".") == 0) mod = "std"
    else { mod = parts[1]; for (i = 2; i <= 3 && i <= n; i++) mod = mod "/" parts[i] }
    sum[mod] += size; total += size
  }
  END {
    for (m in sum) printf "%10.2f MiB  %s\n", sum[m] / 1048576, m
    printf "%10.2f MiB  (all symbols)\n", total / 1048576
  }' | sort -rn | head -n "$((top + 1))"
