import { OpenApi } from "effect/http-api"

/** An endpoint's summary (one line, the docs' menu) and description (its rules): every operation has both. */
export const operation = (summary: string, description: string) => OpenApi.annotations({ summary, description })
