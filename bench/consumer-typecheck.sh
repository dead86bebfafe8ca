#!/usr/bin/env bash
# A consumer's type-check against the packed packages of the checkout $1 (after `npm run build` there), in the
# fresh directory $2 (outside the workspace). SKIPS="false true" by default. See docs/decisions.md, "Rows, error
# facts and declaration size".
# Prints: declaration sizes of each package's dist, then tsc --extendedDiagnostics of a one-file consumer,
# with skipLibCheck false (the shipped .d.ts checked, as examples/installed-packages does) and true.
set -euo pipefail
root=$1; work=$2
rm -rf "$work"; mkdir -p "$work/packs" "$work/app/src"
for p in core store-pg http-node client; do
  (cd "$root/packages/$p" && npm pack --silent --pack-destination "$work/packs" >/dev/null)
  echo "decl $p: $(find "$root/packages/$p/dist" -name '*.d.ts' | wc -l) files, $(find "$root/packages/$p/dist" -name '*.d.ts' -print0 | du -cb --files0-from=- | tail -1 | cut -f1) bytes"
done
tarball() { ls "$work/packs" | grep "^parley-$1-[0-9]"; }
cat > "$work/app/package.json" <<JSON
{ "name": "consumer", "private": true, "type": "module",
  "dependencies": { "@parley/core": "file:$work/packs/$(tarball core)", "@parley/store-pg": "file:$work/packs/$(tarball store-pg)",
    "@parley/http-node": "file:$work/packs/$(tarball http-node)", "@parley/client": "file:$work/packs/$(tarball client)", "effect": "4.1.0" },
  "devDependencies": { "typescript": "6.0.3", "@types/node": "^24.0.0" } }
JSON
# The consumer: examples/installed-packages/src/main.ts (makeParley, the client, core's memory ports).
cp "$root/examples/installed-packages/src/main.ts" "$work/app/src/main.ts"
for skip in false true; do
  cat > "$work/app/tsconfig.$skip.json" <<JSON
{ "compilerOptions": { "target": "ES2023", "lib": ["ES2023", "DOM"], "module": "NodeNext", "moduleResolution": "NodeNext",
  "strict": true, "noEmit": true, "skipLibCheck": $skip, "types": ["node"] }, "files": ["src/main.ts"] }
JSON
done
(cd "$work/app" && npm install --no-audit --no-fund --prefer-offline --silent >/dev/null 2>&1)
for skip in ${SKIPS:-false true}; do
  echo "tsc skipLibCheck=$skip:"
  (cd "$work/app" && ./node_modules/.bin/tsc -p "tsconfig.$skip.json" --extendedDiagnostics 2>&1 |
    grep -E "^(Files|Lines of Definitions|Types|Memory used|Check time|Total time|error)" || true)
done
