import { defineConfig } from "tsup"

// ESM with bundled declarations; other @parley packages and npm dependencies stay external.
export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm"],
  dts: { compilerOptions: { allowImportingTsExtensions: true, noEmit: false, customConditions: ["@parley/source"] } },
  clean: true,
  sourcemap: true,
  target: "node22",
  tsconfig: "../../tsconfig.build.json"
})
