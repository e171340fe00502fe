import cjs from './redis.js'
export const { RedisRegistry } = cjs
export default cjs
