// Imports the entry named by the page's `?entry=` (a URL path) and issues one ID with it;
// leaves `{ ok, workerId }` or the error's `{ ok: false, name, message, cause }` in
// window.__cspResult. For browser.test.mjs's Content-Security-Policy test.
const entry = new URL(location.href).searchParams.get('entry');
try {
  const m = await import(entry);
  const gen = new m.Snowflake({ workerId: 5 });
  window.__cspResult = { ok: true, workerId: gen.decode(gen.nextId()).workerId };
} catch (e) {
  window.__cspResult = { ok: false, name: e?.name, message: String(e?.message ?? e), cause: e?.cause ? String(e.cause.message) : null };
}
