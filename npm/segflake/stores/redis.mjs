import cjs from './redis.js'
export const { RedisStore } = cjs
export default cjs
