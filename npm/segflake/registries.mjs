import cjs from './registries.js'
export const {
  RedisRegistry,
  PgRegistry,
  MysqlRegistry,
  ZooKeeperRegistry,
  EtcdRegistry,
  LEAF_REPORT_MS,
  registryFromUrl,
  statements,
} = cjs
export default cjs
