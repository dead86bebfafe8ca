/**
 * Builds the embedded inbox page (`src/main.tsx`, Preact) into `../dist-inbox/`: one script and one stylesheet
 * with content-hashed names, and `manifest.json` naming them for the host (`src/pages/InboxPage.ts`). Run by
 * `npm install`/`npm ci` (the root `prepare` script) and by the package's `build`.
 */
import { build } from "esbuild"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { basename } from "node:path"
import { fileURLToPath } from "node:url"

const outdir = fileURLToPath(new URL("../dist-inbox/", import.meta.url))
rmSync(outdir, { recursive: true, force: true })
mkdirSync(outdir, { recursive: true })

const result = await build({
  entryPoints: { inbox: fileURLToPath(new URL("src/main.tsx", import.meta.url)) },
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

const outputs = Object.keys(result.metafile.outputs).map((path) => basename(path))
const js = outputs.find((name) => name.endsWith(".js"))
const css = outputs.find((name) => name.endsWith(".css"))
if (js === undefined || css === undefined) throw new Error(`inbox build: expected a script and a stylesheet, got ${outputs.join(", ")}`)
writeFileSync(new URL("manifest.json", `file://${outdir}`), JSON.stringify({ js, css }))
