import cjs from './counters.js'
export const { RedisSerialCounter, script } = cjs
export default cjs
