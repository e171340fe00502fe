export const { TextDecoder, TextEncoder } = globalThis;
export default { TextDecoder, TextEncoder };
