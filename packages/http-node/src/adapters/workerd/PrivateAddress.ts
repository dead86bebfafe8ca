export { isPrivateAddress, PrivateAddressRefused, publicOnlyLookup } from "@parley/core"
