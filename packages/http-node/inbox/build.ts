/**
 * Builds the host's embedded pages (Preact) into `../dist-inbox/`: the inbox (`inbox/src/main.tsx`) and the
 * workflow viewer (`viewer/src/main.tsx`), each one script and one stylesheet with content-hashed names, and
 * `manifest.json` naming them per page for the host (`src/pages/EmbedPage.ts`). Run by `npm install`/`npm ci`
 * (the root `prepare` script) and by the package's `build`.
 */
import { build } from "esbuild"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { basename } from "node:path"
import { fileURLToPath } from "node:url"

const outdir = fileURLToPath(new URL("../dist-inbox/", import.meta.url))
rmSync(outdir, { recursive: true, force: true })
mkdirSync(outdir, { recursive: true })

const pages = {
  inbox: fileURLToPath(new URL("src/main.tsx", import.meta.url)),
  viewer: fileURLToPath(new URL("../viewer/src/main.tsx", import.meta.url))
}

const result = await build({
  entryPoints: pages,
  bundle: true,
  format: "esm",
  target: "es2022",
  minify: true,
  sourcemap: false,
  jsx: "automatic",
  jsxImportSource: "preact",
  entryNames: "[name]-[hash]",
  outdir,
  metafile: true,
  legalComments: "none",
  logLevel: "warning"
})

// Entry names lead the file names (`[name]-[hash]`): `viewer-XXXX.js` and its `cssBundle` are the viewer's.
const manifest: Record<string, { js: string; css: string }> = {}
for (const [path, output] of Object.entries(result.metafile.outputs)) {
  if (output.entryPoint === undefined || output.cssBundle === undefined) continue
  const js = basename(path)
  manifest[js.slice(0, js.lastIndexOf("-"))] = { js, css: basename(output.cssBundle) }
}
for (const page of Object.keys(pages)) {
  if (manifest[page] === undefined) throw new Error(`page build: no script and stylesheet for ${page}`)
}
writeFileSync(new URL("manifest.json", `file://${outdir}`), JSON.stringify(manifest))
