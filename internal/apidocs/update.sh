#!/usr/bin/env bash
# Vendors Swagger UI from the npm registry into swaggerui/: the bundle and
# its stylesheet, gzipped (the server sends them compressed), with their
# licence files. Usage: internal/apidocs/update.sh [VERSION]
set -euo pipefail
version="${1:-5.35.0}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack "swagger-ui-dist@$version" >/dev/null && tar xzf "swagger-ui-dist-$version.tgz")
pkg="$work/package"
out="$here/swaggerui"
gzip -9 -n -c "$pkg/swagger-ui-bundle.js" >"$out/swagger-ui-bundle.js.gz"
gzip -9 -n -c "$pkg/swagger-ui.css" >"$out/swagger-ui.css.gz"
cp "$pkg/LICENSE" "$pkg/NOTICE" "$pkg/swagger-ui-bundle.js.LICENSE.txt" "$pkg/favicon-32x32.png" "$out/"
sed -i "s/^const SwaggerUIVersion = .*/const SwaggerUIVersion = \"$version\"/" "$here/apidocs.go"
echo "Swagger UI $version vendored into $out"
