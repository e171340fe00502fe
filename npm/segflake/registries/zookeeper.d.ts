export { ZooKeeperRegistry } from '../registries'
