// The option and record declarations shipped (tables.d.ts, generated from the core's tables
// by scripts/gen_declarations.py) against the tables of the module (`__tables()` of the tests'
// build, test/testing.mjs): every option interface lists exactly the options the core
// accepts from JS (camel case; required exactly when the core has no default), and every
// record interface exactly the core's fields (optional exactly when the core's field is).
// Fails when the declarations and the core disagree.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { testing } from './testing.mjs';

const pkgDir = path.dirname(createRequire(import.meta.url).resolve('segflake-wasm/package.json'));
const dts = fs.readFileSync(path.join(pkgDir, 'tables.d.ts'), 'utf8');
const tables = JSON.parse(testing.__tables());

/** The properties of `export interface name` or `export declare class name`: `{ name: { optional, type } }`. */
function declared(kind, name) {
  const start = dts.search(new RegExp(`^export (?:declare )?${kind} ${name}\\b[^\\n]*\\{$`, 'm'));
  assert.ok(start >= 0, `tables.d.ts declares no ${kind} ${name}`);
  const body = dts.slice(start, dts.indexOf('\n}', start));
  const props = {};
  for (const m of body.matchAll(/^ {2}(?:readonly )?([A-Za-z_$][\w$]*)(\?)?: ([^;\n]+);?$/gm)) {
    props[m[1]] = { optional: m[2] === '?', type: m[3] };
  }
  return props;
}

// SegmentGeneratorOptions and SerialOptions (core.d.ts) add the keys the JS drivers read
// themselves (`store`, `counter`) to these.
const JS_ONLY = {};

const OPTION_INTERFACES = {
  layout: 'LayoutOptions',
  snowflake: 'SnowflakeOptions',
  segment: 'SegmentSettings',
  serial: 'SerialSettings',
  lease: 'LeaseOptions',
};

test('declarations: every set of options the core has is declared', () => {
  assert.deepEqual(Object.keys(tables.options).sort(), Object.keys(OPTION_INTERFACES).sort());
});

for (const [set, iface] of Object.entries(OPTION_INTERFACES)) {
  test(`declarations: ${iface} lists exactly the core's ${set} options`, () => {
    const props = declared('interface', iface);
    const own = Object.keys(props).filter((k) => !(JS_ONLY[set] ?? []).includes(k));
    const core = tables.options[set].filter((o) => !o.threads_only);
    assert.deepEqual(own.sort(), core.map((o) => o.camel).sort(), `${iface} keys`);
    for (const o of core) {
      assert.equal(props[o.camel].optional, o.default !== null, `${iface}.${o.camel} is optional exactly when it has a default`);
    }
  });
}

const RECORDS = {
  SegmentStats: ['interface', 'SegmentStats'],
  DecodedId: ['interface', 'DecodedId'],
  SerialParts: ['interface', 'SerialParts'],
  LeaseStats: ['interface', 'LeaseStats'],
  Layout: ['interface', 'LayoutProperties'],
};

test('declarations: every record the core has is declared', () => {
  assert.deepEqual(Object.keys(tables.records).sort(), Object.keys(RECORDS).sort());
});

for (const [record, [kind, name]] of Object.entries(RECORDS)) {
  test(`declarations: ${name} lists exactly the core's ${record} fields`, () => {
    const props = declared(kind, name);
    const fields = tables.records[record];
    assert.deepEqual(Object.keys(props).sort(), fields.map((f) => f.camel).sort(), `${name} fields`);
    for (const f of fields) {
      const p = props[f.camel];
      // An absent optional field: left out of result objects, `null` from a Layout getter.
      const absent = name === 'LayoutProperties' ? p.type.endsWith('| null') : p.optional;
      assert.equal(absent, f.optional, `${name}.${f.camel} may be absent exactly when the core's field is optional`);
      const base = p.type.replace(/ \| null$/, '');
      const expected = { id: /^bigint$/, count: /^number$/, float: /^number$/, bool: /^boolean$/, text: /^(string|'[^']*'( \| '[^']*')*)$/ }[f.kind];
      assert.match(base, expected, `${name}.${f.camel} (${f.kind}) is declared as ${p.type}`);
    }
  });
}
