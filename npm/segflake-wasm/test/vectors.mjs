// Loads the shared vectors: every tests/vectors/*.json, parsed, by file name.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** $SEGFLAKE_VECTORS_DIR, or tests/vectors of the repository this file sits in. */
export const vectorsDir = process.env.SEGFLAKE_VECTORS_DIR || path.resolve(here, '..', '..', '..', 'tests', 'vectors');

export function loadVectors() {
  const files = fs.readdirSync(vectorsDir).filter((f) => f.endsWith('.json')).sort();
  return Object.fromEntries(files.map((f) => [f, JSON.parse(fs.readFileSync(path.join(vectorsDir, f), 'utf8'))]));
}
