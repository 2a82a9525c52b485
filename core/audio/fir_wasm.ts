/**
 * The resampler's FIR kernel as WebAssembly bytes (315 bytes), assembled from
 * ./fir.wat by `deno task wasm`. Generated: edit the .wat, not this file.
 * @module
 */

/** Base64 of the kernel module. */
export const FIR_WASM_BASE64: string =
  "AGFzbQEAAAABDgFgCn9/f39/f39/f38AAwIBAAUDAQABBxACBm1lbW9yeQIAA2ZpcgAACoUCAYICAwd/AXsBfSAEIANu" +
  "IQsgBCADcCEMAkADQCAKIAdPDQEgACAGIAJsQQJ0aiEPIAggBUECdGohECABIAZBA3RqKAIAIQ0gASAGQQN0aigCBCEO" +
  "/QwAAAAAAAAAAAAAAAAAAAAAIRECQANAIA0gDk8NASARIA8gDUECdGr9AAIAIBAgDUECdGr9AAIA/eYB/eQBIREgDUEE" +
  "aiENDAALCyAR/R8AIBH9HwGSIBH9HwIgEf0fA5KSIRIgCSAKQQF0akMA/v9GQwAAAMcgEpCXlvwAOwEAIAUgC2ohBSAG" +
  "IAxqIQYgBiADTwRAIAYgA2shBiAFQQFqIQULIApBAWohCgwACwsL";
