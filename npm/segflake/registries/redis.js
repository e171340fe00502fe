'use strict'
// `segflake/registries/redis`: RedisRegistry alone (the same class as `segflake/registries`).
const { RedisRegistry } = require('../registries.js')
module.exports = { RedisRegistry }
