import cjs from './pg.js'
export const { PgStore, ReadOnlyServerError } = cjs
export default cjs
