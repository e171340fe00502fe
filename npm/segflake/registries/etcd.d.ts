export { EtcdRegistry } from '../registries'
