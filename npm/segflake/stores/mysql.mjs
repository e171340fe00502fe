import cjs from './mysql.js'
export const { MySQLStore, ReadOnlyServerError } = cjs
export default cjs
