import cjs from './zookeeper.js'
export const { ZooKeeperRegistry } = cjs
export default cjs
