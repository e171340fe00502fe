'use strict'
// `segflake/registries/mysql`: MysqlRegistry alone (the same class as `segflake/registries`).
const { MysqlRegistry } = require('../registries.js')
module.exports = { MysqlRegistry }
