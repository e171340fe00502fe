import cjs from './pg.js'
export const { PgStore } = cjs
export default cjs
