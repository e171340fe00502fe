export { PgRegistry } from '../registries'
