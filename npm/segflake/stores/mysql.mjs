import cjs from './mysql.js'
export const { MySQLStore } = cjs
export default cjs
