import { defineConfig } from "vitest/config"

// Workspace packages resolve to their TypeScript sources through the
// `@parley/source` export condition; it must be set for both the client and
// the SSR resolver or vitest silently runs a stale `dist/`.
export default defineConfig({
  resolve: { conditions: ["@parley/source"] },
  ssr: { resolve: { conditions: ["@parley/source"] } },
  test: {
    include: ["packages/*/test/**/*.test.ts", "examples/*/test/**/*.test.ts"],
    // One throwaway PostgreSQL for the run (or DATABASE_URL); test files get databases of their own in it.
    globalSetup: ["packages/store-pg/test/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000
  }
})
