#!/usr/bin/env bash
# Builds the release binaries of agnogo: static (CGO_ENABLED=0), stripped,
# reproducible paths, for linux and darwin on amd64 and arm64, into dist/,
# with a SHA256SUMS file. Usage: scripts/release.sh [VERSION]
# (default: the version `git describe` gives, else the go command's).
set -euo pipefail
cd "$(dirname "$0")/.."
version="${1:-$(git describe --tags --always --dirty 2>/dev/null || true)}"
ldflags="-s -w"
if [ -n "$version" ]; then
  ldflags="$ldflags -X github.com/agnogo/agnogo/internal/buildinfo.version=$version"
fi
mkdir -p dist
rm -f dist/agnogo_* dist/SHA256SUMS
for target in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do
  os="${target%/*}" arch="${target#*/}"
  out="dist/agnogo_${os}_${arch}"
  CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" go build -trimpath -buildvcs=true -ldflags "$ldflags" -o "$out" ./cmd/agnogo
  printf '%-28s %6.1f MiB\n' "$out" "$(awk -v b="$(stat -c %s "$out")" 'BEGIN { print b / 1048576 }')"
done
(cd dist && sha256sum agnogo_* > SHA256SUMS)
echo "dist/SHA256SUMS written (version ${version:-from the go command})"
