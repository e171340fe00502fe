import cjs from './mysql.js'
export const { MysqlRegistry } = cjs
export default cjs
