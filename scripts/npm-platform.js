#!/usr/bin/env node
// The npm platform packages of segflake, laid out as napi lays them out, from
// scripts/platforms.txt:
//   npm-platform.js package SUFFIX VERSION BINARY OUTDIR
//       writes OUTDIR/{package.json, README.md, LICENSE-MIT, LICENSE-APACHE,
//       segflake.SUFFIX.node (a copy of BINARY)}: the package segflake-SUFFIX, whose
//       os/cpu/libc fields let npm install it only on matching machines
//   npm-platform.js optional VERSION
//       prints the main package's optionalDependencies (every platform, pinned to VERSION)
'use strict'
const fs = require('node:fs')
const path = require('node:path')

const root = path.resolve(__dirname, '..')
const platforms = fs
  .readFileSync(path.join(__dirname, 'platforms.txt'), 'utf8')
  .split('\n')
  .filter((line) => line.trim() && !line.startsWith('#'))
  .map((line) => {
    const [suffix, rustTarget, , os, cpu, libc] = line.trim().split(/\s+/)
    return { suffix, rustTarget, os, cpu, libc: libc === '-' ? null : libc }
  })

const OS_NAMES = { linux: 'Linux', darwin: 'macOS', win32: 'Windows' }

function writePackage(suffix, version, binary, outDir) {
  const p = platforms.find((x) => x.suffix === suffix)
  if (!p) throw new Error(`${suffix} is not in scripts/platforms.txt`)
  const bin = `segflake.${suffix}.node`
  const pkg = {
    name: `segflake-${suffix}`,
    version,
    description: `The ${suffix} binary of segflake (installed by the segflake package).`,
    license: 'MIT OR Apache-2.0',
    main: bin,
    files: [bin, 'LICENSE-MIT', 'LICENSE-APACHE'],
    os: [p.os],
    cpu: [p.cpu],
    ...(p.libc ? { libc: [p.libc] } : {}),
    engines: { node: '>= 18' },
  }
  const where = `${OS_NAMES[p.os]} ${p.cpu}${p.libc ? ` with ${p.libc}` : ''}`
  const readme =
    `# segflake-${suffix}\n\n` +
    `The prebuilt native addon of [\`segflake\`](https://www.npmjs.com/package/segflake) for ${where} ` +
    `(built for the Rust target \`${p.rustTarget}\`). Do not install it directly: ` +
    '`npm install segflake` pulls it in as an optional dependency on matching machines.\n'
  fs.rmSync(outDir, { recursive: true, force: true })
  fs.mkdirSync(outDir, { recursive: true })
  fs.writeFileSync(path.join(outDir, 'package.json'), JSON.stringify(pkg, null, 2) + '\n')
  fs.writeFileSync(path.join(outDir, 'README.md'), readme)
  for (const f of ['LICENSE-MIT', 'LICENSE-APACHE']) fs.copyFileSync(path.join(root, f), path.join(outDir, f))
  fs.copyFileSync(binary, path.join(outDir, bin))
}

const [cmd, ...args] = process.argv.slice(2)
if (cmd === 'package' && args.length === 4) {
  writePackage(...args)
} else if (cmd === 'optional' && args.length === 1) {
  const deps = Object.fromEntries(platforms.map((p) => [`segflake-${p.suffix}`, args[0]]))
  process.stdout.write(JSON.stringify(deps) + '\n')
} else {
  console.error('usage: npm-platform.js package SUFFIX VERSION BINARY OUTDIR | optional VERSION')
  process.exit(2)
}
