'use strict'
// `segflake/registries/zookeeper`: ZooKeeperRegistry alone (the same class as `segflake/registries`).
const { ZooKeeperRegistry } = require('../registries.js')
module.exports = { ZooKeeperRegistry }
