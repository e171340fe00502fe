import cjs from './registries.js'
export const { RedisRegistry, PgRegistry, MysqlRegistry, registryFromUrl, statements } = cjs
export default cjs
