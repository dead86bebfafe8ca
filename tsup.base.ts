import { defineConfig } from "tsup"

/** ESM with bundled declarations for one package; other @parley packages and npm dependencies stay external. */
export const packageConfig = (entry: ReadonlyArray<string>) =>
  defineConfig({
    entry: [...entry],
    format: ["esm"],
    dts: { compilerOptions: { allowImportingTsExtensions: true, noEmit: false, customConditions: ["@parley/source"] } },
    clean: true,
    sourcemap: true,
    target: "node22",
    tsconfig: "../../tsconfig.build.json"
  })
