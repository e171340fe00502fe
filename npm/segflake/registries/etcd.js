'use strict'
// `segflake/registries/etcd`: EtcdRegistry alone (the same class as `segflake/registries`).
const { EtcdRegistry } = require('../registries.js')
module.exports = { EtcdRegistry }
