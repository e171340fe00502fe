export { MysqlRegistry } from '../registries'
