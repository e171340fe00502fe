// Bundled by esbuild for the browser (nodejs-snowflake is a wasm-pack build for Node: its
// fs/path reads are served by shims/ from the bundled .wasm bytes).
import * as nodejsSnowflake from 'nodejs-snowflake';
import * as sapphire from '@sapphire/snowflake';

export { nodejsSnowflake, sapphire };
