import { packageConfig } from "../../tsup.base.ts"

export default packageConfig(["src/index.ts", "src/simulators/index.ts", "src/testing/index.ts", "src/testing/conformance/index.ts"])
