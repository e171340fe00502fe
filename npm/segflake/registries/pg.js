'use strict'
// `segflake/registries/pg`: PgRegistry alone (the same class as `segflake/registries`).
const { PgRegistry } = require('../registries.js')
module.exports = { PgRegistry }
