import cjs from './pg.js'
export const { PgRegistry } = cjs
export default cjs
