// `fs.readFileSync` for nodejs-snowflake's loader in the browser: its .wasm, bundled as bytes.
import bytes from 'nodejs-snowflake/nodejs_snowflake_bg.wasm';

export function readFileSync() {
  return bytes;
}
export default { readFileSync };
