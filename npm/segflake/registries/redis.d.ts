export { RedisRegistry } from '../registries'
